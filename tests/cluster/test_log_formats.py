"""``table.log.format`` (ARROW, INDEXED, COMPACTED) and ``table.kv.format`` (COMPACTED, INDEXED) on the shared
cluster: what is stored, what readers get, which readers refuse a non-Arrow log (naming it), Arrow batches from
writers that only speak Arrow re-encoded by the leader, and the format combinations Fluss refuses."""

from __future__ import annotations

import asyncio
import struct
import time

import crc32c
import pyarrow as pa
import pytest

from fluss import (
    EARLIEST_OFFSET,
    ChangeType,
    ErrorCode,
    FlussError,
    Schema,
    TableBucket,
    TableDescriptor,
    TablePath,
)
from fluss.record.log_batch import HEADER_SIZE, build_batch, iter_batches
from fluss.rpc.gen import fluss_api_pb2 as pb

pytestmark = pytest.mark.asyncio(loop_scope="session")

EVENTS = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()),
                    ("tags", pa.list_(pa.string())), ("score", pa.float64())])


def _row(i: int) -> dict:
    return {"id": i, "name": None if i % 5 == 0 else f"n{i}", "tags": [str(i)] * (i % 3), "score": i / 8}


async def _records(table, expected: int, projection=None) -> list:
    scan = table.new_scan()
    if projection:
        scan = scan.project_by_name(projection)
    scanner = await scan.create_log_scanner()
    scanner.subscribe(0, EARLIEST_OFFSET)
    got = []
    deadline = time.monotonic() + 15
    while len(got) < expected and time.monotonic() < deadline:
        got.extend(await scanner.poll(300))
    return got


async def _stored_formats(conn, table, as_arrow: bool = False) -> list[str]:
    """The body format of every batch of bucket 0, fetched raw from its leader."""
    info = table.get_table_info()
    meta = await conn.run(conn.cluster.table(info.table_path, refresh=True))
    address = conn.cluster.leader_address(meta, TableBucket(info.table_id, 0))
    resp = await conn.run(conn.cluster.tablet_call(address, "FetchLog", pb.FetchLogRequest(
        follower_id=-1, max_bytes=1 << 20, tables=[pb.FetchTablePb(
            table_id=info.table_id, as_arrow=as_arrow,
            buckets=[pb.FetchBucketPb(partition_id=-1, bucket_id=0, fetch_offset=0, max_bytes=1 << 20)])])))
    return [b.body_format for b in iter_batches(resp.tables[0].buckets[0].records)]


@pytest.mark.parametrize("log_format", ["INDEXED", "COMPACTED", "indexed"])
async def test_row_log_formats_store_rows_and_read_back_through_record_scanners(conn, admin, database, log_format):
    path = TablePath(database, f"events_{log_format}")
    await admin.create_table(path, TableDescriptor(Schema(EVENTS), bucket_count=1, log_format=log_format))
    table = await conn.get_table(path)
    writer = table.new_append().create_writer()
    rows = [_row(i) for i in range(50)]
    for r in rows[:30]:
        writer.append(r)
    writer.write_arrow_batch(pa.RecordBatch.from_pylist(rows[30:], schema=EVENTS))
    await writer.flush()

    assert set(await _stored_formats(conn, table)) == {log_format.upper()}
    assert set(await _stored_formats(conn, table, as_arrow=True)) == {"ARROW"}
    assert [r.row for r in await _records(table, 50)] == rows
    projected = await _records(table, 50, projection=["tags", "id"])  # projected on the client
    assert [r.row for r in projected] == [{"tags": r["tags"], "id": r["id"]} for r in rows]

    with pytest.raises(FlussError, match=f"needs the ARROW log format, but table '{path}' uses "
                                         f"table.log.format={log_format.upper()}") as info:
        await table.new_scan().create_record_batch_log_scanner()
    assert info.value.error_code == ErrorCode.CLIENT_ERROR
    with pytest.raises(FlussError, match="needs the ARROW log format"):
        table.new_scan().limit(5).create_bucket_batch_scanner(TableBucket(table.get_table_info().table_id, 0))


async def test_server_projection_of_a_row_log_is_refused(conn, admin, database):
    path = TablePath(database, "compact")
    await admin.create_table(path, TableDescriptor(Schema(EVENTS), bucket_count=1, log_format="COMPACTED"))
    table = await conn.get_table(path)
    writer = table.new_append().create_writer()
    writer.append(_row(1))
    await writer.flush()
    info = table.get_table_info()
    meta = await conn.run(conn.cluster.table(path, refresh=True))
    resp = await conn.run(conn.cluster.tablet_call(conn.cluster.leader_address(meta, TableBucket(info.table_id, 0)),
                                                   "FetchLog", pb.FetchLogRequest(follower_id=-1, tables=[
            pb.FetchTablePb(table_id=info.table_id, projection_enabled=True, projected_fields=[0],
                            buckets=[pb.FetchBucketPb(partition_id=-1, bucket_id=0, fetch_offset=0)])])))
    error = resp.tables[0].buckets[0].error
    assert error.code == ErrorCode.INVALID_COLUMN_PROJECTION
    assert "is not in the ARROW log format (COMPACTED) and does not support column projection" in error.message


