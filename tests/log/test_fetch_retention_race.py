"""A client fetch that races local log retention (``ReplicaManager.fetch``), in-process.

The leader sends a client whose offset is below the local log start to the remote segments. It checks that on the
event loop, then reads on a worker thread; tiered local retention can delete the offset's segment in between. The
fetch must then be answered as one below the log start is (the remote segments), not with
LOG_OFFSET_OUT_OF_RANGE, which failed a bounded read of a tiered table in CI. Here the retention runs inside that
window on purpose: the real log deletes its real segments just before the real read.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from fluss.errors import ErrorCode
from fluss.metadata import Schema, TableBucket, TableDescriptor, TableInfo, TablePath
from fluss.record.log_batch import build_batch
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.server.replica.manager import BucketFetch, ReplicaManager

pytestmark = pytest.mark.asyncio(loop_scope="function")

TABLE_ID = 12
SCHEMA = pa.schema([("id", pa.int64())])
INFO = TableInfo(TablePath("db", "tiered"), TABLE_ID, 1, TableDescriptor(Schema(SCHEMA), bucket_count=1), 0, 0)
BUCKET = TableBucket(TABLE_ID, 0)
REMOTE_DIR = "file:///remote/log/bucket-0"


async def _leader_with_segments(tmp_path: Path) -> ReplicaManager:
    """A leader of one bucket holding 40 rows in several rolled segments (tiny segment size)."""
    manager = ReplicaManager(0, tmp_path / "data", 256, 64)
    results = await manager.apply_leader_and_isr(pb.NotifyLeaderAndIsrRequest(
        coordinator_epoch=1, table_infos=[INFO.to_pb()], buckets=[pb.LeaderAndIsrPb(
            table_id=TABLE_ID, partition_id=-1, bucket_id=0, leader=0, leader_epoch=1, replicas=[0], isr=[0],
            bucket_epoch=1)]))
    assert all(r.error.code == 0 for r in results), results
    for start in range(0, 40, 4):
        records = build_batch(pa.record_batch([pa.array(range(start, start + 4), pa.int64())], schema=SCHEMA),
                              schema_id=1)
        request = pb.ProduceLogRequest(acks=1, table_id=TABLE_ID, timeout_ms=30_000, buckets=[
            pb.ProduceBucketPb(partition_id=-1, bucket_id=0, records=records)])
        await manager.produce(request, request.buckets[0])
    return manager


def _retention_before_the_read(manager: ReplicaManager) -> list[int]:
    """Makes the worker's read run just after tiered retention deleted every segment but the active one;
    returns the log starts it left."""
    read_one, starts = manager._read_one, []

    def deleted_then_read(replica, f, *args):
        replica.log.delete_tiered_segments(replica.log.high_watermark, keep_segments=1)
        starts.append(replica.log.log_start_offset)
        return read_one(replica, f, *args)

    manager._read_one = deleted_then_read
    return starts


async def test_a_fetch_whose_segment_retention_deleted_meanwhile_goes_to_the_remote_segments(tmp_path: Path):
    manager = await _leader_with_segments(tmp_path)
    try:
        assert manager.leader_or_raise(BUCKET).log.log_start_offset == 0
        asked: list[int] = []

        async def remote_fetch_info(replica, offset):  # what the remote log manager answers for a tiered offset
            asked.append(offset)
            return pb.RemoteLogFetchInfoPb(remote_log_tablet_dir=REMOTE_DIR)

        manager.remote_log = object()  # the bucket's log is tiered
        manager._remote_fetch_info = remote_fetch_info
        starts = _retention_before_the_read(manager)
        results, records = await manager.fetch(-1, [BucketFetch(BUCKET, 0, 1 << 20, None)], 1, 0, 1 << 20)
        res = results[BUCKET]
        assert starts and starts[0] > 0, "retention deleted nothing: the race was not made"
        assert res.error.code == 0, res.error.message
        assert res.remote_log_fetch_info.remote_log_tablet_dir == REMOTE_DIR
        assert asked == [0] and BUCKET not in records
        assert res.log_start_offset == starts[0] and res.high_watermark == 40
    finally:
        manager.close()


async def test_without_a_remote_log_the_same_race_is_an_out_of_range_error(tmp_path: Path):
    manager = await _leader_with_segments(tmp_path)
    try:
        starts = _retention_before_the_read(manager)
        results, _ = await manager.fetch(-1, [BucketFetch(BUCKET, 0, 1 << 20, None)], 1, 0, 1 << 20)
        assert starts and starts[0] > 0
        assert results[BUCKET].error.code == ErrorCode.LOG_OFFSET_OUT_OF_RANGE_EXCEPTION
        assert f"[{starts[0]}, 40)" in results[BUCKET].error.message
    finally:
        manager.close()
