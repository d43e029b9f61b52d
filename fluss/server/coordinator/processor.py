"""The coordinator's event processor: every cluster change is an event handled one at a time.

DDL requests (from the admin RPCs) and membership changes (from ZooKeeper watches) are queued; a single task
applies each against the in-memory ``CoordinatorContext``, writes ZooKeeper (atomically, in transactions)
and then tells the tablet servers what they host through the ``TabletNotifier``. Blocking ZooKeeper calls run
in a worker thread so the RPC server keeps answering reads meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from fluss.errors import ErrorCode, FlussError
from fluss.key.partition import partition_spec_to_name
from fluss.lake.catalog import LakeCatalogProcess
from fluss.lake.config import is_lake_enabled, system_table_properties
from fluss.metadata import (
    DatabaseDescriptor,
    RebalanceStatus,
    ServerNode,
    ServerTag,
    TableBucket,
    TableChange,
    TableDescriptor,
    TableInfo,
    TablePath,
)
from fluss.server.config import (
    AUTO_PARTITION_CHECK_INTERVAL,
    DEFAULT_BUCKET_NUMBER,
    DEFAULT_REPLICATION_FACTOR,
    MAX_BUCKET_NUM,
    MAX_PARTITION_NUM,
    REBALANCE_MAX_INFLIGHT,
    REMOTE_DATA_DIR,
    ServerConfig,
)
from fluss.server.coordinator.alter import alter_error, apply_column_changes, apply_option_changes
from fluss.server.coordinator.assignment import assign_replicas, rack_aware
from fluss.server.coordinator.auto_partition import AutoPartitionPlanner, AutoPartitionStrategy
from fluss.server.coordinator.bucket_sizes import collect_bucket_sizes
from fluss.server.coordinator.context import (
    CoordinatorContext,
    PartitionEntry,
    membership_changes,
    table_info_of,
)
from fluss.server.coordinator.control_checks import check_lake_snapshot
from fluss.server.coordinator.notifier import TabletNotifier
from fluss.server.coordinator.reassignment import check_targets, finish_step, widened
from fluss.server.coordinator.rebalance import (
    RebalanceBucket,
    RebalanceRecord,
    cancel,
    overall_status,
    settle_in_flight,
)
from fluss.server.coordinator.rebalance_planner import BucketLayout, parse_goals, plan_rebalance, server_bytes
from fluss.server.coordinator.server_tags import check_tag_request, drain_target, leaders_last, parse_tag
from fluss.server.coordinator.validation import (
    check_database_name,
    check_metadata_size,
    check_table_name,
    resolve_table,
)
from fluss.server.dynamic_config import AlterConfigOpType, ConfigChange, DynamicConfigWatcher, apply_alter
from fluss.server.zk import paths
from fluss.server.zk.client import ZooKeeperClient
from fluss.server.zk.data import (
    Assignment,
    DatabaseRegistration,
    KvSnapshotRecord,
    LakeSnapshotRecord,
    LeaderAndIsr,
    PartitionRegistration,
    ReassignmentRecord,
    RemoteLogManifestRecord,
    TableRegistration,
    dumps,
    encode,
)
from fluss.table_options import (
    AUTO_PARTITION_NUM_PRECREATE,
    AUTO_PARTITION_NUM_RETENTION,
    DATALAKE_ENABLED,
    REPLICATION_FACTOR,
)

log = logging.getLogger(__name__)

DEFAULT_DATABASE = "fluss"
#: The largest rebalance record written to ZooKeeper (its default node limit is 1 MiB): about 5500 buckets of three replicas (with sizes).
MAX_REBALANCE_RECORD_BYTES = 900_000
#: auto-partitioning creates up to this many partitions per batch (one id allocation, one NotifyLeaderAndIsr per
#: server), and no more buckets than ``PARTITION_BATCH_BUCKETS``; ZooKeeperClient writes a batch in transactions of
#: at most ``MAX_TRANSACTION_OPS`` nodes
PARTITION_BATCH = 64
PARTITION_BATCH_BUCKETS = 256


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class _Event:
    handler: Callable[..., Awaitable[Any]]
    args: tuple
    future: asyncio.Future | None
    queued_at: float = field(default_factory=time.perf_counter)


class CoordinatorEventProcessor:
    def __init__(self, zk: ZooKeeperClient, config: ServerConfig, context: CoordinatorContext,
                 notifier: TabletNotifier, on_event_done: Callable[[str, float, float], None] | None = None,
                 dynamic: DynamicConfigWatcher | None = None) -> None:
        self.zk = zk
        self.dynamic = dynamic  # the cluster's dynamic options (server/dynamic_config.py); None in unit tests
        self.config = config
        self.ctx = context
        self.notifier = notifier
        self._queue: asyncio.Queue[_Event] = asyncio.Queue()
        self._task: asyncio.Task | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.shutting_down: set[int] = set()
        self.lake = LakeCatalogProcess(config.as_dict())
        self.on_event_done = on_event_done  # (event type, ms queued, ms processing): the coordinator's metrics
        self.storage_failed: set[int] = set()  # servers that reported they cannot write their disk
        self.auto_partitions = AutoPartitionPlanner()
        self._auto_partition_task: asyncio.Task | None = None
        self._rebalance_busy = False
        self._rebalance_again = False

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        await self._load_from_zookeeper()
        if DEFAULT_DATABASE not in self.ctx.databases:
            await self.submit(self._create_database, DEFAULT_DATABASE, DatabaseDescriptor(), True, start=True)
        self._task = asyncio.create_task(self._run(), name="coordinator-events")
        self._auto_partition_task = asyncio.create_task(self._auto_partition_loop(), name="auto-partition")
        self.lake.warm_up()
        if self.dynamic is not None:
            self.dynamic.on_change(lambda key: key.startswith("datalake."), self._lake_options_changed)
            self.dynamic.on_change({REBALANCE_MAX_INFLIGHT}, lambda _keys: self._queue.put_nowait(
                _Event(self._advance_rebalance, (), None)))  # more (or fewer) moves at once from now on
        self.zk.watch_tablet_servers(self._on_servers_changed_threadsafe)

    async def stop(self) -> None:
        self.lake.close()
        for task in (self._auto_partition_task, self._task):
            if task:
                task.cancel()
                try:
                    await task
                except (asyncio.CancelledError, Exception):  # noqa: BLE001
                    pass

    async def submit(self, handler: Callable[..., Awaitable[Any]], *args: Any, start: bool = False) -> Any:
        """Queues an event and waits for its result (``start``: run inline before the loop runs)."""
        if start:
            return await handler(*args)
        fut = asyncio.get_running_loop().create_future()
        await self._queue.put(_Event(handler, args, fut))
        return await fut

    def queued_events(self) -> list[_Event]:
        """The events waiting now (read by the metrics from another thread: a copy)."""
        return list(self._queue._queue)  # noqa: SLF001 - asyncio.Queue keeps them in a deque

    async def _run(self) -> None:
        while True:
            event = await self._queue.get()
            started = time.perf_counter()
            try:
                result = await event.handler(*event.args)
                if event.future and not event.future.done():
                    event.future.set_result(result)
            except Exception as e:  # noqa: BLE001 - errors travel back to the requester
                if not isinstance(e, FlussError):
                    log.exception("coordinator event %s failed", event.handler.__name__)
                if event.future and not event.future.done():
                    event.future.set_exception(e)
            if self.on_event_done is not None:
                done = time.perf_counter()
                self.on_event_done(event.handler.__name__.lstrip("_"), (started - event.queued_at) * 1000,
                                   (done - started) * 1000)

    def _on_servers_changed_threadsafe(self, ids: list[int]) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        loop.call_soon_threadsafe(self._queue.put_nowait, _Event(self._servers_changed, (ids,), None))

    async def _zk(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.to_thread(fn, *args)

    # ------------------------------------------------------------ state loading

    async def _load_from_zookeeper(self) -> None:
        def load() -> None:
            zk, ctx = self.zk, self.ctx
            for db in zk.list_databases():
                reg = zk.get_database(db)
                if reg is None:
                    continue
                ctx.databases[db] = reg
                for t in zk.list_tables(db):
                    got = zk.get_table(db, t)
                    if got is None:
                        continue
                    reg_t, schema_json = got
                    info = table_info_of(TablePath(db, t), reg_t, schema_json)
                    ctx.add_table(info)
                    if is_lake_enabled(info):
                        lake = zk.get_lake_snapshot(info.table_id)
                        if lake is not None:
                            ctx.lake_snapshots[info.table_id] = (lake.snapshot_id, lake.commit_time)
                    self._load_buckets(info.table_id, -1)
                    for name, preg in zk.list_partitions(db, t).items():
                        ctx.partitions[preg.partition_id] = PartitionEntry(info.table_id, name, preg)
                        self._load_buckets(info.table_id, preg.partition_id)
                        if not preg.bucket_count:  # written before partitions had their own count
                            assignment = ctx.assignments.get((info.table_id, preg.partition_id))
                            preg.bucket_count = len(assignment.buckets) if assignment else info.num_buckets
            ctx.server_tags = {sid: ServerTag[name] for sid, name in zk.get_server_tags().items()}
            for rec in zk.list_reassignments():
                tb = TableBucket(rec.table_id, rec.bucket, rec.partition_id)
                if tb in ctx.leaders:
                    ctx.reassignments[tb] = rec
                else:  # its table or partition was dropped by a coordinator that died before deleting it
                    zk.delete_reassignment(rec.table_id, rec.partition_id, rec.bucket)
            for sid, reg in zk.get_tablet_servers().items():
                ctx.live_servers[sid] = ServerNode(sid, reg.host, reg.port, "TabletServer", reg.metrics_port,
                                                   tuple(sorted(reg.endpoints.items())), reg.rack)
                ctx.registered_at[sid] = reg.register_time
            data = zk.get_rebalance()
            if data is not None:
                ctx.rebalance = RebalanceRecord.decode(data)

        await self._zk(load)
        log.info("coordinator loaded %d databases, %d tables, %d buckets, %d live tablet servers",
                 len(self.ctx.databases), len(self.ctx.tables), len(self.ctx.leaders), len(self.ctx.live_servers))
        # Re-announce every bucket so tablet servers learn the new coordinator epoch and current leaders.
        for sid in self.ctx.live_servers:
            self.notifier.leader_and_isr(sid, self.ctx.buckets_hosted_by(sid))
        if self.ctx.reassignments:
            log.info("resuming %d bucket reassignment(s)", len(self.ctx.reassignments))
        await self._advance_reassignments()

    def _load_buckets(self, table_id: int, partition_id: int) -> None:
        assignment = self.zk.get_assignment(table_id, partition_id)
        if assignment is None:
            return
        self.ctx.assignments[(table_id, partition_id)] = assignment
        for bucket in assignment.buckets:
            got = self.zk.get_leader_and_isr(table_id, partition_id, bucket)
            if got is not None:
                self.ctx.leaders[TableBucket(table_id, bucket, partition_id)] = got

    # ------------------------------------------------------------ databases

    async def create_database(self, name: str, descriptor: DatabaseDescriptor, ignore_if_exists: bool) -> None:
        await self.submit(self._create_database, name, descriptor, ignore_if_exists)

    async def _create_database(self, name: str, descriptor: DatabaseDescriptor, ignore_if_exists: bool) -> None:
        check_database_name(name)
        if name in self.ctx.databases:
            if ignore_if_exists:
                return
            raise FlussError(f"Database '{name}' already exists", ErrorCode.DATABASE_ALREADY_EXIST)
        ts = now_ms()
        reg = DatabaseRegistration(descriptor.comment, descriptor.get_custom_properties(), ts, ts)
        check_metadata_size(f"database '{name}'", reg.comment, reg.custom_properties, len(encode(reg)))
        await self._zk(self.zk.create_database, name, reg)
        self.ctx.databases[name] = reg

    async def drop_database(self, name: str, ignore_if_not_exists: bool, cascade: bool) -> None:
        await self.submit(self._drop_database, name, ignore_if_not_exists, cascade)

    async def _drop_database(self, name: str, ignore_if_not_exists: bool, cascade: bool) -> None:
        if name not in self.ctx.databases:
            if ignore_if_not_exists:
                return
            raise FlussError(f"Database '{name}' does not exist", ErrorCode.DATABASE_NOT_EXIST)
        tables = [info for path, info in self.ctx.tables.items() if path.database_name == name]
        if tables and not cascade:
            raise FlussError(f"Database '{name}' is not empty: it has {len(tables)} table(s) "
                             f"({', '.join(sorted(t.table_path.table_name for t in tables)[:5])}); "
                             "drop them first or use cascade", ErrorCode.DATABASE_NOT_EMPTY)
        for info in tables:
            await self._drop_table(info.table_path, True)
        await self._zk(self.zk.delete_database, name)
        self.ctx.databases.pop(name, None)

    # ------------------------------------------------------------ tables

    async def create_table(self, path: TablePath, desc: TableDescriptor, ignore_if_exists: bool) -> None:
        await self.submit(self._create_table, path, desc, ignore_if_exists)

    async def _create_table(self, path: TablePath, desc: TableDescriptor, ignore_if_exists: bool) -> None:
        check_database_name(path.database_name)
        check_table_name(path.table_name)
        if path.database_name not in self.ctx.databases:
            raise FlussError(f"Database '{path.database_name}' does not exist", ErrorCode.DATABASE_NOT_EXIST)
        if path in self.ctx.tables:
            if ignore_if_exists:
                return
            raise FlussError(f"Table '{path}' already exists", ErrorCode.TABLE_ALREADY_EXIST)
        resolved = resolve_table(desc, str(path), self.config.get_int(DEFAULT_BUCKET_NUMBER),
                                 self.config.get_int(MAX_BUCKET_NUM))
        # the bucket function (and lake format) follow the cluster's datalake.format, fixed for the table's life
        system_props = system_table_properties(self.config.as_dict(), resolved.properties, str(path))
        rf = self._replication_factor(resolved)
        table_id = await self._zk(self.zk.next_id, paths.TABLE_ID_SEQ)
        ts = now_ms()
        reg = TableRegistration(
            table_id=table_id, schema_id=1, partition_keys=resolved.partition_keys,
            bucket_count=int(resolved.bucket_count), bucket_keys=resolved.bucket_keys, comment=resolved.comment,
            properties=resolved.properties, custom_properties=resolved.custom_properties,
            created_time=ts, modified_time=ts)
        schema_json = resolved.get_schema().row_schema.to_json()
        reg.properties.update(system_props)
        check_metadata_size(f"table '{path}'", reg.comment, {**reg.properties, **reg.custom_properties},
                            len(encode(reg)) + len(dumps(schema_json)))
        # a lake-enabled table gets its lake table now (by the lake catalog's worker process), and the lake's
        # catalog options as table properties
        info = table_info_of(path, reg, schema_json)
        if is_lake_enabled(info):
            reg.properties.update(await self.lake.create_table(info))
        assignment, leaders = None, {}
        if not resolved.partition_keys:
            assignment, leaders = self._new_assignment(table_id, table_id, reg.bucket_count, rf)
        await self._zk(self.zk.create_table, path.database_name, path.table_name, reg, schema_json, assignment, leaders)
        info = table_info_of(path, reg, schema_json)
        self.ctx.add_table(info)
        if assignment is not None:
            self._register_buckets(table_id, -1, assignment, leaders)
        log.info("created table %s (id %d, %d buckets, rf %d)", path, table_id, reg.bucket_count, rf)
        await self._auto_partition(info)

    async def alter_table(self, path: TablePath, changes: list[TableChange], ignore_if_not_exists: bool) -> None:
        await self.submit(self._alter_table, path, changes, ignore_if_not_exists)

    async def _alter_table(self, path: TablePath, changes: list[TableChange], ignore_if_not_exists: bool) -> None:
        """Applies option changes (``alter.py``), records them in ZooKeeper, then tells every server hosting a
        bucket of the table, so retention and the other per-table settings change without a restart. A table
        that becomes lake-enabled gets its lake table first (as at CREATE TABLE)."""
        info = self.ctx.tables.get(path)
        if info is None:
            if ignore_if_not_exists:
                return
            raise FlussError(f"Table '{path}' does not exist", ErrorCode.TABLE_NOT_EXIST)
        altered = apply_option_changes(info, changes)
        new_schema = apply_column_changes(info, changes)
        if altered.bucket_count is not None and altered.bucket_count > self.config.get_int(MAX_BUCKET_NUM):
            raise alter_error(f"Cannot change 'bucket.num' of table '{path}' to {altered.bucket_count}: it exceeds "
                              f"max.bucket.num ({self.config.get_int(MAX_BUCKET_NUM)})")
        if altered.changed(DATALAKE_ENABLED) and DATALAKE_ENABLED.value_of(altered.properties):
            counts = {e.reg.bucket_count for e in self.ctx.partitions_of(info.table_id).values()} | {info.num_buckets}
            if len(counts) > 1:
                raise alter_error(f"Cannot enable the lake on table '{path}': its partitions (and the table's "
                                  "bucket.num for new ones) have different bucket counts: "
                                  f"{', '.join(map(str, sorted(counts)))} (ALTER TABLE SET bucket.num), and a Paimon "
                                  "table has one bucket count for every partition; drop the partitions of the "
                                  "other counts first")
        got = await self._zk(self.zk.get_table, path.database_name, path.table_name)
        if got is None:
            raise FlussError(f"Table '{path}' does not exist", ErrorCode.TABLE_NOT_EXIST)
        reg, schema_json = got
        reg.properties, reg.custom_properties, reg.modified_time = altered.properties, altered.custom_properties, now_ms()
        if altered.bucket_count is not None:  # partitions created from now on (existing ones keep theirs)
            reg.bucket_count = altered.bucket_count
        if new_schema is not None:  # ADD COLUMN: a new schema id (the earlier ones stay in ZooKeeper)
            reg.schema_column_counts = info.schema_column_counts + [len(new_schema.columns)]
            reg.schema_id = len(reg.schema_column_counts)
            schema_json = new_schema.to_json()
        new_info = table_info_of(path, reg, schema_json)
        if altered.changed(DATALAKE_ENABLED) and is_lake_enabled(new_info):
            reg.properties.update(await self.lake.create_table(new_info))
            new_info = table_info_of(path, reg, schema_json)
        if new_schema is not None and is_lake_enabled(new_info) and not altered.changed(DATALAKE_ENABLED):
            await self.lake.add_columns(new_info, len(info.row_schema.columns))  # the lake table gets them first
        check_metadata_size(f"table '{path}'", reg.comment, {**reg.properties, **reg.custom_properties},
                            len(encode(reg)) + len(dumps(schema_json)))
        if new_schema is not None:
            await self._zk(self.zk.add_schema, path.database_name, path.table_name, reg, schema_json)
        else:
            await self._zk(self.zk.set_table, path.database_name, path.table_name, reg)
        self.ctx.add_table(new_info)
        by_server: dict[int, list[TableBucket]] = {}
        for tb in self.ctx.leaders:
            if tb.table_id == info.table_id:
                for sid in self.ctx.replicas(tb):
                    by_server.setdefault(sid, []).append(tb)
        for sid, tbs in by_server.items():
            self.notifier.leader_and_isr(sid, sorted(tbs))
        log.info("altered table %s: %s", path, ", ".join(map(repr, changes)))
        if altered.changed(AUTO_PARTITION_NUM_PRECREATE) or altered.changed(AUTO_PARTITION_NUM_RETENTION):
            await self._auto_partition(new_info)

    def _replication_factor(self, desc: TableDescriptor) -> int:
        rf = REPLICATION_FACTOR.value_of(desc.properties) or self.config.get_int(DEFAULT_REPLICATION_FACTOR)
        live = len(self._placeable_racks())
        if rf < 1 or rf > live:
            retiring = sorted(self.tagged(ServerTag.PERMANENT_OFFLINE) & set(self.ctx.live_servers))
            note = f" not tagged PERMANENT_OFFLINE (tagged: {retiring})" if retiring else ""
            raise FlussError(f"Replication factor {rf} is invalid: it must be between 1 and the number of live "
                             f"tablet servers{note} ({live})", ErrorCode.INVALID_REPLICATION_FACTOR)
        rack_aware(self._placeable_racks())  # a mix of servers with and without racks fails before anything is written
        return rf

    def _placeable_racks(self) -> dict[int, str | None]:
        """The live servers new replicas may go to (not tagged PERMANENT_OFFLINE), with their racks."""
        retiring = self.tagged(ServerTag.PERMANENT_OFFLINE)
        return {sid: node.rack for sid, node in self.ctx.live_servers.items() if sid not in retiring}

    def tagged(self, tag: ServerTag) -> set[int]:
        return {sid for sid, t in self.ctx.server_tags.items() if t == tag}

    def _new_assignment(self, table_id: int, seed: int, buckets: int, rf: int
                        ) -> tuple[Assignment, dict[int, LeaderAndIsr]]:
        replicas = assign_replicas(buckets, rf, self._placeable_racks(), seed)
        resting = self.tagged(ServerTag.TEMPORARY_OFFLINE)
        # a TEMPORARY_OFFLINE server leads no new bucket that has another replica
        replicas = {b: leaders_last(r, resting) if r[0] in resting else r for b, r in replicas.items()}
        leaders = {b: LeaderAndIsr(r[0], 0, list(r), self.ctx.epoch, 0) for b, r in replicas.items()}
        return Assignment(table_id, replicas), leaders

    def _register_buckets(self, table_id: int, partition_id: int, assignment: Assignment,
                          leaders: dict[int, LeaderAndIsr],
                          by_server: dict[int, list[TableBucket]] | None = None) -> None:
        """Records the new buckets and notifies their servers, or, given ``by_server``, adds them to it for one
        notification per server later (several partitions created at once)."""
        self.ctx.assignments[(table_id, partition_id)] = assignment
        notify_now = by_server is None
        by_server = {} if by_server is None else by_server
        for bucket, lai in leaders.items():
            tb = TableBucket(table_id, bucket, partition_id)
            self.ctx.leaders[tb] = (lai, 0)
            for sid in assignment.buckets[bucket]:
                by_server.setdefault(sid, []).append(tb)
        if notify_now:
            for sid, tbs in by_server.items():
                self.notifier.leader_and_isr(sid, tbs)

    async def drop_table(self, path: TablePath, ignore_if_not_exists: bool) -> None:
        await self.submit(self._drop_table, path, ignore_if_not_exists)

    async def _drop_table(self, path: TablePath, ignore_if_not_exists: bool) -> None:
        info = self.ctx.tables.get(path)
        if info is None:
            if ignore_if_not_exists:
                return
            raise FlussError(f"Table '{path}' does not exist", ErrorCode.TABLE_NOT_EXIST)
        pids = [p for p, e in self.ctx.partitions.items() if e.table_id == info.table_id]
        hosts = {tb: self.ctx.replicas(tb) for tb in self.ctx.leaders if tb.table_id == info.table_id}
        await self._zk(self.zk.delete_table, path.database_name, path.table_name, info.table_id, pids)
        await self._forget_reassignments(lambda tb: tb.table_id == info.table_id)
        self.ctx.remove_table(info)
        self._stop_replicas(hosts)
        log.info("dropped table %s (id %d)", path, info.table_id)

    def _stop_replicas(self, hosts: dict[TableBucket, list[int]]) -> None:
        by_server: dict[int, list[TableBucket]] = {}
        for tb, servers in hosts.items():
            for sid in servers:
                by_server.setdefault(sid, []).append(tb)
        for sid, tbs in by_server.items():
            self.notifier.stop_replicas(sid, tbs, delete=True)

    # ------------------------------------------------------------ partitions

    def table_or_raise(self, path: TablePath) -> TableInfo:
        info = self.ctx.tables.get(path)
        if info is None:
            raise FlussError(f"Table '{path}' does not exist", ErrorCode.TABLE_NOT_EXIST)
        return info

    def partitioned_table_or_raise(self, path: TablePath) -> TableInfo:
        info = self.table_or_raise(path)
        if not info.is_partitioned():
            raise FlussError(f"Table '{path}' is not partitioned", ErrorCode.TABLE_NOT_PARTITIONED_EXCEPTION)
        return info

    async def create_partition(self, path: TablePath, spec: dict[str, str], ignore_if_exists: bool) -> int:
        return await self.submit(self._create_partition, path, spec, ignore_if_exists)

    async def _create_partition(self, path: TablePath, spec: dict[str, str], ignore_if_exists: bool) -> int:
        info = self.partitioned_table_or_raise(path)
        name = partition_spec_to_name(spec, info.get_partition_keys())
        existing = self.ctx.partitions_of(info.table_id)
        if name in existing:
            if ignore_if_exists:
                return existing[name].reg.partition_id
            raise FlussError(f"Partition '{name}' of table '{path}' already exists", ErrorCode.PARTITION_ALREADY_EXISTS)
        max_partitions = self.config.get_int(MAX_PARTITION_NUM)
        if len(existing) >= max_partitions:
            raise FlussError(f"Table '{path}' already has {len(existing)} partitions, the maximum "
                             f"(max.partition.num = {max_partitions})", ErrorCode.PARTITION_MAX_NUM_EXCEPTION)
        rf = self._replication_factor(info.descriptor)
        partition_id = await self._zk(self.zk.next_id, paths.PARTITION_ID_SEQ)
        # a partition gets the table's current bucket count and keeps it (ALTER TABLE changes later partitions only)
        assignment, leaders = self._new_assignment(info.table_id, info.table_id + partition_id, info.num_buckets, rf)
        reg = PartitionRegistration(partition_id, info.table_id, {k: spec[k] for k in info.get_partition_keys()},
                                    info.num_buckets)
        await self._zk(self.zk.create_partition, path.database_name, path.table_name, name, reg, assignment, leaders)
        self.ctx.partitions[partition_id] = PartitionEntry(info.table_id, name, reg)
        self._register_buckets(info.table_id, partition_id, assignment, leaders)
        log.info("created partition %s of %s (id %d, %d buckets)", name, path, partition_id, info.num_buckets)
        return partition_id

    async def _create_partitions(self, path: TablePath, specs: list[dict[str, str]]) -> None:
        """Auto-partitioning's creations: the partitions of ``specs`` that do not exist yet, ``PARTITION_BATCH`` at
        a time (fewer for tables of many buckets), each batch with one id allocation, its ZooKeeper writes (bounded
        transactions, the partition nodes last) and one NotifyLeaderAndIsr per server (one at a time, a partition
        cost two ZooKeeper writes and a notification: ~40 ms, 1,000 took 40 s)."""
        info = self.partitioned_table_or_raise(path)
        keys = info.get_partition_keys()
        existing = self.ctx.partitions_of(info.table_id)
        todo: dict[str, dict[str, str]] = {}
        for spec in specs:
            name = partition_spec_to_name(spec, keys)
            if name not in existing:
                todo.setdefault(name, spec)
        room = self.config.get_int(MAX_PARTITION_NUM) - len(existing)
        if len(todo) > room:
            log.warning("auto-partitioning creates %d of the %d partitions %s needs: max.partition.num = %d",
                        max(0, room), len(todo), path, self.config.get_int(MAX_PARTITION_NUM))
            todo = dict(list(todo.items())[:max(0, room)])
        if not todo:
            return
        rf = self._replication_factor(info.descriptor)
        pending = list(todo.items())
        batch = max(1, min(PARTITION_BATCH, PARTITION_BATCH_BUCKETS // max(1, info.num_buckets)))
        for start in range(0, len(pending), batch):
            chunk = pending[start:start + batch]
            first = await self._zk(self.zk.next_ids, paths.PARTITION_ID_SEQ, len(chunk))
            created = []
            for k, (name, spec) in enumerate(chunk):
                pid = first + k
                assignment, leaders = self._new_assignment(info.table_id, info.table_id + pid, info.num_buckets, rf)
                reg = PartitionRegistration(pid, info.table_id, {key: spec[key] for key in keys}, info.num_buckets)
                created.append((name, reg, assignment, leaders))
            await self._zk(self.zk.create_partitions, path.database_name, path.table_name, created)
            by_server: dict[int, list[TableBucket]] = {}
            for name, reg, assignment, leaders in created:
                self.ctx.partitions[reg.partition_id] = PartitionEntry(info.table_id, name, reg)
                self._register_buckets(info.table_id, reg.partition_id, assignment, leaders, by_server)
            for sid, tbs in by_server.items():
                self.notifier.leader_and_isr(sid, tbs)
            log.info("created partitions %s of %s (ids %d-%d, %d buckets each)", ", ".join(n for n, *_ in created),
                     path, first, first + len(chunk) - 1, info.num_buckets)

    async def drop_partition(self, path: TablePath, spec: dict[str, str], ignore_if_not_exists: bool) -> None:
        await self.submit(self._drop_partition, path, spec, ignore_if_not_exists)

    async def _drop_partition(self, path: TablePath, spec: dict[str, str], ignore_if_not_exists: bool) -> None:
        info = self.partitioned_table_or_raise(path)
        name = partition_spec_to_name(spec, info.get_partition_keys())
        entry = self.ctx.partitions_of(info.table_id).get(name)
        if entry is None:
            if ignore_if_not_exists:
                return
            raise FlussError(f"Partition '{name}' of table '{path}' does not exist", ErrorCode.PARTITION_NOT_EXISTS)
        pid = entry.reg.partition_id
        hosts = {tb: self.ctx.replicas(tb) for tb in self.ctx.buckets_of(info.table_id, pid)}
        await self._zk(self.zk.delete_partition, path.database_name, path.table_name, name, info.table_id, pid)
        await self._forget_reassignments(lambda tb: tb.table_id == info.table_id and tb.partition_id == pid)
        self.ctx.partitions.pop(pid, None)
        self.ctx.remove_buckets(lambda tb: tb.table_id == info.table_id and tb.partition_id_or_none_value == pid)
        self._stop_replicas(hosts)

    # ------------------------------------------------------------ live configuration (server/dynamic_config.py)

    async def alter_cluster_configs(self, changes: list[ConfigChange]) -> None:
        await self.submit(self._alter_cluster_configs, list(changes))

    async def _alter_cluster_configs(self, changes: list[ConfigChange]) -> None:
        """Checks the changes, writes the new overrides to ``/cluster_config`` (compare-and-set) and installs them
        here at once; the tablet servers follow through their watch of the node."""
        current, version = await self._zk(self.zk.get_cluster_config)
        updated = apply_alter(current, changes)
        if updated == current:
            return
        check_metadata_size("the cluster configuration", None, updated, len(dumps({"configs": updated})))
        if not await self._zk(self.zk.set_cluster_config, updated, version):
            raise FlussError("The cluster configuration changed while this request was applied; retry",
                             ErrorCode.INVALID_COORDINATOR_EXCEPTION)
        log.info("cluster configuration altered: %s", ", ".join(
            f"{c.key} {AlterConfigOpType(c.op).name}" for c in changes))
        if self.dynamic is not None:
            self.dynamic.install(updated)

    def _lake_options_changed(self, keys: set[str]) -> None:
        """``datalake.format`` / ``datalake.paimon.*`` changed: the lake catalog is rebuilt between two events
        (tables created afterwards get the new format and catalog options; existing tables keep theirs)."""
        self._queue.put_nowait(_Event(self._reload_lake, (), None))

    async def _reload_lake(self) -> None:
        old, self.lake = self.lake, LakeCatalogProcess(self.config.as_dict())
        old.close()
        self.lake.warm_up()
        log.info("lake catalog reloaded: datalake.format = %s", self.config.get("datalake.format"))

    # ------------------------------------------------------------ auto-partitioning

    async def _auto_partition_loop(self) -> None:
        """Queues one auto-partitioning round per ``auto-partition.check.interval``."""
        loop = asyncio.get_running_loop()
        while True:
            if self.dynamic is not None:
                await self.dynamic.wait_interval(AUTO_PARTITION_CHECK_INTERVAL, loop.time())
            else:
                await asyncio.sleep(self.config.get_duration_ms(AUTO_PARTITION_CHECK_INTERVAL) / 1000)
            await self._queue.put(_Event(self._auto_partition_all, (), None))

    async def _auto_partition_all(self) -> None:
        for info in list(self.ctx.tables_by_id.values()):
            await self._auto_partition(info)

    async def _auto_partition(self, info: TableInfo) -> None:
        """Creates the partitions an auto-partitioned table should have ahead and drops its expired ones
        (``auto_partition.py``); a failure is logged and retried at the next check."""
        strategy = AutoPartitionStrategy.of(info)
        if strategy is None or self.ctx.tables_by_id.get(info.table_id) is None:
            return
        existing = {name: e.reg.spec for name, e in self.ctx.partitions_of(info.table_id).items()}
        plan = self.auto_partitions.plan(strategy, existing)
        path = info.table_path
        try:
            await self._create_partitions(path, plan.create)
        except FlussError as e:
            log.warning("auto-partitioning could not create partitions %s of %s: %s", plan.create, path, e.message)
        for name in plan.drop:
            try:
                await self._drop_partition(path, existing[name], True)
                log.info("auto-partitioning dropped expired partition %s of %s", name, path)
            except FlussError as e:
                log.warning("auto-partitioning could not drop partition %s of %s: %s", name, path, e.message)

    # ------------------------------------------------------------ membership and leadership

    async def _servers_changed(self, ids: list[int]) -> None:
        """Membership from the registrations in ZooKeeper (``ids`` only triggers the look): a server that
        restarted between two looks is handled as lost, then joined."""
        regs = await self._zk(self.zk.get_tablet_servers)
        current = {sid: reg.register_time for sid, reg in regs.items()}
        known = {sid: self.ctx.registered_at.get(sid, -1) for sid in self.ctx.live_servers}
        lost, joined = membership_changes(known, current)
        for sid in lost:
            await self._on_server_lost(sid)
        for sid in joined:
            reg = regs[sid]
            self.ctx.registered_at[sid] = reg.register_time
            await self._on_server_joined(sid, ServerNode(sid, reg.host, reg.port, "TabletServer", reg.metrics_port,
                                                         tuple(sorted(reg.endpoints.items())), reg.rack))

    async def _on_server_lost(self, sid: int) -> None:
        node = self.ctx.live_servers.pop(sid, None)
        self.ctx.registered_at.pop(sid, None)
        self.shutting_down.discard(sid)
        self.storage_failed.discard(sid)
        log.info("tablet server %d left the cluster", sid)
        self.notifier.forget(sid, node)
        for tb in self.ctx.buckets_hosted_by(sid):
            lai, version = self.ctx.leaders[tb]
            if sid not in lai.isr and lai.leader != sid:
                continue
            isr = [r for r in lai.isr if r != sid]
            if lai.leader == sid:
                candidates = leaders_last([r for r in isr if r in self.ctx.live_servers and r not in self.ineligible],
                                          self.not_leading)
                if candidates:
                    new = LeaderAndIsr(candidates[0], lai.leader_epoch + 1, isr, self.ctx.epoch, lai.bucket_epoch + 1)
                else:  # keep the last leader in the ISR: it is the one that must come back
                    new = LeaderAndIsr(-1, lai.leader_epoch + 1, lai.isr, self.ctx.epoch, lai.bucket_epoch + 1)
            else:
                new = LeaderAndIsr(lai.leader, lai.leader_epoch, isr or lai.isr, self.ctx.epoch, lai.bucket_epoch + 1)
            await self._write_leader(tb, new, version)
        await self._advance_reassignments()  # a move waiting only for its old leader to step down may finish now

    async def _on_server_joined(self, sid: int, node: ServerNode) -> None:
        log.info("tablet server %d joined at %s", sid, node.address)
        self.ctx.live_servers[sid] = node
        self.notifier.add_server(node)
        hosted = self.ctx.buckets_hosted_by(sid)
        elected: list[TableBucket] = []
        for tb in hosted:
            lai, version = self.ctx.leaders[tb]
            if lai.leader == -1 and sid in lai.isr:
                await self._write_leader(tb, LeaderAndIsr(sid, lai.leader_epoch + 1, lai.isr, self.ctx.epoch,
                                                          lai.bucket_epoch + 1), version, notify=False)
                elected.append(tb)
        self.notifier.leader_and_isr(sid, hosted)
        # the other replicas of a bucket that was offline must learn its new leader, or they never follow it
        # (and never rejoin its ISR)
        for tb in elected:
            for other in self.ctx.replicas(tb):
                if other != sid and other in self.ctx.live_servers:
                    self.notifier.leader_and_isr(other, [tb])
        await self._advance_reassignments()

    # ------------------------------------------------------------ reassignment (coordinator/reassignment.py)

    async def alter_table_assignment(self, path: TablePath, partition_name: str | None,
                                     targets: dict[int, list[int]]) -> None:
        await self.submit(self._alter_table_assignment, path, partition_name, targets)

    async def _alter_table_assignment(self, path: TablePath, partition_name: str | None,
                                      targets: dict[int, list[int]]) -> None:
        info = self.table_or_raise(path)
        if info.is_partitioned():
            if not partition_name:
                raise FlussError(f"Table '{path}' is partitioned: name the partition whose buckets move",
                                 ErrorCode.PARTITION_NOT_EXISTS)
            entry = self.ctx.partitions_of(info.table_id).get(partition_name)
            if entry is None:
                raise FlussError(f"Partition '{partition_name}' of table '{path}' does not exist",
                                 ErrorCode.PARTITION_NOT_EXISTS)
            pid, where = entry.reg.partition_id, f"partition '{partition_name}' of table '{path}'"
            bucket_count = entry.reg.bucket_count
        else:
            if partition_name:
                raise FlussError(f"Table '{path}' is not partitioned (partition '{partition_name}' given)",
                                 ErrorCode.PARTITION_NOT_EXISTS)
            pid, where, bucket_count = -1, f"table '{path}'", info.num_buckets
        check_targets(targets, bucket_count, set(self.ctx.live_servers), self.ineligible, where,
                      self.tagged(ServerTag.PERMANENT_OFFLINE))
        back: list[int] = []
        for bucket, target in sorted(targets.items()):
            running = self.ctx.reassignments.get(TableBucket(info.table_id, bucket, pid))
            if running is not None and running.target != list(target):
                if list(target) == running.original:  # back to where it came from: the move is cancelled
                    back.append(bucket)
                    continue
                raise FlussError(f"Bucket {bucket} of {where} is already moving to {running.target}: wait until "
                                 f"that move finishes, or cancel it by giving its original replicas "
                                 f"{running.original}", ErrorCode.INVALID_UPDATE_VERSION_EXCEPTION)
        for bucket in back:
            await self._cancel_move(TableBucket(info.table_id, bucket, pid))
        await self._start_moves(info.table_id, pid, {b: t for b, t in targets.items() if b not in back})

    async def _cancel_move(self, tb: TableBucket) -> None:
        """Rolls a move back: its target becomes its original replicas, so it finishes as any move does - the new
        replicas leave the ISR and are stopped and deleted. Leadership never moved (it moves only at the finish)."""
        rec = self.ctx.reassignments[tb]
        rolled_back = ReassignmentRecord(rec.table_id, rec.partition_id, rec.bucket, list(rec.original),
                                         list(rec.original), rec.created_time)
        await self._zk(self.zk.update_reassignment, rolled_back)
        self.ctx.reassignments[tb] = rolled_back
        log.info("move of %s to %s cancelled: back to %s", tb, rec.target, rec.original)
        await self._advance_reassignment(tb)

    async def _start_moves(self, table_id: int, pid: int, targets: dict[int, list[int]]) -> None:
        """Starts moving the buckets of one table (or partition) that are not moving yet (checked targets)."""
        current = self.ctx.assignments[(table_id, pid)]
        records: list[ReassignmentRecord] = []
        for bucket, target in sorted(targets.items()):
            if TableBucket(table_id, bucket, pid) in self.ctx.reassignments:
                continue
            original = current.buckets[bucket]
            if original != list(target):
                records.append(ReassignmentRecord(table_id, pid, bucket, list(original), list(target), now_ms()))
        if not records:
            return
        new = Assignment(table_id, {b: list(r) for b, r in current.buckets.items()})
        for rec in records:
            new.buckets[rec.bucket] = widened(rec.original, rec.target)
        await self._zk(self.zk.start_reassignments, new, pid, records)
        self.ctx.assignments[(table_id, pid)] = new
        by_server: dict[int, list[TableBucket]] = {}
        for rec in records:
            tb = TableBucket(table_id, rec.bucket, pid)
            self.ctx.reassignments[tb] = rec
            for sid in new.buckets[rec.bucket]:
                by_server.setdefault(sid, []).append(tb)
            log.info("reassigning %s from %s to %s", tb, rec.original, rec.target)
        for sid, tbs in by_server.items():
            self.notifier.leader_and_isr(sid, tbs)
        for rec in records:  # a move that adds no replica (fewer replicas, another order) finishes at once
            await self._advance_reassignment(TableBucket(table_id, rec.bucket, pid))

    async def _advance_reassignments(self) -> None:
        for tb in sorted(self.ctx.reassignments):
            await self._advance_reassignment(tb)
        await self._drain()
        await self._advance_rebalance()

    # ------------------------------------------------------------ server tags (coordinator/server_tags.py)

    @property
    def not_leading(self) -> set[int]:
        """Servers that should lead nothing while another in-sync replica can (tagged)."""
        return set(self.ctx.server_tags)

    async def add_server_tag(self, server_ids: list[int], tag: int) -> None:
        await self.submit(self._add_server_tag, list(server_ids), tag)

    async def _add_server_tag(self, server_ids: list[int], tag_value: int) -> None:
        tag = parse_tag(tag_value)
        check_tag_request(server_ids, f"tag {tag.name}")
        unknown = [s for s in server_ids if s not in self.ctx.live_servers]
        if unknown:
            raise FlussError(f"Tablet server(s) {unknown} are not live tablet servers (live: "
                             f"{sorted(self.ctx.live_servers)})", ErrorCode.SERVER_NOT_EXIST_EXCEPTION)
        tagged = {s: self.ctx.server_tags[s] for s in server_ids if s in self.ctx.server_tags}
        if tagged:
            raise FlussError("Tablet server(s) already tagged: " + ", ".join(
                f"{s} ({t.name})" for s, t in sorted(tagged.items())), ErrorCode.SERVER_TAG_ALREADY_EXIST_EXCEPTION)
        tags = {**self.ctx.server_tags, **{s: tag for s in server_ids}}
        await self._zk(self.zk.set_server_tags, {s: t.name for s, t in tags.items()})
        self.ctx.server_tags = tags
        log.info("tablet server(s) %s tagged %s", server_ids, tag.name)
        for sid in server_ids:
            await self._lead_elsewhere(sid)
        if tag == ServerTag.PERMANENT_OFFLINE:
            await self._drain()

    async def remove_server_tag(self, server_ids: list[int], tag: int) -> None:
        await self.submit(self._remove_server_tag, list(server_ids), tag)

    async def _remove_server_tag(self, server_ids: list[int], tag_value: int) -> None:
        tag = parse_tag(tag_value)
        check_tag_request(server_ids, f"untag {tag.name}")
        missing = [s for s in server_ids if self.ctx.server_tags.get(s) != tag]
        if missing:
            raise FlussError(f"Tablet server(s) {missing} are not tagged {tag.name}",
                             ErrorCode.SERVER_TAG_NOT_EXIST_EXCEPTION)
        tags = {s: t for s, t in self.ctx.server_tags.items() if s not in server_ids}
        await self._zk(self.zk.set_server_tags, {s: t.name for s, t in tags.items()})
        self.ctx.server_tags = tags
        log.info("tablet server(s) %s no longer tagged %s", server_ids, tag.name)
        for sid in server_ids:
            await self._lead_preferred(sid)

    async def _lead_elsewhere(self, sid: int) -> None:
        """Moves each leadership of a tagged server to another live eligible in-sync replica (ISR unchanged)."""
        for tb in self.ctx.buckets_hosted_by(sid):
            lai, version = self.ctx.leaders[tb]
            if lai.leader != sid:
                continue
            others = [r for r in lai.isr if r != sid and r in self.ctx.live_servers and r not in self.ineligible
                      and r not in self.not_leading]
            if others:
                await self._write_leader(tb, LeaderAndIsr(others[0], lai.leader_epoch + 1, lai.isr, self.ctx.epoch,
                                                          lai.bucket_epoch + 1), version)

    async def _lead_preferred(self, sid: int) -> None:
        """Gives an untagged server back the leadership of the buckets whose preferred (first) replica it is."""
        if sid not in self.ctx.live_servers or sid in self.ineligible:
            return
        for tb in self.ctx.buckets_hosted_by(sid):
            lai, version = self.ctx.leaders[tb]
            if self.ctx.replicas(tb)[0] == sid and lai.leader != sid and sid in lai.isr \
                    and tb not in self.ctx.reassignments:
                await self._write_leader(tb, LeaderAndIsr(sid, lai.leader_epoch + 1, lai.isr, self.ctx.epoch,
                                                          lai.bucket_epoch + 1), version)

    async def _drain(self) -> None:
        """Starts moving every replica off the servers tagged PERMANENT_OFFLINE (buckets not moving already)."""
        retiring = self.tagged(ServerTag.PERMANENT_OFFLINE)
        if not retiring:
            return
        candidates = sorted(s for s in self._placeable_racks() if s not in self.ineligible
                            and self.ctx.server_tags.get(s) is None)
        racks = {sid: node.rack for sid, node in self.ctx.live_servers.items()}
        load: dict[int, int] = {}
        for a in self.ctx.assignments.values():
            for replicas in a.buckets.values():
                for r in replicas:
                    load[r] = load.get(r, 0) + 1
        moves: dict[tuple[int, int], dict[int, list[int]]] = {}
        stuck = 0
        for sid in sorted(retiring):
            for tb in self.ctx.buckets_hosted_by(sid):
                if tb in self.ctx.reassignments:
                    continue
                key = (tb.table_id, tb.partition_id_or_none_value)
                current = moves.get(key, {}).get(tb.bucket_id, self.ctx.replicas(tb))
                target = drain_target(current, sid, candidates, racks, load)
                if target is None:
                    stuck += 1
                    continue
                moves.setdefault(key, {})[tb.bucket_id] = target
                for r in set(target) - set(current):
                    load[r] = load.get(r, 0) + 1
        if stuck:
            log.warning("draining %s: %d replica(s) have no server to go to (every live untagged server holds "
                        "their bucket already)", sorted(retiring), stuck)
        for (table_id, pid), targets in sorted(moves.items()):
            await self._start_moves(table_id, pid, targets)

    async def _advance_reassignment(self, tb: TableBucket) -> None:
        """Finishes a move whose target replicas are all in the ISR (and re-announces a widened one whose new
        replicas may not have heard of it): leadership and ISR first, then the final assignment with the record's
        deletion, then the removed replicas are stopped and deleted."""
        rec = self.ctx.reassignments.get(tb)
        entry = self.ctx.leaders.get(tb)
        if rec is None or entry is None:
            return
        lai, version = entry
        replicas = self.ctx.replicas(tb)
        step = finish_step(lai, rec.target, set(self.ctx.live_servers), self.ineligible, self.ctx.epoch,
                           self.not_leading)
        if step is None:
            return
        if step.changed:
            await self._write_leader(tb, step.leader_and_isr, version, notify=False)
        key = (tb.table_id, tb.partition_id_or_none_value)
        final = Assignment(tb.table_id, {b: list(r) for b, r in self.ctx.assignments[key].buckets.items()})
        final.buckets[tb.bucket_id] = list(rec.target)
        await self._zk(self.zk.finish_reassignment, final, rec)
        self.ctx.assignments[key] = final
        del self.ctx.reassignments[tb]
        for sid in rec.target:
            self.notifier.leader_and_isr(sid, [tb])
        removed = [r for r in replicas if r not in rec.target]
        for sid in removed:
            self.notifier.stop_replicas(sid, [tb], delete=True)
        log.info("reassigned %s to %s (leader %d); stopping the replicas on %s", tb, rec.target,
                 step.leader_and_isr.leader, removed)
        if self.ctx.rebalance is not None:  # a bucket of it (a cancelled one's too) may have finished
            await self._advance_rebalance()

    async def _forget_reassignments(self, predicate) -> None:
        """Deletes the records of moves whose table or partition is being dropped."""
        for tb in [tb for tb in self.ctx.reassignments if predicate(tb)]:
            rec = self.ctx.reassignments.pop(tb)
            await self._zk(self.zk.delete_reassignment, rec.table_id, rec.partition_id, rec.bucket)
        await self._advance_rebalance()

    def list_reassignments(self) -> list[tuple[ReassignmentRecord, LeaderAndIsr, list[int]]]:
        out = []
        for tb, rec in sorted(self.ctx.reassignments.items()):
            entry = self.ctx.leaders.get(tb)
            if entry is not None:
                out.append((rec, entry[0], self.ctx.replicas(tb)))
        return out

    # ------------------------------------------------------------ rebalance (coordinator/rebalance*.py)

    async def rebalance(self, goals: list[int]) -> str:
        goals = list(goals)
        parse_goals(goals)  # a bad request is refused before the tablet servers are asked anything
        self._refuse_second_rebalance()  # before asking anything (checked again by the event, which decides)
        # asked outside the event queue (events go on meanwhile); sizes of buckets that moved since are harmless
        sizes, missing = await collect_bucket_sizes(self.ctx, self.notifier.channels)
        return await self.submit(self._rebalance, goals, sizes, missing)

    async def _rebalance(self, goal_values: list[int], sizes: dict[TableBucket, int] | None = None,
                         missing: list[int] = ()) -> str:
        goals = parse_goals(goal_values)
        sizes = sizes or {}
        self._refuse_second_rebalance()
        servers = {sid: node.rack for sid, node in self.ctx.live_servers.items() if sid not in self.ineligible}
        if not servers:
            raise FlussError("No live tablet server to rebalance over", ErrorCode.REBALANCE_FAILURE_EXCEPTION)
        layouts = {tb: BucketLayout(list(self.ctx.replicas(tb)), lai.leader, sizes.get(tb, 0))
                   for tb, (lai, _) in self.ctx.leaders.items() if tb not in self.ctx.reassignments}
        # a pure function of copies: planned off the event loop so RPCs are answered meanwhile
        plan = await asyncio.to_thread(plan_rebalance, layouts, servers, goals,
                                       self.tagged(ServerTag.PERMANENT_OFFLINE),
                                       self.tagged(ServerTag.TEMPORARY_OFFLINE))
        rec = RebalanceRecord(f"rebalance-{uuid.uuid4().hex[:16]}", [g.value for g in goals],
                              RebalanceStatus.NOT_STARTED.value, now_ms(),
                              [RebalanceBucket(tb.table_id, tb.partition_id_or_none_value, tb.bucket_id,
                                               m.original_replicas, m.original_leader, m.new_replicas,
                                               size=sizes.get(tb, 0))
                               for tb, m in sorted(plan.items())])
        rec.status = overall_status(rec).value
        if len(rec.encode()) > MAX_REBALANCE_RECORD_BYTES:
            raise FlussError(f"The rebalance plan moves {len(rec.buckets)} buckets: too many for one record in "
                             f"ZooKeeper ({MAX_REBALANCE_RECORD_BYTES} bytes); move some with alter_table_assignment "
                             "first", ErrorCode.REBALANCE_FAILURE_EXCEPTION)
        await self._zk(self.zk.set_rebalance, rec.encode())
        self.ctx.rebalance = rec
        if sizes:
            after = {tb: plan[tb].new_replicas if tb in plan else lo.replicas for tb, lo in layouts.items()}
            log.info("rebalance %s: bytes per server %s before, %s planned", rec.rebalance_id,
                     dict(sorted(server_bytes({tb: lo.replicas for tb, lo in layouts.items()}, sizes).items())),
                     dict(sorted(server_bytes(after, sizes).items())))
        log.info("rebalance %s (goals %s): %d bucket(s) to move; %d bucket(s) sized (%d bytes)%s", rec.rebalance_id,
                 [g.name for g in goals], len(rec.buckets), sum(1 for tb in layouts if sizes.get(tb)),
                 sum(sizes.get(tb, 0) for tb in layouts),
                 f", servers {missing} did not report sizes (their buckets by counts only)" if missing else "")
        await self._advance_rebalance()
        return rec.rebalance_id

    def _refuse_second_rebalance(self) -> None:
        current = self.ctx.rebalance
        if current is not None and current.active:
            raise FlussError(f"Rebalance {current.rebalance_id} is still {RebalanceStatus(current.status).name}: "
                             "cancel it or wait until it ends (one rebalance at a time)",
                             ErrorCode.REBALANCE_FAILURE_EXCEPTION)

    async def cancel_rebalance(self, rebalance_id: str | None) -> None:
        await self.submit(self._cancel_rebalance, rebalance_id)

    async def _cancel_rebalance(self, rebalance_id: str | None) -> None:
        rec = self.ctx.rebalance
        if rec is None or (rebalance_id and rebalance_id != rec.rebalance_id):
            latest = f" (the most recent is {rec.rebalance_id})" if rec is not None else ""
            raise FlussError(f"No rebalance {rebalance_id or ''} to cancel{latest}".replace("  ", " "),
                             ErrorCode.NO_REBALANCE_IN_PROGRESS_EXCEPTION)
        if not rec.active:
            raise FlussError(f"Rebalance {rec.rebalance_id} is already {RebalanceStatus(rec.status).name}",
                             ErrorCode.NO_REBALANCE_IN_PROGRESS_EXCEPTION)
        n = cancel(rec)
        await self._zk(self.zk.set_rebalance, rec.encode())
        log.info("rebalance %s cancelled: %d bucket(s) not started are cancelled, %d in flight finish",
                 rec.rebalance_id, n, sum(1 for b in rec.buckets if b.status == RebalanceStatus.REBALANCING))

    def rebalance_progress(self, rebalance_id: str | None) -> RebalanceRecord | None:
        rec = self.ctx.rebalance
        if rec is None or (rebalance_id and rebalance_id != rec.rebalance_id):
            return None
        return rec

    async def _advance_rebalance(self) -> None:
        """Settles the buckets whose moves ended and starts the next ones (at most ``max-inflight`` moving); the
        record is rewritten in ZooKeeper when a status changed. Re-entered from a move that finishes at once: the
        inner call only asks the outer one to go round again."""
        if self._rebalance_busy:
            self._rebalance_again = True
            return
        self._rebalance_busy = True
        try:
            while True:
                self._rebalance_again = False
                await self._advance_rebalance_once()
                if not self._rebalance_again:
                    return
        finally:
            self._rebalance_busy = False

    async def _advance_rebalance_once(self) -> None:
        rec = self.ctx.rebalance
        if rec is None or not any(not RebalanceStatus(b.status).is_final for b in rec.buckets):
            return
        before = rec.encode()
        in_flight = 0
        for b in rec.buckets:
            tb = TableBucket(b.table_id, b.bucket, b.partition_id)
            running = self.ctx.reassignments.get(tb)
            if b.status == RebalanceStatus.NOT_STARTED and running is not None and running.target == b.new_replicas:
                b.status = RebalanceStatus.REBALANCING.value  # started by a coordinator that died before noting it
            if b.status != RebalanceStatus.REBALANCING:
                continue
            exists = tb in self.ctx.leaders
            new = settle_in_flight(b, exists, running is not None, self.ctx.replicas(tb) if exists else None)
            if new is None:
                in_flight += 1
                continue
            if new == RebalanceStatus.COMPLETED:
                await self._elect_planned_leader(tb, b.new_replicas[0])
            else:
                log.warning("rebalance %s: bucket %s failed (its table or partition is gone, or its move ended "
                            "elsewhere)", rec.rebalance_id, tb)
            b.status = new.value
        if rec.status != RebalanceStatus.CANCELED:
            for b in rec.buckets:
                if in_flight >= self.config.get_int(REBALANCE_MAX_INFLIGHT):  # dynamic: read each time
                    break
                if b.status == RebalanceStatus.NOT_STARTED:
                    in_flight += await self._start_rebalance_bucket(rec, b)
        rec.status = overall_status(rec).value
        if rec.encode() != before:
            await self._zk(self.zk.set_rebalance, rec.encode())
            if not rec.active:
                log.info("rebalance %s %s", rec.rebalance_id, RebalanceStatus(rec.status).name)

    async def _start_rebalance_bucket(self, rec: RebalanceRecord, b: RebalanceBucket) -> int:
        """Starts one planned move; returns 1 when a reassignment was started (it counts as in flight)."""
        tb = TableBucket(b.table_id, b.bucket, b.partition_id)
        if tb not in self.ctx.leaders:
            b.status = RebalanceStatus.FAILED.value
            return 0
        if tb in self.ctx.reassignments:  # another move of the bucket (a drain, an operator's) goes first
            return 0
        bad = [r for r in b.new_replicas if r not in self.ctx.live_servers or r in self.ineligible
               or self.ctx.server_tags.get(r) == ServerTag.PERMANENT_OFFLINE]
        if bad:
            log.warning("rebalance %s: bucket %s cannot move to %s (server(s) %s gone, stopping or retiring)",
                        rec.rebalance_id, tb, b.new_replicas, bad)
            b.status = RebalanceStatus.FAILED.value
            return 0
        if self.ctx.replicas(tb) == b.new_replicas:  # only the leader changes
            await self._elect_planned_leader(tb, b.new_replicas[0])
            b.status = RebalanceStatus.COMPLETED.value
            return 0
        b.status = RebalanceStatus.REBALANCING.value
        await self._start_moves(tb.table_id, b.partition_id, {b.bucket: list(b.new_replicas)})
        return 1

    async def _elect_planned_leader(self, tb: TableBucket, leader: int) -> None:
        """Makes ``leader`` lead ``tb`` when it is a live, eligible, untagged in-sync replica (ISR unchanged)."""
        entry = self.ctx.leaders.get(tb)
        if entry is None:
            return
        lai, version = entry
        if lai.leader == leader or leader not in lai.isr or leader not in self.ctx.live_servers \
                or leader in self.ineligible or leader in self.not_leading:
            return
        await self._write_leader(tb, LeaderAndIsr(leader, lai.leader_epoch + 1, lai.isr, self.ctx.epoch,
                                                  lai.bucket_epoch + 1), version)

    # ------------------------------------------------------------ replication requests from leaders

    async def _check_server(self, server_id: int, server_epoch: int) -> None:
        """A tablet server's request is taken only from the incarnation registered now: a live server id whose
        ZooKeeper registration has ``server_epoch`` (the registration node's creation zxid)."""
        current = await self._zk(self.zk.tablet_server_epoch, server_id) if server_id in self.ctx.live_servers else None
        if current is None:
            raise FlussError(f"Tablet server {server_id} is not registered", ErrorCode.SERVER_NOT_EXIST_EXCEPTION)
        if current != server_epoch:
            raise FlussError(f"Tablet server {server_id} is registered with another epoch than {server_epoch} (a "
                             "previous incarnation's request, or nobody's)", ErrorCode.SERVER_NOT_EXIST_EXCEPTION)

    async def adjust_isr(self, server_id: int, server_epoch: int, tb: TableBucket, leader_epoch: int,
                         bucket_epoch: int, new_isr: list[int]) -> LeaderAndIsr:
        return await self.submit(self._adjust_isr, server_id, server_epoch, tb, leader_epoch, bucket_epoch, new_isr)

    async def _adjust_isr(self, server_id: int, server_epoch: int, tb: TableBucket, leader_epoch: int,
                          bucket_epoch: int, new_isr: list[int]) -> LeaderAndIsr:
        await self._check_server(server_id, server_epoch)
        entry = self.ctx.leaders.get(tb)
        if entry is None:
            raise FlussError(f"{tb} does not exist", ErrorCode.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION)
        lai, version = entry
        if lai.leader != server_id or lai.leader_epoch != leader_epoch:
            raise FlussError(f"Server {server_id} with leader epoch {leader_epoch} is not the leader of {tb} "
                             f"(leader {lai.leader}, epoch {lai.leader_epoch})", ErrorCode.FENCED_LEADER_EPOCH_EXCEPTION)
        if lai.bucket_epoch != bucket_epoch:
            raise FlussError(f"Stale ISR update for {tb}: bucket epoch {bucket_epoch}, current {lai.bucket_epoch}",
                             ErrorCode.INVALID_UPDATE_VERSION_EXCEPTION)
        replicas = self.ctx.replicas(tb)
        if server_id not in new_isr or any(r not in replicas for r in new_isr) or len(set(new_isr)) != len(new_isr):
            raise FlussError(f"Invalid ISR {new_isr} for {tb} with replicas {replicas}",
                             ErrorCode.INELIGIBLE_REPLICA_EXCEPTION)
        joining = [r for r in new_isr if r not in lai.isr and r not in self.ctx.live_servers]
        if joining:
            raise FlussError(f"ISR {new_isr} for {tb} adds tablet server(s) {joining} that are not registered",
                             ErrorCode.INELIGIBLE_REPLICA_EXCEPTION)
        # a server in controlled shutdown or with a failed disk may leave the ISR but never re-enter it
        isr = [r for r in replicas if r in new_isr and (r not in self.ineligible or r in lai.isr)]
        if sorted(isr) == sorted(lai.isr):
            refused = sorted(set(new_isr) - set(isr))
            raise FlussError(f"ISR {new_isr} for {tb} changes nothing that may change: tablet server(s) {refused} "
                             "are stopping or cannot write their disk", ErrorCode.INELIGIBLE_REPLICA_EXCEPTION)
        new = LeaderAndIsr(lai.leader, lai.leader_epoch, isr, self.ctx.epoch, lai.bucket_epoch + 1)
        await self._write_leader(tb, new, version, notify=False)
        log.info("ISR of %s changed %s -> %s", tb, lai.isr, isr)
        if tb in self.ctx.reassignments:  # a new replica may have joined: the move may finish (leader notified)
            await self._advance_reassignment(tb)
            return self.ctx.leaders[tb][0]
        return new

    @property
    def ineligible(self) -> set[int]:
        """Servers that may not lead or join an ISR: stopping, or unable to write their disk."""
        return self.shutting_down | self.storage_failed

    async def controlled_shutdown(self, server_id: int, server_epoch: int) -> int:
        return await self.submit(self._controlled_shutdown, server_id, server_epoch)

    async def _controlled_shutdown(self, server_id: int, server_epoch: int) -> int:
        """Moves leadership away from a server that is stopping and takes it out of every ISR."""
        await self._check_server(server_id, server_epoch)
        self.shutting_down.add(server_id)
        remaining = await self._move_away_from(server_id)
        log.info("controlled shutdown of tablet server %d: %d bucket(s) keep it as leader", server_id, remaining)
        return remaining

    async def report_storage_state(self, server_id: int, server_epoch: int, writable: bool, reason: str) -> int:
        return await self.submit(self._report_storage_state, server_id, server_epoch, writable, reason)

    async def _report_storage_state(self, server_id: int, server_epoch: int, writable: bool, reason: str) -> int:
        """A server that cannot write its disk leaves every ISR and its leaderships move to other in-sync replicas
        (as for a controlled shutdown); once it writes again it may rejoin ISRs as its followers catch up."""
        await self._check_server(server_id, server_epoch)
        if writable:
            if server_id in self.storage_failed:
                self.storage_failed.discard(server_id)
                log.info("tablet server %d can write its disk again", server_id)
            return 0
        if server_id not in self.storage_failed:
            log.warning("tablet server %d cannot write its disk (%s): moving its leaderships", server_id, reason)
        self.storage_failed.add(server_id)
        return await self._move_away_from(server_id)

    async def _move_away_from(self, server_id: int) -> int:
        """Moves every leadership of ``server_id`` to another live eligible ISR member and takes it out of every
        ISR; returns how many buckets it still leads (no other in-sync replica)."""
        remaining = 0
        for tb in self.ctx.buckets_hosted_by(server_id):
            lai, version = self.ctx.leaders[tb]
            isr = [r for r in lai.isr if r != server_id]
            if lai.leader == server_id:
                candidates = leaders_last([r for r in isr if r in self.ctx.live_servers and r not in self.ineligible],
                                          self.not_leading)
                if not candidates:
                    remaining += 1
                    continue
                new = LeaderAndIsr(candidates[0], lai.leader_epoch + 1, isr, self.ctx.epoch, lai.bucket_epoch + 1)
            elif server_id in lai.isr and isr:
                new = LeaderAndIsr(lai.leader, lai.leader_epoch, isr, self.ctx.epoch, lai.bucket_epoch + 1)
            else:
                continue
            await self._write_leader(tb, new, version)
        return remaining

    async def commit_kv_snapshot(self, server_id: int, server_epoch: int, leader_epoch: int, tb: TableBucket,
                                 record: KvSnapshotRecord) -> None:
        await self.submit(self._commit_kv_snapshot, server_id, server_epoch, leader_epoch, tb, record)

    async def _commit_kv_snapshot(self, server_id: int, server_epoch: int, leader_epoch: int, tb: TableBucket,
                                  record: KvSnapshotRecord) -> None:
        await self._check_server(server_id, server_epoch)
        remote = (self.config.get(REMOTE_DATA_DIR) or "").rstrip("/")
        if record.snapshot_id < 1 or record.log_offset < 0 or record.create_time <= 0:
            raise FlussError(f"KV snapshot of {tb} with id {record.snapshot_id}, log offset {record.log_offset} and "
                             f"create time {record.create_time}: ids start at 1, offsets and times are positive",
                             ErrorCode.INVALID_UPDATE_VERSION_EXCEPTION)
        if not remote or not record.remote_dir.startswith(f"{remote}/kv/") or ".." in record.remote_dir.split("/"):
            raise FlussError(f"KV snapshot of {tb} must live below {remote or 'remote.data.dir'}/kv/",
                             ErrorCode.INVALID_UPDATE_VERSION_EXCEPTION)
        self._check_current_leader(tb, server_id, leader_epoch, "a KV snapshot")
        current = await self._zk(self.zk.get_kv_snapshot, tb.table_id, tb.partition_id_or_none_value, tb.bucket_id)
        if current is not None and current.log_offset > record.log_offset:
            return  # an older snapshot arriving late never replaces a newer one
        await self._zk(self.zk.set_kv_snapshot, tb.table_id, tb.partition_id_or_none_value, tb.bucket_id, record)

    def _check_current_leader(self, tb: TableBucket, server_id: int, leader_epoch: int, what: str) -> None:
        """Only the bucket's current leader, in its current leader epoch, may commit ``what`` of it."""
        entry = self.ctx.leaders.get(tb)
        if entry is None:
            raise FlussError(f"{tb} does not exist", ErrorCode.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION)
        lai, _ = entry
        if lai.leader != server_id or lai.leader_epoch != leader_epoch:
            raise FlussError(f"Server {server_id} (leader epoch {leader_epoch}) may not commit {what} of {tb}: "
                             f"the leader is {lai.leader} with epoch {lai.leader_epoch}",
                             ErrorCode.FENCED_LEADER_EPOCH_EXCEPTION)

    async def kv_snapshot(self, tb: TableBucket) -> KvSnapshotRecord | None:
        return await self._zk(self.zk.get_kv_snapshot, tb.table_id, tb.partition_id_or_none_value, tb.bucket_id)

    async def commit_remote_log_manifest(self, server_id: int, server_epoch: int, leader_epoch: int,
                                         tb: TableBucket, record: RemoteLogManifestRecord, previous_path: str) -> None:
        await self.submit(self._commit_remote_log_manifest, server_id, server_epoch, leader_epoch, tb, record,
                          previous_path)

    async def _commit_remote_log_manifest(self, server_id: int, server_epoch: int, leader_epoch: int,
                                          tb: TableBucket, record: RemoteLogManifestRecord,
                                          previous_path: str) -> None:
        """Records a bucket's new remote log manifest: only from the registered incarnation of its current leader
        (and leader epoch), only a manifest below ``remote.data.dir/log/`` with offsets that make sense, only
        replacing the manifest the leader built on (compare-and-set on ``previous_path``), never moving the end
        back. A resent commit of the manifest already recorded succeeds (its first answer was lost)."""
        await self._check_server(server_id, server_epoch)
        remote = (self.config.get(REMOTE_DATA_DIR) or "").rstrip("/")
        path = record.manifest_path
        if not remote or not path.startswith(f"{remote}/log/") or ".." in path.split("/"):
            raise FlussError(f"Remote log manifest of {tb} must live below {remote or 'remote.data.dir'}/log/",
                             ErrorCode.INVALID_UPDATE_VERSION_EXCEPTION)
        start, end = record.remote_log_start_offset, record.remote_log_end_offset
        if (start < -1 or end < -1 or record.remote_log_size < 0 or record.segment_count < 0
                or (record.segment_count > 0 and not 0 <= start < end)):
            raise FlussError(f"Remote log manifest of {tb} with start {start}, end {end}, size "
                             f"{record.remote_log_size} and {record.segment_count} segment(s): sizes and counts are "
                             "not negative, offsets are -1 (none) or more, and segments cover start < end",
                             ErrorCode.INVALID_UPDATE_VERSION_EXCEPTION)
        self._check_current_leader(tb, server_id, leader_epoch, "the remote log")
        pid = tb.partition_id_or_none_value
        current = await self._zk(self.zk.get_remote_log_manifest, tb.table_id, pid, tb.bucket_id)
        if current is not None and current.manifest_path == record.manifest_path:
            return
        current_path = current.manifest_path if current is not None else ""
        if current_path != previous_path:
            raise FlussError(f"Remote log manifest of {tb} changed meanwhile: the leader built on "
                             f"'{previous_path}', the recorded one is '{current_path}'",
                             ErrorCode.INVALID_UPDATE_VERSION_EXCEPTION)
        if current is not None and record.remote_log_end_offset < current.remote_log_end_offset:
            raise FlussError(f"Remote log manifest of {tb} would move the remote end back from "
                             f"{current.remote_log_end_offset} to {record.remote_log_end_offset}",
                             ErrorCode.INVALID_UPDATE_VERSION_EXCEPTION)
        await self._zk(self.zk.set_remote_log_manifest, tb.table_id, pid, tb.bucket_id, record)

    async def remote_log_manifest(self, tb: TableBucket) -> RemoteLogManifestRecord | None:
        return await self._zk(self.zk.get_remote_log_manifest, tb.table_id, tb.partition_id_or_none_value,
                              tb.bucket_id)

    async def commit_lake_snapshot(self, snapshot: LakeSnapshotRecord) -> None:
        await self.submit(self._commit_lake_snapshot, snapshot)

    async def _commit_lake_snapshot(self, snapshot: LakeSnapshotRecord) -> None:
        info = self.ctx.tables_by_id.get(snapshot.table_id)
        if info is None:
            raise FlussError(f"Table id {snapshot.table_id} does not exist", ErrorCode.TABLE_NOT_EXIST)
        current = await self._zk(self.zk.get_lake_snapshot, snapshot.table_id)
        check_lake_snapshot(info, snapshot, current)
        if current is not None and current.snapshot_id >= snapshot.snapshot_id:
            return  # a retried report of a snapshot already recorded (or an older one): nothing to do
        await self._zk(self.zk.set_lake_snapshot, snapshot)
        self.ctx.lake_snapshots[snapshot.table_id] = (snapshot.snapshot_id, snapshot.commit_time)

    async def lake_snapshot(self, table_id: int) -> LakeSnapshotRecord | None:
        return await self._zk(self.zk.get_lake_snapshot, table_id)

    async def init_writer(self) -> int:
        return await self._zk(self.zk.next_id, paths.WRITER_ID_SEQ)

    async def _write_leader(self, tb: TableBucket, new: LeaderAndIsr, version: int, notify: bool = True) -> None:
        pid = tb.partition_id_or_none_value
        try:
            new_version = await self._zk(self.zk.set_leader_and_isr, tb.table_id, pid, tb.bucket_id, new, version)
        except Exception:  # noqa: BLE001 - a concurrent writer (a tablet server's ISR change): reload and retry once
            got = await self._zk(self.zk.get_leader_and_isr, tb.table_id, pid, tb.bucket_id)
            if got is None:
                return
            new_version = await self._zk(self.zk.set_leader_and_isr, tb.table_id, pid, tb.bucket_id, new, got[1])
        self.ctx.leaders[tb] = (new, new_version)
        if notify:
            for sid in self.ctx.replicas(tb):
                if sid in self.ctx.live_servers:
                    self.notifier.leader_and_isr(sid, [tb])
