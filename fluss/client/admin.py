"""FlussAdmin: databases, tables, partitions, offsets and cluster nodes (the official client's admin API).

The calls themselves (``AdminCalls``) run on the connection's I/O thread, the one event loop in the process
that talks gRPC; ``FlussAdmin`` forwards each method there and awaits it from the caller's loop.
"""

from __future__ import annotations

import asyncio
import inspect

from fluss.acl import AclBinding, AclBindingFilter, binding_from_pb, binding_to_pb, filter_to_pb
from fluss.client.cluster_client import ClusterClient
from fluss.client.io_thread import IoThread
from fluss.client.retry import FinalError, RetryPolicy, call_with_retry
from fluss.errors import ErrorCode, FlussError
from fluss.metadata import (
    AlterConfig,
    BucketReassignment,
    ConfigEntry,
    DatabaseDescriptor,
    DatabaseInfo,
    GoalType,
    LakeSnapshot,
    OffsetSpec,
    PartitionInfo,
    RebalanceProgress,
    ServerNode,
    ServerTag,
    TableBucket,
    TableChange,
    TableDescriptor,
    TableInfo,
    TablePath,
    TableStats,
)
from fluss.rpc.errors import raise_for_error, to_error
from fluss.rpc.gen import fluss_api_pb2 as pb


