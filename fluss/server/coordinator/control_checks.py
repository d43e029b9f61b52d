"""Checks of the ids and offsets in requests that record progress at the coordinator (lake commits), beyond
"who may send it" (``processor._check_server`` does that for tablet servers' requests)."""

from __future__ import annotations

from fluss.errors import ErrorCode, FlussError
from fluss.metadata import TableInfo
from fluss.server.zk.data import LakeSnapshotRecord
from fluss.table_options import DATALAKE_ENABLED


def check_lake_snapshot(info: TableInfo, snapshot: LakeSnapshotRecord, current: LakeSnapshotRecord | None) -> None:
    """A lake commit names a lake-enabled table, a positive snapshot id and, per bucket, a bucket of that table
    (a partition id only for a partitioned table), a log offset >= 0 that does not go back from the recorded
    snapshot's. Raises ``FlussError`` naming what was wrong."""
    path = info.table_path
    if not DATALAKE_ENABLED.value_of(info.get_properties()):
        raise FlussError(f"Table '{path}' is not lake-enabled (table.datalake.enabled)", ErrorCode.INVALID_TABLE_EXCEPTION)
    if snapshot.snapshot_id < 1:
        raise FlussError(f"Lake snapshot id {snapshot.snapshot_id} of '{path}' must be at least 1",
                         ErrorCode.INVALID_UPDATE_VERSION_EXCEPTION)
    recorded = {(b.partition_id, b.bucket_id): b.log_offset for b in (current.buckets if current else [])}
    newer = current is None or snapshot.snapshot_id > current.snapshot_id
    seen = set()
    for b in snapshot.buckets:
        pid, bucket, offset = b.partition_id, b.bucket_id, b.log_offset
        where = f"bucket {bucket}" + (f" of partition {pid}" if pid >= 0 else "") + f" of '{path}'"
        if not 0 <= bucket < info.num_buckets:
            raise FlussError(f"Lake snapshot names {where}, but the table has {info.num_buckets} bucket(s)",
                             ErrorCode.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION)
        if info.is_partitioned() != (pid >= 0):
            raise FlussError(f"Lake snapshot names {where}: the table is "
                             f"{'' if info.is_partitioned() else 'not '}partitioned",
                             ErrorCode.PARTITION_NOT_EXISTS if info.is_partitioned() else
                             ErrorCode.TABLE_NOT_PARTITIONED_EXCEPTION)
        if (pid, bucket) in seen:
            raise FlussError(f"Lake snapshot names {where} twice", ErrorCode.INVALID_UPDATE_VERSION_EXCEPTION)
        seen.add((pid, bucket))
        if offset < 0:
            raise FlussError(f"Lake snapshot offset {offset} of {where} is negative",
                             ErrorCode.LOG_OFFSET_OUT_OF_RANGE_EXCEPTION)
        if newer and offset < recorded.get((pid, bucket), 0):
            raise FlussError(f"Lake snapshot offset {offset} of {where} is below the recorded "
                             f"{recorded[(pid, bucket)]}: tiered offsets never go back",
                             ErrorCode.LOG_OFFSET_OUT_OF_RANGE_EXCEPTION)
