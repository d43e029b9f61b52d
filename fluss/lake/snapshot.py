"""Lake snapshots as the coordinator records them, and the admin calls that read and report them.

A :class:`LakeSnapshot` says "the lake (Paimon snapshot ``snapshot_id``) holds every record of bucket ``b``
below offset ``table_buckets_offset[b]``". It mirrors the official Fluss Python client's ``LakeSnapshot``
(``snapshot_id``, ``table_buckets_offset``, ``get_bucket_offset``, ``get_table_buckets``).

The coordinator stores one per table (``CommitLakeTableSnapshot`` replaces the previous one, ignoring a
snapshot id that is not newer), so a report always carries every bucket ever tiered, not only those changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fluss.metadata import NO_PARTITION, TableBucket, TableInfo, TablePath
from fluss.rpc.gen import fluss_api_pb2 as pb


@dataclass
class LakeSnapshot:
    """The latest lake snapshot of a table: Paimon snapshot id + the next Fluss offset to tier per bucket."""

    snapshot_id: int
    table_buckets_offset: dict[TableBucket, int] = field(default_factory=dict)
    table_id: int = -1
    max_timestamps: dict[TableBucket, int] = field(default_factory=dict)
    partition_names: dict[int, str] = field(default_factory=dict)
    commit_time: int = 0

    def get_bucket_offset(self, bucket: TableBucket) -> int | None:
        return self.table_buckets_offset.get(bucket)

    def get_table_buckets(self) -> list[TableBucket]:
        return sorted(self.table_buckets_offset)

    @classmethod
    def from_pb(cls, msg: pb.LakeSnapshotPb) -> LakeSnapshot:
        out = cls(snapshot_id=msg.snapshot_id, table_id=msg.table_id, commit_time=msg.commit_time)
        for b in msg.buckets:
            pid = None if b.partition_id == NO_PARTITION else b.partition_id
            tb = TableBucket(msg.table_id, b.bucket_id, pid)
            out.table_buckets_offset[tb] = b.log_offset
            out.max_timestamps[tb] = b.max_timestamp
            if b.partition_name:
                out.partition_names[b.partition_id] = b.partition_name
        return out

    def to_pb(self) -> pb.LakeSnapshotPb:
        buckets = []
        for tb in sorted(self.table_buckets_offset):
            pid = tb.partition_id_or_none_value
            buckets.append(pb.LakeBucketOffsetPb(
                partition_id=pid, bucket_id=tb.bucket_id, log_offset=self.table_buckets_offset[tb],
                max_timestamp=self.max_timestamps.get(tb, -1), partition_name=self.partition_names.get(pid, "")))
        return pb.LakeSnapshotPb(table_id=self.table_id, snapshot_id=self.snapshot_id, buckets=buckets,
                                 commit_time=self.commit_time)

    def __repr__(self) -> str:
        offsets = {tb.bucket_id if tb.partition_id is None else (tb.partition_id, tb.bucket_id): o
                   for tb, o in sorted(self.table_buckets_offset.items())}
        return f"LakeSnapshot(snapshot_id={self.snapshot_id}, offsets={offsets})"


async def get_latest_lake_snapshot(conn, table_path: TablePath) -> LakeSnapshot:
    """The table's latest lake snapshot; raises ``FlussError(LAKE_SNAPSHOT_NOT_EXIST)`` before the first tiering."""
    resp = await conn.run(conn.cluster.admin_call(
        "GetLatestLakeSnapshot", pb.GetLatestLakeSnapshotRequest(table_path=table_path.to_pb())))
    return LakeSnapshot.from_pb(resp.snapshot)


async def list_lake_tables(conn) -> list[tuple[TableInfo, LakeSnapshot | None]]:
    """Every lake-enabled table with its latest lake snapshot (None before the first tiering)."""
    resp = await conn.run(conn.cluster.admin_call("ListLakeTables", pb.ListLakeTablesRequest()))
    snapshots = {s.table_id: LakeSnapshot.from_pb(s) for s in resp.latest_snapshots}
    out = []
    for t in resp.tables:
        info = TableInfo.from_pb(t)
        out.append((info, snapshots.get(info.table_id)))
    return out


async def commit_lake_snapshot(conn, snapshot: LakeSnapshot) -> None:
    """Reports a lake snapshot to the coordinator (idempotent: an id not newer than the stored one is ignored)."""
    await conn.run(conn.cluster.admin_call(
        "CommitLakeTableSnapshot", pb.CommitLakeTableSnapshotRequest(snapshot=snapshot.to_pb())))
