"""The docs are true: every code block of README.md and docs/*.md that a user can run is run here.

A fenced block in python, bash, sh or sql is *runnable*. The line before it says what this test does with it:
``<!-- doc-test: run ... -->`` (the default for python and bash) or ``<!-- doc-test: skip (why) -->``; a runnable
block without a decision fails :func:`test_every_runnable_block_is_run_or_says_why_not`. Python blocks run as
scripts against the session's cluster (``127.0.0.1:9123`` replaced by its address); bash blocks run with
``bash -e`` from the repository root, with the ``fluss`` command's environment defaults pointed at a free port and
a temporary directory (``FLUSS_CLUSTER_PORT``, ``FLUSS_CLUSTER_DIR``, ``FLUSS_BOOTSTRAP_SERVERS``) and
``conf/server.yaml`` replaced by a copy whose Paimon warehouse is in that directory.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from fluss.server.zk.local_server import free_port

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUNNABLE = {"python", "bash", "sh", "sql"}
_FENCE = re.compile(r"^```(\w*)\s*$")
_DIRECTIVE = re.compile(r"<!--\s*doc-test:\s*(run|skip)\b(.*?)-->")


@dataclass
class Block:
    path: Path
    line: int
    language: str
    code: str
    decision: str | None  # "run", "skip" or None (no directive)

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def code_blocks(path: Path) -> list[Block]:
    lines = path.read_text().splitlines()
    out, i = [], 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m or not m.group(1):
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        previous = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        directive = _DIRECTIVE.search(previous)
        out.append(Block(path, i + 1, m.group(1).lower(), "\n".join(lines[i + 1:j]),
                         directive.group(1) if directive else None))
        i = j + 1
    return out


ALL_BLOCKS = [b for path in DOCS for b in code_blocks(path) if b.language in RUNNABLE]
TO_RUN = [b for b in ALL_BLOCKS if b.decision == "run"]


def test_every_runnable_block_is_run_or_says_why_not():
    undecided = [b.id for b in ALL_BLOCKS if b.decision is None]
    assert not undecided, f"code blocks with no <!-- doc-test: run|skip (why) --> line before them: {undecided}"
    assert all(b.language in ("python", "bash") for b in TO_RUN), "only python and bash blocks are run"
    assert any(b.path.name == "README.md" and b.language == "python" for b in TO_RUN)


@pytest.mark.parametrize("block", [b for b in TO_RUN if b.language == "python"], ids=lambda b: b.id)
def test_python_block_runs(block, cluster):
    code = block.code.replace("127.0.0.1:9123", cluster.bootstrap_servers)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    out = done.stdout + done.stderr
    assert done.returncode == 0, f"{block.id} failed:\n{out[-4000:]}"
    assert "coroutine object" not in out and "was never awaited" not in out, out[-4000:]


@pytest.mark.parametrize("block", [b for b in TO_RUN if b.language == "bash"], ids=lambda b: b.id)
def test_bash_block_runs(block, tmp_path):
    port = free_port()
    cluster_dir = tmp_path / "cluster"
    config = tmp_path / "server.yaml"
    config.write_text(re.sub(r"(datalake\.paimon\.warehouse:).*", rf"\1 {tmp_path / 'paimon'}",
                             (ROOT / "conf" / "server.yaml").read_text()))
    env = {**os.environ, "FLUSS_CLUSTER_PORT": str(port), "FLUSS_CLUSTER_DIR": str(cluster_dir),
           "FLUSS_BOOTSTRAP_SERVERS": f"127.0.0.1:{port}", "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    code = block.code.replace("conf/server.yaml", str(config))
    try:
        done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", code], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=900)
    finally:
        subprocess.run([sys.executable, "-m", "fluss.cli", "cluster", "stop", "--dir", str(cluster_dir)],
                       capture_output=True, timeout=120)
    out = done.stdout + done.stderr
    assert done.returncode == 0, f"{block.id} failed:\n{out[-4000:]}"
    assert "Traceback" not in out, out[-4000:]