class AdminCalls:
    def __init__(self, client: ClusterClient) -> None:
        self._c = client

    async def create_database(self, database_name: str, database_descriptor: DatabaseDescriptor | None = None,
                              ignore_if_exists: bool = False) -> None:
        desc = database_descriptor or DatabaseDescriptor()
        await self._c.admin_call("CreateDatabase", pb.CreateDatabaseRequest(
            database_name=database_name, descriptor=desc.to_pb(), ignore_if_exists=ignore_if_exists))

    async def drop_database(self, database_name: str, ignore_if_not_exists: bool = False, cascade: bool = True) -> None:
        await self._c.admin_call("DropDatabase", pb.DropDatabaseRequest(
            database_name=database_name, ignore_if_not_exists=ignore_if_not_exists, cascade=cascade))

    async def list_databases(self) -> list[str]:
        return list((await self._c.admin_call("ListDatabases", pb.ListDatabasesRequest())).database_names)

    async def database_exists(self, database_name: str) -> bool:
        return (await self._c.admin_call("DatabaseExists", pb.DatabaseExistsRequest(database_name=database_name))).exists

    async def get_database_info(self, database_name: str) -> DatabaseInfo:
        resp = await self._c.admin_call("GetDatabaseInfo", pb.GetDatabaseInfoRequest(database_name=database_name))
        return DatabaseInfo.from_pb(resp.database_info)

    async def create_table(self, table_path: TablePath, table_descriptor: TableDescriptor,
                           ignore_if_exists: bool | None = None) -> None:
        await self._c.admin_call("CreateTable", pb.CreateTableRequest(
            table_path=table_path.to_pb(), descriptor=table_descriptor.to_pb(), ignore_if_exists=bool(ignore_if_exists)))

    async def drop_table(self, table_path: TablePath, ignore_if_not_exists: bool = False) -> None:
        await self._c.admin_call("DropTable", pb.DropTableRequest(table_path=table_path.to_pb(),
                                                                  ignore_if_not_exists=ignore_if_not_exists))
        self._c.tables.pop(table_path, None)

    async def alter_table(self, table_path: TablePath, table_changes: list[TableChange],
                          ignore_if_not_exists: bool = False) -> None:
        """Changes options of a live table (Fluss's ``Admin.alterTable``): ``TableChange.set(key, value)`` /
        ``TableChange.reset(key)``, applied in order, all or nothing. Only the options Fluss allows to change on a
        live table (``table.log.ttl``, ``table.datalake.enabled``, ``table.datalake.freshness``, ...) and custom
        properties can be changed; any other table option is refused naming it (INVALID_ALTER_TABLE_EXCEPTION)."""
        await self._c.admin_call("AlterTable", pb.AlterTableRequest(
            table_path=table_path.to_pb(), changes=[c.to_pb() for c in table_changes],
            ignore_if_not_exists=ignore_if_not_exists))
        self._c.tables.pop(table_path, None)

    async def get_table_info(self, table_path: TablePath) -> TableInfo:
        resp = await self._c.admin_call("GetTableInfo", pb.GetTableInfoRequest(table_path=table_path.to_pb()))
        return TableInfo.from_pb(resp.table_info)

    async def list_tables(self, database_name: str) -> list[str]:
        return list((await self._c.admin_call("ListTables", pb.ListTablesRequest(database_name=database_name))).table_names)

    async def table_exists(self, table_path: TablePath) -> bool:
        return (await self._c.admin_call("TableExists", pb.TableExistsRequest(table_path=table_path.to_pb()))).exists

    async def create_partition(self, table_path: TablePath, partition_spec: dict[str, str],
                               ignore_if_exists: bool = False) -> None:
        await self._c.admin_call("CreatePartition", pb.CreatePartitionRequest(
            table_path=table_path.to_pb(), partition_spec={k: str(v) for k, v in partition_spec.items()},
            ignore_if_exists=ignore_if_exists))

    async def drop_partition(self, table_path: TablePath, partition_spec: dict[str, str],
                             ignore_if_not_exists: bool = False) -> None:
        await self._c.admin_call("DropPartition", pb.DropPartitionRequest(
            table_path=table_path.to_pb(), partition_spec={k: str(v) for k, v in partition_spec.items()},
            ignore_if_not_exists=ignore_if_not_exists))

    async def list_partition_infos(self, table_path: TablePath,
                                   partition_spec: dict[str, str] | None = None) -> list[PartitionInfo]:
        resp = await self._c.admin_call("ListPartitionInfos", pb.ListPartitionInfosRequest(
            table_path=table_path.to_pb(), partition_spec={k: str(v) for k, v in (partition_spec or {}).items()}))
        return [PartitionInfo.from_pb(p) for p in resp.partitions]

    async def get_latest_lake_snapshot(self, table_path: TablePath) -> LakeSnapshot:
        """The latest lake snapshot of a lake-enabled table (LAKE_SNAPSHOT_NOT_EXIST before the first tiering)."""
        resp = await self._c.admin_call("GetLatestLakeSnapshot",
                                        pb.GetLatestLakeSnapshotRequest(table_path=table_path.to_pb()))
        return LakeSnapshot.from_pb(resp.snapshot)

    async def list_lake_tables(self) -> list[tuple[TableInfo, LakeSnapshot | None]]:
        """Every lake-enabled table with its latest lake snapshot (None before the first tiering)."""
        resp = await self._c.admin_call("ListLakeTables", pb.ListLakeTablesRequest())
        snapshots = {s.table_id: LakeSnapshot.from_pb(s) for s in resp.latest_snapshots}
        return [(info, snapshots.get(info.table_id)) for info in (TableInfo.from_pb(t) for t in resp.tables)]

    async def commit_lake_snapshot(self, snapshot: LakeSnapshot) -> None:
        """Records a lake snapshot with the coordinator (what a tiering service does after each lake commit);
        idempotent: a snapshot id not newer than the recorded one is ignored."""
        await self._c.admin_call("CommitLakeTableSnapshot",
                                 pb.CommitLakeTableSnapshotRequest(snapshot=snapshot.to_pb()))

    # ACLs (Fluss's Admin#createAcls / listAcls / dropAcls; the servers need authorizer.enabled)
    async def create_acls(self, acl_bindings: list[AclBinding]) -> None:
        """Adds ACLs (an existing one is kept once). Needs ALL on each binding's resource (for a table, on its
        database)."""
        bindings = [b.validate() for b in acl_bindings]
        await self._c.admin_call("CreateAcls", pb.CreateAclsRequest(acls=[binding_to_pb(b) for b in bindings]))

    async def list_acls(self, acl_filter: AclBindingFilter | None = None) -> list[AclBinding]:
        """The ACLs that match ``acl_filter`` (all by default) on resources the caller may describe."""
        resp = await self._c.admin_call("ListAcls", pb.ListAclsRequest(
            filter=filter_to_pb(acl_filter or AclBindingFilter.any())))
        return [binding_from_pb(a) for a in resp.acls]

    async def drop_acls(self, acl_filters: list[AclBindingFilter]) -> list[AclBinding]:
        """Removes every ACL matching one of ``acl_filters``; returns those removed."""
        resp = await self._c.admin_call("DropAcls", pb.DropAclsRequest(filters=[filter_to_pb(f) for f in acl_filters]))
        return [binding_from_pb(a) for a in resp.dropped]

    # Online reassignment (this project's addition: docs/cluster-operations.md; needs ALTER / DESCRIBE on the cluster)
    async def alter_table_assignment(self, table_path: TablePath, assignment: dict[int, list[int]],
                                     partition_name: str | None = None) -> None:
        """Starts moving buckets' replicas: ``assignment`` maps bucket ids to the new replica set (tablet server
        ids, the first the preferred leader). Returns once the move is recorded; it goes on in the background
        (:meth:`list_reassignments` shows what is still moving). ``partition_name`` for a partitioned table. Giving
        a moving bucket its original replicas again cancels its move (rolled back)."""
        await self._c.admin_call("AlterTableAssignment", pb.AlterTableAssignmentRequest(
            table_path=table_path.to_pb(), partition_name=partition_name or "",
            buckets=[pb.BucketAssignmentPb(bucket_id=int(b), replicas=[int(r) for r in replicas])
                     for b, replicas in sorted(assignment.items())]))

    async def add_server_tag(self, tablet_servers: list[int], server_tag: ServerTag) -> None:
        """Tags live tablet servers (Fluss's ``addServerTag``): ``PERMANENT_OFFLINE`` drains them (every replica
        moves off), ``TEMPORARY_OFFLINE`` moves their leaderships off and keeps their replicas."""
        await self._c.admin_call("AddServerTag", pb.AddServerTagRequest(
            server_ids=[int(s) for s in tablet_servers], server_tag=int(ServerTag(server_tag))))

    async def remove_server_tag(self, tablet_servers: list[int], server_tag: ServerTag) -> None:
        """Removes a tag (Fluss's ``removeServerTag``); a server leaving TEMPORARY_OFFLINE leads its preferred
        buckets again."""
        await self._c.admin_call("RemoveServerTag", pb.RemoveServerTagRequest(
            server_ids=[int(s) for s in tablet_servers], server_tag=int(ServerTag(server_tag))))

    async def alter_cluster_configs(self, configs: list[AlterConfig]) -> None:
        """Changes dynamic server options of the running cluster (Fluss's ``alterClusterConfigs``): each
        :class:`AlterConfig` SETs a key or DELETEs its override. The coordinator checks every change first (a key
        that is unknown or not dynamic, or a bad value, fails the whole call naming the key; nothing is stored),
        stores the overrides in ZooKeeper and applies them; every tablet server follows within moments, without a
        restart, and keeps them across restarts."""
        await self._c.admin_call("AlterClusterConfigs", pb.AlterClusterConfigsRequest(
            configs=[c.to_pb() for c in configs]))

    async def describe_cluster_configs(self) -> list[ConfigEntry]:
        """Every server option with a value, as the coordinator has it, with its source (Fluss's
        ``describeClusterConfigs``)."""
        resp = await self._c.admin_call("DescribeClusterConfigs", pb.DescribeClusterConfigsRequest())
        return [ConfigEntry.from_pb(e) for e in resp.configs]

    # Rebalance (Fluss's rebalance / listRebalanceProgress / cancelRebalance; docs/cluster-operations.md)
    async def rebalance(self, priority_goals: list[GoalType] | None = None) -> str:
        """Plans and starts a rebalance with ``priority_goals`` in priority order (none: RACK_AWARE,
        REPLICA_DISTRIBUTION, LEADER_DISTRIBUTION); returns its id. One rebalance runs at a time."""
        resp = await self._c.admin_call("Rebalance", pb.RebalanceRequest(
            goals=[int(GoalType(g)) for g in (priority_goals or [])]))
        return resp.rebalance_id

    async def list_rebalance(self, rebalance_id: str | None = None) -> RebalanceProgress | None:
        """The progress of rebalance ``rebalance_id`` (None: the most recent), or None when there is none."""
        resp = await self._c.admin_call("ListRebalanceProgress", pb.ListRebalanceProgressRequest(
            rebalance_id=rebalance_id or ""))
        return RebalanceProgress.from_pb(resp) if resp.rebalance_id else None

    async def cancel_rebalance(self, rebalance_id: str | None = None) -> None:
        """Cancels rebalance ``rebalance_id`` (None: the most recent): buckets not started are cancelled, moves in
        flight finish."""
        await self._c.admin_call("CancelRebalance", pb.CancelRebalanceRequest(rebalance_id=rebalance_id or ""))

    async def list_reassignments(self) -> list[BucketReassignment]:
        """Buckets still moving, with their replicas and ISR now."""
        resp = await self._c.admin_call("ListReassignments", pb.ListReassignmentsRequest())
        return [BucketReassignment.from_pb(r) for r in resp.reassignments]

    async def get_server_nodes(self) -> list[ServerNode]:
        resp = await self._c.admin_call("GetServerNodes", pb.GetServerNodesRequest())
        return [ServerNode.from_pb(n) for n in resp.nodes]

    async def list_offsets(self, table_path: TablePath, bucket_ids: list[int], offset_spec: OffsetSpec) -> dict[int, int]:
        return await self._list_offsets(table_path, None, bucket_ids, offset_spec)

    async def list_partition_offsets(self, table_path: TablePath, partition_name: str, bucket_ids: list[int],
                                     offset_spec: OffsetSpec) -> dict[int, int]:
        return await self._list_offsets(table_path, partition_name, bucket_ids, offset_spec)

    async def _list_offsets(self, path: TablePath, partition_name: str | None, bucket_ids: list[int],
                            spec: OffsetSpec) -> dict[int, int]:
        async def attempt() -> dict[int, int]:
            if partition_name is not None:
                await self._c.update_metadata([path], partitions=[(path, partition_name)])
            meta = await self._c.table(path)
            pid = meta.partitions.get(partition_name) if partition_name is not None else None
            if partition_name is None and meta.info.is_partitioned():
                raise FlussError(f"Table '{path}' is partitioned: use list_partition_offsets",
                                 ErrorCode.PARTITION_NOT_EXISTS)
            by_leader: dict[str, list[int]] = {}
            for b in bucket_ids:
                num_buckets = meta.bucket_count(pid)  # a partition's own count
                if b < 0 or b >= num_buckets:  # not retried: the table (or partition) has no such bucket
                    where = f"partition '{partition_name}' of " if partition_name is not None else ""
                    raise FinalError(f"Bucket {b} does not exist in {where}table '{path}' ({num_buckets} "
                                     "buckets)", ErrorCode.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION)
                addr = self._c.leader_address(meta, TableBucket(meta.info.table_id, b, pid))
                if addr is None:
                    raise FlussError(f"Bucket {b} of table '{path}' has no leader",
                                     ErrorCode.LEADER_NOT_AVAILABLE_EXCEPTION)
                by_leader.setdefault(addr, []).append(b)
            out: dict[int, int] = {}
            for addr, buckets in by_leader.items():
                resp = await self._c.tablet_call(addr, "ListOffsets", pb.ListOffsetsRequest(
                    follower_id=-1, offset_type=spec.kind, timestamp=spec.timestamp_ms, table_id=meta.info.table_id,
                    partition_id=-1 if pid is None else pid, bucket_ids=buckets))
                for r in resp.buckets:
                    raise_for_error(r.error)
                    out[r.bucket_id] = r.offset
            return out

        return await call_with_retry(attempt, RetryPolicy.from_config(self._c.config),
                                     f"list_offsets of table '{path}'", lambda: self._c.update_metadata([path]))

    async def get_table_stats(self, table_path: TablePath) -> TableStats:
        """The table's current row count, from its bucket leaders (every partition): the committed keys of a
        primary-key table, the records between log start and high watermark of a log table."""
        async def attempt() -> TableStats:
            meta = await self._c.table(table_path)
            partition_ids: list[int | None] = [None]
            if meta.info.is_partitioned():
                names = [p.partition_name for p in await self.list_partition_infos(table_path)]
                if names:
                    await self._c.update_metadata([table_path], partitions=[(table_path, n) for n in names])
                meta = self._c.tables[table_path]
                partition_ids = [meta.partitions[n] for n in names if n in meta.partitions]
            by_leader: dict[str, list[TableBucket]] = {}
            for pid in partition_ids:
                for b in range(meta.bucket_count(pid)):
                    tb = TableBucket(meta.info.table_id, b, pid)
                    addr = self._c.leader_address(meta, tb)
                    if addr is None:
                        raise FlussError(f"{tb} of table '{table_path}' has no leader",
                                         ErrorCode.LEADER_NOT_AVAILABLE_EXCEPTION)
                    by_leader.setdefault(addr, []).append(tb)
            counts = await asyncio.gather(*(self._bucket_row_counts(addr, meta.info.table_id, buckets)
                                            for addr, buckets in by_leader.items()))
            return TableStats(sum(counts))

        return await call_with_retry(attempt, RetryPolicy.from_config(self._c.config),
                                     f"get_table_stats of table '{table_path}'",
                                     lambda: self._c.update_metadata([table_path]))

    async def _bucket_row_counts(self, address: str, table_id: int, buckets: list[TableBucket]) -> int:
        resp = await self._c.tablet_call(address, "GetTableStats", pb.GetTableStatsRequest(table_id=table_id, buckets=[
            pb.TableStatsBucketPb(partition_id=tb.partition_id_or_none_value, bucket_id=tb.bucket_id)
            for tb in buckets]))
        total = 0
        for r in resp.buckets:
            err = to_error(r.error)
            if err is not None:
                raise err
            total += r.row_count
        return total



