"""When a log scanner's fetches are sent and answered (shared cluster of 3 tablet servers).

Fetches outlive the poll that sent them: a poll returns as soon as one leader answered with rows, without
waiting for the long-polls of the other leaders, and a later poll takes up the answers still out. These tests
use a long ``scanner.log.fetch.wait-max-time`` so that waiting for another leader's long-poll would show.
"""

from __future__ import annotations

import asyncio
import time

import pyarrow as pa
import pytest

import fluss
from fluss import EARLIEST_OFFSET, Schema, TableDescriptor, TablePath
from fluss.metadata import TableBucket

pytestmark = pytest.mark.asyncio(loop_scope="session")

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])
LONG_POLL = "6s"


async def _connect(cluster) -> fluss.FlussConnection:
    return await fluss.FlussConnection.create(fluss.Config({
        "bootstrap.servers": cluster.bootstrap_servers, "scanner.log.fetch.wait-max-time": LONG_POLL}))


async def _table(conn, database: str, name: str, buckets: int):
    path = TablePath(database, name)
    await conn.get_admin().create_table(path, TableDescriptor(Schema(SCHEMA), bucket_count=buckets,
                                                              bucket_keys=["k"] if buckets > 1 else None))
    return await conn.get_table(path)


async def _leaders(conn, table) -> dict[int, str]:
    """Each bucket's leader address."""
    info = table.get_table_info()
    client = conn.io_thread().client
    meta = await conn.run(client.table(info.table_path, refresh=True))
    return {b: client.leader_address(meta, TableBucket(info.table_id, b)) for b in range(info.num_buckets)}


def _rows(keys) -> pa.RecordBatch:
    keys = list(keys)
    return pa.record_batch([pa.array(keys, pa.int64()), pa.array([f"v{k}" for k in keys])], schema=SCHEMA)


async def test_a_poll_returns_one_leaders_rows_without_waiting_for_the_others(cluster, database):
    async with await _connect(cluster) as conn:
        table = await _table(conn, database, "wakeup", 3)
        leaders = await _leaders(conn, table)
        assert len(set(leaders.values())) >= 2, f"the test needs buckets on two leaders at least: {leaders}"
        writer = table.new_append().create_writer()
        writer.write_arrow_batch(_rows([1]))  # the writer's first write (its set-up) is not timed
        await writer.flush()
        scanner = await table.new_scan().create_record_batch_log_scanner()
        scanner.subscribe_buckets(dict.fromkeys(range(3), EARLIEST_OFFSET))
        assert (await scanner.poll_arrow(15_000)).column("k").to_pylist() == [1]
        poll = asyncio.create_task(scanner.poll_arrow(15_000))
        await asyncio.sleep(0.5)  # the fetches are out, long-polling on every leader
        written = time.monotonic()
        writer.write_arrow_batch(_rows([7]))  # one row: one bucket, one leader
        await writer.flush()
        got = await poll
        waited = time.monotonic() - written
        assert got.column("k").to_pylist() == [7]
        # waiting for the other leaders' long-polls would take their whole 6 s
        assert waited < 2.5, f"the poll returned {waited:.2f} s after the write"
        await scanner.aclose()


async def test_polls_shorter_than_the_long_poll_lose_and_repeat_nothing(cluster, database):
    """Polls of a few ms return before most answers arrive; what arrives later comes with a later poll, once."""
    async with await _connect(cluster) as conn:
        table = await _table(conn, database, "short_polls", 3)
        scanner = await table.new_scan().create_record_batch_log_scanner()
        scanner.subscribe_buckets(dict.fromkeys(range(3), EARLIEST_OFFSET))
        writer = table.new_append().create_writer()
        keys = list(range(600))
        seen: list[int] = []
        offsets: dict[int, list[int]] = {}
        empty_polls = 0

        async def produce() -> None:
            for start in range(0, len(keys), 20):
                writer.write_arrow_batch(_rows(keys[start:start + 20]))
                await asyncio.sleep(0.01)
            await writer.flush()

        producer = asyncio.create_task(produce())
        deadline = time.monotonic() + 30
        while len(seen) < len(keys) and time.monotonic() < deadline:
            batches = await scanner.poll_record_batch(3)
            empty_polls += not batches
            for b in batches:
                seen += b.batch.column("k").to_pylist()
                offsets.setdefault(b.bucket.bucket_id, []).extend(range(b.base_offset, b.last_offset + 1))
        await producer
        assert sorted(seen) == keys  # every row once
        for bucket, offs in offsets.items():  # each bucket's rows in log order, without gaps
            assert offs == list(range(len(offs))), bucket
        assert empty_polls > 0  # the polls did return before answers arrived
        assert not await scanner.poll_record_batch(200)
        await scanner.aclose()


async def test_moving_a_bucket_while_its_fetch_is_out(cluster, database):
    """A fetch still out from an old offset neither delays the new offset's rows nor brings rows twice."""
    async with await _connect(cluster) as conn:
        table = await _table(conn, database, "seek", 1)
        writer = table.new_append().create_writer()
        writer.write_arrow_batch(_rows(range(5)))
        await writer.flush()
        scanner = await table.new_scan().create_record_batch_log_scanner()
        scanner.subscribe(0, 5)
        assert (await scanner.poll_arrow(100)).num_rows == 0  # leaves a fetch from offset 5 long-polling
        scanner.subscribe(0, 2)
        started = time.monotonic()
        got = await scanner.poll_arrow(10_000)
        assert got.column("k").to_pylist() == [2, 3, 4]
        assert time.monotonic() - started < 2.5
        writer.write_arrow_batch(_rows([5, 6]))
        await writer.flush()
        rows: list[int] = []
        deadline = time.monotonic() + 10
        while len(rows) < 2 and time.monotonic() < deadline:
            rows += (await scanner.poll_arrow(500)).column("k").to_pylist()
        assert rows == [5, 6]
        assert (await scanner.poll_arrow(300)).num_rows == 0
        await scanner.aclose()


async def test_closing_a_scanner_ends_its_fetches(cluster, database):
    async with await _connect(cluster) as conn:
        table = await _table(conn, database, "close", 3)
        scanner = await table.new_scan().create_record_batch_log_scanner()
        scanner.subscribe_buckets(dict.fromkeys(range(3), EARLIEST_OFFSET))
        assert (await scanner.poll_arrow(50)).num_rows == 0
        assert scanner._fetch_tasks  # noqa: SLF001 - the long-polls are out
        tasks = list(scanner._fetch_tasks)  # noqa: SLF001
        await scanner.aclose()
        await conn.run(asyncio.wait(tasks, timeout=5))
        assert all(t.cancelled() for t in tasks)


async def test_the_error_of_a_fetch_from_an_offset_left_since_is_not_raised(cluster, database):
    async with await _connect(cluster) as conn:
        table = await _table(conn, database, "stale_error", 1)
        writer = table.new_append().create_writer()
        writer.write_arrow_batch(_rows(range(3)))
        await writer.flush()
        scanner = await table.new_scan().create_record_batch_log_scanner()
        scanner.subscribe(0, 10**9)  # past the end: its fetch fails with LOG_OFFSET_OUT_OF_RANGE
        assert (await scanner.poll_arrow(0)).num_rows == 0  # returns at once; the fetch is still out
        scanner.subscribe(0, 1)
        got = await scanner.poll_arrow(10_000)
        assert got.column("k").to_pylist() == [1, 2]
        await scanner.aclose()
