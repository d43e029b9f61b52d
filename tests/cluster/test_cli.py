"""`fluss cluster start|status|stop` manage a cluster of real processes in a directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from fluss.server.cluster import _pid_alive
from fluss.server.zk.local_server import free_port


def _fluss(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fluss.cli", *args], capture_output=True, text=True, timeout=timeout)


def test_cluster_start_status_stop(tmp_path):
    port = free_port()
    d = str(tmp_path / "c")
    started = _fluss("cluster", "start", "--dir", d, "--tablet-servers", "1", "--port", str(port))
    assert started.returncode == 0, started.stdout + started.stderr
    assert f"127.0.0.1:{port}" in started.stdout
    state = json.loads((tmp_path / "c" / "cluster.json").read_text())
    pids = [state["zookeeper"]["pid"], *(c["pid"] for c in state["coordinators"]),
            *(t["pid"] for t in state["tablet_servers"])]
    try:
        assert all(_pid_alive(p) for p in pids)
        status = _fluss("cluster", "status", "--dir", d)
        assert status.returncode == 0
        assert status.stdout.count(" up") == 3 and "DOWN" not in status.stdout
        again = _fluss("cluster", "start", "--dir", d, "--port", str(port))
        assert again.returncode == 1 and "already running" in again.stdout
    finally:
        stopped = _fluss("cluster", "stop", "--dir", d)
    assert stopped.returncode == 0
    assert not any(_pid_alive(p) for p in pids)
    assert _fluss("cluster", "status", "--dir", d).returncode == 1
    assert not os.path.exists(tmp_path / "c" / "cluster.json")
