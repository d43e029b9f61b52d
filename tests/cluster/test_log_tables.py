"""Log tables end to end on the shared cluster: append, scan, projection, offsets, partitions, bad input."""

from __future__ import annotations

import asyncio
import datetime as dt
import math
import time
from decimal import Decimal

import pyarrow as pa
import pytest

import fluss
from fluss import EARLIEST_OFFSET, ErrorCode, FlussError, OffsetSpec, Schema, TableDescriptor, TablePath

pytestmark = pytest.mark.asyncio(loop_scope="session")

EVERY_TYPE = pa.schema([
    ("b", pa.bool_()), ("i8", pa.int8()), ("i16", pa.int16()), ("i32", pa.int32()), ("i64", pa.int64()),
    ("f32", pa.float32()), ("f64", pa.float64()), ("s", pa.string()), ("dec", pa.decimal128(38, 18)),
    ("d", pa.date32()), ("t", pa.time64("us")), ("ts", pa.timestamp("us")), ("ltz", pa.timestamp("us", tz="UTC")),
    ("bin", pa.binary(3)), ("by", pa.binary()),
])

ROWS = [
    {"b": True, "i8": -128, "i16": 32767, "i32": -2**31, "i64": 2**63 - 1, "f32": 1.5, "f64": math.inf,
     "s": "héllo ✓", "dec": Decimal("12345678901234567890.123456789012345678"), "d": dt.date(2024, 2, 29),
     "t": dt.time(23, 59, 59, 999999), "ts": dt.datetime(2024, 1, 1, 12, 0, 0, 123456),
     "ltz": dt.datetime(2024, 1, 1, 12, 0, 0, 654321, tzinfo=dt.UTC), "bin": b"\x00\x01\x02", "by": b""},
    {"b": False, "i8": 127, "i16": -32768, "i32": 2**31 - 1, "i64": -2**63, "f32": -0.0, "f64": -math.inf,
     "s": "", "dec": Decimal("-0.000000000000000001"), "d": dt.date(1970, 1, 1), "t": dt.time(0, 0),
     "ts": dt.datetime(1969, 12, 31, 23, 59, 59), "ltz": dt.datetime(1970, 1, 1, tzinfo=dt.UTC),
     "bin": b"abc", "by": bytes(range(256))},
    {k: None for k in EVERY_TYPE.names},
]


async def _table(conn, admin, database, name, schema, **kw):
    path = TablePath(database, name)
    await admin.create_table(path, TableDescriptor(Schema(schema), **kw))
    return await conn.get_table(path)


async def _read_all(table, buckets, projection=None) -> pa.Table:
    scan = table.new_scan()
    if projection:
        scan = scan.project_by_name(projection)
    scanner = await scan.create_record_batch_log_scanner()
    scanner.subscribe_buckets({b: EARLIEST_OFFSET for b in buckets})
    return await scanner.to_arrow()


@pytest.mark.parametrize("compression", ["ZSTD", "LZ4_FRAME", "NONE"])
async def test_every_type_round_trips_exactly(conn, admin, database, compression):
    table = await _table(conn, admin, database, f"types_{compression.lower()}", EVERY_TYPE,
                         properties={"table.log.arrow.compression.type": compression})
    writer = table.new_append().create_writer()
    handles = [writer.append(r) for r in ROWS]
    await writer.flush()
    for h in handles:
        await h.wait()
    scanner = await table.new_scan().create_log_scanner()
    scanner.subscribe(0, EARLIEST_OFFSET)
    got = []
    deadline = time.monotonic() + 10
    while len(got) < len(ROWS) and time.monotonic() < deadline:
        got.extend(await scanner.poll(500))
    assert [r.offset for r in got] == [0, 1, 2]
    assert all(r.change_type == fluss.ChangeType.AppendOnly for r in got)
    assert all(r.timestamp > 0 for r in got)
    for want, rec in zip(ROWS, got, strict=True):
        assert rec.row == want
    nan = table.new_append().create_writer()
    nan.append({**{k: None for k in EVERY_TYPE.names}, "f32": math.nan, "f64": math.nan})
    await nan.flush()
    back = await _read_all(table, [0], ["f32", "f64"])
    assert math.isnan(back.column("f32")[3].as_py()) and math.isnan(back.column("f64")[3].as_py())


