"""Small lookup answers travel as the stored KV values (a log batch in the table's KV row format), larger ones and
rows of several schema ids as Arrow (``KvReplica.lookup_entries``); the client reads both to the same rows, before
and after ALTER TABLE ADD COLUMN, on the shared cluster."""

from __future__ import annotations

import asyncio

import pyarrow as pa
import pytest

from fluss import Schema, TableBucket, TableChange, TableDescriptor, TablePath
from fluss.key.encoding import encode_key
from fluss.record.log_batch import LogBatch
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.server.replica.kv_replica import STORED_ROWS_MAX

pytestmark = pytest.mark.asyncio(loop_scope="session")

PK = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("score", pa.float32()),
                ("flag", pa.bool_()), ("small", pa.int16())])


def _row(i: int) -> dict:
    return {"id": i, "name": None if i % 4 == 0 else f"n{i}", "score": i / 4, "flag": i % 2 == 0,
            "small": None if i % 3 == 0 else -i}


async def _raw_lookup(conn, table, ids: list[int]) -> pb.LookupBucketResultPb:
    """One Lookup of ``ids`` (all in bucket 0 of a 1-bucket table) straight to the leader."""
    info = table.get_table_info()
    meta = await conn.run(conn.cluster.table(info.table_path, refresh=True))
    leader = conn.cluster.leader_address(meta, TableBucket(info.table_id, 0))
    keys = [encode_key([i], [info.row_schema.column("id").data_type]) for i in ids]
    resp = await conn.run(conn.cluster.tablet_call(leader, "Lookup", pb.LookupRequest(
        table_id=info.table_id, buckets=[pb.LookupBucketPb(partition_id=-1, bucket_id=0, keys=keys)])))
    assert resp.buckets[0].error.code == 0, resp.buckets[0].error.message
    return resp.buckets[0]


@pytest.mark.parametrize("kv_format", ["COMPACTED", "INDEXED"])
async def test_small_answers_are_the_stored_rows_and_read_back_as_the_arrow_ones(conn, admin, database, kv_format):
    path = TablePath(database, f"stored_{kv_format.lower()}")
    await admin.create_table(path, TableDescriptor(Schema(PK, primary_keys=["id"]), bucket_count=1,
                                                   kv_format=kv_format))
    table = await conn.get_table(path)
    writer = table.new_upsert().create_writer()
    n = 2 * STORED_ROWS_MAX
    for i in range(n):
        writer.upsert(_row(i))
    await writer.flush()

    small = await _raw_lookup(conn, table, [3, 10_000, 5])
    assert list(small.found) == [True, False, True]
    batch = LogBatch(small.rows)
    assert (batch.body_format, batch.schema_id, batch.record_count) == (kv_format, 1, 2)
    large = await _raw_lookup(conn, table, list(range(STORED_ROWS_MAX + 1)))
    assert LogBatch(large.rows).body_format == "ARROW"
    assert LogBatch(large.rows).to_arrow(PK).to_pylist() == [_row(i) for i in range(STORED_ROWS_MAX + 1)]

    lookuper = table.new_lookup().create_lookuper()
    for i in (0, 3, 5, 6):  # one at a time: stored rows, read field by field
        assert await lookuper.lookup({"id": i}) == _row(i)
    assert await lookuper.lookup({"id": n + 1}) is None
    together = await asyncio.gather(*(lookuper.lookup({"id": i}) for i in range(n + 2)))
    assert together == [_row(i) for i in range(n)] + [None, None]  # an Arrow answer per bucket entry


async def test_rows_of_one_old_schema_id_travel_stored_and_mixed_ids_as_arrow(conn, admin, database):
    path = TablePath(database, "stored_altered")
    await admin.create_table(path, TableDescriptor(Schema(PK, primary_keys=["id"]), bucket_count=1))
    old_table = await conn.get_table(path)
    writer = old_table.new_upsert().create_writer()
    for i in range(4):
        writer.upsert(_row(i))
    await writer.flush()
    old_lookuper = old_table.new_lookup().create_lookuper()

    await admin.alter_table(path, [TableChange.add_column("note", pa.string())])
    table = await conn.get_table(path)
    writer = table.new_upsert().create_writer()
    writer.upsert({**_row(2), "note": "after"})
    writer.upsert({**_row(9), "note": "new"})
    await writer.flush()

    old_only = LogBatch((await _raw_lookup(conn, table, [0, 1])).rows)
    assert (old_only.body_format, old_only.schema_id) == ("COMPACTED", 1)
    new_only = LogBatch((await _raw_lookup(conn, table, [2, 9])).rows)
    assert (new_only.body_format, new_only.schema_id) == ("COMPACTED", 2)
    mixed = LogBatch((await _raw_lookup(conn, table, [1, 2])).rows)
    assert (mixed.body_format, mixed.schema_id) == ("ARROW", 2)

    lookuper = table.new_lookup().create_lookuper()
    assert await lookuper.lookup({"id": 1}) == {**_row(1), "note": None}  # schema id 1: the new column is null
    assert await lookuper.lookup({"id": 2}) == {**_row(2), "note": "after"}
    assert await asyncio.gather(lookuper.lookup({"id": 1}), lookuper.lookup({"id": 2})) == [
        {**_row(1), "note": None}, {**_row(2), "note": "after"}]
    # a lookuper created before the ALTER keeps its columns, whatever the rows' schema id
    assert await old_lookuper.lookup({"id": 9}) == _row(9)
    assert await old_lookuper.lookup({"id": 3}) == _row(3)
    prefix_free = await asyncio.gather(*(old_lookuper.lookup({"id": i}) for i in (1, 2, 9)))
    assert prefix_free == [_row(1), _row(2), _row(9)]