async def test_arrow_batches_are_re_encoded_by_the_leader_and_other_row_formats_refused(conn, admin, database):
    path = TablePath(database, "indexed_raw")
    await admin.create_table(path, TableDescriptor(Schema(EVENTS), bucket_count=1, log_format="INDEXED"))
    table = await conn.get_table(path)
    info = table.get_table_info()
    schema = info.row_schema.to_arrow()
    batch = pa.RecordBatch.from_pylist([_row(i) for i in range(5)], schema=schema)
    meta = await conn.run(conn.cluster.table(path, refresh=True))
    leader = conn.cluster.leader_address(meta, TableBucket(info.table_id, 0))

    async def produce(data: bytes):
        deadline = time.monotonic() + 20
        while True:  # the leader hosts the bucket once the coordinator's notification has reached it
            resp = await conn.run(conn.cluster.tablet_call(leader, "ProduceLog", pb.ProduceLogRequest(
                acks=-1, table_id=info.table_id, timeout_ms=10_000,
                buckets=[pb.ProduceBucketPb(partition_id=-1, bucket_id=0, records=data)])))
            if resp.buckets[0].error.code != ErrorCode.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION or time.monotonic() > deadline:
                return resp
            await asyncio.sleep(0.1)

    ok = await produce(build_batch(batch, schema_id=info.schema_id))  # ARROW, as the Flink sink writes
    assert ok.buckets[0].error.code == 0
    refused = await produce(build_batch(batch, schema_id=info.schema_id, log_format="COMPACTED"))
    assert refused.buckets[0].error.code == ErrorCode.CORRUPT_RECORD_EXCEPTION
    assert "the body is COMPACTED, but the table's table.log.format is INDEXED" in refused.buckets[0].error.message
    hostile = bytearray(build_batch(batch, schema_id=info.schema_id, log_format="INDEXED"))
    hostile[HEADER_SIZE + 4 * 5] ^= 0x40  # the first row's schema id, under a valid CRC
    struct.pack_into("<I", hostile, 0, crc32c.crc32c(bytes(hostile[4:])))
    refused = await produce(bytes(hostile))
    assert refused.buckets[0].error.code == ErrorCode.CORRUPT_RECORD_EXCEPTION
    assert "the INDEXED rows do not decode" in refused.buckets[0].error.message
    assert await _stored_formats(conn, table) == ["INDEXED"]
    assert [r.row for r in await _records(table, 5)] == [_row(i) for i in range(5)]


@pytest.mark.parametrize(("log_format", "kv_format", "image"), [
    ("COMPACTED", "COMPACTED", "WAL"), ("ARROW", "INDEXED", "FULL"), ("INDEXED", "INDEXED", "FULL")])
async def test_primary_key_tables_in_every_allowed_format_combination(conn, admin, database, log_format, kv_format,
                                                                       image):
    path = TablePath(database, f"pk_{log_format}_{kv_format}".lower())
    await admin.create_table(path, TableDescriptor(Schema(EVENTS, primary_keys=["id"]), bucket_count=1,
                                                   log_format=log_format, kv_format=kv_format,
                                                   properties={"table.changelog.image": image}))
    table = await conn.get_table(path)
    writer = table.new_upsert().create_writer()
    for i in range(20):
        writer.upsert(_row(i))
    writer.upsert({**_row(3), "name": "changed"})
    writer.delete({"id": 4})
    await writer.flush()
    lookuper = table.new_lookup().create_lookuper()
    assert await lookuper.lookup({"id": 3}) == {**_row(3), "name": "changed"}
    assert await lookuper.lookup({"id": 4}) is None
    assert await lookuper.lookup({"id": 7}) == _row(7)
    expected = 20 + (1 if image == "WAL" else 2) + 1
    changes = await _records(table, expected)
    assert len(changes) == expected
    assert changes[-1].change_type == ChangeType.Delete and changes[-1].row["id"] == 4
    assert set(await _stored_formats(conn, table)) == {log_format}
    snapshot = await table.new_scan().limit(100).create_bucket_batch_scanner(
        TableBucket(table.get_table_info().table_id, 0)).to_arrow()
    assert snapshot.num_rows == 19


@pytest.mark.parametrize(("kw", "pk", "message"), [
    ({"log_format": "INDEXED"}, True, "with 'table.kv.format' COMPACTED needs 'table.log.format' ARROW or "
                                      "COMPACTED, not INDEXED"),
    ({"log_format": "PARQUET"}, False, "Invalid value 'PARQUET' for 'table.log.format'"),
    ({"kv_format": "ARROW"}, True, "Invalid value 'ARROW' for 'table.kv.format'"),
    ({"kv_format": "INDEXED"}, False, "'table.kv.format' .* needs a primary-key table"),
])
async def test_format_options_fluss_refuses(admin, database, kw, pk, message):
    schema = Schema(EVENTS, primary_keys=["id"] if pk else None)
    with pytest.raises(FlussError, match=message) as info:
        await admin.create_table(TablePath(database, "bad"), TableDescriptor(schema, **kw))
    assert info.value.error_code == ErrorCode.INVALID_CONFIG_EXCEPTION
