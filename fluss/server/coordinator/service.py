"""The coordinator's AdminService: DDL goes through the event processor, reads come from the context."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable

from fluss import fs
from fluss.acl import (
    OperationType,
    Resource,
    binding_from_pb,
    binding_to_pb,
    filter_from_pb,
)
from fluss.errors import ErrorCode, FlussError
from fluss.metadata import (
    DatabaseDescriptor,
    ServerNode,
    TableBucket,
    TableChange,
    TableDescriptor,
    TablePath,
)
from fluss.rpc.errors import OK, error_info
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.rpc.gen import fluss_api_pb2_grpc as rpc
from fluss.rpc.interceptors import current_request
from fluss.server.coordinator.processor import CoordinatorEventProcessor
from fluss.server.dynamic_config import ConfigChange
from fluss.server.dynamic_config import describe as describe_cluster_configs
from fluss.server.security.authorizer import add_to, binding_of, sort_key
from fluss.server.security.session import current_session
from fluss.server.zk.data import (
    KvSnapshotRecord,
    LakeBucketOffset,
    LakeSnapshotRecord,
    RemoteLogManifestRecord,
)
from fluss.table_options import DATALAKE_ENABLED


def _guard(response_type: type) -> Callable:
    """Wraps a handler: a FlussError (or any error) becomes the response's ``error`` field."""

    def wrap(fn: Callable) -> Callable:
        async def handler(self, request, context):
            if not self.is_active():
                return response_type(error=pb.ErrorInfo(code=ErrorCode.INVALID_COORDINATOR_EXCEPTION,
                                                        message="This coordinator is not the active one"))
            try:
                return await fn(self, request, context)
            except Exception as e:  # noqa: BLE001
                return response_type(error=error_info(e))

        handler.__name__ = fn.__name__
        return handler

    return wrap


def _for_caller(node: ServerNode) -> pb.ServerNodePb:
    """A node at the address of the listener the request came through (clients of a SASL listener are told the
    SASL addresses of the other servers, clients of a plaintext one the plaintext addresses)."""
    request = current_request()
    return node.for_listener(request.listener if request else None).to_pb()


