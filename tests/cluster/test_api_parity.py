"""Behaviour the official Python client documents and tests, on the shared cluster: the bucket batch scanner,
the record-batch scanner's rules, ``to_arrow_batch_reader`` and its guards, prefix lookup validation, closing a
connection drains pending writes, the context managers, and the read-only result objects and their text forms."""

from __future__ import annotations

import asyncio
import time

import pyarrow as pa
import pytest

import fluss
from fluss import EARLIEST_OFFSET, ErrorCode, FlussError, Schema, TableBucket, TableDescriptor, TablePath

pytestmark = pytest.mark.asyncio(loop_scope="session")

PAIRS = pa.schema([pa.field("c1", pa.int32()), pa.field("c2", pa.string()), pa.field("c3", pa.int64())])


async def _log_table(conn, admin, database, name, rows: int = 0, buckets: int = 1):
    path = TablePath(database, name)
    await admin.create_table(path, TableDescriptor(Schema(PAIRS), bucket_count=buckets, bucket_keys=["c1"]))
    table = await conn.get_table(path)
    if rows:
        writer = table.new_append().create_writer()
        writer.write_arrow_batch(pa.RecordBatch.from_pydict(
            {"c1": list(range(rows)), "c2": [f"v{i}" for i in range(rows)], "c3": [i * 10 for i in range(rows)]},
            schema=PAIRS))
        await writer.flush()
    return table


async def test_bucket_batch_scanner_reads_once_and_is_spent(conn, admin, database):
    table = await _log_table(conn, admin, database, "bs", rows=5)
    bucket = TableBucket(table.get_table_info().table_id, 0)
    scanner = table.new_scan().limit(3).create_bucket_batch_scanner(bucket)  # not a coroutine: creation is cheap
    assert scanner.bucket == bucket
    first = await scanner.next_batch()
    assert first.bucket == bucket and first.batch.num_rows == 3
    assert first.batch.column("c1").to_pylist() == [2, 3, 4]  # the last rows below the high watermark
    assert (first.base_offset, first.last_offset) == (2, 4)
    assert await scanner.next_batch() is None
    assert await scanner.collect_all_batches() == []

    batches = await table.new_scan().limit(10).create_bucket_batch_scanner(bucket).collect_all_batches()
    assert [b.batch.num_rows for b in batches] == [5]
    arrow = await table.new_scan().project_by_name(["c3", "c1"]).limit(10).create_bucket_batch_scanner(
        bucket).to_arrow()
    assert arrow.to_pydict() == {"c3": [0, 10, 20, 30, 40], "c1": [0, 1, 2, 3, 4]}
    frame = await table.new_scan().limit(2).create_bucket_batch_scanner(bucket).to_pandas()
    assert list(frame["c2"]) == ["v3", "v4"]


async def test_bucket_batch_scanner_construction_errors(conn, admin, database):
    table = await _log_table(conn, admin, database, "bs_errors", buckets=2)
    table_id = table.get_table_info().table_id
    for bad in (0, -5, 1.5):
        with pytest.raises(FlussError, match="Limit must be a positive integer"):
            table.new_scan().limit(bad)
    with pytest.raises(FlussError, match="needs a limit"):
        table.new_scan().create_bucket_batch_scanner(TableBucket(table_id, 0))
    for bad_bucket in (TableBucket(table_id + 9999, 0), TableBucket(table_id, 2)):
        with pytest.raises(FlussError) as info:
            table.new_scan().limit(1).create_bucket_batch_scanner(bad_bucket)
        assert info.value.error_code == ErrorCode.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION
    for create in ("create_log_scanner", "create_record_batch_log_scanner"):
        with pytest.raises(FlussError, match="does not support a limit"):
            await getattr(table.new_scan().limit(5), create)()


async def test_bucket_batch_scanner_of_a_primary_key_table_reads_its_current_rows(conn, admin, database):
    path = TablePath(database, "bs_pk")
    await admin.create_table(path, TableDescriptor(Schema(pa.schema([("id", pa.int32()), ("name", pa.string())]),
                                                          primary_keys=["id"]), bucket_count=1))
    table = await conn.get_table(path)
    writer = table.new_upsert().create_writer()
    expected = {1: "a", 2: "b", 3: "c", 4: "d", 5: "e"}
    for k, v in expected.items():
        writer.upsert({"id": k, "name": v})
    await writer.flush()
    first = await table.new_scan().limit(3).create_bucket_batch_scanner(
        TableBucket(table.get_table_info().table_id, 0)).next_batch()
    rows = first.batch.to_pydict()
    assert len(rows["id"]) == 3 and all(expected[i] == n for i, n in zip(rows["id"], rows["name"], strict=True))


