"""Bounded reads (``fluss.client.bounded_read``) on the shared cluster: every leader is fetched ahead of the
reader, and still each row comes exactly once, each bucket in offset order, the read stops at the end offsets of
its start, a lazy reader holds the fetching back and stops it when dropped, and a fetch's error reaches the
reader."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time

import numpy as np
import pyarrow as pa
import pytest

import fluss
from fluss import EARLIEST_OFFSET, ErrorCode, FlussError, Schema, TableDescriptor, TablePath

pytestmark = pytest.mark.asyncio(loop_scope="session")

SCHEMA = pa.schema([pa.field("k", pa.int32()), pa.field("seq", pa.int64()), pa.field("pad", pa.string())])
BUCKETS = 3
WRITES = 12
ROWS_PER_WRITE = 300


async def _table(conn, admin, database, name: str):
    """A 3-bucket table (bucket key ``k``) written in ``WRITES`` flushes, so every bucket holds many batches; ``seq``
    grows with the write order, so within a bucket it grows with the offset."""
    path = TablePath(database, name)
    await admin.create_table(path, TableDescriptor(Schema(SCHEMA), bucket_count=BUCKETS, bucket_keys=["k"]))
    table = await conn.get_table(path)
    writer = table.new_append().create_writer()
    for w in range(WRITES):
        seq = np.arange(w * ROWS_PER_WRITE, (w + 1) * ROWS_PER_WRITE)
        writer.write_arrow_batch(pa.RecordBatch.from_arrays(
            [pa.array(seq % 97, pa.int32()), pa.array(seq), pa.array([f"row-{i:06d}" for i in seq])], schema=SCHEMA))
        await writer.flush()
    return path


async def _small_fetch_connection(cluster) -> fluss.FlussConnection:
    """Fetches of about one batch per bucket, so a read takes many fetches of every leader."""
    return await fluss.FlussConnection.create(fluss.Config({
        "bootstrap.servers": cluster.bootstrap_servers, "scanner.log.fetch.max-bytes-for-bucket": "1kb"}))


async def _scanner(table):
    scanner = await table.new_scan().create_record_batch_log_scanner()
    scanner.subscribe_buckets(dict.fromkeys(range(BUCKETS), EARLIEST_OFFSET))
    return scanner


async def test_every_row_once_each_bucket_in_offset_order(cluster, conn, admin, database):
    path = await _table(conn, admin, database, "order")
    small = await _small_fetch_connection(cluster)
    try:
        table = await small.get_table(path)
        scanner = await table.new_scan().create_record_batch_log_scanner()
        scanner.subscribe_buckets(dict.fromkeys(range(BUCKETS), EARLIEST_OFFSET))
        batches = list(scanner.to_arrow_batch_reader())
        assert len(batches) >= 2 * BUCKETS  # many fetches
        result = pa.Table.from_batches(batches)
        seq = result.column("seq").to_numpy()
        assert sorted(seq.tolist()) == list(range(WRITES * ROWS_PER_WRITE))  # every row, once
        # rows of one key live in one bucket: per key, the read order is the write (offset) order
        keys = result.column("k").to_numpy()
        for k in np.unique(keys):
            assert np.all(np.diff(seq[keys == k]) > 0), k
    finally:
        await small.close()


async def test_rows_written_after_the_read_started_are_not_read(cluster, conn, admin, database):
    path = await _table(conn, admin, database, "ends")
    small = await _small_fetch_connection(cluster)
    try:
        table = await small.get_table(path)
        scanner = await _scanner(table)
        reader = scanner.to_arrow_batch_reader()  # the end offsets are taken here
        writer = (await conn.get_table(path)).new_append().create_writer()
        writer.write_arrow_batch(pa.RecordBatch.from_arrays(
            [pa.array(np.arange(500) % 97, pa.int32()), pa.array(np.arange(10**6, 10**6 + 500)),
             pa.array(["late"] * 500)], schema=SCHEMA))
        await writer.flush()
        rows = await asyncio.to_thread(lambda: pa.Table.from_batches(list(reader)))
        assert rows.num_rows == WRITES * ROWS_PER_WRITE
        assert "late" not in rows.column("pad").to_pylist()
    finally:
        await small.close()


async def test_rows_a_poll_left_buffered_come_first_then_the_rest(conn, admin, database):
    path = await _table(conn, admin, database, "after_poll")
    table = await conn.get_table(path)
    scanner = await _scanner(table)
    polled = (await scanner.poll_arrow(5000)).num_rows
    assert polled > 0
    polled_batches = scanner._buffer  # noqa: SLF001 - what the poll fetched beyond what it returned
    buffered = sum(b.batch.num_rows for b in polled_batches)
    rest = await scanner.to_arrow()
    assert polled + rest.num_rows == WRITES * ROWS_PER_WRITE
    assert buffered <= rest.num_rows


async def test_a_lazy_reader_holds_the_fetching_back_and_a_dropped_one_stops_it(cluster, conn, admin, database):
    path = await _table(conn, admin, database, "lazy")
    small = await _small_fetch_connection(cluster)
    try:
        table = await small.get_table(path)
        scanner = await _scanner(table)
        client = scanner._client  # noqa: SLF001
        calls: list[float] = []
        original = client.fetch_log

        async def counting(*args, **kwargs):
            calls.append(time.monotonic())
            return await original(*args, **kwargs)

        client.fetch_log = counting
        try:
            reader = scanner.to_arrow_batch_reader()
            first = reader.read_next_batch()
            assert first.num_rows
            await asyncio.sleep(1.0)
            held = len(calls)
            # one fetch per leader in flight, at most max(4, 2 x buckets) responses waiting: far from the whole
            # table (which takes about WRITES fetches per bucket at this fetch size)
            assert held <= 2 * BUCKETS + BUCKETS + 1, held
            del reader
            gc.collect()
            await asyncio.sleep(0.5)
            stopped = len(calls)
            await asyncio.sleep(0.5)
            assert len(calls) == stopped  # the driver stopped with the reader
            scanner.subscribe(0, EARLIEST_OFFSET)  # the reader ended: subscribing works again
        finally:
            del client.fetch_log
    finally:
        await small.close()


async def test_a_fetch_error_reaches_the_reader(conn, admin, database):
    path = await _table(conn, admin, database, "error")
    table = await conn.get_table(path)
    scanner = await _scanner(table)
    client = scanner._client  # noqa: SLF001

    async def failing(*args, **kwargs):
        raise FlussError("gone, for the test", ErrorCode.TABLE_NOT_EXIST)

    client.fetch_log = failing
    try:
        with pytest.raises(FlussError) as e:
            await scanner.to_arrow()
        assert e.value.error_code == ErrorCode.TABLE_NOT_EXIST
    finally:
        del client.fetch_log
    scanner.subscribe_buckets(dict.fromkeys(range(BUCKETS), EARLIEST_OFFSET))  # the failed read ended
    assert (await scanner.to_arrow()).num_rows == WRITES * ROWS_PER_WRITE


async def test_a_leaders_next_fetch_goes_out_while_its_answer_decodes(cluster, conn, admin, database):
    """The servers read and send the next answers while the client decompresses the previous ones."""
    path = await _table(conn, admin, database, "ahead")
    small = await _small_fetch_connection(cluster)
    try:
        table = await small.get_table(path)
        scanner = await _scanner(table)
        fetches: list[str] = []
        original_fetch, original_decode = scanner._fetch, scanner._decode  # noqa: SLF001
        first_decode: list[str] = []
        went_ahead = asyncio.Event()
        in_time: list[bool] = []

        leader_of: dict = {}

        async def fetch(addr, offsets, wait_ms):
            fetches.append(addr)
            leader_of.update(dict.fromkeys(offsets, addr))
            if first_decode and fetches.count(first_decode[0]) >= 2:
                went_ahead.set()
            return await original_fetch(addr, offsets, wait_ms)

        async def decode(fetched, sink=None):
            if not first_decode:  # the first answer's decoding holds until its leader was fetched again
                first_decode.append(leader_of[fetched[0][0]])
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(went_ahead.wait(), 5)
                in_time.append(went_ahead.is_set())
            await original_decode(fetched, sink)

        scanner._fetch, scanner._decode = fetch, decode  # noqa: SLF001
        result = await scanner.to_arrow()
        assert in_time == [True]  # the leader's next fetch went out while its first answer was still decoding
        assert sorted(result.column("seq").to_pylist()) == list(range(WRITES * ROWS_PER_WRITE))
    finally:
        await small.close()


async def test_an_answer_dropped_at_decoding_is_fetched_again(cluster, conn, admin, database):
    """An answer whose bucket is not at its fetch offset when its decode comes is dropped, and so is what was
    fetched after it; the bucket is fetched again from its offset: every row once, in offset order."""
    path = await _table(conn, admin, database, "refetch")
    small = await _small_fetch_connection(cluster)
    try:
        table = await small.get_table(path)
        scanner = await _scanner(table)
        original_decode = scanner._decode  # noqa: SLF001
        dropped: list = []

        async def decode(fetched, sink=None):
            if not dropped:  # the first answer of one bucket lost on the way, as if decoded for a stale offset
                dropped.append(fetched[0][0])
                fetched = fetched[1:]
            await original_decode(fetched, sink)

        scanner._decode = decode  # noqa: SLF001
        result = await scanner.to_arrow()
        assert dropped
        seq = result.column("seq").to_numpy()
        assert sorted(seq.tolist()) == list(range(WRITES * ROWS_PER_WRITE))
        keys = result.column("k").to_numpy()
        for k in np.unique(keys):
            assert np.all(np.diff(seq[keys == k]) > 0), k
    finally:
        await small.close()
