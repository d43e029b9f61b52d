"""The CoordinatorServer process: serves AdminService; one instance is active, elected through ZooKeeper.

Start-up: connect to ZooKeeper, serve gRPC, then campaign for ``/coordinators/active`` (an ephemeral node).
The winner bumps the coordinator epoch, rebuilds its state from ZooKeeper and starts the event processor;
standbys answer admin calls with INVALID_COORDINATOR_EXCEPTION naming nobody, so clients try the next
bootstrap address. A coordinator that loses its ZooKeeper session exits (a supervisor or the local
cluster restarts it) rather than risk acting on stale state.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal

from fluss.metadata import ServerNode
from fluss.rpc.gen import fluss_api_pb2_grpc as rpc
from fluss.rpc.server import RpcServer, RpcServerBuilder
from fluss.server.config import (
    COORDINATOR_ID,
    ZOOKEEPER_ADDRESS,
    ZOOKEEPER_PATH_ROOT,
    ZOOKEEPER_SESSION_TIMEOUT,
    ServerConfig,
)
from fluss.server.coordinator.context import CoordinatorContext
from fluss.server.coordinator.notifier import TabletNotifier
from fluss.server.coordinator.processor import CoordinatorEventProcessor
from fluss.server.coordinator.service import AdminServicer, CoordinatorServicer
from fluss.server.diagnostics import install_dump_on_sigusr1
from fluss.server.dynamic_config import DynamicConfigWatcher
from fluss.server.metrics.common import ServerMetrics
from fluss.server.metrics.coordinator import CoordinatorMetrics
from fluss.server.security.server_security import ServerSecurity
from fluss.server.zk.client import SessionState, ZooKeeperClient
from fluss.server.zk.data import CoordinatorRegistration

log = logging.getLogger(__name__)


class CoordinatorServer:
    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.server_id = int(config.get(COORDINATOR_ID, "0"))
        self.security = ServerSecurity.from_config(config)
        host, port = config.internal_endpoint()
        self.endpoints = config.advertised_endpoints()
        self.node = ServerNode(self.server_id, host, port, "CoordinatorServer",
                               endpoints=tuple(sorted(self.endpoints.items())))
        self.zk = ZooKeeperClient(config.require(ZOOKEEPER_ADDRESS), config.get(ZOOKEEPER_PATH_ROOT),
                                  config.get_duration_ms(ZOOKEEPER_SESSION_TIMEOUT) / 1000)
        self.metrics = ServerMetrics("coordinator", config.as_dict(), self.server_id, config.bind_address()[0])
        self.coordinator_metrics = CoordinatorMetrics(self.metrics.registry, lambda: self.processor)
        self.dynamic = DynamicConfigWatcher(self.zk, config)
        self.processor: CoordinatorEventProcessor | None = None
        self.notifier: TabletNotifier | None = None
        self._grpc: RpcServer | None = None
        self._stopped = asyncio.Event()
        self._closing = False

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._stopped.set)
        install_dump_on_sigusr1(loop)
        await asyncio.to_thread(self.zk.start)
        await self.dynamic.load()  # the cluster's dynamic options, before the processor reads any option
        self.dynamic.start(loop)
        self.zk.on_session_change(self._on_zk_state)
        self.zk.on_session_change(self.metrics.zookeeper_state_changed)
        metrics_port = self.metrics.start().get("prometheus")
        if metrics_port:
            self.node = self.node.with_metrics_port(metrics_port)
        await asyncio.to_thread(self.security.start, self.zk)
        builder = (RpcServerBuilder(self.config.bind_listeners(), stats=self.metrics.request_stats)
                   .add_service(rpc.add_AdminServiceServicer_to_server, AdminServicer(self))
                   .add_service(rpc.add_CoordinatorServiceServicer_to_server, CoordinatorServicer(self)))
        self._grpc = self.security.install(builder, self._table_path_of).build()
        await self._grpc.start()
        log.info("coordinator %d listening on %s", self.server_id, ", ".join(map(str, self._grpc.listeners)))
        campaign = asyncio.create_task(self._campaign())
        await self._stopped.wait()
        campaign.cancel()
        await self.shutdown()

    def _table_path_of(self, table_id: int):
        info = self.processor.ctx.tables_by_id.get(table_id) if self.processor else None
        return info.table_path if info is not None else None

    async def _campaign(self) -> None:
        """Waits until this server holds /coordinators/active, then becomes the active coordinator."""
        candidate = CoordinatorRegistration(self.server_id, self.node.host, self.node.port, -1, endpoints=self.endpoints)
        while not await asyncio.to_thread(self.zk.campaign_once, candidate):
            pass
        epoch = await asyncio.to_thread(self.zk.bump_coordinator_epoch)
        await asyncio.to_thread(self.zk.publish_active_coordinator,
                                CoordinatorRegistration(self.server_id, self.node.host, self.node.port, epoch,
                                                        endpoints=self.endpoints))
        ctx = CoordinatorContext(epoch=epoch)
        self.notifier = TabletNotifier(ctx, self.security.internal_channel_factory())
        processor = CoordinatorEventProcessor(self.zk, self.config, ctx, self.notifier,
                                              self.coordinator_metrics.event_done, dynamic=self.dynamic)
        await processor.start()
        self.processor = processor
        log.info("coordinator %d is active with epoch %d", self.server_id, epoch)

    def _on_zk_state(self, state: SessionState) -> None:
        if state is SessionState.LOST and not self._closing:
            log.error("coordinator %d lost its ZooKeeper session; exiting", self.server_id)
            os._exit(3)

    async def shutdown(self) -> None:
        self._closing = True
        self.security.stop()
        if self.processor:
            await self.processor.stop()
        if self.notifier:
            await self.notifier.close()
        if self._grpc:
            await self._grpc.stop(grace=1)
        try:
            await asyncio.wait_for(asyncio.to_thread(self.zk.close), 5)
        except TimeoutError:
            log.warning("ZooKeeper client did not close in time")
        self.metrics.close()
        log.info("coordinator %d stopped", self.server_id)
