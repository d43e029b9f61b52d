"""gRPC channel options and a small pool of ``grpc.aio`` channels keyed by address."""

from __future__ import annotations

import grpc

from fluss.rpc.gen import fluss_api_pb2_grpc as rpc

MAX_MESSAGE_BYTES = 256 * 1024 * 1024

CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.enable_retries", 0),
    ("grpc.keepalive_time_ms", 10_000),
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
    ("grpc.min_reconnect_backoff_ms", 100),
]

SERVER_OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.so_reuseport", 0),
]


class ChannelPool:
    """One aio channel per server address, with typed stubs."""

    def __init__(self) -> None:
        self._channels: dict[str, grpc.aio.Channel] = {}

    def channel(self, address: str) -> grpc.aio.Channel:
        ch = self._channels.get(address)
        if ch is None:
            ch = grpc.aio.insecure_channel(address, options=CHANNEL_OPTIONS)
            self._channels[address] = ch
        return ch

    def admin(self, address: str) -> rpc.AdminServiceStub:
        return rpc.AdminServiceStub(self.channel(address))

    def coordinator(self, address: str) -> rpc.CoordinatorServiceStub:
        return rpc.CoordinatorServiceStub(self.channel(address))

    def tablet(self, address: str) -> rpc.TabletServiceStub:
        return rpc.TabletServiceStub(self.channel(address))

    async def drop(self, address: str) -> None:
        ch = self._channels.pop(address, None)
        if ch is not None:
            await ch.close()

    async def close(self) -> None:
        channels, self._channels = list(self._channels.values()), {}
        for ch in channels:
            await ch.close()