class AdminServicer(rpc.AdminServiceServicer):
    def __init__(self, server) -> None:
        self._server = server

    @property
    def _authorizer(self):
        return self._server.security.authorizer

    def _may_see(self, resource: Resource) -> bool:
        return self._authorizer.may_see(current_session(), resource)

    def is_active(self) -> bool:
        return self._server.processor is not None

    @property
    def p(self) -> CoordinatorEventProcessor:
        return self._server.processor

    # databases
    @_guard(pb.CreateDatabaseResponse)
    async def CreateDatabase(self, request, context):
        await self.p.create_database(request.database_name, DatabaseDescriptor.from_pb(request.descriptor),
                                     request.ignore_if_exists)
        return pb.CreateDatabaseResponse(error=OK)

    @_guard(pb.DropDatabaseResponse)
    async def DropDatabase(self, request, context):
        await self.p.drop_database(request.database_name, request.ignore_if_not_exists, request.cascade)
        return pb.DropDatabaseResponse(error=OK)

    @_guard(pb.ListDatabasesResponse)
    async def ListDatabases(self, request, context):
        names = [db for db in sorted(self.p.ctx.databases) if self._may_see(Resource.database(db))]
        return pb.ListDatabasesResponse(error=OK, database_names=names)

    @_guard(pb.DatabaseExistsResponse)
    async def DatabaseExists(self, request, context):
        db = request.database_name
        visible = db == "fluss" or self._may_see(Resource.database(db))  # the default database is exempt (Fluss)
        return pb.DatabaseExistsResponse(error=OK, exists=visible and db in self.p.ctx.databases)

    @_guard(pb.GetDatabaseInfoResponse)
    async def GetDatabaseInfo(self, request, context):
        reg = self.p.ctx.databases.get(request.database_name)
        if reg is None:
            raise FlussError(f"Database '{request.database_name}' does not exist", ErrorCode.DATABASE_NOT_EXIST)
        desc = DatabaseDescriptor(reg.comment, reg.custom_properties)
        return pb.GetDatabaseInfoResponse(error=OK, database_info=pb.DatabaseInfoPb(
            database_name=request.database_name, descriptor=desc.to_pb(), created_time=reg.created_time,
            modified_time=reg.modified_time))

    # tables
    @_guard(pb.CreateTableResponse)
    async def CreateTable(self, request, context):
        path = TablePath.from_pb(request.table_path)
        await self.p.create_table(path, TableDescriptor.from_pb(request.descriptor), request.ignore_if_exists)
        return pb.CreateTableResponse(error=OK)

    @_guard(pb.DropTableResponse)
    async def DropTable(self, request, context):
        await self.p.drop_table(TablePath.from_pb(request.table_path), request.ignore_if_not_exists)
        return pb.DropTableResponse(error=OK)

    @_guard(pb.AlterTableResponse)
    async def AlterTable(self, request, context):
        changes = [TableChange.from_pb(c) for c in request.changes]
        await self.p.alter_table(TablePath.from_pb(request.table_path), changes, request.ignore_if_not_exists)
        return pb.AlterTableResponse(error=OK)

    @_guard(pb.GetTableInfoResponse)
    async def GetTableInfo(self, request, context):
        info = self.p.table_or_raise(TablePath.from_pb(request.table_path))
        return pb.GetTableInfoResponse(error=OK, table_info=info.to_pb())

    @_guard(pb.ListTablesResponse)
    async def ListTables(self, request, context):
        db = request.database_name
        if db not in self.p.ctx.databases:
            raise FlussError(f"Database '{db}' does not exist", ErrorCode.DATABASE_NOT_EXIST)
        session = current_session()
        names = sorted(p.table_name for p in self.p.ctx.tables if p.database_name == db and
                       self._authorizer.authorize(session, OperationType.DESCRIBE, Resource.table(db, p.table_name)))
        return pb.ListTablesResponse(error=OK, table_names=names)

    @_guard(pb.TableExistsResponse)
    async def TableExists(self, request, context):
        path = TablePath.from_pb(request.table_path)
        visible = self._authorizer.authorize(current_session(), OperationType.DESCRIBE,
                                             Resource.table(path.database_name, path.table_name))
        return pb.TableExistsResponse(error=OK, exists=visible and path in self.p.ctx.tables)

    # partitions
    @_guard(pb.CreatePartitionResponse)
    async def CreatePartition(self, request, context):
        pid = await self.p.create_partition(TablePath.from_pb(request.table_path), dict(request.partition_spec),
                                            request.ignore_if_exists)
        return pb.CreatePartitionResponse(error=OK, partition_id=pid)

    @_guard(pb.DropPartitionResponse)
    async def DropPartition(self, request, context):
        await self.p.drop_partition(TablePath.from_pb(request.table_path), dict(request.partition_spec),
                                    request.ignore_if_not_exists)
        return pb.DropPartitionResponse(error=OK)

    @_guard(pb.ListPartitionInfosResponse)
    async def ListPartitionInfos(self, request, context):
        info = self.p.partitioned_table_or_raise(TablePath.from_pb(request.table_path))
        spec_filter = dict(request.partition_spec)
        unknown = [k for k in spec_filter if k not in info.get_partition_keys()]
        if unknown:
            raise FlussError(f"Partition spec key(s) {unknown} are not partition keys of table "
                             f"'{info.table_path}' ({info.get_partition_keys()})",
                             ErrorCode.PARTITION_SPEC_INVALID_EXCEPTION)
        out = []
        for name, entry in sorted(self.p.ctx.partitions_of(info.table_id).items()):
            if all(entry.reg.spec.get(k) == v for k, v in spec_filter.items()):
                out.append(pb.PartitionInfoPb(partition_id=entry.reg.partition_id, partition_name=name,
                                              partition_spec=entry.reg.spec, bucket_count=entry.reg.bucket_count))
        return pb.ListPartitionInfosResponse(error=OK, partitions=out)

    # cluster
    @_guard(pb.GetServerNodesResponse)
    async def GetServerNodes(self, request, context):
        nodes = [_for_caller(self._server.node)] + [_for_caller(n) for _, n in sorted(self.p.ctx.live_servers.items())]
        return pb.GetServerNodesResponse(error=OK, nodes=nodes)

    @_guard(pb.AlterTableAssignmentResponse)
    async def AlterTableAssignment(self, request, context):
        targets: dict[int, list[int]] = {}
        for b in request.buckets:
            if b.bucket_id in targets:
                raise FlussError(f"Bucket {b.bucket_id} appears more than once in the request",
                                 ErrorCode.INVALID_REPLICATION_FACTOR)
            targets[b.bucket_id] = list(b.replicas)
        await self.p.alter_table_assignment(TablePath.from_pb(request.table_path), request.partition_name or None,
                                            targets)
        return pb.AlterTableAssignmentResponse(error=OK)

    @_guard(pb.AddServerTagResponse)
    async def AddServerTag(self, request, context):
        await self.p.add_server_tag(list(request.server_ids), request.server_tag)
        return pb.AddServerTagResponse(error=OK)

    @_guard(pb.RemoveServerTagResponse)
    async def RemoveServerTag(self, request, context):
        await self.p.remove_server_tag(list(request.server_ids), request.server_tag)
        return pb.RemoveServerTagResponse(error=OK)

    @_guard(pb.AlterClusterConfigsResponse)
    async def AlterClusterConfigs(self, request, context):
        changes = [ConfigChange(c.key, c.value if c.HasField("value") else None, c.op_type) for c in request.configs]
        await self.p.alter_cluster_configs(changes)
        return pb.AlterClusterConfigsResponse(error=OK)

    @_guard(pb.DescribeClusterConfigsResponse)
    async def DescribeClusterConfigs(self, request, context):
        return pb.DescribeClusterConfigsResponse(error=OK, configs=[
            pb.ConfigEntryPb(key=e.key, value=e.value, config_source=e.source)
            for e in describe_cluster_configs(self._server.config)])

    @_guard(pb.RebalanceResponse)
    async def Rebalance(self, request, context):
        if len(request.goals) > 16:
            raise FlussError(f"A rebalance takes at most 16 goals ({len(request.goals)} given)",
                             ErrorCode.INVALID_CONFIG_EXCEPTION)
        rebalance_id = await self.p.rebalance(list(request.goals))
        return pb.RebalanceResponse(error=OK, rebalance_id=rebalance_id)

    @_guard(pb.CancelRebalanceResponse)
    async def CancelRebalance(self, request, context):
        await self.p.cancel_rebalance(_rebalance_id(request.rebalance_id))
        return pb.CancelRebalanceResponse(error=OK)

    @_guard(pb.ListRebalanceProgressResponse)
    async def ListRebalanceProgress(self, request, context):
        rec = self.p.rebalance_progress(_rebalance_id(request.rebalance_id))
        if rec is None:
            return pb.ListRebalanceProgressResponse(error=OK)
        out = []
        for b in rec.buckets:
            info = self.p.ctx.tables_by_id.get(b.table_id)
            part = self.p.ctx.partitions.get(b.partition_id)
            out.append(pb.RebalanceBucketPb(
                table_path=info.table_path.to_pb() if info else None, table_id=b.table_id,
                partition_id=b.partition_id, partition_name=part.name if part else "", bucket_id=b.bucket,
                original_leader=b.original_leader, new_leader=b.new_replicas[0], original_replicas=b.original_replicas,
                new_replicas=b.new_replicas, status=b.status))
        return pb.ListRebalanceProgressResponse(error=OK, rebalance_id=rec.rebalance_id, rebalance_status=rec.status,
                                                progress=rec.progress(), goals=rec.goals, buckets=out)

    @_guard(pb.ListReassignmentsResponse)
    async def ListReassignments(self, request, context):
        out = []
        for rec, lai, replicas in self.p.list_reassignments():
            info = self.p.ctx.tables_by_id.get(rec.table_id)
            part = self.p.ctx.partitions.get(rec.partition_id)
            if info is None:
                continue
            out.append(pb.ReassignmentPb(
                table_path=info.table_path.to_pb(), table_id=rec.table_id, partition_id=rec.partition_id,
                partition_name=part.name if part else "", bucket_id=rec.bucket, original_replicas=rec.original,
                target_replicas=rec.target, replicas=replicas, isr=lai.isr, leader=lai.leader))
        return pb.ListReassignmentsResponse(error=OK, reassignments=out)

    @_guard(pb.GetMetadataResponse)
    async def GetMetadata(self, request, context):
        ctx = self.p.ctx
        resp = pb.GetMetadataResponse(error=OK, coordinator=_for_caller(self._server.node),
                                      tablet_servers=[_for_caller(n) for _, n in sorted(ctx.live_servers.items())])
        for path_pb in request.table_paths:
            info = self.p.table_or_raise(TablePath.from_pb(path_pb))
            resp.tables.append(pb.TableMetadataPb(table_info=info.to_pb(),
                                                  buckets=self._bucket_metadata(info.table_id, -1)))
        wanted: list[tuple[int, str, int]] = []
        by_table: dict[int, dict] = {}  # one look over the partitions per table, not per partition asked for
        for ref in request.partitions:
            info = self.p.partitioned_table_or_raise(TablePath.from_pb(ref.table_path))
            if info.table_id not in by_table:
                by_table[info.table_id] = ctx.partitions_of(info.table_id)
            entry = by_table[info.table_id].get(ref.partition_name)
            if entry is None:
                raise FlussError(f"Partition '{ref.partition_name}' of table '{info.table_path}' does not exist",
                                 ErrorCode.PARTITION_NOT_EXISTS)
            wanted.append((info.table_id, ref.partition_name, entry.reg.partition_id))
        for pid in request.partition_ids:
            entry = ctx.partitions.get(pid)
            if entry is None:
                raise FlussError(f"Partition id {pid} does not exist", ErrorCode.PARTITION_NOT_EXISTS)
            owner = ctx.tables_by_id.get(entry.table_id)
            if owner is not None:
                self._authorizer.check(current_session(), OperationType.DESCRIBE,
                                       Resource.table(owner.table_path.database_name, owner.table_path.table_name))
            wanted.append((entry.table_id, entry.name, pid))
        for table_id, name, pid in wanted:
            entry = ctx.partitions.get(pid)
            resp.partitions.append(pb.PartitionMetadataPb(table_id=table_id, partition_name=name, partition_id=pid,
                                                          buckets=self._bucket_metadata(table_id, pid),
                                                          bucket_count=entry.reg.bucket_count if entry else 0))
        return resp

    @_guard(pb.GetLatestKvSnapshotsResponse)
    async def GetLatestKvSnapshots(self, request, context):
        info = self.p.table_or_raise(TablePath.from_pb(request.table_path))
        pid = -1
        if request.partition_name:
            entry = self.p.ctx.partitions_of(info.table_id).get(request.partition_name)
            if entry is None:
                raise FlussError(f"Partition '{request.partition_name}' of table '{info.table_path}' does not exist",
                                 ErrorCode.PARTITION_NOT_EXISTS)
            pid = entry.reg.partition_id
        out = []
        for tb in self.p.ctx.buckets_of(info.table_id, pid):
            record = await self.p.kv_snapshot(tb)
            if record is not None:
                out.append(_snapshot_pb(tb, record))
        return pb.GetLatestKvSnapshotsResponse(error=OK, snapshots=out)

    @_guard(pb.ListLakeTablesResponse)
    async def ListLakeTables(self, request, context):
        resp = pb.ListLakeTablesResponse(error=OK)
        for info in sorted(self.p.ctx.tables_by_id.values(), key=lambda t: t.table_id):
            if not DATALAKE_ENABLED.value_of(info.get_properties()):
                continue
            resp.tables.append(info.to_pb())
            snapshot = await self.p.lake_snapshot(info.table_id)
            if snapshot is not None:
                resp.latest_snapshots.append(_lake_snapshot_pb(snapshot))
        return resp

    @_guard(pb.CommitLakeTableSnapshotResponse)
    async def CommitLakeTableSnapshot(self, request, context):
        s = request.snapshot
        await self.p.commit_lake_snapshot(LakeSnapshotRecord(
            s.table_id, s.snapshot_id, s.commit_time,
            [LakeBucketOffset(b.partition_id, b.bucket_id, b.log_offset, b.max_timestamp, b.partition_name)
             for b in s.buckets]))
        return pb.CommitLakeTableSnapshotResponse(error=OK)

    @_guard(pb.GetLatestLakeSnapshotResponse)
    async def GetLatestLakeSnapshot(self, request, context):
        info = self.p.table_or_raise(TablePath.from_pb(request.table_path))
        snapshot = await self.p.lake_snapshot(info.table_id)
        if snapshot is None:
            raise FlussError(f"Table '{info.table_path}' has no lake snapshot yet", ErrorCode.LAKE_SNAPSHOT_NOT_EXIST)
        return pb.GetLatestLakeSnapshotResponse(error=OK, snapshot=_lake_snapshot_pb(snapshot))

    @_guard(pb.GetFileSystemSecurityTokenResponse)
    async def GetFileSystemSecurityToken(self, request, context):
        """What a client needs to read ``remote.data.dir`` itself (tiered log segments): the scheme, the
        credentials as a token, and the endpoint options. The cluster's configured S3 credentials are handed out
        (no STS here): give the servers a key pair that may only read and write ``remote.data.dir``."""
        config = self._server.config
        remote = config.get("remote.data.dir") or ""
        scheme = fs.scheme_of(remote) if remote else ""
        resp = pb.GetFileSystemSecurityTokenResponse(error=OK, schema=scheme)
        if scheme in ("s3", "s3a"):
            options = config.as_dict()
            resp.token = json.dumps({"access_key": options.get(fs.S3_ACCESS_KEY, ""),
                                     "secret_key": options.get(fs.S3_SECRET_KEY, ""),
                                     "session_token": options.get(fs.S3_SESSION_TOKEN, "")}).encode()
            for key in (fs.S3_ENDPOINT, fs.S3_REGION, fs.S3_PATH_STYLE_ACCESS, fs.S3_PATH_STYLE_ACCESS_ALIAS):
                if options.get(key):
                    resp.addition_info.append(pb.KeyValuePb(key=key, value=str(options[key])))
        return resp

    @_guard(pb.InitWriterResponse)
    async def InitWriter(self, request, context):
        return pb.InitWriterResponse(error=OK, writer_id=await self.p.init_writer())

    # ACLs (the AccessControl interceptor checked ALL on the resources for create and drop)
    def _require_authorizer(self) -> None:
        if not self._authorizer.enabled:
            raise FlussError("ACLs need the authorizer: set authorizer.enabled: true on the servers",
                             ErrorCode.SECURITY_DISABLED_EXCEPTION)

    @_guard(pb.CreateAclsResponse)
    async def CreateAcls(self, request, context):
        self._require_authorizer()
        bindings = [binding_from_pb(a) for a in request.acls]
        by_resource: dict[Resource, list] = {}
        for b in bindings:
            by_resource.setdefault(b.resource, []).append(b)
        zk = self._server.zk
        for resource, bs in by_resource.items():
            await asyncio.to_thread(zk.update_resource_acls, resource.type.name, resource.name,
                                    lambda acls, bs=bs: add_to(acls, bs))
        await asyncio.to_thread(self._authorizer.reload)
        return pb.CreateAclsResponse(error=OK)

    @_guard(pb.ListAclsResponse)
    async def ListAcls(self, request, context):
        self._require_authorizer()
        flt = filter_from_pb(request.filter)
        session = current_session()
        visible = [b for b in self._authorizer.bindings(flt)
                   if self._authorizer.authorize(session, OperationType.DESCRIBE, b.resource)]
        return pb.ListAclsResponse(error=OK, acls=[binding_to_pb(b) for b in visible])

    @_guard(pb.DropAclsResponse)
    async def DropAcls(self, request, context):
        self._require_authorizer()
        filters = [filter_from_pb(f) for f in request.filters]
        await asyncio.to_thread(self._authorizer.reload)
        matched = sorted({b for f in filters for b in self._authorizer.bindings(f)}, key=sort_key)
        zk = self._server.zk
        for resource in {b.resource for b in matched}:
            def remove(acls, resource=resource):
                keep = [e for e in acls.acls if not any(f.matches(_binding(resource, e)) for f in filters)]
                if len(keep) == len(acls.acls):
                    return None
                return type(acls)(keep)
            await asyncio.to_thread(zk.update_resource_acls, resource.type.name, resource.name, remove)
        dropped = [binding_to_pb(b) for b in matched]
        await asyncio.to_thread(self._authorizer.reload)
        return pb.DropAclsResponse(error=OK, dropped=dropped)

    def _bucket_metadata(self, table_id: int, partition_id: int) -> list[pb.BucketMetadataPb]:
        out = []
        for tb in self.p.ctx.buckets_of(table_id, partition_id):
            lai, _ = self.p.ctx.leaders[tb]
            leader = lai.leader if lai.leader in self.p.ctx.live_servers else -1
            out.append(pb.BucketMetadataPb(bucket_id=tb.bucket_id, leader_id=leader, leader_epoch=lai.leader_epoch,
                                           replicas=self.p.ctx.replicas(tb), isr=lai.isr))
        return out


