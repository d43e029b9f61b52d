"""Where each concept lives, checked: ZooKeeper only behind fluss/server/zk, the client never reaching into the lake,
the lake using only the client's public API, and the coordinator process never loading the lake library."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "fluss"


def _modules(under: str) -> list[Path]:
    return sorted((PACKAGE / under).rglob("*.py"))


def _imports(path: Path) -> set[str]:
    """Every module a file imports, at any level (function-local imports included)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{alias.name}" for alias in node.names)
    return out


def _rel(path: Path) -> str:
    return str(path.relative_to(PACKAGE.parent))


def test_only_the_zk_package_uses_kazoo():
    offenders = [_rel(p) for p in _modules(".") if "server/zk/" not in _rel(p)
                 and any(m == "kazoo" or m.startswith("kazoo.") for m in _imports(p))]
    assert offenders == []


def test_the_client_never_imports_the_lake():
    offenders = [_rel(p) for p in _modules("client") if any(m.startswith("fluss.lake") for m in _imports(p))]
    assert offenders == []


def test_the_lake_uses_only_the_public_client_api():
    internals = {"cluster", "admin_call", "tablet_call", "io_thread", "_io", "channels"}
    offenders = []
    for path in _modules("lake"):
        tree = ast.parse(path.read_text())
        offenders += [f"{_rel(path)}: imports {m}" for m in _imports(path) if m.startswith("fluss.client")]
        offenders += [f"{_rel(path)}:{n.lineno}: .{n.attr}" for n in ast.walk(tree)
                      if isinstance(n, ast.Attribute) and n.attr in internals]
    assert offenders == []


def test_the_coordinator_process_does_not_load_the_lake_library():
    probe = ("import sys, fluss.server.coordinator.server, fluss.server.coordinator.processor\n"
             "print(sorted(m for m in sys.modules if m.startswith(('pypaimon', 'fluss.lake.paimon'))))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.strip() == "[]"
