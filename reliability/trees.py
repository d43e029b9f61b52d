"""What the paired A/B tools share: a cluster whose servers run a given source tree, and CPU time of processes.

The ``*_ab`` tools compare two source trees in the same run (alternating rounds), so the neighbours of a shared
machine weigh on both alike; CPU seconds per operation, read from ``/proc``, are steadier than wall-clock rates. The tools whose client side runs in a child process of the tree under test
(``scan_ab``, ``lookup_ab``) import this module from that tree, so both trees must have it.
"""

from __future__ import annotations

import os
from pathlib import Path

from bench.monitor import cpu_seconds as process_cpu_seconds


def start_cluster(tree: Path, config: dict[str, str] | None = None, server_cpus: set[int] | None = None,
                  session_timeout: str | None = None):
    """A started 3-tablet-server ``LocalCluster`` whose servers run ``tree`` (``PYTHONPATH``), with ``config``
    as server options; on ``server_cpus`` only when given (the processes it starts inherit this process's CPU
    affinity, which is restored afterwards); ``session_timeout``: the servers' ZooKeeper session (LocalCluster's
    default if None)."""
    from fluss.server.cluster import LocalCluster

    old, cwd = os.environ.get("PYTHONPATH"), os.getcwd()
    own_cpus = os.sched_getaffinity(0)
    os.environ["PYTHONPATH"] = str(tree)
    os.chdir(tree)  # `python -m` puts the working directory first on sys.path
    try:
        if server_cpus:
            os.sched_setaffinity(0, server_cpus)
        extra = {} if session_timeout is None else {"zookeeper_session_timeout": session_timeout}
        return LocalCluster(tablet_servers=3, server_config=dict(config or {}), **extra).start()
    finally:
        os.sched_setaffinity(0, own_cpus)
        os.chdir(cwd)
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time used so far by the processes ``pids`` (``/proc/<pid>/stat``)."""
    return sum(process_cpu_seconds(pid) for pid in pids)


def tablet_server_pids(cluster) -> list[int]:
    """The PIDs of a cluster's live tablet servers."""
    return [cluster.tablet_server_pid(sid) for sid in cluster.live_tablet_servers()]