async def test_record_batch_scanners_refuse_primary_key_tables(conn, admin, database):
    path = TablePath(database, "pk_batches")
    await admin.create_table(path, TableDescriptor(Schema(pa.schema([("id", pa.int32())]), primary_keys=["id"])))
    table = await conn.get_table(path)
    with pytest.raises(FlussError, match="Batch-mode log scan does not support primary-key table .* use "
                                         "create_log_scanner"):
        await table.new_scan().create_record_batch_log_scanner()
    scanner = await table.new_scan().create_log_scanner()  # the changelog, record by record
    scanner.subscribe(0, EARLIEST_OFFSET)


async def test_to_arrow_batch_reader_guards_subscriptions_and_unsubscribes_when_dropped(conn, admin, database):
    table = await _log_table(conn, admin, database, "reader", buckets=2)
    writer = table.new_append().create_writer()
    for f in range(10):  # several batches per bucket, so a reader stops half way
        writer.write_arrow_batch(pa.RecordBatch.from_pydict(
            {"c1": list(range(f * 200, f * 200 + 200)), "c2": ["x"] * 200, "c3": [f] * 200}, schema=PAIRS))
        await writer.flush()
    scanner = await table.new_scan().create_record_batch_log_scanner()
    with pytest.raises(FlussError, match="No buckets subscribed. Call subscribe\\(\\) before creating a reader."):
        scanner.to_arrow_batch_reader()
    scanner.subscribe_buckets({0: EARLIEST_OFFSET, 1: EARLIEST_OFFSET})

    def guard_and_drop() -> int:
        reader = scanner.to_arrow_batch_reader()
        with pytest.raises(FlussError, match="while a RecordBatchLogReader is active"):
            scanner.subscribe_buckets({0: EARLIEST_OFFSET})
        with pytest.raises(FlussError, match="while a RecordBatchLogReader is active"):
            scanner.unsubscribe(0)
        with pytest.raises(FlussError, match="while a RecordBatchLogReader is active"):
            scanner.to_arrow_batch_reader()
        assert next(reader).num_rows > 0
        del reader  # dropped half way: its buckets are unsubscribed, the guard lifted
        with pytest.raises(FlussError, match="No buckets subscribed"):
            scanner.to_arrow_batch_reader()
        scanner.subscribe_buckets({0: EARLIEST_OFFSET, 1: EARLIEST_OFFSET})
        return sum(b.num_rows for b in scanner.to_arrow_batch_reader())

    assert await asyncio.to_thread(guard_and_drop) == 2000
    scanner.subscribe_buckets({0: EARLIEST_OFFSET, 1: EARLIEST_OFFSET})
    assert (await scanner.to_arrow()).num_rows == 2000
    with pytest.raises(FlussError, match="No buckets subscribed"):  # to_arrow read every bucket to its end
        await scanner.to_arrow()


async def test_prefix_lookup_validation_matches_the_official_client(conn, admin, database):
    path = TablePath(database, "prefix")
    schema = Schema(pa.schema([("a", pa.int32()), ("b", pa.string()), ("c", pa.int64())]), primary_keys=["a", "b", "c"])
    await admin.create_table(path, TableDescriptor(schema, bucket_count=3, bucket_keys=["a", "b"]))
    table = await conn.get_table(path)
    cases = [(["a", "b", "c"], "must contain all bucket keys"), (["a", "c"], "bucket keys"),
             (["a", "missing_col"], "Unknown column name 'missing_col'"), (["b", "a"], "bucket keys \\['a', 'b'\\] in order")]
    for columns, message in cases:
        with pytest.raises(FlussError, match=message):
            table.new_lookup().lookup_by(columns).create_lookuper()
    assert isinstance(table.new_lookup().lookup_by(["a", "b"]), fluss.TablePrefixLookup)
    assert await table.new_lookup().lookup_by(["a", "b"]).create_lookuper().lookup([1, "x"]) == []

    whole = TablePath(database, "prefix_whole")
    await admin.create_table(whole, TableDescriptor(Schema(pa.schema([("a", pa.int32()), ("b", pa.string())]),
                                                           primary_keys=["a", "b"])))
    with pytest.raises(FlussError, match="equals the physical primary keys .* use primary key lookup"):
        (await conn.get_table(whole)).new_lookup().lookup_by(["a", "b"]).create_lookuper()

    parted = TablePath(database, "prefix_parted")
    await admin.create_table(parted, TableDescriptor(
        Schema(pa.schema([("region", pa.string()), ("user_id", pa.int32()), ("event_id", pa.int64())]),
               primary_keys=["region", "user_id", "event_id"]), partition_keys=["region"], bucket_count=3,
        bucket_keys=["user_id"]))
    parted_table = await conn.get_table(parted)
    with pytest.raises(FlussError, match="must contain all partition fields"):
        parted_table.new_lookup().lookup_by(["user_id"]).create_lookuper()
    with pytest.raises(FlussError, match="bucket keys"):
        parted_table.new_lookup().lookup_by(["region", "event_id"]).create_lookuper()
    lookuper = parted_table.new_lookup().lookup_by(["region", "user_id"]).create_lookuper()
    assert await lookuper.lookup({"region": "UNKNOWN_REGION", "user_id": 1}) == []


