"""FlussConnection: the entry point of the client (``await FlussConnection.create(config)``)."""

from __future__ import annotations

import asyncio
from types import TracebackType

from fluss.client.admin import FlussAdmin
from fluss.client.cluster_client import ClusterClient
from fluss.client.config import Config
from fluss.client.io_thread import IoThread
from fluss.client.metrics import ClientMetrics
from fluss.client.retry import RetryPolicy, call_with_retry
from fluss.metadata import TablePath
from fluss.rpc.addresses import parse_addresses
from fluss.rpc.gen import fluss_api_pb2 as pb


class FlussConnection:
    """A connection to one cluster. Its gRPC traffic runs on one background I/O thread (``IoThread``)."""

    def __init__(self, io: IoThread) -> None:
        self._io = io
        self._closeables: list = []
        self._closed = False
        self._remote_files = None

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

    def remote_files(self):
        """The pool that downloads remote (tiered) log segments for this connection's scanners (created on first
        use; see ``remote_log.py``)."""
        from fluss.client.remote_log import RemoteFileDownloader

        if self._remote_files is None:
            cfg = self.config
            self._remote_files = RemoteFileDownloader(cfg.remote_file_download_thread_num,
                                                      cfg.scanner_io_tmpdir or None, self._remote_file_options,
                                                      RetryPolicy.from_config(cfg))
        return self._remote_files

    def _remote_file_options(self) -> dict[str, str]:
        """The coordinator's file-system token and endpoint options, overridden by this client's ``s3.*``."""
        from fluss.client.remote_log import token_options

        resp = self._io.call(call_with_retry(
            lambda: self._io.client.admin_call("GetFileSystemSecurityToken", pb.GetFileSystemSecurityTokenRequest()),
            RetryPolicy.from_config(self.config), "Getting the remote storage options"))
        options = token_options(resp.schema, resp.token, resp.addition_info)
        options.update({k: v for k, v in self.config.to_dict().items() if k.startswith("s3.")})
        return options

    def register(self, closeable) -> None:
        """Writers and scanners register here so close() releases them."""
        self._closeables.append(closeable)

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        for c in self._closeables:
            await c.aclose()
        if self._remote_files is not None:
            self._remote_files.close()
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