async def test_arrow_write_and_projected_read(conn, admin, database):
    schema = pa.schema([(f"c{i}", pa.int64()) for i in range(10)])
    table = await _table(conn, admin, database, "wide", schema, bucket_count=3)
    writer = table.new_append().create_writer()
    n = 30_000
    data = pa.table({f"c{i}": pa.array(range(i * n, (i + 1) * n), pa.int64()) for i in range(10)})
    writer.write_arrow(data)
    await writer.flush()
    full = await _read_all(table, [0, 1, 2])
    assert full.num_rows == n
    assert sorted(full.column("c3").to_pylist()) == list(range(3 * n, 4 * n))
    projected = await _read_all(table, [0, 1, 2], ["c7", "c2"])
    assert projected.schema.names == ["c7", "c2"]
    pairs = sorted(zip(projected.column("c7").to_pylist(), projected.column("c2").to_pylist(), strict=True))
    assert pairs == [(7 * n + i, 2 * n + i) for i in range(n)]
    offsets = await admin.list_offsets(table.get_table_path(), [0, 1, 2], OffsetSpec.latest())
    assert sum(offsets.values()) == n
    assert await admin.list_offsets(table.get_table_path(), [0, 1, 2], OffsetSpec.earliest()) == {0: 0, 1: 0, 2: 0}


async def test_bucket_key_routes_equal_keys_to_one_bucket(conn, admin, database):
    schema = pa.schema([("user", pa.string()), ("n", pa.int32())])
    table = await _table(conn, admin, database, "keyed", schema, bucket_count=4, bucket_keys=["user"])
    writer = table.new_append().create_writer()
    users = [f"u{i % 7}" for i in range(700)]
    writer.write_pandas(pa.table({"user": users, "n": pa.array(range(700), pa.int32())}).to_pandas())
    await writer.flush()
    owner: dict[str, int] = {}
    for b in range(4):
        part = await _read_all(table, [b])
        for u in set(part.column("user").to_pylist()):
            assert owner.setdefault(u, b) == b, f"{u} found in buckets {owner[u]} and {b}"
        ns = part.column("n").to_pylist()
        assert ns == sorted(ns), "order within a bucket must follow the write order"
    assert len(owner) == 7


async def test_round_robin_spreads_rows(conn, admin, database):
    schema = pa.schema([("n", pa.int32())])
    path = TablePath(database, "rr")
    await admin.create_table(path, TableDescriptor(Schema(schema), bucket_count=3))
    rr_conn = await fluss.FlussConnection.create(fluss.Config({
        "bootstrap.servers": conn.config.bootstrap_servers, "writer.bucket.no-key-assigner": "ROUND_ROBIN"}))
    try:
        writer = (await rr_conn.get_table(path)).new_append().create_writer()
        for i in range(300):
            writer.append([i])
        await writer.flush()
    finally:
        await rr_conn.aclose()
    offsets = await admin.list_offsets(path, [0, 1, 2], OffsetSpec.latest())
    assert offsets == {0: 100, 1: 100, 2: 100}


async def test_partitioned_table_routes_rows_and_creates_partitions(conn, admin, database):
    schema = pa.schema([("day", pa.string()), ("v", pa.int64())])
    table = await _table(conn, admin, database, "by_day", schema, partition_keys=["day"], bucket_count=2)
    writer = table.new_append().create_writer()
    days = ["2024-01-01", "2024-01-02", "2024-01-03"]
    writer.write_arrow(pa.table({"day": [days[i % 3] for i in range(90)], "v": list(range(90))}))
    await writer.flush()
    parts = {p.partition_name: p.partition_id for p in await admin.list_partition_infos(table.get_table_path())}
    assert sorted(parts) == days
    scanner = await table.new_scan().create_record_batch_log_scanner()
    for pid in parts.values():
        scanner.subscribe_partition_buckets({(pid, 0): EARLIEST_OFFSET, (pid, 1): EARLIEST_OFFSET})
    got = (await scanner.to_arrow())
    assert sorted(zip(got.column("day").to_pylist(), got.column("v").to_pylist(), strict=True)) == \
        sorted((days[i % 3], i) for i in range(90))
    only = await table.new_scan().create_record_batch_log_scanner()
    pid = parts["2024-01-02"]
    only.subscribe_partition_buckets({(pid, 0): EARLIEST_OFFSET, (pid, 1): EARLIEST_OFFSET})
    assert set((await only.to_arrow()).column("day").to_pylist()) == {"2024-01-02"}
    offsets = await admin.list_partition_offsets(table.get_table_path(), "2024-01-02", [0, 1], OffsetSpec.latest())
    assert sum(offsets.values()) == 30


