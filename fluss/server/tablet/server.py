"""The TabletServer process: hosts bucket replicas and serves the TabletService.

Start-up: open the data directory, serve gRPC, then register the ephemeral ``/tabletservers/ids/{id}`` node
(the coordinator reacts by sending the replicas this server hosts). Shutdown closes every log cleanly and
removes the registration.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import threading
import time
from pathlib import Path

from fluss import fs
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.rpc.gen import fluss_api_pb2_grpc as rpc
from fluss.rpc.server import RpcServer, RpcServerBuilder
from fluss.server.config import (
    DATA_DIR,
    HIGH_WATERMARK_CHECKPOINT_INTERVAL,
    KV_SNAPSHOT_INTERVAL,
    KV_SNAPSHOT_NUM_RETAINED,
    LOG_INDEX_INTERVAL_SIZE,
    LOG_RETENTION_CHECK_INTERVAL,
    LOG_SEGMENT_FILE_SIZE,
    MAX_REQUEST_SIZE,
    METRICS_BUCKET_LEVEL_MAX_BUCKETS,
    MIN_ISR,
    REMOTE_DATA_DIR,
    REMOTE_LOG_DATA_TRANSFER_THREAD_NUM,
    REMOTE_LOG_INDEX_FILE_CACHE_SIZE,
    REMOTE_LOG_MANAGER_THREAD_POOL_SIZE,
    REMOTE_LOG_TASK_INTERVAL,
    REPLICA_CATCH_UP_THROTTLE,
    REPLICA_FETCH_WAIT_MAX_TIME,
    REPLICA_MAX_LAG_TIME,
    TABLET_SERVER_ID,
    ZOOKEEPER_ADDRESS,
    ZOOKEEPER_PATH_ROOT,
    ZOOKEEPER_SESSION_TIMEOUT,
    ServerConfig,
)
from fluss.server.diagnostics import install_dump_on_sigusr1
from fluss.server.dynamic_config import DynamicConfigWatcher
from fluss.server.log.remote.manager import RemoteLogManager
from fluss.server.log.remote.storage import RemoteLogStorage
from fluss.server.metrics.common import ServerMetrics
from fluss.server.metrics.tablet import TabletServerMetrics
from fluss.server.replica.fetcher import ReplicaFetcherManager
from fluss.server.replica.manager import ReplicaManager
from fluss.server.replica.throttle import limiter_for
from fluss.server.security.server_security import ServerSecurity
from fluss.server.tablet.control_checks import ControlRequestChecker
from fluss.server.tablet.coordinator_channel import CoordinatorChannel
from fluss.server.tablet.remote_log_committer import CoordinatorManifestCommitter
from fluss.server.tablet.service import TabletServicer
from fluss.server.zk.client import SessionState, ZooKeeperClient

log = logging.getLogger(__name__)


class TabletServer:
    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.server_id = config.get_int(TABLET_SERVER_ID)
        self.rack = config.rack()
        self.security = ServerSecurity.from_config(config)
        self.host, self.port = config.internal_endpoint()
        self.endpoints = config.advertised_endpoints()
        self.data_dir = Path(config.require(DATA_DIR))
        self.zk = ZooKeeperClient(config.require(ZOOKEEPER_ADDRESS), config.get(ZOOKEEPER_PATH_ROOT),
                                  config.get_duration_ms(ZOOKEEPER_SESSION_TIMEOUT) / 1000)
        self.metrics = ServerMetrics("tabletserver", config.as_dict(), self.server_id, config.bind_address()[0])
        self.metrics_port = 0
        server_metrics = TabletServerMetrics(self.metrics.registry, config.get_int(METRICS_BUCKET_LEVEL_MAX_BUCKETS))
        self.replicas = ReplicaManager(self.server_id, self.data_dir, config.get_bytes(LOG_SEGMENT_FILE_SIZE),
                                       config.get_bytes(LOG_INDEX_INTERVAL_SIZE), config.get_int(MIN_ISR),
                                       config.get_duration_ms(REPLICA_MAX_LAG_TIME), server_metrics)
        self._apply_throttle()
        self.dynamic = DynamicConfigWatcher(self.zk, config)
        self.dynamic.on_change({REPLICA_CATCH_UP_THROTTLE}, lambda _keys: self._apply_throttle())
        self.coordinator = CoordinatorChannel(self.zk, self.security.internal_channel_factory())
        self._grpc: RpcServer | None = None
        self._stopped = asyncio.Event()
        self._background: list[asyncio.Task] = []
        self._closing = False
        self._session_lost = False
        self.server_epoch = -1  # the creation zxid of this server's registration (see ReportStorageState & co.)

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._stopped.set)
        install_dump_on_sigusr1(loop)
        log.info("tablet server %d starting (pid %d, %.2f s of CPU since the process started)", self.server_id,
                 os.getpid(), time.process_time())
        self.data_dir.mkdir(parents=True, exist_ok=True)
        await asyncio.to_thread(self.zk.start)
        await self.dynamic.load()  # the cluster's dynamic options, before any component reads its options
        self.dynamic.start(loop)
        self.zk.on_session_change(self._on_zk_state)
        self.zk.on_session_change(self.metrics.zookeeper_state_changed)
        self.metrics_port = self.metrics.start().get("prometheus") or 0
        self.replicas.remote_data_dir = self.config.get(REMOTE_DATA_DIR) or ""
        fs.configure(self.config.as_dict())  # s3.* options for remote.data.dir
        self.replicas.remote_log = self._remote_log_manager()
        self.replicas.kv_snapshot_of = self._latest_kv_snapshot
        self.replicas.followers = ReplicaFetcherManager(
            self.replicas, self._address_of, self.config.get_duration_ms(REPLICA_FETCH_WAIT_MAX_TIME),
            channels=self.security.internal_channel_factory())
        self.replicas.control_checks = ControlRequestChecker(self.zk, self.server_id)
        self.replicas.adjust_isr = self._adjust_isr
        self.replicas.disk.report = self._report_storage_state
        await asyncio.to_thread(self.security.start, self.zk)
        builder = RpcServerBuilder(self.config.bind_listeners(), stats=self.metrics.request_stats).add_service(
            rpc.add_TabletServiceServicer_to_server,
            TabletServicer(self.replicas, self.config.get_bytes(MAX_REQUEST_SIZE)))
        self._grpc = self.security.install(builder, self._table_path_of).build()
        await self._grpc.start()
        self.server_epoch = await asyncio.to_thread(self.zk.register_tablet_server, self.server_id, self.host,
                                                    self.port, metrics_port=self.metrics_port,
                                                    endpoints=self.endpoints, rack=self.rack)
        log.info("tablet server %d serving on %s:%d, data in %s (registration epoch %d)", self.server_id, self.host,
                 self.port, self.data_dir, self.server_epoch)
        self._background.append(asyncio.create_task(self._retention_loop()))
        self._background.append(asyncio.create_task(self._checkpoint_loop()))
        self._background.append(asyncio.create_task(self._isr_loop()))
        self._background.append(asyncio.create_task(self._kv_snapshot_loop()))
        if self.replicas.remote_data_dir:
            self._background.append(asyncio.create_task(self._remote_log_loop()))
        await self._stopped.wait()
        if self.zk.connected:
            try:
                await asyncio.wait_for(self._controlled_shutdown(), 12)
            except Exception:  # noqa: BLE001 - stop anyway; the coordinator will notice the session end
                log.warning("controlled shutdown did not complete", exc_info=True)
        await self.shutdown()

    def _apply_throttle(self) -> None:
        """``log.replica.catch-up-throttle`` (dynamic): a new rate replaces the limiter, unset removes it."""
        rate = self.config.get_bytes(REPLICA_CATCH_UP_THROTTLE) if self.config.get(REPLICA_CATCH_UP_THROTTLE) else None
        self.replicas.catch_up_throttle = limiter_for(self.replicas.catch_up_throttle, rate)

    def _table_path_of(self, table_id: int):
        info = self.replicas.tables.get(table_id)
        return info.table_path if info is not None else None

    def _address_of(self, server_id: int) -> str | None:
        reg = self.zk.get_tablet_servers().get(server_id)
        return f"{reg.host}:{reg.port}" if reg else None

    async def _retention_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self.dynamic.wait_interval(LOG_RETENTION_CHECK_INTERVAL, loop.time())
            deleted = await asyncio.to_thread(self.replicas.delete_expired_segments)
            if deleted:
                log.info("retention deleted %d expired segment(s)", deleted)

    async def _checkpoint_loop(self) -> None:
        """Every ``log.replica.high-watermark.checkpoint-interval``, each log's checkpoint (high watermark, written
        point, boot id) is written, so a restart after a crash of the process re-checks only what was appended
        since, not the whole active segment (see ``LogTablet.checkpoint``)."""
        loop = asyncio.get_running_loop()
        while True:
            await self.dynamic.wait_interval(HIGH_WATERMARK_CHECKPOINT_INTERVAL, loop.time())
            try:
                await asyncio.to_thread(self.replicas.checkpoint_logs)
            except Exception as e:  # noqa: BLE001 - try again next round
                if self.replicas.disk.observe(e) is e:
                    log.exception("log checkpoint round failed")

    def _remote_log_manager(self) -> RemoteLogManager | None:
        """The tiered log, when ``remote.data.dir`` is set and ``remote.log.task-interval-duration`` is not 0."""
        remote = self.replicas.remote_data_dir
        if not remote or self.config.get_duration_ms(REMOTE_LOG_TASK_INTERVAL) <= 0:
            return None
        return RemoteLogManager(RemoteLogStorage(remote), self.replicas,
                                CoordinatorManifestCommitter(self.coordinator, self.server_id,
                                                              lambda: self.server_epoch),
                                thread_pool_size=self.config.get_int(REMOTE_LOG_MANAGER_THREAD_POOL_SIZE),
                                transfer_threads=self.config.get_int(REMOTE_LOG_DATA_TRANSFER_THREAD_NUM),
                                index_cache_bytes=self.config.get_bytes(REMOTE_LOG_INDEX_FILE_CACHE_SIZE),
                                metrics=self.replicas.metrics)

    async def _remote_log_loop(self) -> None:
        """A round per ``remote.log.task-interval-duration`` (dynamic; 0 pauses the rounds, and a server started
        with 0 gets its tiered log when the option becomes positive)."""
        loop = asyncio.get_running_loop()
        while True:
            await self.dynamic.wait_interval(REMOTE_LOG_TASK_INTERVAL, loop.time())
            if self.config.get_duration_ms(REMOTE_LOG_TASK_INTERVAL) <= 0:
                continue
            if self.replicas.remote_log is None:
                self.replicas.remote_log = self._remote_log_manager()
                log.info("tiered log enabled (remote.log.task-interval-duration = %s)",
                         self.config.get(REMOTE_LOG_TASK_INTERVAL))
            try:
                stats = await self.replicas.remote_log.run_once()
                if stats.uploaded_segments or stats.expired_segments or stats.deleted_local_segments:
                    log.info("remote log round: %d segment(s) uploaded (%d bytes), %d expired, %d local deleted",
                             stats.uploaded_segments, stats.uploaded_bytes, stats.expired_segments,
                             stats.deleted_local_segments)
            except Exception:  # noqa: BLE001 - try again next round
                log.exception("remote log round failed")

    async def _isr_loop(self) -> None:
        interval = max(0.1, self.replicas.max_lag_ms / 2000)
        while True:
            await asyncio.sleep(interval)
            try:
                await self.replicas.maintain_isr(self._adjust_isr)
            except Exception:  # noqa: BLE001 - keep maintaining
                log.exception("ISR maintenance failed")

    async def _kv_snapshot_loop(self) -> None:
        retain = self.config.get_int(KV_SNAPSHOT_NUM_RETAINED)
        loop = asyncio.get_running_loop()
        while True:
            await self.dynamic.wait_interval(KV_SNAPSHOT_INTERVAL, loop.time())
            try:
                await self.replicas.snapshot_kv(retain, self._commit_kv_snapshot)
            except Exception:  # noqa: BLE001 - try again next round
                log.exception("KV snapshot round failed")

    async def _commit_kv_snapshot(self, replica, handle) -> None:
        tb = replica.bucket
        await self.coordinator.call("CommitKvSnapshot", pb.CommitKvSnapshotRequest(
            server_id=self.server_id, server_epoch=self.server_epoch, leader_epoch=replica.leader_epoch,
            snapshot=pb.KvSnapshotPb(
                table_id=tb.table_id, partition_id=tb.partition_id_or_none_value, bucket_id=tb.bucket_id,
                snapshot_id=handle.snapshot_id, log_offset=handle.log_offset,
                manifest_path=self.replicas.kv_remote_dir(tb), create_time=handle.created_ms)))
        replica.kv_snapshot_offset = max(replica.kv_snapshot_offset, handle.log_offset)

    async def _latest_kv_snapshot(self, tb):
        """The latest KV snapshot the coordinator recorded for a bucket (None if there is none)."""
        from fluss.server.kv.snapshot import list_snapshots

        for attempt in range(20):
            try:
                resp = await self.coordinator.call("GetKvSnapshot", pb.GetKvSnapshotRequest(
                    table_id=tb.table_id, partition_id=tb.partition_id_or_none_value, bucket_id=tb.bucket_id))
                break
            except Exception:  # noqa: BLE001 - coordinator failing over: wait a little
                await asyncio.sleep(0.2 * (attempt + 1))
        else:
            return None
        if not resp.found:
            return None
        wanted = resp.snapshot.snapshot_id
        handles = await asyncio.to_thread(list_snapshots, resp.snapshot.manifest_path)
        return next((h for h in handles if h.snapshot_id == wanted), None)

    async def _adjust_isr(self, replica, isr: list[int]):
        tb = replica.bucket
        resp = await self.coordinator.call("AdjustIsr", pb.AdjustIsrRequest(
            server_id=self.server_id, server_epoch=self.server_epoch, bucket=pb.LeaderAndIsrPb(
            table_id=tb.table_id, partition_id=tb.partition_id_or_none_value, bucket_id=tb.bucket_id,
            leader=self.server_id, leader_epoch=replica.leader_epoch, isr=isr, bucket_epoch=replica.bucket_epoch)))
        return resp.bucket

    async def _report_storage_state(self, writable: bool, reason: str) -> None:
        resp = await self.coordinator.call("ReportStorageState", pb.ReportStorageStateRequest(
            server_id=self.server_id, server_epoch=self.server_epoch, writable=writable, reason=reason))
        if not writable:
            log.info("coordinator moved leaderships away: %d bucket(s) have no other in-sync replica",
                     resp.remaining_leaders)

    async def _controlled_shutdown(self, timeout_s: float = 10.0) -> None:
        """Asks the coordinator to move this server's leaderships away before it stops."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        while asyncio.get_running_loop().time() < deadline:
            try:
                resp = await self.coordinator.call("ControlledShutdown", pb.ControlledShutdownRequest(
                    server_id=self.server_id, server_epoch=self.server_epoch), 5)
                if resp.remaining_leaders == 0:
                    log.info("controlled shutdown of tablet server %d done", self.server_id)
                    return
                log.info("controlled shutdown: %d bucket(s) have no other in-sync replica", resp.remaining_leaders)
                return
            except Exception as e:  # noqa: BLE001 - the coordinator may be failing over
                if await asyncio.to_thread(self.zk.get_active_coordinator) is None:
                    log.info("no active coordinator: stopping without controlled shutdown")
                    return
                log.info("controlled shutdown request failed (%s); retrying", e)
                await asyncio.sleep(0.5)

    def _on_zk_state(self, state: SessionState) -> None:
        """After a lost session (e.g. a long pause) the ZooKeeper client opens a new one: register again on it.

        The coordinator has meanwhile treated this server as gone (moved its leaderships, shrunk ISRs); the new
        registration makes it send this server its replicas again, which then catch up as followers.
        """
        if state is SessionState.LOST and not self._closing:
            log.warning("tablet server %d lost its ZooKeeper session; it will register again", self.server_id)
            self._session_lost = True
        elif state is SessionState.CONNECTED and self._session_lost and not self._closing:
            self._session_lost = False
            threading.Thread(target=self._register_again, name="zk-reregister", daemon=True).start()

    def _register_again(self) -> None:
        try:
            self.server_epoch = self.zk.register_tablet_server(self.server_id, self.host, self.port,
                                                               metrics_port=self.metrics_port,
                                                               endpoints=self.endpoints, rack=self.rack)
            log.info("tablet server %d registered again (registration epoch %d)", self.server_id, self.server_epoch)
        except Exception:  # noqa: BLE001 - without a registration this server is useless: stop it
            log.exception("tablet server %d could not register again; exiting", self.server_id)
            os._exit(3)

    async def shutdown(self) -> None:
        self._closing = True
        self.security.stop()
        await self.coordinator.close()
        for task in self._background:
            task.cancel()
        if self.replicas.followers:
            await self.replicas.followers.close()
        if self._grpc:
            await self._grpc.stop(grace=1)
        await asyncio.to_thread(self.replicas.close)
        if self.replicas.remote_log is not None:
            self.replicas.remote_log.close()
        try:
            await asyncio.wait_for(asyncio.to_thread(self.zk.close), 5)
        except TimeoutError:
            log.warning("ZooKeeper client did not close in time")
        self.metrics.close()
        log.info("tablet server %d stopped", self.server_id)
