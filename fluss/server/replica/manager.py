"""ReplicaManager: every bucket replica a tablet server hosts, and the produce / fetch / list-offsets paths.

Leadership comes from the coordinator (``apply_leader_and_isr``, fenced by coordinator epoch and leader
epoch). Disk work runs in worker threads, never on the event loop: log work in asyncio's default pool, RocksDB work
(PutKv's merge, flushes after the high watermark, lookups of more than a few keys, scans) on the server's own KV
executor (``kv_executor``, ``KV_THREADS`` threads), so a large KV flush delays neither other RPCs nor log I/O.
Fetches long-poll: a fetch that finds fewer than ``min_bytes`` waits (up to ``max_wait_ms``) for new data instead
of being polled by the client; a write wakes only the fetches of its bucket (``_wake_fetches``).
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pyarrow as pa

from fluss.errors import ErrorCode, FlussError
from fluss.metadata import TableBucket, TableInfo
from fluss.nested_values import check_stored_nested
from fluss.record.log_batch import HEADER_SIZE, iter_batches, project_batch, read_header, reformat_batch
from fluss.record.log_format import ARROW
from fluss.rpc.errors import error_info
from fluss.rpc.fetch_wire import Records
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.server.kv.snapshot import SnapshotHandle
from fluss.server.log.loop_work import SMALL_LOG_WORK_BYTES, run_log_work
from fluss.server.log.tablet import AppendInfo
from fluss.server.metrics.tablet import TabletServerMetrics
from fluss.server.replica.kv_replica import KvReplica
from fluss.server.replica.replica import Replica, close_kv_quietly
from fluss.server.tablet.disk_health import DiskHealth

log = logging.getLogger(__name__)

_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-$=]")
SEQUENCE_GAP_WAIT_S = 2.0  # how long a produce request waits for the same writer's earlier batches
KV_THREADS = 4  # threads of the KV executor (RocksDB work of every primary-key bucket this server leads)
STOP_CHECK_WAIT_S = 5.0  # longest a write waits for the ZooKeeper check of a StopReplica of its bucket
KV_RECOVERY_RETRY_S = 5.0  # how often a leader retries a failed KV recovery
#: threads that create the new replicas of a NotifyLeaderAndIsr concurrently, and then open the KV states of its new
#: primary-key leaders: a new leader's first disk work is an fsynced leader-epoch checkpoint (file and directory),
#: ~5-15 ms of waiting on the disk, and a new RocksDB ~30 ms (its files and their fsyncs); fsyncs issued together
#: share the file system's journal commits
CREATE_THREADS = 8


@dataclass(frozen=True)
class KvOpen:
    """The KV state a new leader of a primary-key bucket has to open (``ReplicaManager._open_kv``)."""

    replica: Replica
    leader_epoch: int
    no_snapshot: bool


@dataclass
class BucketFetch:
    bucket: TableBucket
    offset: int
    max_bytes: int
    projection: list[int] | None
    as_arrow: bool = False  # row-format batches re-encoded as ARROW (clients that only read Arrow)


class ReplicaManager:
    def __init__(self, server_id: int, data_dir: Path, segment_bytes: int, index_interval_bytes: int,
                 min_isr: int = 1, max_lag_ms: int = 30_000, metrics: TabletServerMetrics | None = None) -> None:
        self.server_id = server_id
        self.min_isr = min_isr
        self.max_lag_ms = max_lag_ms
        self.data_dir = data_dir
        self.segment_bytes = segment_bytes
        self.index_interval_bytes = index_interval_bytes
        self.replicas: dict[TableBucket, Replica] = {}
        self.tables: dict[int, TableInfo] = {}
        self.partition_names: dict[int, str] = {}
        self.partition_bucket_counts: dict[int, int] = {}  # a partition's own bucket count (fixed at its creation)
        self.coordinator_epoch = 0
        self._data_arrived = asyncio.Condition()
        # delayed fetches by bucket: a write wakes only the fetches of its bucket (``_wake_fetches``)
        self._fetch_waiters: dict[TableBucket, set[asyncio.Future]] = {}
        self.followers = None  # set by the tablet server: the ReplicaFetcherManager
        self.remote_data_dir = ""  # set by the tablet server (remote.data.dir): KV snapshots go below it
        self.kv_snapshot_of = None  # set by the tablet server: async (TableBucket) -> SnapshotHandle | None
        self.control_checks = None  # set by the tablet server: a ControlRequestChecker (ZooKeeper's view)
        self.adjust_isr = None  # set by the tablet server: async (replica, isr) -> LeaderAndIsrPb (AdjustIsr)
        self.remote_log = None  # set by the tablet server when the log is tiered: RemoteLogManager
        self.catch_up_throttle = None  # set by the tablet server: a ByteRateLimiter (log.replica.catch-up-throttle)
        self._background: set[asyncio.Task] = set()
        self._kv_locks: dict[TableBucket, asyncio.Lock] = {}
        self.kv_executor = ThreadPoolExecutor(max_workers=KV_THREADS, thread_name_prefix="kv")
        self._loop: asyncio.AbstractEventLoop | None = None
        self.metrics = metrics or TabletServerMetrics()
        self.metrics.attach(self)
        self._isr_tasks: dict[TableBucket, asyncio.Task] = {}
        self.disk = DiskHealth(server_id, data_dir)  # the tablet server sets disk.report (ReportStorageState)
        self._kv_retries: dict[TableBucket, asyncio.Task] = {}
        self._stop_checks: dict[TableBucket, list[asyncio.Event]] = {}  # StopReplica requests being checked
        self._creating: dict[TableBucket, asyncio.Future] = {}  # new replicas being created (_start_creating)
        self._kv_opening: dict[TableBucket, tuple[int, asyncio.Future]] = {}  # KV opens by leader epoch
        self._create_pool = ThreadPoolExecutor(max_workers=CREATE_THREADS, thread_name_prefix="replica-create")

    async def _on_kv(self, fn, *args):
        """Runs RocksDB work on the KV executor."""
        return await asyncio.get_running_loop().run_in_executor(self.kv_executor, fn, *args)

    def _kv_flushed_threadsafe(self) -> None:
        """A KV flush finished (on the KV executor): wake the PutKv acknowledgements waiting for it."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            loop.call_soon_threadsafe(lambda: asyncio.ensure_future(self._notify_data()))
        except RuntimeError:  # the loop closed meanwhile: the server is stopping
            pass

    # ------------------------------------------------------------ leadership

    async def _check_coordinator_epoch(self, epoch: int) -> None:
        """A request of a deposed coordinator (lower epoch) is refused; so is an epoch ZooKeeper does not hold."""
        if epoch < self.coordinator_epoch:
            raise FlussError(f"Request from a stale coordinator (epoch {epoch} < {self.coordinator_epoch})",
                             ErrorCode.INVALID_COORDINATOR_EXCEPTION)
        if self.control_checks is not None:
            await self.control_checks.check_coordinator_epoch(epoch)
        self.coordinator_epoch = epoch

    def bucket_dir(self, tb: TableBucket) -> Path:
        info = self.tables[tb.table_id]
        table_dir = self.data_dir / _UNSAFE.sub("_", info.table_path.database_name) / \
            f"{_UNSAFE.sub('_', info.table_path.table_name)}-{tb.table_id}"
        if tb.partition_id is not None:
            name = _UNSAFE.sub("_", self.partition_names.get(tb.partition_id, "p"))
            table_dir = table_dir / f"{name}-p{tb.partition_id}"
        return table_dir / f"bucket-{tb.bucket_id}"

    async def apply_leader_and_isr(self, req: pb.NotifyLeaderAndIsrRequest) -> list[pb.NotifyLeaderAndIsrResultPb]:
        """Applies the buckets of a notification that ZooKeeper confirms (``control_checks``); the others are
        answered with why they were refused."""
        await self._check_coordinator_epoch(req.coordinator_epoch)
        if self.control_checks is not None:
            # the buckets to lead whose replica is new or still empty (also when the notification is sent again)
            new_leaders = frozenset(tb for b in req.buckets if b.leader == self.server_id and (
                (replica := self.replicas.get(tb := TableBucket(b.table_id, b.bucket_id, b.partition_id))) is None
                or replica.log.log_end_offset == 0))
            checked = await self.control_checks.leader_and_isr(req, self.tables, new_leaders)
            tables, names, refused = checked.tables, checked.partition_names, checked.refused
            counts, nothing_remote = checked.partition_bucket_counts, checked.nothing_remote
            confirmed = {TableBucket(b.table_id, b.bucket_id, b.partition_id): b for b in checked.buckets}
        else:  # in-process tests without ZooKeeper
            tables = {t.table_id: TableInfo.from_pb(t) for t in req.table_infos}
            names = {p.partition_id: p.partition_name for p in req.partition_infos}
            counts = {p.partition_id: p.bucket_count for p in req.partition_infos if p.bucket_count > 0}
            refused, nothing_remote = {}, set()
            confirmed = {TableBucket(b.table_id, b.bucket_id, b.partition_id): b for b in req.buckets}
        for info in tables.values():
            known = self.tables.get(info.table_id)
            self.tables[info.table_id] = info
            if known is not None and (known.get_properties() != info.get_properties()
                                      or known.schema_id != info.schema_id):
                self._table_altered(info)  # ALTER TABLE: the replicas take the new options (and schema) live
        self.partition_names.update(names)
        self.partition_bucket_counts.update(counts)
        self._start_creating([(tb, b) for tb, b in confirmed.items() if tb not in refused])
        results = []
        kv_opens: list[tuple[int, KvOpen]] = []  # by the index of the bucket's result
        for b in req.buckets:
            tb = TableBucket(b.table_id, b.bucket_id, b.partition_id)
            try:
                if tb in refused:
                    raise refused[tb]
                kv_open = await self._apply_one(tb, confirmed[tb], tb in nothing_remote)
                if kv_open is not None:
                    kv_opens.append((len(results), kv_open))
                err = pb.ErrorInfo(code=0)
            except Exception as e:  # noqa: BLE001 - reported per bucket (an unexpected one logged with its stack)
                if tb in refused:
                    log.warning("refused leader/isr for %s: %s", tb, e)
                err = error_info(e)
            results.append(pb.NotifyLeaderAndIsrResultPb(table_id=b.table_id, partition_id=b.partition_id,
                                                          bucket_id=b.bucket_id, error=err))
        if kv_opens:  # the new leaders' KV states, opened together on the creation threads
            outcomes = await asyncio.gather(
                *(self._open_kv_once(o.replica, o.leader_epoch, o.no_snapshot) for _, o in kv_opens),
                return_exceptions=True)
            for (i, _), outcome in zip(kv_opens, outcomes, strict=True):
                if isinstance(outcome, BaseException):
                    results[i].error.CopyFrom(error_info(outcome))
            await self._notify_data()
        return results

    def _table_altered(self, info: TableInfo) -> None:
        """An ALTER TABLE reached this server: every replica of the table takes the new settings now."""
        for tb, replica in list(self.replicas.items()):
            if tb.table_id == info.table_id:
                replica.update_table(info)
        log.info("table %s (id %d) altered: replicas updated", info.table_path, info.table_id)

    def _start_creating(self, buckets: list[tuple[TableBucket, pb.LeaderAndIsrPb]]) -> None:
        """Starts creating, all at once on the ``CREATE_THREADS`` threads, the replicas of ``buckets`` this server
        hosts and has not got yet (a CREATE TABLE of many buckets). A new leader is made leader in the same thread,
        before its replica is published: its fsynced leader-epoch checkpoint is written there, not one bucket at a
        time on the event loop; ``_apply_one`` still waits for it, so it is on disk before the server answers. A
        second notification for the same bucket meanwhile waits for the same creation instead of opening the log
        twice."""
        for tb, b in buckets:
            info = self.tables.get(tb.table_id)
            if self.server_id not in b.replicas or tb in self.replicas or tb in self._creating or info is None:
                continue
            bucket_count = (self.partition_bucket_counts.get(tb.partition_id, info.num_buckets)
                            if tb.partition_id is not None else info.num_buckets)
            lead = (b.leader_epoch, b.bucket_epoch, list(b.replicas), list(b.isr)) if b.leader == self.server_id \
                else None
            self._creating[tb] = asyncio.ensure_future(self._create(tb, info, self.bucket_dir(tb), bucket_count, lead))

    async def _create(self, tb: TableBucket, info: TableInfo, directory: Path, bucket_count: int,
                      lead: tuple[int, int, list[int], list[int]] | None) -> Replica:
        """Creates the replica on the creation threads and publishes it (in ``replicas``) before it completes."""
        try:
            replica = await asyncio.get_running_loop().run_in_executor(
                self._create_pool, self._new_replica, tb, info, directory, bucket_count, lead)
            self.replicas.setdefault(tb, replica)
            return self.replicas[tb]
        finally:
            self._creating.pop(tb, None)

    def _new_replica(self, tb: TableBucket, info: TableInfo, directory: Path, bucket_count: int,
                     lead: tuple[int, int, list[int], list[int]] | None) -> Replica:
        """Opens a new replica (in a worker thread) and, given ``lead``, makes it the leader of that term."""
        replica = Replica(tb, info, directory, self.server_id, self.segment_bytes, self.index_interval_bytes,
                          bucket_count)
        replica.log.flush_listener = self.metrics.log_flushed
        if lead is not None:
            try:
                replica.make_leader(*lead)
            except BaseException:
                replica.close()
                raise
        return replica

    async def _replica_for(self, tb: TableBucket, b: pb.LeaderAndIsrPb) -> Replica:
        """The bucket's replica: the one hosted, or the one being created (created now if neither)."""
        replica = self.replicas.get(tb)
        if replica is not None:
            return replica
        if tb not in self._creating:
            self._start_creating([(tb, b)])
        if tb not in self._creating:
            raise FlussError(f"NotifyLeaderAndIsr for {tb} carries no definition of table {tb.table_id}",
                             ErrorCode.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION)
        return await asyncio.shield(self._creating[tb])

    async def _apply_one(self, tb: TableBucket, b: pb.LeaderAndIsrPb, nothing_remote: bool = False
                         ) -> KvOpen | None:
        """Applies one bucket's leadership; returns the KV state a new leader of a primary-key bucket still has to
        open (the caller opens those of a notification together).

        ``nothing_remote``: ZooKeeper shows the bucket in its first leader term with no remote log manifest and
        no KV snapshot committed (``ControlRequestChecker``): a new leader of it with an empty local log starts
        with an empty remote log and no snapshot, asking the coordinator for neither."""
        if self.server_id not in b.replicas:
            return None
        replica = await self._replica_for(tb, b)
        if b.leader_epoch < replica.leader_epoch:
            raise FlussError(f"Stale leader epoch {b.leader_epoch} for {tb} (current {replica.leader_epoch})",
                             ErrorCode.FENCED_LEADER_EPOCH_EXCEPTION)
        if b.leader == self.server_id:
            if self.followers:
                self.followers.remove(tb)
            led_before = list(replica.isr) if replica.is_leader else None
            replica.make_leader(b.leader_epoch, b.bucket_epoch, list(b.replicas), list(b.isr))
            if led_before is not None and replica.isr != led_before:  # e.g. the coordinator dropped a dead follower
                self.metrics.isr_changed(led_before, replica.isr)
            nothing_remote = nothing_remote and replica.log.log_end_offset == 0
            if self.remote_log is not None:
                if nothing_remote:
                    self.remote_log.start_empty(replica)
                else:  # load the committed remote log now, not at the first remote read
                    task = asyncio.get_running_loop().create_task(self._load_remote_log(replica))
                    self._background.add(task)
                    task.add_done_callback(self._background.discard)
            await self._notify_data()
            if replica.table.has_primary_key() and replica.kv is None:
                return KvOpen(replica, b.leader_epoch, nothing_remote)
        else:
            kv, replica.kv = replica.kv, None  # a follower has no KV state: closed on the KV executor
            if kv is not None:
                await self._on_kv(close_kv_quietly, kv, tb)
            new_term = replica.make_follower(b.leader, b.leader_epoch, b.bucket_epoch, list(b.replicas), list(b.isr))
            if self.followers and (new_term or not self.followers.is_following(tb)):
                self.followers.add(tb, b.leader)
            await self._notify_data()  # wake acks=all waiters of a former leader
        return None

    async def _open_kv_once(self, replica: Replica, leader_epoch: int, no_snapshot: bool) -> None:
        """``_open_kv``, or, while an open of the same bucket and term runs (a notification sent again before the
        first one was answered), waiting for that one: one RocksDB, opened once."""
        running = self._kv_opening.get(replica.bucket)
        if running is None or running[0] != leader_epoch or running[1].done():
            task = asyncio.ensure_future(self._open_kv(replica, leader_epoch, no_snapshot))
            running = self._kv_opening[replica.bucket] = (leader_epoch, task)
            task.add_done_callback(lambda t, tb=replica.bucket: self._kv_opening.pop(tb, None)
                                   if self._kv_opening.get(tb, (0, None))[1] is t else None)
        await asyncio.shield(running[1])

    async def _load_remote_log(self, replica: Replica) -> None:
        try:
            await self.remote_log.state_of(replica)
        except Exception as e:  # noqa: BLE001 - loaded again on demand (first remote read, next tiering round)
            log.info("loading the remote log of %s failed: %s", replica.bucket, e)

    def kv_remote_dir(self, tb: TableBucket) -> str:
        if not self.remote_data_dir:
            return ""
        local = self.bucket_dir(tb).relative_to(self.data_dir)
        return f"{self.remote_data_dir.rstrip('/')}/kv/{local.as_posix()}"

    async def _open_kv(self, replica: Replica, leader_epoch: int, no_snapshot: bool = False) -> None:
        """Recovers the KV state of a new leader. A failure is logged with its cause, answered to writers and
        readers (KV_STORAGE_EXCEPTION naming it) and retried in the background while this term lasts.
        ``no_snapshot``: ZooKeeper shows no KV snapshot of the bucket (a new one): the coordinator is not asked."""
        loop = self._loop = asyncio.get_running_loop()
        log.info("opening the KV state of %s (leader epoch %d)", replica.bucket, leader_epoch)
        asked: list[SnapshotHandle | None] = []

        def snapshot_of() -> SnapshotHandle | None:
            """Asked by ``KvReplica.open`` only when the local state is missing or unusable: a restart on a
            current local RocksDB neither waits for the coordinator nor lists the remote snapshots."""
            if self.kv_snapshot_of is None or no_snapshot:
                return None
            asked.append(asyncio.run_coroutine_threadsafe(self.kv_snapshot_of(replica.bucket), loop).result())
            return asked[-1]

        try:
            kv = KvReplica(replica, self.kv_remote_dir(replica.bucket), self.kv_executor,
                           self._kv_flushed_threadsafe)
            kv.flush_listener = self.metrics.kv_flushed
            await loop.run_in_executor(self._create_pool, kv.open, snapshot_of)
        except Exception as e:  # noqa: BLE001 - reported below, never swallowed
            replica.kv_failure = e.message if isinstance(e, FlussError) else f"{type(e).__name__}"
            log.error("KV recovery of %s (leader epoch %d) failed; retrying in %.0fs", replica.bucket,
                      leader_epoch, KV_RECOVERY_RETRY_S, exc_info=True)
            self._retry_kv_recovery(replica, leader_epoch)
            raise FlussError(f"The KV state of {replica.name} could not be recovered: {replica.kv_failure}",
                             ErrorCode.KV_STORAGE_EXCEPTION) from None
        replica.kv_failure = None
        if asked:
            self._learn_kv_snapshot_offset(replica, asked[0])
        elif self.kv_snapshot_of is not None and not no_snapshot:  # opened locally: learnt after, off the path
            task = loop.create_task(self._fetch_kv_snapshot_offset(replica))
            self._background.add(task)
            task.add_done_callback(self._background.discard)
        if replica.is_leader and replica.leader_epoch == leader_epoch:
            replica.kv = kv
            kv.request_flush(replica.log.high_watermark)
        else:
            close_kv_quietly(kv, replica.bucket)

    @staticmethod
    def _learn_kv_snapshot_offset(replica: Replica, handle: SnapshotHandle | None) -> None:
        if handle is not None:  # the primary-key bound of remote retention (docs/remote-log.md)
            replica.kv_snapshot_offset = max(replica.kv_snapshot_offset, handle.log_offset)

    async def _fetch_kv_snapshot_offset(self, replica: Replica) -> None:
        try:
            self._learn_kv_snapshot_offset(replica, await self.kv_snapshot_of(replica.bucket))
        except Exception as e:  # noqa: BLE001 - the bound stays conservative (-1 keeps the remote log) until the next snapshot
            log.info("the latest KV snapshot of %s is not known yet: %s", replica.bucket, e)

    def _retry_kv_recovery(self, replica: Replica, leader_epoch: int) -> None:
        if replica.bucket in self._kv_retries and not self._kv_retries[replica.bucket].done():
            return

        async def retry() -> None:
            while True:
                await asyncio.sleep(KV_RECOVERY_RETRY_S)
                if (self.replicas.get(replica.bucket) is not replica or not replica.is_leader
                        or replica.leader_epoch != leader_epoch or replica.kv is not None):
                    return
                try:
                    await self._open_kv(replica, leader_epoch)
                    log.info("KV state of %s recovered on retry", replica.bucket)
                    await self._notify_data()
                    return
                except FlussError:
                    continue  # logged by _open_kv

        self._kv_retries[replica.bucket] = asyncio.create_task(retry(), name=f"kv-recovery-{replica.bucket}")

    async def stop_replicas(self, req: pb.StopReplicaRequest) -> None:
        """Stops (and deletes) replicas of dropped tables and partitions; a bucket ZooKeeper still assigns to
        this server is kept, and the request fails naming it.

        While the request is checked against ZooKeeper, writes to its buckets wait (``_after_stop_checks``): a
        write that arrives after the coordinator's StopReplica is never appended to a dropped table, as it would
        not be without the check. A forged StopReplica delays writes by one ZooKeeper read, nothing more."""
        gate = asyncio.Event()
        buckets = {TableBucket(b.table_id, b.bucket_id, b.partition_id) for b in req.buckets}
        for tb in buckets:
            self._stop_checks.setdefault(tb, []).append(gate)
        try:
            await self._stop_checked_replicas(req)
        finally:
            gate.set()
            for tb in buckets:
                gates = self._stop_checks.get(tb, [])
                if gate in gates:
                    gates.remove(gate)
                if not gates:
                    self._stop_checks.pop(tb, None)

    async def _after_stop_checks(self, request, bucket) -> None:
        """Waits while a StopReplica naming this bucket is being checked (see :meth:`stop_replicas`)."""
        gates = self._stop_checks.get(TableBucket(request.table_id, bucket.bucket_id, bucket.partition_id))
        if gates:
            try:
                await asyncio.wait_for(asyncio.gather(*(g.wait() for g in list(gates))), STOP_CHECK_WAIT_S)
            except TimeoutError:
                pass  # the write goes on; the stop, if confirmed, follows

    async def _stop_checked_replicas(self, req: pb.StopReplicaRequest) -> None:
        await self._check_coordinator_epoch(req.coordinator_epoch)
        refused, moved = (await self.control_checks.stop_replicas(req) if self.control_checks is not None
                          else ({}, set()))
        stopped: dict[int, TableInfo] = {}
        for b in req.buckets:
            tb = TableBucket(b.table_id, b.bucket_id, b.partition_id)
            if tb in refused:
                log.warning("refused to stop %s: %s", tb, refused[tb].message)
                continue
            if self.followers:
                self.followers.remove(tb)
            replica = self.replicas.pop(tb, None)
            # the remote log goes with a dropped table or partition, never with a replica moved off this server
            if b.delete and tb not in moved and self.remote_log is not None:
                await self._delete_remote_log(tb)
            if replica is None:
                continue
            await asyncio.to_thread(replica.delete if b.delete else replica.close)
            stopped[replica.table.table_id] = replica.table
        hosted = {tb.table_id for tb in self.replicas}
        for table_id, info in stopped.items():
            if table_id not in hosted:  # no replica of the table left here: its series go
                self.metrics.drop_table(info)
        if refused:
            raise next(iter(refused.values()))

    async def _delete_remote_log(self, tb: TableBucket) -> None:
        if tb.table_id not in self.tables:
            return
        try:
            await self.remote_log.delete_bucket(tb)
        except Exception as e:  # noqa: BLE001 - every replica is told: another one may succeed
            log.warning("could not delete the remote log of dropped %s: %s", tb, e)

    def replica_or_raise(self, tb: TableBucket) -> Replica:
        replica = self.replicas.get(tb)
        if replica is None:
            raise FlussError(f"Tablet server {self.server_id} does not host {tb}",
                             ErrorCode.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION)
        return replica

    def leader_or_raise(self, tb: TableBucket) -> Replica:
        replica = self.replica_or_raise(tb)
        replica.check_leader()
        return replica

    # ------------------------------------------------------------ produce

    async def produce(self, request: pb.ProduceLogRequest, bucket: pb.ProduceBucketPb) -> tuple[Replica, AppendInfo]:
        """Appends a client's batches to a bucket leader; returns the replica and where the batches are.

        Every batch is validated first (``BatchValidator``: header, CRC, Arrow body against the table's schema);
        one bad batch rejects the request and nothing is written.

        An idempotent writer may have several requests in flight per bucket, and they can arrive (or reach the
        append) out of order. A request whose first batch sequence leaves a gap waits, up to
        ``SEQUENCE_GAP_WAIT_S`` (and half its timeout), for the batches before it to be appended; if they do
        not come the append rejects it (OUT_OF_ORDER_SEQUENCE_EXCEPTION, or UNKNOWN_WRITER_ID_EXCEPTION when the
        bucket has no batch of that writer: see ``WriterStateManager.check``) and the writer sends it again.
        """
        records = bucket.records
        await self._after_stop_checks(request, bucket)
        replica = self._writable_leader(request, bucket)
        if replica.table.has_primary_key():
            raise FlussError(f"Table {replica.table.table_path} has a primary key: its log is the changelog of "
                             "its upserts and deletes (PutKv), it takes no ProduceLog", ErrorCode.INVALID_TABLE_EXCEPTION)
        if len(records) >= HEADER_SIZE:
            header = read_header(records)
            wait_s = min(SEQUENCE_GAP_WAIT_S, (request.timeout_ms or 30_000) / 2000)
            if await self._wait_for_gap(replica, header.writer_id, header.batch_sequence, wait_s):
                replica.check_leader()  # leadership may have moved while waiting
        try:
            info = await run_log_work(replica.log, len(records) <= SMALL_LOG_WORK_BYTES,
                                      self._validate_and_append, replica, records, int(time.time() * 1000))
        except Exception as e:
            self._raise_observed(e)
        replica.maybe_advance_high_watermark()
        await self._notify_data((replica.bucket,))  # wakes its fetches' long-polls and acks=all waiters
        return replica, info

    @staticmethod
    def _validate_and_append(replica: Replica, records: bytes, commit_timestamp: int) -> AppendInfo:
        """Validates a client's batches, then appends them in the table's log format: an ARROW batch for a table
        of a row format (INDEXED, COMPACTED) is re-encoded from its validated rows (writers that only speak
        Arrow, e.g. the Flink sink); a batch of another row format is refused by the validator. Nothing is
        appended when any batch is refused, and nothing unvalidated is appended."""
        validated = replica.validator.validate(records)
        for v in validated:  # routed by the table's bucket function
            replica.routing.check_rows(v.rows, replica.bucket.bucket_id)
        if replica.nested_columns:  # NOT NULL inside nested values, on every batch before any is appended
            for v in validated:
                check_stored_nested(v.rows, replica.nested_columns, f"ProduceLog to {replica.name}")
        if all(v.batch.body_format == replica.log_format for v in validated):
            batches = [v.batch for v in validated]
            return replica.log.append_as_leader(records, replica.leader_epoch, commit_timestamp, batches=batches)
        records = b"".join(v.encoded_in(replica.log_format) for v in validated)
        return replica.log.append_as_leader(records, replica.leader_epoch, commit_timestamp)

    async def _wait_for_gap(self, replica: Replica, writer_id: int, sequence: int, timeout_s: float) -> bool:
        """Waits while the writer's batches before ``sequence`` are missing (woken by every append); returns
        whether it waited at all."""
        writers = replica.log.writers
        if not writers.is_gap(writer_id, sequence):
            return False
        deadline = time.monotonic() + timeout_s
        async with self._data_arrived:
            while writers.is_gap(writer_id, sequence) and replica.is_leader:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:
                    await asyncio.wait_for(self._data_arrived.wait(), remaining)
                except TimeoutError:
                    pass
        return True

    def _writable_leader(self, request, bucket) -> Replica:
        """The leader replica a ProduceLog/PutKv bucket goes to, after the checks both writes share."""
        tb = TableBucket(request.table_id, bucket.bucket_id, bucket.partition_id)
        replica = self.leader_or_raise(tb)
        self.disk.check_writable()
        if request.acks == -1 and len(replica.isr) < self.min_isr:
            raise FlussError(f"Not enough in-sync replicas for {tb}: ISR {replica.isr} is smaller than "
                             f"log.replica.min-in-sync-replicas-number ({self.min_isr})",
                             ErrorCode.NOT_ENOUGH_REPLICAS_EXCEPTION)
        return replica

    async def put_kv(self, request: pb.PutKvRequest, bucket: pb.PutKvBucketPb) -> tuple[Replica, AppendInfo]:
        """Applies upserts/deletes to a primary-key bucket leader; returns where the changelog went."""
        await self._after_stop_checks(request, bucket)
        replica = self._writable_leader(request, bucket)
        tb = replica.bucket
        if not replica.table.has_primary_key():
            raise FlussError(f"Table {replica.table.table_path} has no primary key: use ProduceLog",
                             ErrorCode.NON_PRIMARY_KEY_TABLE_EXCEPTION)
        kv = replica.kv
        if kv is None:
            raise self._kv_unavailable(replica)
        targets = list(request.target_columns) or None
        lock = self._kv_locks.setdefault(tb, asyncio.Lock())
        async with lock:
            try:
                info = await self._on_kv(kv.put, bucket.records, targets, int(time.time() * 1000))
            except Exception as e:
                self._raise_observed(e)
        replica.maybe_advance_high_watermark()
        await self._notify_data((replica.bucket,))
        return replica, info

    def _kv_or_raise(self, tb: TableBucket) -> KvReplica:
        replica = self.leader_or_raise(tb)
        if not replica.table.has_primary_key():
            raise FlussError(f"Table {replica.table.table_path} has no primary key", ErrorCode.NON_PRIMARY_KEY_TABLE_EXCEPTION)
        if replica.kv is None:
            raise self._kv_unavailable(replica)
        return replica.kv

    @staticmethod
    def _kv_unavailable(replica: Replica) -> FlussError:
        if replica.kv_failure is not None:
            return FlussError(f"The KV state of {replica.name} failed to recover ({replica.kv_failure}); the "
                              "leader retries", ErrorCode.KV_STORAGE_EXCEPTION)
        return FlussError(f"The KV state of {replica.name} is still recovering", ErrorCode.LEADER_NOT_AVAILABLE_EXCEPTION)

    async def lookup(self, tb: TableBucket, keys: list[bytes]) -> tuple[list[bool], bytes]:
        result = (await self.lookup_many([(tb, keys)]))[0]
        if isinstance(result, Exception):
            raise result
        return result

    async def prefix_lookup(self, tb: TableBucket, prefixes: list[bytes]) -> tuple[list[int], bytes]:
        result = (await self.lookup_many([(tb, prefixes)], prefix=True))[0]
        if isinstance(result, Exception):
            raise result
        return result

    async def lookup_many(self, entries: list[tuple[TableBucket, list[bytes]]], prefix: bool = False,
                          inline_keys: int = 32) -> list[tuple[list, bytes] | Exception]:
        """The bucket entries of one Lookup (``prefix``: PrefixLookup) request: per entry its found flags
        (match counts) and a log batch of its rows, or the exception of its bucket.

        Every entry runs in one hop to a worker thread (point lookups of at most ``inline_keys`` keys in all
        run inline: the hop would cost more), and the entries of one bucket share one multi-get."""
        out: list = [None] * len(entries)
        by_bucket: dict[TableBucket, tuple[KvReplica, list[int]]] = {}
        for i, (tb, _) in enumerate(entries):
            if tb in by_bucket:
                by_bucket[tb][1].append(i)
                continue
            try:
                by_bucket[tb] = (self._kv_or_raise(tb), [i])
            except Exception as e:  # noqa: BLE001 - reported per bucket
                out[i] = e

        def run() -> None:
            for kv, indices in by_bucket.values():
                try:
                    results = kv.lookup_entries([entries[i][1] for i in indices], prefix)
                except Exception as e:  # noqa: BLE001 - reported per bucket
                    results = [e] * len(indices)
                for i, result in zip(indices, results, strict=True):
                    out[i] = result

        if not prefix and sum(len(keys) for _, keys in entries) <= inline_keys:
            run()
        elif by_bucket:
            await self._on_kv(run)
        return out

    async def scan_kv(self, tb: TableBucket, limit: int | None) -> tuple[bytes, int]:
        kv = self._kv_or_raise(tb)
        rows, offset = await self._on_kv(kv.scan, limit)
        return (kv.encode_rows(rows) if rows.num_rows else b""), offset

    async def snapshot_kv(self, retain: int, commit) -> int:
        """Snapshots every changed KV state this server leads; ``commit(replica, handle)`` records each one."""
        done = 0
        for replica in list(self.replicas.values()):
            kv = replica.kv
            if kv is None or not replica.is_leader:
                continue
            lock = self._kv_locks.setdefault(replica.bucket, asyncio.Lock())
            async with lock:  # a checkpoint while a batch is half-applied would be harmless, but keep it simple
                started = time.perf_counter()
                handle = await asyncio.to_thread(kv.snapshot_if_changed, retain)
            if handle is not None:
                self.metrics.kv_snapshot_taken(replica.table, (time.perf_counter() - started) * 1000,
                                               handle.total_size)
                await commit(replica, handle)
                done += 1
        return done

    async def wait_for_high_watermark(self, replica: Replica, offset: int, timeout_s: float) -> None:
        """Waits until the high watermark covers ``offset`` (acks=all), failing clearly when it cannot."""
        deadline = time.monotonic() + timeout_s
        async with self._data_arrived:
            while replica.log.high_watermark <= offset:
                if not replica.is_leader:
                    raise FlussError(f"Tablet server {self.server_id} lost leadership of {replica.bucket} before "
                                     f"offset {offset} was replicated", ErrorCode.NOT_LEADER_OR_FOLLOWER)
                self._check_isr_after_append(replica, offset)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise FlussError(f"Timed out waiting for the in-sync replicas {replica.isr} of {replica.bucket} "
                                     f"to replicate offset {offset}", ErrorCode.REQUEST_TIME_OUT)
                try:
                    await asyncio.wait_for(self._data_arrived.wait(), min(remaining, 0.5))
                except TimeoutError:
                    pass
            # as Kafka's delayed produce does: the high watermark may have passed the offset only because the ISR
            # shrank to fewer members than acks=all promises (the leader learns of a shrink after appending)
            self._check_isr_after_append(replica, offset)

    def _check_isr_after_append(self, replica: Replica, offset: int) -> None:
        """Fails an acks=all write whose bucket's ISR is smaller than the minimum, after its append."""
        if len(replica.isr) < self.min_isr:
            raise FlussError(f"Offset {offset} of {replica.bucket} was appended but the ISR {replica.isr} is smaller "
                             f"than log.replica.min-in-sync-replicas-number ({self.min_isr})",
                             ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND_EXCEPTION)

    async def wait_for_kv_visible(self, replica: Replica, offset: int, timeout_s: float) -> None:
        """Waits until the changes of a PutKv up to ``offset`` are visible to lookups, once the high watermark
        covers them (the flush runs on the KV executor); returns at once while the high watermark does not."""
        deadline = time.monotonic() + timeout_s
        async with self._data_arrived:
            while True:
                kv = replica.kv
                if kv is None or replica.log.high_watermark <= offset or kv.visible_offset > offset:
                    return
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise FlussError(f"Timed out waiting for offset {offset} of {replica.bucket} to reach the KV "
                                     "store", ErrorCode.REQUEST_TIME_OUT)
                kv.request_flush(replica.log.high_watermark)
                try:
                    await asyncio.wait_for(self._data_arrived.wait(), min(remaining, 0.5))
                except TimeoutError:
                    pass

    async def _notify_data(self, buckets: tuple[TableBucket, ...] | list[TableBucket] | None = None) -> None:
        """Wakes what waits for a change: the delayed fetches of ``buckets`` (of every bucket when None: a
        change of leadership, ISR or KV state), and every acks=all, KV-visibility and sequence-gap waiter."""
        self._wake_fetches(buckets)
        async with self._data_arrived:
            self._data_arrived.notify_all()

    def _wake_fetches(self, buckets: tuple[TableBucket, ...] | list[TableBucket] | None) -> None:
        """Completes the wake-up futures of the delayed fetches that read any of ``buckets`` (all when None)."""
        waiters = self._fetch_waiters
        if buckets is None:
            woken = [f for fs in waiters.values() for f in fs]
        else:
            woken = [f for tb in buckets for f in waiters.get(tb, ())]
        for f in woken:
            if not f.done():
                f.set_result(None)

    def _watch(self, fetches: list[BucketFetch], arrived: asyncio.Future) -> None:
        """Registers ``arrived`` as the wake-up of a fetch of ``fetches``' buckets."""
        for f in fetches:
            self._fetch_waiters.setdefault(f.bucket, set()).add(arrived)

    def _unwatch(self, fetches: list[BucketFetch], arrived: asyncio.Future) -> None:
        for f in fetches:
            fs = self._fetch_waiters.get(f.bucket)
            if fs is not None:
                fs.discard(arrived)
                if not fs:
                    del self._fetch_waiters[f.bucket]

    # ------------------------------------------------------------ fetch

    async def fetch(self, follower_id: int, fetches: list[BucketFetch], min_bytes: int, max_wait_ms: int,
                    max_bytes: int) -> tuple[dict[TableBucket, pb.FetchBucketResultPb], dict[TableBucket, Records]]:
        """Each bucket's result and, apart from it, the records read (``FetchBucketResultPb.records``: the
        service puts them into the response without copying them into a protobuf message first)."""
        deadline = time.monotonic() + max_wait_ms / 1000
        loop = asyncio.get_running_loop()
        while True:
            # watched before reading: a write that lands while this fetch reads wakes its wait at once
            arrived = loop.create_future()
            self._watch(fetches, arrived)
            try:
                results, records, total = await self._read_all(follower_id, fetches, max_bytes)
                remaining = deadline - time.monotonic()
                if total >= max(1, min_bytes) or remaining <= 0 or any(r.error.code for r in results.values()) \
                        or any(r.HasField("remote_log_fetch_info") for r in results.values()):
                    return results, records
                self.metrics.delayed_fetches += 1
                try:
                    await asyncio.wait((arrived,), timeout=remaining)
                finally:
                    self.metrics.delayed_fetches -= 1
            finally:
                self._unwatch(fetches, arrived)

    async def _read_all(self, follower_id: int, fetches: list[BucketFetch], max_bytes: int
                        ) -> tuple[dict[TableBucket, pb.FetchBucketResultPb], dict[TableBucket, Records], int]:
        results: dict[TableBucket, pb.FetchBucketResultPb] = {}
        read: dict[TableBucket, Records] = {}
        budget = max_bytes
        total = 0
        hw_moved: list[TableBucket] = []  # buckets whose high watermark this follower fetch moved
        for f in fetches:
            res = pb.FetchBucketResultPb(partition_id=f.bucket.partition_id_or_none_value, bucket_id=f.bucket.bucket_id)
            replica = None
            try:
                replica = self.leader_or_raise(f.bucket)
                if follower_id >= 0:
                    replica.check_follower_fetch(follower_id, f.offset)  # nothing is recorded for a bad fetch
                    res.tiered_offset = replica.tiered_offset
                    upper = None
                else:
                    upper = replica.log.high_watermark
                    if f.offset < replica.log.log_start_offset and self.remote_log is not None:
                        self._check_projection(replica, f.projection)
                        info = await self._remote_fetch_info(replica, f.offset)
                        if info is not None:  # the client reads these segments from remote storage itself
                            results[f.bucket] = self._remote_answer(res, replica, info)
                            continue
                records = b""
                limit = min(f.max_bytes, budget)
                throttle = self.catch_up_throttle  # replaced when the option changes (dynamic)
                throttled = (follower_id >= 0 and throttle is not None
                             and follower_id not in replica.maximal_isr())
                if throttled:  # a follower catching up: within the server's catch-up byte rate
                    limit = min(limit, throttle.available())
                if limit > 0 and self._nothing_to_read(replica, f, upper):
                    self._check_projection(replica, f.projection)  # refused as a read would refuse it
                elif limit > 0:
                    try:
                        records = await run_log_work(replica.log, partial(self._reads_the_tail, replica, f),
                                                     self._read_one, replica, f, limit, upper, total == 0)
                    except FlussError as e:
                        info = await self._tiered_meanwhile(replica, f, follower_id, e)
                        if info is None:
                            raise
                        results[f.bucket] = self._remote_answer(res, replica, info)
                        continue
                    if throttled:
                        throttle.consume(len(records))
                if follower_id >= 0:
                    if replica.update_follower(follower_id, f.offset):
                        hw_moved.append(f.bucket)
                    if replica.caught_up_outside_isr(follower_id):
                        self._expand_isr_soon(replica)
                if records:
                    read[f.bucket] = records
                budget -= len(records)
                total += len(records)
                table_metrics = self.metrics.table(replica.table)
                table_metrics.fetch.count += 1
                if records:
                    table_metrics.read(len(records), follower_id >= 0)
            except FlussError as e:
                res.error.code = e.error_code
                res.error.message = e.message
                info = self.tables.get(f.bucket.table_id)
                if info is not None:
                    table_metrics = self.metrics.table(info)
                    table_metrics.fetch.count += 1
                    table_metrics.fetch_failed.count += 1
            if replica is not None:
                res.high_watermark = replica.log.high_watermark
                res.log_start_offset = replica.log.log_start_offset
            results[f.bucket] = res
        if hw_moved:
            await self._notify_data(hw_moved)
        return results, read, total

    @staticmethod
    def _nothing_to_read(replica: Replica, f: BucketFetch, upper: int | None) -> bool:
        """A fetch at the end of what it may read (the log end, or the high watermark for a client) reads nothing:
        answered without a worker thread (a caught-up consumer's or follower's long-poll starts with such a
        read). Offsets outside the log still go to the read, which refuses them."""
        log = replica.log
        offset = f.offset
        if log.closed or offset < log.log_start_offset or offset > log.log_end_offset:
            return False
        return offset == log.log_end_offset or (upper is not None and offset >= upper)

    async def _tiered_meanwhile(self, replica: Replica, f: BucketFetch, follower_id: int,
                                error: FlussError) -> pb.RemoteLogFetchInfoPb | None:
        """The remote segments for a client's fetch whose offset local retention deleted between the check
        above and the read (the log start moved past it while the read waited for a worker): answered as a fetch
        below the log start is; None for any other failure."""
        if (follower_id >= 0 or self.remote_log is None
                or error.error_code != ErrorCode.LOG_OFFSET_OUT_OF_RANGE_EXCEPTION
                or f.offset >= replica.log.log_start_offset):
            return None
        return await self._remote_fetch_info(replica, f.offset)

    @staticmethod
    def _remote_answer(res: pb.FetchBucketResultPb, replica: Replica,
                       info: pb.RemoteLogFetchInfoPb) -> pb.FetchBucketResultPb:
        """``res`` sending the client to the remote segments ``info`` (it reads them from remote storage)."""
        res.remote_log_fetch_info.CopyFrom(info)
        res.high_watermark = replica.log.high_watermark
        res.log_start_offset = replica.log.log_start_offset
        return res

    async def _remote_fetch_info(self, replica: Replica, offset: int) -> pb.RemoteLogFetchInfoPb | None:
        state = await self.remote_log.state_of(replica)
        return await asyncio.to_thread(self.remote_log.fetch_info, replica, state, offset)

    @staticmethod
    def _check_projection(replica: Replica, projection: list[int] | None) -> pa.Schema:
        schema = replica.table.row_schema.to_arrow()
        if projection is not None:
            for idx in projection:
                if idx < 0 or idx >= len(schema):
                    raise FlussError(f"Projected column index {idx} is out of range for table "
                                     f"{replica.table.table_path} with {len(schema)} columns",
                                     ErrorCode.INVALID_COLUMN_PROJECTION)
        if projection is not None and replica.log_format != ARROW:
            raise FlussError(f"Table '{replica.table.table_path}' is not in the ARROW log format "
                             f"({replica.log_format}) and does not support column projection",
                             ErrorCode.INVALID_COLUMN_PROJECTION)
        return schema

    @staticmethod
    def _reads_the_tail(replica: Replica, f: BucketFetch) -> bool:
        """Whether the read of ``f`` touches at most ``SMALL_LOG_WORK_BYTES`` at the end of the active segment (a
        caught-up consumer's or follower's next batches, just written): ``run_log_work`` may do it on the event
        loop. Not a row-format log re-encoded for an Arrow reader (that decodes and encodes)."""
        if f.as_arrow and replica.log_format != ARROW:
            return False
        tail = replica.log.tail_bytes_from(f.offset)
        return tail is not None and tail <= SMALL_LOG_WORK_BYTES

    def _read_one(self, replica: Replica, f: BucketFetch, max_bytes: int, upper: int | None,
                  min_one: bool) -> Records:
        schema = self._check_projection(replica, f.projection)
        data = replica.log.read(f.offset, max_bytes, max_offset=upper, min_one_batch=min_one).records
        if f.as_arrow and replica.log_format != ARROW and data:
            history = replica.validator.history  # each batch re-encoded with the columns of its own schema id
            data = b"".join(reformat_batch(b, history.schema_of(b.schema_id), ARROW) for b in iter_batches(data))
        if f.projection is None or not data:
            return data  # a view when the read was cut at a batch boundary: the response takes it uncopied
        return self._read_projected(replica, f.projection, schema, data, max_bytes, upper)

    @staticmethod
    def _read_projected(replica: Replica, projection: list[int], schema: pa.Schema, data: bytes | memoryview,
                        max_bytes: int, upper: int | None) -> bytes:
        """Projected batches from ``data`` on, up to ``max_bytes`` of *projected* bytes (as Apache Fluss counts).

        Reads on while the projected batches are smaller than the stored ones, and stops when the rest of the
        budget is below the smallest projected batch so far; a batch that would pass the budget is dropped,
        except the first. ``compression=None`` keeps each stored batch's codec, so its buffers are copied
        without decoding.
        """
        out: list[bytes] = []
        total = raw = 0
        smallest = max_bytes
        history = replica.validator.history  # a batch of an older schema id holds only its leading columns
        while data:
            next_offset = None
            for b in iter_batches(data):
                if b.schema_id == history.current_id:
                    projected = project_batch(b, history.schema, projection, None, replica.zstd_level)
                else:
                    projected = project_batch(b, history.schema_of(b.schema_id),
                                              history.body_columns(b.schema_id, projection), None, replica.zstd_level)
                if out and total + len(projected) > max_bytes:
                    return b"".join(out)
                out.append(projected)
                total += len(projected)
                raw += b.size_in_bytes
                smallest = min(smallest, len(projected))
                next_offset = b.next_offset
            if next_offset is None or max_bytes - total < smallest:
                break
            want = max(1, (max_bytes - total) * raw // max(total, 1))  # raw bytes for the rest, at this ratio
            try:
                data = replica.log.read(next_offset, want, max_offset=upper, min_one_batch=True).records
            except FlussError:  # e.g. truncated meanwhile: return what is projected
                break
        return b"".join(out)

    # ------------------------------------------------------------ offsets

    def offset_for_leader_epoch(self, tb: TableBucket, epoch: int) -> tuple[int, int]:
        replica = self.leader_or_raise(tb)
        return replica.log.end_offset_for_epoch(epoch)

    def row_count(self, tb: TableBucket) -> int:
        """Rows of a bucket this server leads: a primary-key bucket's committed keys, a log bucket's records
        between its log start and its high watermark (what a batch read of it returns)."""
        replica = self.leader_or_raise(tb)
        if replica.table.has_primary_key():
            return self._kv_or_raise(tb).row_count()
        self._check_high_watermark_caught_up(replica)
        return max(0, replica.log.high_watermark - replica.log.log_start_offset)

    async def list_offset(self, tb: TableBucket, offset_type: int, timestamp: int, follower_id: int) -> int:
        """Earliest (the remote log start when the log is tiered), latest (the high watermark; LEO for a
        follower) or the first offset at or after a timestamp (remote segments first, by their max timestamp)."""
        replica = self.leader_or_raise(tb)
        if offset_type in (1, 2) and follower_id < 0:
            self._check_high_watermark_caught_up(replica)
        remote = None
        if offset_type in (0, 2) and self.remote_log is not None and follower_id < 0:
            remote = (await self.remote_log.state_of(replica)).manifest
            if remote.start_offset < 0 or remote.end_offset < replica.log.log_start_offset:
                remote = None  # nothing remote, or a gap before the local log: the local log is all there is
        if offset_type == 0:
            local = replica.log.log_start_offset
            return min(local, remote.start_offset) if remote is not None else local
        if offset_type == 1:
            return replica.log.log_end_offset if follower_id >= 0 else replica.log.high_watermark
        if offset_type == 2:
            if remote is not None:
                for segment in remote.segments:
                    if segment.max_timestamp >= timestamp and segment.start_offset < replica.log.log_start_offset:
                        return segment.start_offset
            return min(replica.log.offset_for_timestamp(timestamp), replica.log.high_watermark)
        raise FlussError(f"Unknown offset type {offset_type} (0 earliest, 1 latest, 2 timestamp)",
                         ErrorCode.INVALID_TIMESTAMP_EXCEPTION)

    @staticmethod
    def _check_high_watermark_caught_up(replica: Replica) -> None:
        """A new leader learned the high watermark as a follower, a fetch behind: until its followers fetch from it
        the high watermark can lie below records acknowledged in the last term, and a reader bounded by it would miss
        them. As Kafka's ListOffsets (OFFSET_NOT_AVAILABLE), the latest and timestamp offsets are refused with a
        retriable error until the high watermark reaches the start of this leader's epoch."""
        hw, start = replica.log.high_watermark, replica.epoch_start_offset
        if hw < start:
            raise FlussError(f"The leader of {replica.name} was elected moments ago and its high watermark ({hw}) "
                             f"has not yet reached the end of the previous leader's log ({start}); retry",
                             ErrorCode.LEADER_NOT_AVAILABLE_EXCEPTION)

    async def describe_log(self, tb: TableBucket) -> pb.DescribeLogBucketPb:
        """The local and remote log of a bucket this server leads."""
        replica = self.leader_or_raise(tb)
        log_ = replica.log
        out = pb.DescribeLogBucketPb(
            partition_id=tb.partition_id_or_none_value, bucket_id=tb.bucket_id,
            local_log_start_offset=log_.log_start_offset, local_log_end_offset=log_.log_end_offset,
            high_watermark=log_.high_watermark, local_log_size=log_.size_in_bytes,
            local_segment_count=log_.segment_count, remote_log_start_offset=-1, remote_log_end_offset=-1)
        kv = replica.kv.kv if replica.kv is not None else None
        if kv is not None:
            out.kv_size = kv.size_in_bytes
        if self.remote_log is not None:
            manifest = (await self.remote_log.state_of(replica)).manifest
            out.remote_log_start_offset = manifest.start_offset
            out.remote_log_end_offset = manifest.end_offset if manifest.segments else -1
            out.remote_log_size = manifest.size_in_bytes
            out.remote_segment_count = len(manifest.segments)
        return out

    # ------------------------------------------------------------ ISR maintenance

    async def maintain_isr(self, adjust_isr=None) -> None:
        """Proposes ISR changes for every led bucket; ``adjust_isr(replica, isr)`` asks the coordinator."""
        for replica in list(self.replicas.values()):
            await self._propose_isr(replica, adjust_isr or self.adjust_isr)

    async def _propose_isr(self, replica: Replica, adjust_isr) -> None:
        proposal = replica.propose_isr(self.max_lag_ms)
        if proposal is None or adjust_isr is None:
            return
        replica.pending_isr = proposal
        joining = set(proposal) - set(replica.isr)
        try:
            result = await adjust_isr(replica, proposal)
        except Exception as e:  # noqa: BLE001 - try again next round; the coordinator may be failing over
            log.info("ISR change %s -> %s for %s failed: %s", replica.isr, proposal, replica.bucket, e)
            replica.pending_isr = None
            self.metrics.failed_isr_updates.count += 1
            replica.hold_back_joins(joining)
            return
        before = list(replica.isr)
        replica.isr_changed(result.leader_epoch, result.bucket_epoch, list(result.isr))
        if replica.isr != before:
            log.info("ISR of %s changed from %s to %s", replica.bucket, before, replica.isr)
            self.metrics.isr_changed(before, replica.isr)
        replica.hold_back_joins(joining - set(result.isr))  # e.g. a server whose disk failed: not on every fetch
        await self._notify_data()

    def _expand_isr_soon(self, replica: Replica) -> None:
        """Asks for the ISR change that lets a caught-up follower back in, without waiting for the ISR timer
        (at most one such request per bucket at a time)."""
        task = self._isr_tasks.get(replica.bucket)
        if self.adjust_isr is None or (task is not None and not task.done()):
            return
        self._isr_tasks[replica.bucket] = asyncio.create_task(self._propose_isr(replica, self.adjust_isr),
                                                              name=f"expand-isr-{replica.bucket}")

    # ------------------------------------------------------------ housekeeping

    def checkpoint_logs(self) -> int:
        """Checkpoints every hosted log (see ``LogTablet.checkpoint``); returns how many written points moved.
        Raises the first failure after trying every log."""
        moved, failure = 0, None
        for replica in list(self.replicas.values()):
            try:
                moved += replica.log.checkpoint()
            except Exception as e:  # noqa: BLE001 - keep checkpointing the others
                log.warning("checkpoint of %s failed: %s", replica.bucket, e)
                failure = failure or e
        if failure is not None:
            raise failure
        return moved

    def _raise_observed(self, e: BaseException) -> None:
        """Re-raises a write's failure, as STORAGE_EXCEPTION if it was the disk (which marks it failed)."""
        observed = self.disk.observe(e)
        if observed is e:
            raise e
        raise observed from e

    def delete_expired_segments(self) -> int:
        now = int(time.time() * 1000)
        deleted = 0
        for replica in list(self.replicas.values()):
            try:
                deleted += replica.log.delete_expired_segments(now)
            except Exception:  # noqa: BLE001 - retention must not stop the server
                log.exception("retention failed for %s", replica.bucket)
        return deleted

    def close(self) -> None:
        for replica in self.replicas.values():
            try:
                replica.close()
            except Exception:  # noqa: BLE001
                log.exception("error closing %s", replica.bucket)
        self.replicas.clear()
        self._create_pool.shutdown(wait=True, cancel_futures=True)
        self.kv_executor.shutdown(wait=True, cancel_futures=True)