PUBLIC_METHODS = [
    "create_database", "drop_database", "list_databases", "database_exists", "get_database_info", "create_table",
    "drop_table", "alter_table", "get_table_info", "list_tables", "table_exists", "create_partition", "drop_partition",
    "list_partition_infos", "get_server_nodes", "list_offsets", "list_partition_offsets", "get_latest_lake_snapshot",
    "get_table_stats", "list_lake_tables", "commit_lake_snapshot", "create_acls", "list_acls", "drop_acls",
    "alter_table_assignment", "list_reassignments", "add_server_tag", "remove_server_tag",
    "alter_cluster_configs", "describe_cluster_configs", "rebalance", "list_rebalance", "cancel_rebalance",
]


class FlussAdmin:
    """Admin API of a connection (``connection.get_admin()``); every method is a coroutine."""

    def __init__(self, io: IoThread) -> None:
        self._io = io
        self._calls = AdminCalls(io.client)

    def __repr__(self) -> str:
        return f"FlussAdmin(bootstrap={self._io.client.bootstrap})"


def _forward(name: str):
    impl = getattr(AdminCalls, name)

    async def method(self: FlussAdmin, *args, **kwargs):
        return await self._io.wait(getattr(self._calls, name)(*args, **kwargs))

    method.__name__ = name
    method.__qualname__ = f"FlussAdmin.{name}"
    method.__doc__ = impl.__doc__
    method.__signature__ = inspect.signature(impl)
    return method


for _name in PUBLIC_METHODS:
    setattr(FlussAdmin, _name, _forward(_name))
