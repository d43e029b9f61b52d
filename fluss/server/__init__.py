"""The servers: CoordinatorServer, TabletServer, and ``LocalCluster`` to run a cluster of them locally.

``LocalCluster`` is imported on first use (PEP 562): a server process imports ``fluss.server.*`` modules and
must not load the cluster launcher with them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fluss.server.cluster import LocalCluster

__all__ = ["LocalCluster"]


def __getattr__(name: str) -> Any:
    if name == "LocalCluster":
        from fluss.server.cluster import LocalCluster

        return LocalCluster
    raise AttributeError(f"module 'fluss.server' has no attribute {name!r}")
