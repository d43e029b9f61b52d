"""FlussConnection: the entry point of the client (``await FlussConnection.create(config)``)."""

from __future__ import annotations

import asyncio
from types import TracebackType

from fluss.client.admin import FlussAdmin
from fluss.client.cluster_client import ClusterClient
from fluss.client.config import Config
from fluss.client.io_thread import IoThread
from fluss.client.metrics import ClientMetrics
from fluss.metadata import TablePath
from fluss.rpc.addresses import parse_addresses
from fluss.rpc.gen import fluss_api_pb2 as pb


class FlussConnection:
    """A connection to one cluster. Its gRPC traffic runs on one background I/O thread (``IoThread``)."""

    def __init__(self, io: IoThread) -> None:
        self._io = io
        self._closeables: list = []
        self._closed = False

    @staticmethod
    async def create(config: Config) -> FlussConnection:
        """Connects to the cluster of ``bootstrap.servers``; fails within ``connect-timeout`` when none of them
        can be reached, naming each address and why (see ``ClusterClient``)."""
        parse_addresses(config.bootstrap_servers)  # a malformed entry fails here, before any thread starts
        config.credentials()  # so does an unsupported protocol or an incomplete security setting
        config.tls()  # and TLS files that cannot be read
        io = IoThread(config)
        try:
            await io.wait(io.client.admin_call("GetServerNodes", pb.GetServerNodesRequest()))
        except BaseException:
            await asyncio.to_thread(io.stop)
            raise
        return FlussConnection(io)

    @property
    def config(self) -> Config:
        return self._io.client.config

    @property
    def metrics(self) -> ClientMetrics | None:
        """This connection's metrics when ``client.metrics.enabled`` is true (``snapshot()``, ``register()``),
        else None."""
        return self._io.client.metrics

    @property
    def cluster(self) -> ClusterClient:
        """The metadata client; its coroutines must run on the I/O thread (see ``run``)."""
        return self._io.client

    async def run(self, coro):
        """Runs a coroutine of this connection's cluster client on its I/O thread."""
        return await self._io.wait(coro)

    def get_admin(self) -> FlussAdmin:
        return FlussAdmin(self._io)

    async def get_table(self, table_path: TablePath):
        from fluss.client.table import FlussTable

        meta = await self._io.wait(self._io.client.table(table_path, refresh=True))
        return FlussTable(self, meta.info)

    def io_thread(self) -> IoThread:
        """The background I/O loop shared by this connection's admin, writers and scanners."""
        return self._io

    def register(self, closeable) -> None:
        """Writers and scanners register here so close() releases them."""
        self._closeables.append(closeable)

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        for c in self._closeables:
            await c.aclose()
        await asyncio.to_thread(self._io.stop)

    async def close(self) -> None:
        """Closes writers, scanners and every channel (as the official client, a coroutine)."""
        await self.aclose()

    async def __aenter__(self) -> FlussConnection:
        return self

    async def __aexit__(self, exc_type: type | None = None, exc_value: BaseException | None = None,
                        traceback: TracebackType | None = None) -> bool:
        """Closes the connection (draining every writer's pending writes); exceptions propagate."""
        await self.aclose()
        return False

    def __enter__(self) -> FlussConnection:
        return self

    def __exit__(self, exc_type: type | None = None, exc_value: BaseException | None = None,
                 traceback: TracebackType | None = None) -> bool:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            asyncio.run(self.aclose())
            return False
        loop.create_task(self.aclose())
        return False

    def __repr__(self) -> str:
        return f"FlussConnection(bootstrap={self._io.client.bootstrap})"