async def test_missing_partition_fails_when_dynamic_creation_is_off(conn, admin, database):
    path = TablePath(database, "static_parts")
    await admin.create_table(path, TableDescriptor(Schema(pa.schema([("day", pa.string()), ("v", pa.int64())])),
                                                   partition_keys=["day"]))
    strict = await fluss.FlussConnection.create(fluss.Config({
        "bootstrap.servers": conn.config.bootstrap_servers, "writer.dynamic-create-partition.enabled": "false"}))
    try:
        writer = (await strict.get_table(path)).new_append().create_writer()
        with pytest.raises(FlussError) as e:
            writer.write_arrow(pa.table({"day": ["2030-01-01"], "v": [1]}))
        assert e.value.error_code == ErrorCode.PARTITION_NOT_EXISTS
        assert "2030-01-01" in e.value.message
    finally:
        await strict.aclose()
    assert await admin.list_partition_infos(path) == []


async def test_bad_rows_are_rejected_naming_the_column(conn, admin, database):
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), ("name", pa.string())])
    table = await _table(conn, admin, database, "strict", schema)
    writer = table.new_append().create_writer()
    bad_arrow = [
        (pa.table({"id": pa.array([1], pa.int32())}), "name"),
        (pa.table({"id": pa.array([1], pa.int32()), "name": ["a"], "extra": [1]}), "extra"),
        (pa.table({"id": ["x"], "name": ["a"]}), "id"),
        (pa.table({"id": pa.array([None], pa.int32()), "name": ["a"]}), "id"),
    ]
    for data, column in bad_arrow:
        with pytest.raises(FlussError) as e:
            writer.write_arrow(data)
        assert column in e.value.message, e.value.message
    with pytest.raises(FlussError) as e:  # refused at the call, as the official client does
        writer.append({"id": "not a number", "name": "x"})
    assert "column 'id'" in e.value.message and "expected int, got str" in e.value.message
    good = writer.append({"id": 7, "name": "ok"})
    await writer.flush()
    await good.wait()
    rows = (await _read_all(table, [0])).to_pylist()
    assert rows == [{"id": 7, "name": "ok"}]


async def test_fetch_outside_the_log_is_an_offset_error(conn, admin, database):
    table = await _table(conn, admin, database, "small", pa.schema([("v", pa.int32())]))
    writer = table.new_append().create_writer()
    writer.append([1])
    await writer.flush()
    scanner = await table.new_scan().create_log_scanner()
    scanner.subscribe(0, 1000)
    with pytest.raises(FlussError) as e:
        await scanner.poll(200)
    assert e.value.error_code == ErrorCode.LOG_OFFSET_OUT_OF_RANGE_EXCEPTION
    for read in ("to_arrow", "poll_arrow"):  # a batch read from past the end fails too, rather than return nothing
        batches = await table.new_scan().create_record_batch_log_scanner()
        batches.subscribe(0, 10**12)
        with pytest.raises(FlussError) as e:
            await (batches.to_arrow() if read == "to_arrow" else batches.poll_arrow(200))
        assert e.value.error_code == ErrorCode.LOG_OFFSET_OUT_OF_RANGE_EXCEPTION, read
        assert "1000000000000" in e.value.message, e.value.message


