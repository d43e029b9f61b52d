"""The single-key lookup path (issue 21, goal 3), on the shared cluster: a lone plain key is handed over without
the vectorised encoder, and a send of one bucket whose leader is cached starts its gRPC call in ``_flush`` itself
(the route is known, so the request goes out without waiting for the send task's first step). Everything else
(several buckets, partitions, metadata not cached yet) keeps routing in the send task; the answers are the same."""

from __future__ import annotations

import asyncio

import pyarrow as pa
import pytest

from fluss import ErrorCode, FlussError, Schema, TableDescriptor, TablePath

pytestmark = pytest.mark.asyncio(loop_scope="session")

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])


async def _table(conn, admin, database, name: str, bucket_count: int, rows: int, **extra):
    path = TablePath(database, name)
    await admin.create_table(path, TableDescriptor(Schema(extra.pop("schema", SCHEMA), primary_keys=extra.pop(
        "primary_keys", ["id"])), bucket_count=bucket_count, **extra))
    table = await conn.get_table(path)
    writer = table.new_upsert().create_writer()
    for i in range(rows):
        writer.upsert({"id": i, "name": f"n{i}"})
    await writer.flush()
    return table


def _spy_started(lookuper) -> list:
    """Records what the lookuper's sender started in ``_flush`` for each send (None: routed in its task)."""
    sender = lookuper._sender
    seen: list = []
    original = sender._started

    def started(parts):
        got = original(parts)
        seen.append(None if got is None else (got[0], len(got[1])))
        return got

    sender._started = started
    return seen


async def test_a_lone_key_is_sent_from_the_hand_over_and_many_buckets_route_in_the_send_task(conn, admin, database):
    table = await _table(conn, admin, database, "single_started", bucket_count=3, rows=60)
    lookuper = table.new_lookup().create_lookuper()
    seen = _spy_started(lookuper)
    assert await lookuper.lookup({"id": 7}) == {"id": 7, "name": "n7"}  # the first one fetches the metadata
    seen.clear()
    for i in (3, 11, 59):
        assert await lookuper.lookup({"id": i}) == {"id": i, "name": f"n{i}"}
    assert await lookuper.lookup([1000]) is None
    assert len(seen) == 4 and all(s is not None and s[1] == 1 for s in seen), seen
    assert lookuper._sender.requests_sent >= 5

    seen.clear()
    got = await asyncio.gather(*(lookuper.lookup({"id": i}) for i in range(62)))
    assert got == [{"id": i, "name": f"n{i}"} for i in range(60)] + [None, None]
    assert seen and seen[0] is None  # keys of three buckets: routed (and grouped per leader) in the send task


async def test_a_single_key_of_the_wrong_type_still_fails_by_name(conn, admin, database):
    table = await _table(conn, admin, database, "single_bad", bucket_count=2, rows=4)
    lookuper = table.new_lookup().create_lookuper()
    assert await lookuper.lookup((2,)) == {"id": 2, "name": "n2"}
    for bad in ("2", None, b"2"):
        with pytest.raises(FlussError) as err:
            await lookuper.lookup({"id": bad})
        assert err.value.error_code == ErrorCode.CLIENT_ERROR and "id" in err.value.message


async def test_the_lone_key_hand_over_encodes_as_the_vectorised_one(conn, admin, database):
    table = await _table(conn, admin, database, "single_codec", bucket_count=5, rows=0)
    codec = table.new_lookup().create_lookuper()._codec
    for i in (0, 1, -1, 2**40, -(2**62)):
        batch = codec.encode_many([(i,)] * 20)  # the vectorised encoder (>= VECTOR_ENCODE_MIN keys)
        assert codec.encode_fast((i,)) == (None, int(batch.buckets[0]), batch.keys[0])


async def test_partitioned_lone_keys_route_in_the_send_task(conn, admin, database):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("day", pa.string(), nullable=False),
                        ("name", pa.string())])
    path = TablePath(database, "single_partitioned")
    await admin.create_table(path, TableDescriptor(Schema(schema, primary_keys=["id", "day"]), bucket_count=2,
                                                   partition_keys=["day"]))
    table = await conn.get_table(path)
    writer = table.new_upsert().create_writer()
    writer.upsert({"id": 1, "day": "2024-01-01", "name": "a"})
    await writer.flush()
    lookuper = table.new_lookup().create_lookuper()
    seen = _spy_started(lookuper)
    assert await lookuper.lookup({"id": 1, "day": "2024-01-01"}) == {"id": 1, "day": "2024-01-01", "name": "a"}
    assert await lookuper.lookup({"id": 1, "day": "2024-01-01"}) is not None
    assert await lookuper.lookup({"id": 1, "day": "2030-01-01"}) is None  # no such partition
    assert seen == [None, None, None]