def _binding(resource: Resource, entry):
    return binding_of(resource.type.name, resource.name, entry)


def _lake_snapshot_pb(snapshot: LakeSnapshotRecord) -> pb.LakeSnapshotPb:
    return pb.LakeSnapshotPb(table_id=snapshot.table_id, snapshot_id=snapshot.snapshot_id,
                             commit_time=snapshot.commit_time,
                             buckets=[pb.LakeBucketOffsetPb(partition_id=b.partition_id, bucket_id=b.bucket_id,
                                                            log_offset=b.log_offset, max_timestamp=b.max_timestamp,
                                                            partition_name=b.partition_name)
                                      for b in snapshot.buckets])


def _snapshot_pb(tb: TableBucket, record: KvSnapshotRecord) -> pb.KvSnapshotPb:
    return pb.KvSnapshotPb(table_id=tb.table_id, partition_id=tb.partition_id_or_none_value, bucket_id=tb.bucket_id,
                           snapshot_id=record.snapshot_id, log_offset=record.log_offset,
                           manifest_path=record.remote_dir, create_time=record.create_time)


def _lai_pb(tb: TableBucket, lai) -> pb.LeaderAndIsrPb:
    return pb.LeaderAndIsrPb(table_id=tb.table_id, partition_id=tb.partition_id_or_none_value, bucket_id=tb.bucket_id,
                             leader=lai.leader, leader_epoch=lai.leader_epoch, isr=lai.isr,
                             bucket_epoch=lai.bucket_epoch)


