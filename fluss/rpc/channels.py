"""The one way a gRPC channel is made: ``ChannelFactory`` (options, client interceptors, connect deadline), and
``ChannelPool``, one ``grpc.aio`` channel per server address with typed stubs.

Every client of a Fluss service uses them: the Python client, the tablet server's channels to the coordinator and
to partition leaders (replication), the coordinator's channels to tablet servers, and ``LocalCluster``'s readiness
probe (:meth:`ChannelFactory.sync_channel`). A feature that must touch every outgoing call (credentials of an
authenticated listener, a client id in the request metadata, client metrics) is a client interceptor given to the
factory. ``connect_timeout_s`` bounds :meth:`ChannelPool.wait_ready`: how long a caller that wants to fail fast
waits for a connection to an address before giving up with NETWORK_EXCEPTION. With ``tls`` (a
:class:`~fluss.rpc.tls.ClientTls`) every channel is a TLS channel (gRPC's TLS, verifying the server's certificate
against the trusted CAs and the address's host).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import grpc

from fluss.errors import ErrorCode, FlussError
from fluss.rpc.gen import fluss_api_pb2_grpc as rpc
from fluss.rpc.tls import ClientTls

MAX_MESSAGE_BYTES = 256 * 1024 * 1024
CLIENT_KEEPALIVE_MS = 10_000

#: Channel options of every Fluss client.
GRPC_CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.enable_retries", 0),
    ("grpc.keepalive_time_ms", CLIENT_KEEPALIVE_MS),
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
    ("grpc.min_reconnect_backoff_ms", 100),
]

DEFAULT_CONNECT_TIMEOUT_S = 120.0


class ChannelFactory:
    """Makes channels with the Fluss options and the client interceptors (see the module docstring)."""

    def __init__(self, interceptors: Sequence[grpc.aio.ClientInterceptor] = (),
                 options: Sequence[tuple[str, object]] | None = None,
                 connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S, tls: ClientTls | None = None) -> None:
        self.interceptors = list(interceptors)
        self.options = list(GRPC_CHANNEL_OPTIONS if options is None else options)
        self.connect_timeout_s = connect_timeout_s
        self.tls = tls
        self._credentials = tls.channel_credentials() if tls is not None else None

    def channel(self, address: str) -> grpc.aio.Channel:
        """A ``grpc.aio`` channel (use it on one event loop only)."""
        if self._credentials is not None:
            return grpc.aio.secure_channel(address, self._credentials, options=self.options,
                                           interceptors=self.interceptors or None)
        return grpc.aio.insecure_channel(address, options=self.options, interceptors=self.interceptors or None)

    def sync_channel(self, address: str) -> grpc.Channel:
        """A blocking channel, for code outside an event loop (probes, tools)."""
        if self._credentials is not None:
            return grpc.secure_channel(address, self._credentials, options=self.options)
        return grpc.insecure_channel(address, options=self.options)


class ChannelPool:
    """One aio channel per server address, with typed stubs."""

    def __init__(self, factory: ChannelFactory | None = None) -> None:
        self.factory = factory or ChannelFactory()
        self._channels: dict[str, grpc.aio.Channel] = {}
        # a stub builds a callable per method of its service: one per channel, not one per call
        self._tablet_stubs: dict[str, rpc.TabletServiceStub] = {}

    def channel(self, address: str) -> grpc.aio.Channel:
        ch = self._channels.get(address)
        if ch is None:
            ch = self.factory.channel(address)
            self._channels[address] = ch
        return ch

    def admin(self, address: str) -> rpc.AdminServiceStub:
        return rpc.AdminServiceStub(self.channel(address))

    def coordinator(self, address: str) -> rpc.CoordinatorServiceStub:
        return rpc.CoordinatorServiceStub(self.channel(address))

    def tablet(self, address: str) -> rpc.TabletServiceStub:
        stub = self._tablet_stubs.get(address)
        if stub is None or address not in self._channels:
            stub = self._tablet_stubs[address] = rpc.TabletServiceStub(self.channel(address))
        return stub

    async def wait_ready(self, address: str, timeout_s: float | None = None) -> None:
        """Waits until the channel to ``address`` is connected; NETWORK_EXCEPTION after the connect timeout."""
        timeout = self.factory.connect_timeout_s if timeout_s is None else timeout_s
        try:
            await asyncio.wait_for(self.channel(address).channel_ready(), timeout)
        except TimeoutError:
            raise FlussError(f"Cannot connect to {address} within {timeout:g}s", ErrorCode.NETWORK_EXCEPTION) from None

    async def drop(self, address: str) -> None:
        self._tablet_stubs.pop(address, None)
        ch = self._channels.pop(address, None)
        if ch is not None:
            await ch.close()

    async def close(self) -> None:
        channels, self._channels = list(self._channels.values()), {}
        self._tablet_stubs.clear()
        for ch in channels:
            await ch.close()