async def test_closing_a_connection_drains_pending_writes(cluster, admin, database):
    path = TablePath(database, "drain")
    await admin.create_table(path, TableDescriptor(Schema(pa.schema([("a", pa.int32())]))))
    config = fluss.Config({"bootstrap.servers": cluster.bootstrap_servers, "writer.batch-timeout": "1h"})
    async with await fluss.FlussConnection.create(config) as connection:
        writer = (await connection.get_table(path)).new_append().create_writer()
        writer.append({"a": 123})  # no flush, no writer context: the connection's close sends it
    async with await fluss.FlussConnection.create(config) as again:
        scanner = await (await again.get_table(path)).new_scan().create_log_scanner()
        scanner.subscribe(0, EARLIEST_OFFSET)
        got = []
        deadline = time.monotonic() + 15
        while not got and time.monotonic() < deadline:
            got.extend(r.row["a"] for r in await scanner.poll(500))
        assert got == [123]


async def test_writer_context_managers_flush_and_exceptions_propagate(conn, admin, database):
    path = TablePath(database, "ctx")
    await admin.create_table(path, TableDescriptor(Schema(pa.schema([("id", pa.int32()), ("v", pa.string())]),
                                                          primary_keys=["id"])))
    table = await conn.get_table(path)
    async with table.new_upsert().create_writer() as writer:
        writer.upsert({"id": 1, "v": "a"})
    assert await table.new_lookup().create_lookuper().lookup({"id": 1}) == {"id": 1, "v": "a"}

    class Boom(Exception):
        pass

    with pytest.raises(Boom):
        async with table.new_upsert().create_writer() as writer:
            writer.upsert({"id": 2, "v": "b"})
            raise Boom()
    assert await table.new_lookup().create_lookuper().lookup({"id": 2}) == {"id": 2, "v": "b"}  # still flushed


async def test_a_missing_non_nullable_field_is_refused_naming_it(conn, admin, database):
    path = TablePath(database, "nullability")
    nested = pa.struct([pa.field("a", pa.int32()), pa.field("b", pa.int32(), nullable=False)])
    await admin.create_table(path, TableDescriptor(Schema(pa.schema([
        ("id", pa.int32()), ("opt", pa.int32()), pa.field("req", pa.int32(), nullable=False), ("nested", nested)]),
        primary_keys=["id"])))
    table = await conn.get_table(path)
    writer = table.new_upsert().create_writer()
    writer.upsert({"id": 1, "req": 5, "nested": {"b": 3}})  # omitted nullable fields are null
    await writer.flush()
    assert await table.new_lookup().create_lookuper().lookup({"id": 1}) == {
        "id": 1, "opt": None, "req": 5, "nested": {"a": None, "b": 3}}
    for row, message in [({"id": 3, "opt": 1, "nested": {"a": 1, "b": 2}}, "non-nullable field 'req'"),
                         ({"id": 4, "req": 5, "nested": {"a": 1}}, "non-nullable row field 'b'")]:
        with pytest.raises(FlussError, match=message):  # at the call or on the handle
            handle = writer.upsert(row)
            await writer.flush()
            await handle.wait()


async def test_result_objects_are_read_only_and_print_as_the_official_ones(conn, admin, database):
    table = await _log_table(conn, admin, database, "records", rows=4)
    scanner = await table.new_scan().create_log_scanner()
    scanner.subscribe(0, EARLIEST_OFFSET)
    records = []
    while len(records) < 4:
        records.extend(await scanner.poll(500))
    polled = await scanner.poll(100)
    assert polled.is_empty() and len(polled) == 0
    record = records[0]
    assert (record.offset, record.change_type, record.row["c1"]) == (0, fluss.ChangeType.AppendOnly, 0)
    with pytest.raises(AttributeError):
        record.offset = 5
    assert str(fluss.ChangeType.Insert) == "+I"
    path = TablePath(database_name=database, table_name="records")
    assert path == table.get_table_path() and repr(path) == f"TablePath('{database}', 'records')"
    nodes = await admin.get_server_nodes()
    assert {n.server_type for n in nodes} == {"CoordinatorServer", "TabletServer"}
    with pytest.raises(AttributeError):
        nodes[0].port = 1
    assert str(table.get_table_info().get_schema()) == \
        'Schema: columns=[("c1", "int"), ("c2", "string"), ("c3", "bigint")]'
    assert str(FlussError("boom")) == "FlussError: boom"
    assert str(FlussError("gone", ErrorCode.TABLE_NOT_EXIST)) == "FlussError(code=7): gone"
    # SASL is spoken (issue 17, tests/security): without credentials it is refused before connecting, naming them
    with pytest.raises(FlussError, match="client.security.sasl.username"):
        await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": "127.0.0.1:1", "security.protocol": "SASL"}))
    with pytest.raises(FlussError, match="Unsupported client.security.protocol 'GSSAPI'"):
        await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": "127.0.0.1:1",
                                                         "security.protocol": "GSSAPI"}))
