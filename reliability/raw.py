"""Talking to a cluster's servers over gRPC directly, as any program could: no client library in between.

The hostile-request tests and the protocol fuzzer use :class:`RawRpc` to build requests a well-behaved client
never sends. It finds the active coordinator from the bootstrap addresses and the tablet servers from
GetServerNodes, and offers synchronous stubs (``grpc`` blocking API; ``stub.Method.future`` for a request left in
flight).
"""

from __future__ import annotations

import time

import grpc
import pyarrow as pa

from fluss.metadata import Schema, TableDescriptor, TablePath
from fluss.rpc.channels import ChannelFactory
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.rpc.gen import fluss_api_pb2_grpc as rpc


class RawRpc:
    def __init__(self, bootstrap_servers: str) -> None:
        self.bootstrap = [a.strip() for a in bootstrap_servers.split(",") if a.strip()]
        self._channels: dict[str, grpc.Channel] = {}

    def channel(self, address: str) -> grpc.Channel:
        ch = self._channels.get(address)
        if ch is None:
            ch = self._channels[address] = ChannelFactory().sync_channel(address)
        return ch

    def close(self) -> None:
        for ch in self._channels.values():
            ch.close()
        self._channels.clear()

    def __enter__(self) -> RawRpc:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ stubs

    def coordinator_address(self, timeout_s: float = 30.0) -> str:
        """The bootstrap address of the active coordinator (a standby answers INVALID_COORDINATOR)."""
        deadline = time.monotonic() + timeout_s
        while True:
            for address in self.bootstrap:
                try:
                    resp = rpc.AdminServiceStub(self.channel(address)).GetServerNodes(
                        pb.GetServerNodesRequest(), timeout=2)
                except grpc.RpcError:
                    continue
                if resp.error.code == 0:
                    return address
            if time.monotonic() > deadline:
                raise TimeoutError(f"no active coordinator among {self.bootstrap}")
            time.sleep(0.1)

    @property
    def admin(self) -> rpc.AdminServiceStub:
        return rpc.AdminServiceStub(self.channel(self.coordinator_address()))

    @property
    def coordinator(self) -> rpc.CoordinatorServiceStub:
        return rpc.CoordinatorServiceStub(self.channel(self.coordinator_address()))

    def tablet_servers(self) -> dict[int, str]:
        nodes = self.admin.GetServerNodes(pb.GetServerNodesRequest(), timeout=5).nodes
        return {n.id: f"{n.host}:{n.port}" for n in nodes if n.server_type == "TabletServer"}

    def tablet(self, server_id: int) -> rpc.TabletServiceStub:
        return rpc.TabletServiceStub(self.channel(self.tablet_servers()[server_id]))

    # ------------------------------------------------------------ tables

    def create_table(self, database: str, name: str, schema: pa.Schema, primary_keys: list[str] | None = None,
                     buckets: int = 1, properties: dict[str, str] | None = None) -> int:
        """Creates the database (if needed) and the table; returns its id once every bucket has a leader."""
        self.admin.CreateDatabase(pb.CreateDatabaseRequest(database_name=database, ignore_if_exists=True), timeout=10)
        desc = TableDescriptor(Schema(schema, primary_keys=primary_keys), bucket_count=buckets,
                               properties=properties or {})
        path = TablePath(database, name)
        resp = self.admin.CreateTable(pb.CreateTableRequest(table_path=path.to_pb(), descriptor=desc.to_pb()),
                                      timeout=10)
        if resp.error.code:
            raise RuntimeError(f"CreateTable {path}: {resp.error.message}")
        self.wait_for_full_isr(database, name)
        return self.table_info(database, name).table_id

    def table_info(self, database: str, name: str) -> pb.TableInfoPb:
        resp = self.admin.GetTableInfo(pb.GetTableInfoRequest(table_path=TablePath(database, name).to_pb()), timeout=5)
        if resp.error.code:
            raise RuntimeError(resp.error.message)
        return resp.table_info

    def buckets(self, database: str, name: str) -> list[pb.BucketMetadataPb]:
        resp = self.admin.GetMetadata(pb.GetMetadataRequest(table_paths=[TablePath(database, name).to_pb()]),
                                      timeout=5)
        if resp.error.code:
            raise RuntimeError(resp.error.message)
        return list(resp.tables[0].buckets)

    def wait_for_full_isr(self, database: str, name: str, timeout_s: float = 30.0) -> list[pb.BucketMetadataPb]:
        """Waits until every bucket has a live leader that serves it and an ISR of all its replicas."""
        deadline = time.monotonic() + timeout_s
        while True:
            buckets = self.buckets(database, name)
            if all(b.leader_id >= 0 and sorted(b.isr) == sorted(b.replicas) for b in buckets) \
                    and all(self._leader_serves(database, name, b) for b in buckets):
                return buckets
            if time.monotonic() > deadline:
                raise TimeoutError(f"{database}.{name}: buckets not fully replicated: {buckets}")
            time.sleep(0.1)

    def _leader_serves(self, database: str, name: str, bucket: pb.BucketMetadataPb) -> bool:
        """Whether the bucket's leader serves it (for a primary-key table: with its KV state recovered)."""
        info = self.table_info(database, name)
        stub = self.tablet(bucket.leader_id)
        if info.descriptor.schema.primary_keys:
            resp = stub.ScanKv(pb.ScanKvRequest(table_id=info.table_id, partition_id=-1, bucket_id=bucket.bucket_id,
                                                limit=1), timeout=5)
            return resp.error.code == 0
        resp = stub.ListOffsets(pb.ListOffsetsRequest(follower_id=-1, offset_type=1, table_id=info.table_id,
                                                      partition_id=-1, bucket_ids=[bucket.bucket_id]), timeout=5)
        return resp.buckets[0].error.code == 0

    # ------------------------------------------------------------ data

    def produce(self, server_id: int, table_id: int, records: bytes, bucket: int = 0, acks: int = -1,
                timeout_ms: int = 10_000) -> pb.ProduceBucketResultPb:
        req = pb.ProduceLogRequest(acks=acks, table_id=table_id, timeout_ms=timeout_ms, buckets=[
            pb.ProduceBucketPb(partition_id=-1, bucket_id=bucket, records=records)])
        return self.tablet(server_id).ProduceLog(req, timeout=timeout_ms / 1000 + 10).buckets[0]

    def put_kv(self, server_id: int, table_id: int, records: bytes, bucket: int = 0, acks: int = -1,
               timeout_ms: int = 10_000) -> pb.ProduceBucketResultPb:
        req = pb.PutKvRequest(acks=acks, table_id=table_id, timeout_ms=timeout_ms, buckets=[
            pb.PutKvBucketPb(partition_id=-1, bucket_id=bucket, records=records)])
        return self.tablet(server_id).PutKv(req, timeout=timeout_ms / 1000 + 10).buckets[0]

    def fetch(self, server_id: int, table_id: int, offset: int, bucket: int = 0, follower_id: int = -1,
              max_wait_ms: int = 0) -> pb.FetchBucketResultPb:
        req = pb.FetchLogRequest(follower_id=follower_id, max_bytes=16 << 20, min_bytes=1, max_wait_ms=max_wait_ms,
                                 tables=[pb.FetchTablePb(table_id=table_id, buckets=[pb.FetchBucketPb(
                                     partition_id=-1, bucket_id=bucket, fetch_offset=offset, max_bytes=16 << 20)])])
        return self.tablet(server_id).FetchLog(req, timeout=max_wait_ms / 1000 + 10).tables[0].buckets[0]

    def offsets(self, server_id: int, table_id: int, bucket: int = 0, offset_type: int = 1) -> int:
        resp = self.tablet(server_id).ListOffsets(pb.ListOffsetsRequest(
            follower_id=-1, offset_type=offset_type, table_id=table_id, partition_id=-1, bucket_ids=[bucket]),
            timeout=5)
        r = resp.buckets[0]
        if r.error.code:
            raise RuntimeError(r.error.message)
        return r.offset
