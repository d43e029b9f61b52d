"""Delayed fetches on a bucket leader wake per bucket (``ReplicaManager.fetch``), in-process.

A fetch that finds nothing long-polls until a write to one of *its* buckets lands: a write to another bucket does
not make it read again (at 10k rows/s every produce used to wake every waiting fetch of the server, followers' and
consumers' alike, each reading its buckets again on a worker thread before the one fetch that had data could
answer). A write that lands while the fetch is still reading (before it starts to wait) wakes it at once instead of
being missed until the long-poll ends. A read of the last few KB of the active segment (the next batches of a
caught-up reader) runs on the event loop, as a small append does; larger or older reads go to a worker thread.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from pathlib import Path

import pyarrow as pa
import pytest

from fluss.errors import ErrorCode
from fluss.metadata import Schema, TableBucket, TableDescriptor, TableInfo, TablePath
from fluss.record.log_batch import build_batch, iter_batches
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.server.log.loop_work import SMALL_LOG_WORK_BYTES
from fluss.server.replica.manager import BucketFetch, ReplicaManager
from tests.held_log import held_by_another_thread

pytestmark = pytest.mark.asyncio(loop_scope="function")

TABLE_ID = 11
SCHEMA = pa.schema([("id", pa.int64())])
INFO = TableInfo(TablePath("db", "log"), TABLE_ID, 1, TableDescriptor(Schema(SCHEMA), bucket_count=2), 0, 0)
LONG_POLL_MS = 30_000
WOKEN_S = 5.0  # a woken fetch answers well within this; an unwoken one waits LONG_POLL_MS


def _lead_both() -> pb.NotifyLeaderAndIsrRequest:
    return pb.NotifyLeaderAndIsrRequest(coordinator_epoch=1, table_infos=[INFO.to_pb()], buckets=[
        pb.LeaderAndIsrPb(table_id=TABLE_ID, partition_id=-1, bucket_id=b, leader=0, leader_epoch=1, replicas=[0],
                          isr=[0], bucket_epoch=1) for b in (0, 1)])


async def _produce(manager: ReplicaManager, bucket: int, ids: list[int]) -> None:
    records = build_batch(pa.record_batch([pa.array(ids, pa.int64())], schema=SCHEMA), schema_id=1)
    request = pb.ProduceLogRequest(acks=1, table_id=TABLE_ID, timeout_ms=30_000, buckets=[
        pb.ProduceBucketPb(partition_id=-1, bucket_id=bucket, records=records)])
    await manager.produce(request, request.buckets[0])


def _fetch(manager: ReplicaManager, bucket: int, offset: int = 0):
    return manager.fetch(-1, [BucketFetch(TableBucket(TABLE_ID, bucket), offset, 1 << 20, None)], 1, LONG_POLL_MS,
                         1 << 20)


async def _manager(tmp_path: Path) -> ReplicaManager:
    manager = ReplicaManager(0, tmp_path / "data", 1 << 30, 4096)
    results = await manager.apply_leader_and_isr(_lead_both())
    assert all(r.error.code == 0 for r in results), results
    return manager


async def test_a_write_wakes_only_the_fetches_of_its_bucket(tmp_path: Path):
    manager = await _manager(tmp_path)
    reads: list[list[TableBucket]] = []
    read_all = manager._read_all

    async def counted(follower_id, fetches, max_bytes):
        reads.append([f.bucket for f in fetches])
        return await read_all(follower_id, fetches, max_bytes)

    manager._read_all = counted
    try:
        waiting_on_1 = asyncio.ensure_future(_fetch(manager, 1))
        waiting_on_0 = asyncio.ensure_future(_fetch(manager, 0))
        await asyncio.sleep(0.2)  # both read once and wait
        assert sorted(b[0].bucket_id for b in reads) == [0, 1]
        for i in range(5):
            await _produce(manager, 0, [i])
        _, records = await asyncio.wait_for(waiting_on_0, WOKEN_S)  # else: the fetch of the written bucket slept
        assert records[TableBucket(TABLE_ID, 0)]
        await asyncio.sleep(0.1)
        assert [b for b in reads if b[0].bucket_id == 1] == [[TableBucket(TABLE_ID, 1)]], \
            "writes to bucket 0 made the fetch of bucket 1 read again"
        assert not waiting_on_1.done()
        await _produce(manager, 1, [42])
        _, records = await asyncio.wait_for(waiting_on_1, WOKEN_S)
        assert records[TableBucket(TABLE_ID, 1)]
        assert not manager._fetch_waiters, "a finished fetch left its wake-up registered"
    finally:
        await asyncio.to_thread(manager.close)


async def test_a_write_during_the_fetch_read_is_not_missed(tmp_path: Path):
    manager = await _manager(tmp_path)
    read_all = manager._read_all
    first = True

    async def write_meanwhile(follower_id, fetches, max_bytes):
        nonlocal first
        out = await read_all(follower_id, fetches, max_bytes)  # finds nothing
        if first:  # the write lands after the read, before the fetch waits
            first = False
            await _produce(manager, 0, [7])
        return out

    manager._read_all = write_meanwhile
    try:
        started = time.monotonic()
        _, records = await asyncio.wait_for(_fetch(manager, 0), LONG_POLL_MS / 2000)
        took = time.monotonic() - started
        assert records[TableBucket(TABLE_ID, 0)]
        assert took < LONG_POLL_MS / 2000, f"the fetch slept through a write it raced with ({took:.2f}s)"
    finally:
        await asyncio.to_thread(manager.close)


async def test_a_leadership_change_wakes_every_delayed_fetch(tmp_path: Path):
    manager = await _manager(tmp_path)
    try:
        waiting = [asyncio.ensure_future(_fetch(manager, b)) for b in (0, 1)]
        await asyncio.sleep(0.2)
        await manager._notify_data()  # what a NotifyLeaderAndIsr, an ISR change or a KV flush does
        await asyncio.sleep(0.1)
        assert not any(w.done() for w in waiting)  # woken, read nothing, waiting again
        await _produce(manager, 0, [1])
        await _produce(manager, 1, [2])
        for w in waiting:
            _, records = await asyncio.wait_for(w, WOKEN_S)
            assert records
    finally:
        await asyncio.to_thread(manager.close)


async def test_a_fetch_at_the_end_reads_nothing_off_the_loop_and_is_still_checked(tmp_path: Path):
    """A caught-up fetch (at the log end, or a client's at the high watermark) has nothing to read: it is answered
    without a worker thread's read; a bad projection or an offset past the end is refused as before."""
    manager = await _manager(tmp_path)
    reads: list[int] = []
    read_one = manager._read_one

    def counted(replica, f, *args):
        reads.append(f.offset)
        return read_one(replica, f, *args)

    manager._read_one = counted
    try:
        await _produce(manager, 0, [1, 2])
        waiting = asyncio.ensure_future(_fetch(manager, 0, offset=2))
        await asyncio.sleep(0.2)
        assert reads == [], "a fetch at the log end read the log"
        await _produce(manager, 0, [3])
        _, records = await asyncio.wait_for(waiting, WOKEN_S)
        assert records[TableBucket(TABLE_ID, 0)] and reads == [2]
        tb = TableBucket(TABLE_ID, 0)
        results, _ = await manager.fetch(-1, [BucketFetch(tb, 3, 1 << 20, [5])], 1, 0, 1 << 20)
        assert results[tb].error.code == ErrorCode.INVALID_COLUMN_PROJECTION
        results, _ = await manager.fetch(-1, [BucketFetch(tb, 4, 1 << 20, None)], 1, 0, 1 << 20)
        assert results[tb].error.code == ErrorCode.LOG_OFFSET_OUT_OF_RANGE_EXCEPTION
    finally:
        await asyncio.to_thread(manager.close)


def _read_threads(manager: ReplicaManager) -> list[tuple[int, str]]:
    """Records ``(fetch offset, thread name)`` of every read of the log from now on."""
    seen: list[tuple[int, str]] = []
    read_one = manager._read_one

    def recorded(replica, f, *args):
        seen.append((f.offset, threading.current_thread().name))
        return read_one(replica, f, *args)

    manager._read_one = recorded
    return seen


def _ids(records) -> list[int]:
    return [i for b in iter_batches(records) for i in b.to_arrow(SCHEMA).column("id").to_pylist()]


async def test_a_small_read_at_the_end_of_the_log_runs_on_the_loop_and_larger_ones_on_a_worker(tmp_path: Path):
    manager = await _manager(tmp_path)
    seen = _read_threads(manager)
    tb = TableBucket(TABLE_ID, 0)
    loop_thread = threading.current_thread().name
    try:
        await _produce(manager, 0, [1, 2, 3])
        _, records = await manager.fetch(-1, [BucketFetch(tb, 0, 1 << 20, None)], 1, 0, 1 << 20)
        assert _ids(records[tb]) == [1, 2, 3] and seen == [(0, loop_thread)]
        rng = random.Random(3)  # random int64s do not compress: the batch is larger than the inline bytes
        big = [rng.getrandbits(62) for _ in range(SMALL_LOG_WORK_BYTES // 8 + 1_000)]
        await _produce(manager, 0, big)
        for offset, expected in ((3, big), (0, [1, 2, 3] + big)):
            seen.clear()
            _, records = await manager.fetch(-1, [BucketFetch(tb, offset, 1 << 20, None)], 1, 0, 1 << 20)
            assert _ids(records[tb]) == expected
            assert seen and seen[0][1] != loop_thread, f"a read of more than {SMALL_LOG_WORK_BYTES} bytes ran on the loop"
        await _produce(manager, 0, [7])  # a small batch after the large one: its read is small again
        seen.clear()
        _, records = await manager.fetch(-1, [BucketFetch(tb, 3 + len(big), 1 << 20, None)], 1, 0, 1 << 20)
        assert _ids(records[tb]) == [7] and seen == [(3 + len(big), loop_thread)]
        results, _ = await manager.fetch(-1, [BucketFetch(tb, 3 + len(big), 1 << 20, [5])], 1, 0, 1 << 20)
        assert results[tb].error.code == ErrorCode.INVALID_COLUMN_PROJECTION  # still checked on the loop
    finally:
        await asyncio.to_thread(manager.close)


async def test_a_small_read_waits_on_a_worker_while_another_thread_holds_the_log(tmp_path: Path):
    """The event loop never blocks on a log another thread holds (a worker's read, roll or checkpoint): the read
    goes to a worker, which waits for the log, and the answer is the same."""
    manager = await _manager(tmp_path)
    seen = _read_threads(manager)
    tb = TableBucket(TABLE_ID, 1)
    log = manager.replicas[tb].log
    try:
        await _produce(manager, 1, [4, 5])
        with held_by_another_thread(log):
            fetch = asyncio.ensure_future(manager.fetch(-1, [BucketFetch(tb, 0, 1 << 20, None)], 1, 0, 1 << 20))
            await asyncio.sleep(0.2)  # the loop is free meanwhile: this sleep ends on time
            assert not fetch.done()
        _, records = await asyncio.wait_for(fetch, WOKEN_S)
        assert _ids(records[tb]) == [4, 5]
        assert [name for _, name in seen] and seen[0][1] != threading.current_thread().name
    finally:
        await asyncio.to_thread(manager.close)
