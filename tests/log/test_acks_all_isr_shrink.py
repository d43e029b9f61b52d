"""An acks=all write whose bucket's ISR shrinks below the minimum after its append fails (in-process).

The leader learns of an ISR shrink (its AdjustIsr answer, or the coordinator's notification) after ZooKeeper has it.
A write appended in between used to wait for the high watermark, and the shrink moved the high watermark to the
leader's own log end: the write was acknowledged as acks=all with one copy. Kafka's delayed produce fails it with
NOT_ENOUGH_REPLICAS_AFTER_APPEND, and so does ours; the same wait succeeds while the ISR keeps its minimum.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pyarrow as pa
import pytest

from fluss.errors import ErrorCode, FlussError
from fluss.metadata import Schema, TableBucket, TableDescriptor, TableInfo, TablePath
from fluss.record.log_batch import build_batch
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.server.replica.manager import ReplicaManager

pytestmark = pytest.mark.asyncio(loop_scope="function")

TABLE_ID = 12
SCHEMA = pa.schema([("id", pa.int64())])
INFO = TableInfo(TablePath("db", "acks_all"), TABLE_ID, 1, TableDescriptor(Schema(SCHEMA), bucket_count=1), 0, 0)
BUCKET = TableBucket(TABLE_ID, 0)


async def _leader_of_three(tmp_path: Path) -> ReplicaManager:
    manager = ReplicaManager(0, tmp_path / "data", 1 << 30, 4096, min_isr=2)
    request = pb.NotifyLeaderAndIsrRequest(coordinator_epoch=1, table_infos=[INFO.to_pb()], buckets=[
        pb.LeaderAndIsrPb(table_id=TABLE_ID, partition_id=-1, bucket_id=0, leader=0, leader_epoch=1,
                          replicas=[0, 1, 2], isr=[0, 1, 2], bucket_epoch=1)])
    results = await manager.apply_leader_and_isr(request)
    assert all(r.error.code == 0 for r in results), results
    return manager


async def _append_acks_all(manager: ReplicaManager):
    records = build_batch(pa.record_batch([pa.array([1, 2, 3], pa.int64())], schema=SCHEMA), schema_id=1)
    request = pb.ProduceLogRequest(acks=-1, table_id=TABLE_ID, timeout_ms=30_000, buckets=[
        pb.ProduceBucketPb(partition_id=-1, bucket_id=0, records=records)])
    return await manager.produce(request, request.buckets[0])


async def _shrink_isr_to(manager: ReplicaManager, isr: list[int]) -> None:
    replica = manager.replicas[BUCKET]
    replica.isr_changed(replica.leader_epoch, replica.bucket_epoch + 1, isr)
    await manager._notify_data()


async def test_a_shrink_below_the_minimum_after_the_append_fails_the_write(tmp_path: Path):
    manager = await _leader_of_three(tmp_path)
    replica, appended = await _append_acks_all(manager)
    waiting = asyncio.ensure_future(manager.wait_for_high_watermark(replica, appended.last_offset, 10))
    await asyncio.sleep(0.1)
    assert not waiting.done()  # the followers have not fetched
    await _shrink_isr_to(manager, [0])
    with pytest.raises(FlussError) as e:
        await asyncio.wait_for(waiting, 5)
    assert e.value.error_code == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND_EXCEPTION
    assert "log.replica.min-in-sync-replicas-number (2)" in e.value.message
    assert replica.log.high_watermark > appended.last_offset  # the shrink did move it: only the answer changed


async def test_a_shrink_that_keeps_the_minimum_acknowledges_the_write(tmp_path: Path):
    manager = await _leader_of_three(tmp_path)
    replica, appended = await _append_acks_all(manager)
    waiting = asyncio.ensure_future(manager.wait_for_high_watermark(replica, appended.last_offset, 10))
    await asyncio.sleep(0.1)
    replica.followers[1].leo = replica.log.log_end_offset  # follower 1 has fetched everything
    await _shrink_isr_to(manager, [0, 1])
    await asyncio.wait_for(waiting, 5)
    assert replica.log.high_watermark == replica.log.log_end_offset