async def test_list_offsets_by_timestamp(conn, admin, database):
    table = await _table(conn, admin, database, "timed", pa.schema([("v", pa.int32())]))
    writer = table.new_append().create_writer()
    writer.append([1])
    await writer.flush()
    time.sleep(0.05)
    middle = int(time.time() * 1000)
    time.sleep(0.05)
    writer.append([2])
    await writer.flush()
    path = table.get_table_path()
    assert (await admin.list_offsets(path, [0], OffsetSpec.timestamp(0)))[0] == 0
    assert (await admin.list_offsets(path, [0], OffsetSpec.timestamp(middle)))[0] == 1
    assert (await admin.list_offsets(path, [0], OffsetSpec.timestamp(middle + 10_000_000)))[0] == 2


async def test_writer_memory_is_bounded(conn, admin, database):
    path = TablePath(database, "bounded")
    await admin.create_table(path, TableDescriptor(Schema(pa.schema([("s", pa.string())])), bucket_count=2))
    small = await fluss.FlussConnection.create(fluss.Config({
        "bootstrap.servers": conn.config.bootstrap_servers, "writer.buffer.memory-size": "256kb",
        "writer.batch-size": "32kb", "table.log.arrow.compression.type": "NONE"}))
    try:
        writer = (await small.get_table(path)).new_append().create_writer()
        peak = 0
        payload = pa.table({"s": ["x" * 100] * 1000})
        for _ in range(50):
            writer.write_arrow(payload)
            peak = max(peak, writer._budget.used)
        await writer.flush()
        assert peak <= 256 * 1024 + 64 * 1024
        assert writer._budget.used == 0
    finally:
        await small.aclose()
    assert sum((await admin.list_offsets(path, [0, 1], OffsetSpec.latest())).values()) == 50_000


async def test_rows_appended_one_at_a_time_are_sent_without_a_flush_also_after_an_idle_spell(cluster, admin,
                                                                                            database):
    """The linger timer starts with the first row added to an empty writer (the loop sleeps while none waits):
    rows are sent ``writer.batch-timeout`` after they were added, without a flush, and again after the writer
    sat idle for many timeouts."""
    quick = await fluss.FlussConnection.create(fluss.Config({
        "bootstrap.servers": cluster.bootstrap_servers, "writer.batch-timeout": "5ms"}))
    try:
        table = await _table(quick, admin, database, "linger_idle", pa.schema([("k", pa.int64())]), bucket_count=1)
        writer = table.new_append().create_writer()
        for expected, rows in ((3, [0, 1, 2]), (4, [3])):
            for k in rows:
                writer.append({"k": k})
            deadline = time.monotonic() + 10
            while (await admin.list_offsets(table.get_table_path(), [0], OffsetSpec.latest()))[0] < expected:
                assert time.monotonic() < deadline, f"rows {rows} were not sent without a flush"
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.3)  # idle: 60 timeouts without a row
        assert not writer._rows_parked.is_set()  # noqa: SLF001 - the loop sleeps until a row is added
        assert (await _read_all(table, [0])).column("k").to_pylist() == [0, 1, 2, 3]
        await writer.aclose()
    finally:
        await quick.aclose()


async def test_flush_waits_for_rows_the_linger_loop_is_still_converting(cluster, admin, database):
    """The linger loop took the rows (``writer.batch-timeout`` passed) and is still converting them when flush()
    is called: flush must wait for them, not find the buffer empty and the sender idle and return early."""
    quick = await fluss.FlussConnection.create(fluss.Config({
        "bootstrap.servers": cluster.bootstrap_servers, "writer.batch-timeout": "10ms"}))
    try:
        table = await _table(quick, admin, database, "linger", pa.schema([("k", pa.int64())]), bucket_count=1)
        writer = table.new_append().create_writer()
        convert = writer._rows_to_batch  # noqa: SLF001 - slowed down to hold the drain open
        converting = []

        def slow_convert(rows):
            converting.append(len(rows))
            time.sleep(0.5)
            return convert(rows)

        writer._rows_to_batch = slow_convert  # noqa: SLF001
        for k in range(100):
            writer.append({"k": k})
        deadline = time.monotonic() + 5
        while not converting:  # the linger loop has taken the rows
            assert time.monotonic() < deadline, "the linger loop never drained the rows"
            await asyncio.sleep(0.01)
        await writer.flush()
        assert (await _read_all(table, [0])).column("k").to_pylist() == list(range(100))
        await writer.aclose()
    finally:
        await quick.aclose()
