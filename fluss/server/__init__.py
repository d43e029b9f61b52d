"""The servers: CoordinatorServer, TabletServer, and ``LocalCluster`` to run a cluster of them locally."""

from fluss.server.cluster import LocalCluster

__all__ = ["LocalCluster"]
