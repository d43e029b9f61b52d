"""Requests a well-behaved client never sends, straight over gRPC: the tablet server answers each with a clear
per-bucket error and stores nothing."""

from __future__ import annotations

import asyncio

import pyarrow as pa
import pytest

from fluss import EARLIEST_OFFSET, ErrorCode, OffsetSpec, Schema, TableBucket, TableDescriptor, TablePath
from fluss.record.log_batch import build_batch
from fluss.rpc.gen import fluss_api_pb2 as pb

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def _setup(conn, admin, database, name):
    path = TablePath(database, name)
    await admin.create_table(path, TableDescriptor(Schema(pa.schema([("v", pa.int64())]))))
    table = await conn.get_table(path)
    meta = await conn.run(conn.cluster.table(path, refresh=True))
    leader = conn.cluster.leader_address(meta, next(iter(meta.leaders)))
    return path, table, leader


def _batch(values: list[int], schema_id: int = 1) -> bytes:
    return build_batch(pa.record_batch([pa.array(values, pa.int64())], names=["v"]), schema_id=schema_id)


async def _produce(conn, leader, table_id, bucket, records) -> pb.ProduceBucketResultPb:
    req = pb.ProduceLogRequest(acks=-1, table_id=table_id, timeout_ms=5000,
                               buckets=[pb.ProduceBucketPb(partition_id=-1, bucket_id=bucket, records=records)])
    for _ in range(50):  # a brand-new table's leader may not have been told about its bucket yet
        result = (await conn.run(conn.cluster.tablet_call(leader, "ProduceLog", req))).buckets[0]
        if result.error.code != ErrorCode.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION or bucket != 0 or table_id == 999_999:
            return result
        await asyncio.sleep(0.1)
    return result


async def test_corrupt_unknown_and_mismatched_batches_are_rejected(conn, admin, database):
    path, table, leader = await _setup(conn, admin, database, "guarded")
    table_id = table.get_table_info().table_id
    assert (await _produce(conn, leader, table_id, 0, _batch([1, 2, 3]))).error.code == 0

    corrupt = bytearray(_batch([4, 5]) + _batch([6]))
    corrupt[-3] ^= 0xFF
    res = await _produce(conn, leader, table_id, 0, bytes(corrupt))
    assert res.error.code == ErrorCode.CORRUPT_RECORD_EXCEPTION, res.error

    res = await _produce(conn, leader, table_id, 7, _batch([1]))
    assert res.error.code == ErrorCode.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION
    res = await _produce(conn, leader, 999_999, 0, _batch([1]))
    assert res.error.code == ErrorCode.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION
    res = await _produce(conn, leader, table_id, 0, _batch([1], schema_id=5))
    assert res.error.code == ErrorCode.SCHEMA_NOT_EXIST and "schema id 5" in res.error.message

    bad_acks = pb.ProduceLogRequest(acks=2, table_id=table_id,
                                    buckets=[pb.ProduceBucketPb(partition_id=-1, bucket_id=0, records=_batch([1]))])
    resp = await conn.run(conn.cluster.tablet_call(leader, "ProduceLog", bad_acks))
    assert resp.buckets[0].error.code == ErrorCode.INVALID_REQUIRED_ACKS

    assert (await admin.list_offsets(path, [0], OffsetSpec.latest()))[0] == 3  # nothing else was stored
    scanner = await table.new_scan().create_record_batch_log_scanner()
    scanner.subscribe(0, EARLIEST_OFFSET)
    assert (await scanner.to_arrow()).column("v").to_pylist() == [1, 2, 3]


async def test_fetch_of_unknown_bucket_and_bad_projection(conn, admin, database):
    _, table, leader = await _setup(conn, admin, database, "fetchy")
    table_id = table.get_table_info().table_id
    req = pb.FetchLogRequest(follower_id=-1, max_bytes=1 << 20, max_wait_ms=0, tables=[pb.FetchTablePb(
        table_id=table_id, projection_enabled=True, projected_fields=[3],
        buckets=[pb.FetchBucketPb(partition_id=-1, bucket_id=0, fetch_offset=0, max_bytes=1 << 20),
                 pb.FetchBucketPb(partition_id=-1, bucket_id=9, fetch_offset=0, max_bytes=1 << 20)])])
    assert (await _produce(conn, leader, table_id, 0, _batch([1]))).error.code == 0
    resp = await conn.run(conn.cluster.tablet_call(leader, "FetchLog", req))
    errors = {b.bucket_id: b.error.code for b in resp.tables[0].buckets}
    assert errors == {0: ErrorCode.INVALID_COLUMN_PROJECTION, 9: ErrorCode.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION}


async def test_bucket_batch_scanner_with_limit(conn, admin, database):
    path = TablePath(database, "limited")
    await admin.create_table(path, TableDescriptor(Schema(pa.schema([("v", pa.int64())])), bucket_count=2))
    table = await conn.get_table(path)
    writer = table.new_append().create_writer()
    writer.write_arrow(pa.table({"v": pa.array(range(1000), pa.int64())}))
    await writer.flush()
    offsets = await admin.list_offsets(path, [0, 1], OffsetSpec.latest())
    bucket = max(offsets, key=offsets.get)
    scanner = table.new_scan().limit(10).create_bucket_batch_scanner(TableBucket(table.get_table_info().table_id,
                                                                                 bucket))
    got = (await scanner.to_arrow())
    assert got.num_rows == 10
    full = await table.new_scan().create_record_batch_log_scanner()
    full.subscribe(bucket, EARLIEST_OFFSET)
    # as Fluss's LimitScan of a log table: the last records below the high watermark
    assert got.column("v").to_pylist() == (await full.to_arrow()).column("v").to_pylist()[-10:]
    assert await scanner.next_batch() is None


async def test_undecodable_request_bodies_get_a_clear_error_and_no_traceback_in_the_server_log(conn, admin, database,
                                                                                             cluster):
    _, _, leader = await _setup(conn, admin, database, "garbage")
    port = int(leader.rsplit(":", 1)[1])
    server_log = next(cluster.dir / "logs" / f"{p.name}.log" for p in cluster._tablets.values() if p.port == port)
    tracebacks_before = server_log.read_text().count("Traceback")

    async def send_garbage() -> list[pb.ProduceLogResponse]:
        call = conn.cluster.channels.channel(leader).unary_unary(
            "/fluss.rpc.TabletService/ProduceLog", response_deserializer=pb.ProduceLogResponse.FromString)
        return [await call(b"\x0a\xff\xff\xff\xff\x0f" + bytes(range(40)), timeout=5) for _ in range(20)]

    for resp in await conn.run(send_garbage()):
        assert resp.error.code == ErrorCode.CORRUPT_MESSAGE and "ProduceLog" in resp.error.message
        assert not resp.buckets
    text = server_log.read_text()
    assert text.count("Traceback") == tracebacks_before
    assert "Exception deserializing" not in text
    assert text.count("undecodable ProduceLog request") <= 2  # rate-limited: one line, not one per request
