"""A new leader answers a reader's "latest" only once its high watermark has caught up (in-process).

A follower learns the high watermark from the leader's fetch answers, one fetch behind. Elected, it starts its term
with that stale high watermark; the records above it were acknowledged to writers in the last term. ListOffsets
answered "latest" with it, and a bounded read (``to_arrow``) then missed the last acknowledged batch (seen in CI:
a scan after a leadership move returned 29,000 of 30,000 rows). As Kafka's ListOffsets, the latest and timestamp
offsets now get a retriable error until the high watermark reaches the start of the leader's epoch.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from fluss.errors import ErrorCode, FlussError
from fluss.metadata import Schema, TableBucket, TableDescriptor, TableInfo, TablePath
from fluss.record.log_batch import build_batch
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.server.replica.manager import ReplicaManager

pytestmark = pytest.mark.asyncio(loop_scope="function")

TABLE_ID = 21
SCHEMA = pa.schema([("id", pa.int64())])
INFO = TableInfo(TablePath("db", "moved"), TABLE_ID, 1, TableDescriptor(Schema(SCHEMA), bucket_count=1), 0, 0)
BUCKET = TableBucket(TABLE_ID, 0)
EARLIEST, LATEST, TIMESTAMP = 0, 1, 2


def _notify(leader: int, leader_epoch: int, isr: list[int]) -> pb.NotifyLeaderAndIsrRequest:
    return pb.NotifyLeaderAndIsrRequest(coordinator_epoch=1, table_infos=[INFO.to_pb()], buckets=[
        pb.LeaderAndIsrPb(table_id=TABLE_ID, partition_id=-1, bucket_id=0, leader=leader, leader_epoch=leader_epoch,
                          replicas=[0, 1, 2], isr=isr, bucket_epoch=leader_epoch)])


async def _follower_one_fetch_behind(tmp_path: Path) -> ReplicaManager:
    """Server 1, a follower of server 0 in epoch 1, holding offsets 0-5 and a high watermark of 3."""
    manager = ReplicaManager(1, tmp_path / "data", 1 << 30, 4096, min_isr=2)
    results = await manager.apply_leader_and_isr(_notify(0, 1, [0, 1, 2]))
    assert all(r.error.code == 0 for r in results), results
    log = manager.replicas[BUCKET].log
    for base in (0, 3):
        rows = pa.record_batch([pa.array(range(base, base + 3), pa.int64())], schema=SCHEMA)
        log.append_as_follower(build_batch(rows, schema_id=1, base_offset=base, leader_epoch=1))
    log.update_high_watermark(3)  # the leader's answer to the fetch before the last one
    return manager


async def test_a_new_leader_refuses_latest_until_its_high_watermark_catches_up(tmp_path: Path):
    manager = await _follower_one_fetch_behind(tmp_path)
    await manager.apply_leader_and_isr(_notify(1, 2, [0, 1, 2]))  # elected: the old leader and server 2 follow it
    replica = manager.replicas[BUCKET]
    assert replica.is_leader and replica.log.high_watermark == 3 and replica.log.log_end_offset == 6
    for offset_type in (LATEST, TIMESTAMP):
        with pytest.raises(FlussError) as e:
            await manager.list_offset(BUCKET, offset_type, 0, -1)
        assert e.value.error_code == ErrorCode.LEADER_NOT_AVAILABLE_EXCEPTION
        assert "high watermark (3)" in e.value.message and "(6)" in e.value.message
    assert await manager.list_offset(BUCKET, EARLIEST, 0, -1) == 0
    assert await manager.list_offset(BUCKET, LATEST, 0, 2) == 6  # a follower asks for the log end, not the HW
    for follower in (0, 2):  # the followers fetch from the new leader at its log end
        replica.update_follower(follower, 6)
    assert await manager.list_offset(BUCKET, LATEST, 0, -1) == 6
    assert await manager.list_offset(BUCKET, TIMESTAMP, 0, -1) == 0


async def test_a_new_leader_alone_in_its_isr_answers_at_once(tmp_path: Path):
    manager = await _follower_one_fetch_behind(tmp_path)
    await manager.apply_leader_and_isr(_notify(1, 2, [1]))  # the others are gone: its own log end is the HW
    assert await manager.list_offset(BUCKET, LATEST, 0, -1) == 6


async def test_a_new_leaders_row_count_waits_for_its_high_watermark_too(tmp_path: Path):
    manager = await _follower_one_fetch_behind(tmp_path)
    await manager.apply_leader_and_isr(_notify(1, 2, [0, 1, 2]))
    with pytest.raises(FlussError) as e:
        manager.row_count(BUCKET)
    assert e.value.error_code == ErrorCode.LEADER_NOT_AVAILABLE_EXCEPTION
    for follower in (0, 2):
        manager.replicas[BUCKET].update_follower(follower, 6)
    assert manager.row_count(BUCKET) == 6
