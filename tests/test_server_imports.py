"""What a server process imports: the start of a tablet server or coordinator is mostly Python importing modules,
so the server path leaves out what it does not use (the client package, PyFlink, pandas, pypaimon, fsspec/s3fs
until a remote file system is used, plotting), and ``import fluss`` loads the client's names on first use."""

from __future__ import annotations

import json
import subprocess
import sys

import fluss

NOT_IN_A_SERVER = ("fluss.client.admin", "fluss.client.lookup", "fluss.client.scanner", "tiering_job", "pyflink",
                   "pandas", "pypaimon", "fsspec", "s3fs", "matplotlib", "fluss.server.cluster", "fluss.gateway",
                   "fluss.dashboard")


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport json, sys; print(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True, timeout=120)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def _loaded(modules: set[str], name: str) -> bool:
    return name in modules or any(m.startswith(name + ".") for m in modules)


def test_the_server_start_path_does_not_import_what_a_server_does_not_use():
    modules = _modules_after(
        "from fluss.cli import _server_parser\n"
        "_server_parser().parse_args(['tablet-server'])\n"
        "import fluss.server.tablet.server, fluss.server.coordinator.server")
    assert "fluss.server.tablet.server" in modules and "rocksdict" in modules  # the check sees real imports
    assert [name for name in NOT_IN_A_SERVER if _loaded(modules, name)] == []


def test_fluss_loads_the_client_names_on_first_use():
    assert _modules_after("import fluss").isdisjoint({"fluss.client.admin", "fluss.client.connection"})
    modules = _modules_after("import fluss\nfluss.FlussConnection")
    assert "fluss.client.connection" in modules
    assert set(fluss.__all__) == set(fluss._EXPORTS)  # noqa: SLF001 - every exported name resolves lazily
    for name in fluss.__all__:
        assert getattr(fluss, name) is not None
    assert set(fluss.__all__) <= set(dir(fluss))