class CoordinatorServicer(rpc.CoordinatorServiceServicer):
    """Requests from tablet servers: ISR changes, controlled shutdown, KV snapshots, storage failures."""

    def __init__(self, server) -> None:
        self._server = server

    def is_active(self) -> bool:
        return self._server.processor is not None

    @property
    def p(self) -> CoordinatorEventProcessor:
        return self._server.processor

    @_guard(pb.AdjustIsrResponse)
    async def AdjustIsr(self, request, context):
        b = request.bucket
        tb = TableBucket(b.table_id, b.bucket_id, b.partition_id)
        new = await self.p.adjust_isr(request.server_id, request.server_epoch, tb, b.leader_epoch, b.bucket_epoch,
                                      list(b.isr))
        return pb.AdjustIsrResponse(error=OK, bucket=_lai_pb(tb, new))

    @_guard(pb.CommitKvSnapshotResponse)
    async def CommitKvSnapshot(self, request, context):
        s = request.snapshot
        tb = TableBucket(s.table_id, s.bucket_id, s.partition_id)
        record = KvSnapshotRecord(s.snapshot_id, s.log_offset, s.manifest_path, s.create_time, request.leader_epoch)
        await self.p.commit_kv_snapshot(request.server_id, request.server_epoch, request.leader_epoch, tb, record)
        return pb.CommitKvSnapshotResponse(error=OK)

    @_guard(pb.GetKvSnapshotResponse)
    async def GetKvSnapshot(self, request, context):
        tb = TableBucket(request.table_id, request.bucket_id, request.partition_id)
        record = await self.p.kv_snapshot(tb)
        if record is None:
            return pb.GetKvSnapshotResponse(error=OK, found=False)
        return pb.GetKvSnapshotResponse(error=OK, found=True, snapshot=_snapshot_pb(tb, record))

    @_guard(pb.CommitRemoteLogManifestResponse)
    async def CommitRemoteLogManifest(self, request, context):
        m = request.manifest
        tb = TableBucket(m.table_id, m.bucket_id, m.partition_id)
        if not m.remote_log_manifest_path:
            raise FlussError(f"Remote log manifest commit for {tb} names no manifest", ErrorCode.INVALID_CONFIG_EXCEPTION)
        record = RemoteLogManifestRecord(m.remote_log_manifest_path, m.remote_log_start_offset,
                                         m.remote_log_end_offset, m.remote_log_size, m.segment_count,
                                         request.leader_epoch, int(time.time() * 1000))
        await self.p.commit_remote_log_manifest(request.server_id, request.server_epoch, request.leader_epoch, tb,
                                                record, request.previous_manifest_path)
        return pb.CommitRemoteLogManifestResponse(error=OK)

    @_guard(pb.GetRemoteLogManifestResponse)
    async def GetRemoteLogManifest(self, request, context):
        tb = TableBucket(request.table_id, request.bucket_id, request.partition_id)
        record = await self.p.remote_log_manifest(tb)
        if record is None:
            return pb.GetRemoteLogManifestResponse(error=OK, found=False)
        return pb.GetRemoteLogManifestResponse(error=OK, found=True, manifest=pb.RemoteLogManifestPb(
            table_id=tb.table_id, partition_id=tb.partition_id_or_none_value, bucket_id=tb.bucket_id,
            remote_log_manifest_path=record.manifest_path, remote_log_start_offset=record.remote_log_start_offset,
            remote_log_end_offset=record.remote_log_end_offset, remote_log_size=record.remote_log_size,
            segment_count=record.segment_count))

    @_guard(pb.ControlledShutdownResponse)
    async def ControlledShutdown(self, request, context):
        remaining = await self.p.controlled_shutdown(request.server_id, request.server_epoch)
        return pb.ControlledShutdownResponse(error=OK, remaining_leaders=remaining)

    @_guard(pb.ReportStorageStateResponse)
    async def ReportStorageState(self, request, context):
        remaining = await self.p.report_storage_state(request.server_id, request.server_epoch, request.writable,
                                                      request.reason[:500])
        return pb.ReportStorageStateResponse(error=OK, remaining_leaders=remaining)


def _rebalance_id(value: str) -> str | None:
    """A rebalance id from a request: empty means the most recent; at most 128 printable characters."""
    if not value:
        return None
    if len(value) > 128 or not value.isprintable():
        raise FlussError(f"Invalid rebalance id {value[:40]!r}: at most 128 printable characters",
                         ErrorCode.INVALID_CONFIG_EXCEPTION)
    return value
