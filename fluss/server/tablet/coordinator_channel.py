"""How a tablet server reaches the active coordinator: its address comes from ``/coordinators/active`` in
ZooKeeper, re-read whenever a call fails (the coordinator may have failed over)."""

from __future__ import annotations

import asyncio

import grpc

from fluss.errors import ErrorCode, FlussError
from fluss.rpc.channels import ChannelFactory, ChannelPool
from fluss.rpc.errors import raise_for_error
from fluss.server.zk.client import ZooKeeperClient


class CoordinatorChannel:
    def __init__(self, zk: ZooKeeperClient, channels: ChannelFactory | None = None) -> None:
        self._zk = zk
        self._channels = ChannelPool(channels)
        self._address: str | None = None

    async def _resolve(self) -> str:
        active = await asyncio.to_thread(self._zk.get_active_coordinator)
        if active is None:
            raise FlussError("No active coordinator is registered", ErrorCode.NETWORK_EXCEPTION)
        return f"{active.host}:{active.port}"

    async def call(self, method: str, request, timeout_s: float = 10.0):
        """Calls a CoordinatorService method on the active coordinator; raises FlussError on any failure."""
        if self._address is None:
            self._address = await self._resolve()
        stub = self._channels.coordinator(self._address)
        try:
            resp = await getattr(stub, method)(request, timeout=timeout_s)
        except grpc.aio.AioRpcError as e:
            self._address = None
            raise FlussError(f"{method} to the coordinator failed: {e.code().name}", ErrorCode.NETWORK_EXCEPTION) from None
        if resp.error.code == ErrorCode.INVALID_COORDINATOR_EXCEPTION:
            self._address = None
        raise_for_error(resp.error)
        return resp

    async def close(self) -> None:
        await self._channels.close()
