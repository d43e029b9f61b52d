"""Primary-key tables through the client on the shared cluster: upsert/delete, lookups, prefix lookups,
partial update, partitions, the changelog a log scanner sees, lookup batching and every bad input."""

from __future__ import annotations

import asyncio
import datetime as dt
import random
import time
from decimal import Decimal

import pyarrow as pa
import pytest
import pytest_asyncio

import fluss
from fluss import EARLIEST_OFFSET, ChangeType, ErrorCode, FlussError, Schema, TableDescriptor, TablePath
from fluss.server.cluster import LocalCluster

pytestmark = pytest.mark.asyncio(loop_scope="session")

USERS = pa.schema([("id", pa.int32()), ("name", pa.string()), ("score", pa.float64()), ("city", pa.string())])


async def _pk_table(conn, admin, database, name, schema=USERS, primary_keys=("id",), **kw):
    path = TablePath(database, name)
    await admin.create_table(path, TableDescriptor(Schema(schema, primary_keys=list(primary_keys)), **kw))
    return await conn.get_table(path)


async def _changelog(table, buckets, expected: int, partition_id: int | None = None) -> list:
    scanner = await table.new_scan().create_log_scanner()
    if partition_id is None:
        scanner.subscribe_buckets({b: EARLIEST_OFFSET for b in buckets})
    else:
        scanner.subscribe_partition_buckets({(partition_id, b): EARLIEST_OFFSET for b in buckets})
    got = []
    deadline = time.monotonic() + 15
    while len(got) < expected and time.monotonic() < deadline:
        got.extend(await scanner.poll(300))
    return got


async def test_upserts_are_visible_to_lookups_and_deletes_remove_them(conn, admin, database):
    table = await _pk_table(conn, admin, database, "users", bucket_count=3)
    writer = table.new_upsert().create_writer()
    rows = [{"id": i, "name": f"user{i}", "score": i * 1.5, "city": ["Oslo", "Lima", None][i % 3]} for i in range(300)]
    handles = [writer.upsert(r) for r in rows]
    await writer.flush()
    for h in handles:
        await h.wait()
    lookuper = table.new_lookup().create_lookuper()
    for r in rows[:20]:
        assert await lookuper.lookup({"id": r["id"]}) == r
    assert await lookuper.lookup([299]) == rows[299]
    assert await lookuper.lookup((150,)) == rows[150]
    assert await lookuper.lookup({"id": 10_000}) is None

    writer.upsert([7, "seven", 77.0, "Rome"])  # positional rows in schema order
    writer.delete({"id": 8})
    writer.delete([9])
    writer.delete({"id": 10, "name": "ignored", "score": 0.0, "city": None})  # a whole row may be passed
    writer.delete({"id": 5000})  # deleting an absent key is not an error
    await writer.flush()
    assert await lookuper.lookup({"id": 7}) == {"id": 7, "name": "seven", "score": 77.0, "city": "Rome"}
    for gone in (8, 9, 10):
        assert await lookuper.lookup({"id": gone}) is None
    assert await lookuper.lookup({"id": 11}) == rows[11]


async def test_upserts_and_deletes_of_one_key_apply_in_call_order(conn, admin, database):
    table = await _pk_table(conn, admin, database, "ordered", bucket_count=2)
    writer = table.new_upsert().create_writer()
    for k in range(50):
        writer.upsert({"id": k, "name": "first", "score": 1.0, "city": None})
        writer.delete({"id": k})
        if k % 2 == 0:
            writer.upsert({"id": k, "name": "again", "score": float(k), "city": "X"})
    await writer.flush()
    lookuper = table.new_lookup().create_lookuper()
    results = await asyncio.gather(*(lookuper.lookup({"id": k}) for k in range(50)))
    for k, row in enumerate(results):
        if k % 2 == 0:
            assert row == {"id": k, "name": "again", "score": float(k), "city": "X"}
        else:
            assert row is None


async def test_log_scanner_on_a_pk_table_yields_the_changelog(conn, admin, database):
    table = await _pk_table(conn, admin, database, "changes")
    writer = table.new_upsert().create_writer()
    writer.upsert({"id": 1, "name": "a", "score": 1.0, "city": "Oslo"})
    await writer.flush()
    writer.upsert({"id": 1, "name": "b", "score": 2.0, "city": "Oslo"})
    await writer.flush()
    writer.delete({"id": 1})
    await writer.flush()
    records = await _changelog(table, [0], 4)
    assert [r.change_type for r in records] == [ChangeType.Insert, ChangeType.UpdateBefore, ChangeType.UpdateAfter,
                                                ChangeType.Delete]
    assert [r.change_type.short_string() for r in records] == ["+I", "-U", "+U", "-D"]
    assert [r.row["name"] for r in records] == ["a", "a", "b", "b"]
    assert [r.offset for r in records] == [0, 1, 2, 3]


async def test_wal_changelog_image_has_no_update_before(conn, admin, database):
    table = await _pk_table(conn, admin, database, "wal", properties={"table.changelog.image": "WAL"})
    writer = table.new_upsert().create_writer()
    for name in ("a", "b"):
        writer.upsert({"id": 1, "name": name, "score": None, "city": None})
        await writer.flush()
    records = await _changelog(table, [0], 2)
    assert [r.change_type for r in records] == [ChangeType.Insert, ChangeType.UpdateAfter]


async def test_partial_update_writes_only_the_target_columns(conn, admin, database):
    table = await _pk_table(conn, admin, database, "partial", bucket_count=2)
    full = table.new_upsert().create_writer()
    full.upsert({"id": 1, "name": "ann", "score": 1.0, "city": "Oslo"})
    full.upsert({"id": 2, "name": "bob", "score": 2.0, "city": "Lima"})
    await full.flush()

    by_name = table.new_upsert().partial_update_by_name(["id", "score"]).create_writer()
    by_name.upsert({"id": 1, "score": 10.0})
    by_name.upsert([2, 20.0])  # exactly the target columns, in target order
    by_name.upsert({"id": 3, "score": 30.0})  # a new key: the other columns are null
    await by_name.flush()
    by_index = table.new_upsert().partial_update_by_index([0, 3]).create_writer()
    by_index.upsert([1, "should be ignored", 99.0, "Rome"])  # a whole row: only the targets are used
    await by_index.flush()

    lookuper = table.new_lookup().create_lookuper()
    assert await lookuper.lookup({"id": 1}) == {"id": 1, "name": "ann", "score": 10.0, "city": "Rome"}
    assert await lookuper.lookup({"id": 2}) == {"id": 2, "name": "bob", "score": 20.0, "city": "Lima"}
    assert await lookuper.lookup({"id": 3}) == {"id": 3, "name": None, "score": 30.0, "city": None}

    # a partial-update delete (as in Fluss) clears the target columns; the row goes once nothing else is left
    by_name.delete({"id": 2})
    by_name.delete({"id": 3})
    await by_name.flush()
    assert await lookuper.lookup({"id": 2}) == {"id": 2, "name": "bob", "score": None, "city": "Lima"}
    assert await lookuper.lookup({"id": 3}) is None


async def test_arrow_upserts_and_deletes_apply_in_order_with_row_calls(conn, admin, database):
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), ("name", pa.string()),
                        pa.field("score", pa.float64(), nullable=False), ("city", pa.string())])
    table = await _pk_table(conn, admin, database, "arrow_upserts", schema=schema, bucket_count=3)
    writer = table.new_upsert().create_writer()
    writer.upsert({"id": 0, "name": "row call first", "score": -1.0, "city": None})
    ids = list(range(3000))
    handle = writer.upsert_arrow_batch(pa.RecordBatch.from_pydict(  # columns by name, int64 ids narrowed losslessly
        {"city": ["Oslo"] * 3000, "score": [i / 2 for i in ids], "id": pa.array(ids, pa.int64()),
         "name": [f"n{i}" for i in ids]}))
    writer.upsert({"id": 1, "name": "row call after", "score": 1.5, "city": "Lima"})
    # deletes: any extra columns are ignored (score is NOT NULL but not needed for a delete)
    writer.delete_arrow_batch(pa.table({"id": pa.array(range(0, 3000, 3), pa.int32()), "other": ["x"] * 1000}))
    writer.upsert({"id": 3, "name": "back", "score": 3.0, "city": None})  # after its delete: it stays
    await writer.flush()
    await handle.wait()
    lookuper = table.new_lookup().create_lookuper()
    assert await lookuper.lookup({"id": 0}) is None
    assert await lookuper.lookup({"id": 1}) == {"id": 1, "name": "row call after", "score": 1.5, "city": "Lima"}
    assert await lookuper.lookup({"id": 2}) == {"id": 2, "name": "n2", "score": 1.0, "city": "Oslo"}
    assert await lookuper.lookup({"id": 3}) == {"id": 3, "name": "back", "score": 3.0, "city": None}
    assert (await admin.get_table_stats(table.get_table_path())).row_count == 2001

    partial = table.new_upsert().partial_update_by_name(["id", "score", "city"]).create_writer()
    handle = partial.upsert_arrow_batch(pa.RecordBatch.from_pydict({"id": pa.array([1, 2], pa.int32()),
                                                                    "score": [5.0, 6.0], "city": ["Rome", None]}))
    await partial.flush()
    await handle.wait()
    assert await lookuper.lookup({"id": 1}) == {"id": 1, "name": "row call after", "score": 5.0, "city": "Rome"}
    assert await lookuper.lookup({"id": 2}) == {"id": 2, "name": "n2", "score": 6.0, "city": None}

    # bad data is refused at the call, naming the column, and nothing of it is written
    bad = [
        (writer.upsert_arrow_batch, pa.table({"id": pa.array([7777, None], pa.int32()), "name": ["a", "b"],
                                              "score": [1.0, 2.0], "city": [None, None]}), "'id'"),
        (writer.upsert_arrow_batch, pa.table({"id": pa.array([7777], pa.int32()), "name": ["a"]}), "'score'"),
        (writer.upsert_arrow_batch, pa.table({"id": pa.array([7777], pa.int32()), "name": ["a"], "score": [1.0],
                                              "city": [None], "zip": [1]}), "'zip'"),
        (writer.delete_arrow_batch, pa.table({"name": ["a"]}), "'id'"),
        (partial.upsert_arrow_batch, pa.table({"id": pa.array([7777], pa.int32()), "score": [1.0], "city": ["x"],
                                               "name": ["not a target"]}), "'name'"),
        (writer.upsert_arrow_batch, [{"id": 7777}], "RecordBatch"),
    ]
    for call, data, named in bad:
        with pytest.raises(FlussError) as err:
            call(data)
        assert named in str(err.value), (named, str(err.value))
    await writer.flush()
    assert await lookuper.lookup({"id": 7777}) is None
    assert (await admin.get_table_stats(table.get_table_path())).row_count == 2001


async def test_composite_key_of_many_types(conn, admin, database):
    schema = pa.schema([("k_str", pa.string()), ("k_date", pa.date32()), ("k_dec", pa.decimal128(10, 2)),
                        ("k_ts", pa.timestamp("us")), ("v", pa.binary())])
    table = await _pk_table(conn, admin, database, "composite", schema, ("k_str", "k_date", "k_dec", "k_ts"),
                            bucket_count=4)
    writer = table.new_upsert().create_writer()
    rows = [{"k_str": f"k{i}\x00é", "k_date": dt.date(2024, 1, 1 + i % 28), "k_dec": Decimal(f"{i}.25"),
             "k_ts": dt.datetime(2024, 5, 1, 12, 0, i % 60, 123456), "v": bytes([i % 256]) * 3} for i in range(100)]
    for r in rows:
        writer.upsert(r)
    await writer.flush()
    lookuper = table.new_lookup().create_lookuper()
    got = await asyncio.gather(*(lookuper.lookup([r["k_str"], r["k_date"], r["k_dec"], r["k_ts"]]) for r in rows))
    assert got == rows
    assert await lookuper.lookup({**{k: rows[0][k] for k in ("k_str", "k_date", "k_ts")},
                                  "k_dec": Decimal("0.26")}) is None


async def test_prefix_lookup_returns_every_row_of_the_bucket_key(conn, admin, database):
    schema = pa.schema([("user", pa.string()), ("item", pa.int64()), ("qty", pa.int32())])
    table = await _pk_table(conn, admin, database, "carts", schema, ("user", "item"), bucket_count=3,
                            bucket_keys=["user"])
    writer = table.new_upsert().create_writer()
    for u in range(10):
        for item in range(u):
            writer.upsert({"user": f"u{u}", "item": item, "qty": u * 100 + item})
    writer.upsert({"user": "u1x", "item": 0, "qty": -1})  # shares the bytes "u1" but is another user
    await writer.flush()
    prefix = table.new_lookup().lookup_by(["user"]).create_lookuper()
    results = await asyncio.gather(*(prefix.lookup({"user": f"u{u}"}) for u in range(10)))
    for u, rows in enumerate(results):
        assert sorted(r["item"] for r in rows) == list(range(u))
        assert all(r == {"user": f"u{u}", "item": r["item"], "qty": u * 100 + r["item"]} for r in rows)
    assert await prefix.lookup(["nobody"]) == []
    assert await prefix.lookup(("u1x",)) == [{"user": "u1x", "item": 0, "qty": -1}]
    writer.delete({"user": "u3", "item": 1})
    await writer.flush()
    assert sorted(r["item"] for r in await prefix.lookup({"user": "u3"})) == [0, 2]


async def test_partitioned_pk_table_routes_upserts_and_lookups_per_partition(conn, admin, database):
    schema = pa.schema([("id", pa.int64()), ("day", pa.string()), ("seq", pa.int32()), ("v", pa.string())])
    table = await _pk_table(conn, admin, database, "daily", schema, ("id", "seq", "day"), partition_keys=["day"],
                            bucket_count=2)
    assert table.get_table_info().get_bucket_keys() == ["id", "seq"]
    writer = table.new_upsert().create_writer()
    days = ["2024-01-01", "2024-01-02"]
    for i in range(40):
        writer.upsert({"id": i % 5, "day": days[i % 2], "seq": i, "v": f"v{i}"})
    await writer.flush()
    parts = {p.partition_name: p.partition_id for p in await admin.list_partition_infos(table.get_table_path())}
    assert sorted(parts) == days  # created on the fly by the writer
    lookuper = table.new_lookup().create_lookuper()
    assert await lookuper.lookup({"id": 3, "seq": 13, "day": "2024-01-02"}) == \
        {"id": 3, "day": "2024-01-02", "seq": 13, "v": "v13"}
    assert await lookuper.lookup([3, 13, "2024-01-02"]) is not None  # primary-key order: id, seq, day
    assert await lookuper.lookup({"id": 3, "seq": 13, "day": "2024-01-01"}) is None  # other partition
    assert await lookuper.lookup({"id": 3, "seq": 13, "day": "1999-01-01"}) is None  # no such partition
    writer.delete({"id": 3, "seq": 13, "day": "2024-01-02"})
    await writer.flush()
    assert await lookuper.lookup({"id": 3, "seq": 13, "day": "2024-01-02"}) is None
    records = await _changelog(table, [0, 1], 21, partition_id=parts["2024-01-02"])
    assert sorted(r.change_type.short_string() for r in records) == ["+I"] * 20 + ["-D"]
    assert {r.row["day"] for r in records} == {"2024-01-02"}


async def test_prefix_lookup_on_a_partitioned_table_includes_the_partition_key(conn, admin, database):
    schema = pa.schema([("day", pa.string()), ("user", pa.string()), ("n", pa.int32())])
    table = await _pk_table(conn, admin, database, "daily_users", schema, ("user", "n", "day"),
                            partition_keys=["day"], bucket_count=2, bucket_keys=["user"])
    writer = table.new_upsert().create_writer()
    for day in ("d1", "d2"):
        for n in range(3):
            writer.upsert({"day": day, "user": "ann", "n": n})
    writer.upsert({"day": "d1", "user": "bob", "n": 9})
    await writer.flush()
    prefix = table.new_lookup().lookup_by(["day", "user"]).create_lookuper()
    assert sorted(r["n"] for r in await prefix.lookup({"day": "d1", "user": "ann"})) == [0, 1, 2]
    assert [r["n"] for r in await prefix.lookup(["d1", "bob"])] == [9]
    assert await prefix.lookup({"day": "d2", "user": "bob"}) == []
    assert await prefix.lookup({"day": "d3", "user": "ann"}) == []


async def test_large_answers_carry_each_key_s_flag_and_each_prefix_s_count(conn, admin, database):
    """Answers of more than ``PROTOBUF_FLAGS_MAX`` keys leave the tablet server as hand-written wire bytes
    (``fluss.rpc.lookup_wire``): present and absent keys keep their places, and a prefix matching 128 or more
    rows (a count that takes two varint bytes) comes back whole next to prefixes matching few or none."""
    table = await _pk_table(conn, admin, database, "large_answers", bucket_count=1)
    writer = table.new_upsert().create_writer()
    for k in range(0, 300, 3):
        writer.upsert({"id": k, "name": str(k), "score": None, "city": None})
    await writer.flush()
    lookuper = table.new_lookup().create_lookuper()
    got = await asyncio.gather(*(lookuper.lookup({"id": k}) for k in range(300)))
    assert [g and g["name"] for g in got] == [str(k) if k % 3 == 0 else None for k in range(300)]

    schema = pa.schema([("user", pa.string()), ("item", pa.int64()), ("qty", pa.int32())])
    carts = await _pk_table(conn, admin, database, "large_prefixes", schema, ("user", "item"), bucket_count=1,
                            bucket_keys=["user"])
    writer = carts.new_upsert().create_writer()
    items = {f"u{u}": (200 if u == 0 else u % 3) for u in range(40)}  # u0: 200 rows; others 0-2
    for user, n in items.items():
        for item in range(n):
            writer.upsert({"user": user, "item": item, "qty": item})
    await writer.flush()
    prefix = carts.new_lookup().lookup_by(["user"]).create_lookuper()
    got = await asyncio.gather(*(prefix.lookup({"user": user}) for user in items))
    assert [sorted(r["item"] for r in rows) for rows in got] == [list(range(n)) for n in items.values()]


async def test_concurrent_lookups_are_batched_into_few_requests(conn, admin, database):
    table = await _pk_table(conn, admin, database, "batched", bucket_count=4)
    writer = table.new_upsert().create_writer()
    for i in range(1000):
        writer.upsert({"id": i, "name": str(i), "score": None, "city": None})
    await writer.flush()
    lookuper = table.new_lookup().create_lookuper()
    results = await asyncio.gather(*(lookuper.lookup({"id": i}) for i in range(1000)))
    assert [r["name"] for r in results] == [str(i) for i in range(1000)]
    sent = lookuper._sender.requests_sent
    # 1000 keys, at most 128 per batch, each batch one request per leader (3 servers)
    assert sent <= 3 * (1000 // 128 + 2), sent
    single = await lookuper.lookup({"id": 5})
    assert single["name"] == "5"


async def test_lookup_batch_timeout_sends_a_lone_key(conn, admin, database):
    path = TablePath(database, "lone")
    await admin.create_table(path, TableDescriptor(Schema(USERS, primary_keys=["id"])))
    fast = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": conn.config.bootstrap_servers,
                                                            "lookup.batch-timeout": "5ms",
                                                            "lookup.max-batch-size": "4"}))
    try:
        table = await fast.get_table(path)
        writer = table.new_upsert().create_writer()
        writer.upsert({"id": 1, "name": "x", "score": 1.0, "city": None})
        await writer.flush()
        lookuper = table.new_lookup().create_lookuper()
        start = time.monotonic()
        assert (await lookuper.lookup({"id": 1}))["name"] == "x"
        assert time.monotonic() - start < 2
        got = await asyncio.gather(*(lookuper.lookup({"id": i}) for i in range(10)))
        assert got[1]["name"] == "x" and got.count(None) == 9
    finally:
        await fast.aclose()


async def test_a_gather_of_lookups_mixing_present_and_missing_keys_across_buckets_and_partitions(conn, admin,
                                                                                                 database):
    """One gather: rows of several buckets of two partitions, absent keys, a partition that does not exist and
    a key of the wrong type, with 3 keys per bucket entry at most (several entries of a bucket per request):
    every lookup gets its own answer, in order."""
    schema = pa.schema([("id", pa.int64()), ("day", pa.string()), ("v", pa.string())])
    path = TablePath(database, "mixed")
    await admin.create_table(path, TableDescriptor(Schema(schema, primary_keys=["id", "day"]),
                                                   partition_keys=["day"], bucket_count=3))
    small = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": conn.config.bootstrap_servers,
                                                             "lookup.max-batch-size": "3"}))
    try:
        table = await small.get_table(path)
        writer = table.new_upsert().create_writer()
        stored = {}
        for day in ("d1", "d2"):
            for i in range(0, 60, 2):  # odd ids are absent
                stored[(i, day)] = {"id": i, "day": day, "v": f"{day}-{i}"}
                writer.upsert(stored[(i, day)])
        await writer.flush()
        keys = [(i, day) for i in range(60) for day in ("d1", "d2", "d9")]  # d9: no such partition
        random.Random(7).shuffle(keys)
        lookuper = table.new_lookup().create_lookuper()
        got = await asyncio.gather(*(lookuper.lookup({"id": i, "day": day}) for i, day in keys))
        assert got == [stored.get(k) for k in keys]
        assert sum(g is not None for g in got) == 60

        mixed = [lookuper.lookup([k[0], k[1]]) for k in keys[:40]]
        mixed.insert(17, lookuper.lookup({"id": "seventeen", "day": "d1"}))  # fails alone
        got = await asyncio.gather(*mixed, return_exceptions=True)
        assert isinstance(got[17], FlussError) and "'id'" in got[17].message
        assert got[:17] + got[18:] == [stored.get(k) for k in keys[:40]]

        carts = pa.schema([("user", pa.string()), ("item", pa.int64()), ("day", pa.string()), ("qty", pa.int32())])
        carts_path = TablePath(database, "mixed_carts")
        await admin.create_table(carts_path, TableDescriptor(Schema(carts, primary_keys=["user", "item", "day"]),
                                                             partition_keys=["day"], bucket_count=3,
                                                             bucket_keys=["user"]))
        table = await small.get_table(carts_path)
        writer = table.new_upsert().create_writer()
        expected: dict[tuple[str, str], list] = {}
        for u in range(20):
            for day in ("d1", "d2"):
                for item in range(u % 4):  # u0, u4, ... have no rows
                    row = {"user": f"u{u}", "item": item, "day": day, "qty": u * 10 + item}
                    expected.setdefault((f"u{u}", day), []).append(row)
                    writer.upsert(row)
        await writer.flush()
        prefixes = [(f"u{u}", day) for u in range(25) for day in ("d1", "d2", "d9")]
        random.Random(3).shuffle(prefixes)
        prefix = table.new_lookup().lookup_by(["user", "day"]).create_lookuper()
        got = await asyncio.gather(*(prefix.lookup({"user": u, "day": day}) for u, day in prefixes))
        assert got == [expected.get(p, []) for p in prefixes]  # each prefix's rows in key (item) order
    finally:
        await small.aclose()


async def test_lookup_returns_a_future_sent_at_once_and_refuses_a_bad_key_at_the_call(conn, admin, database):
    """As in the official client, lookup() is a plain method returning a future; with nothing in flight a key is
    sent at once, whatever the batch timeout."""
    path = TablePath(database, "futures")
    await admin.create_table(path, TableDescriptor(Schema(USERS, primary_keys=["id"]), bucket_count=2))
    slow = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": conn.config.bootstrap_servers,
                                                            "lookup.batch-timeout": "60s"}))
    try:
        table = await slow.get_table(path)
        writer = table.new_upsert().create_writer()
        writer.upsert({"id": 1, "name": "x", "score": 1.0, "city": None})
        await writer.flush()
        lookuper = table.new_lookup().create_lookuper()
        with pytest.raises(FlussError) as e:
            lookuper.lookup("id=1")  # no await needed: the shape is checked at the call
        assert "dict, list or tuple" in e.value.message
        start = time.monotonic()
        future = lookuper.lookup({"id": 1})
        assert isinstance(future, asyncio.Future)
        assert (await future)["name"] == "x"
        assert await asyncio.wait_for(lookuper.lookup([2]), 10) is None
        assert time.monotonic() - start < 10
        sequential = [await lookuper.lookup({"id": i % 3}) for i in range(20)]
        row = {"id": 1, "name": "x", "score": 1.0, "city": None}
        assert sequential == [row if i % 3 == 1 else None for i in range(20)]
    finally:
        await slow.aclose()


async def test_vectorised_and_scalar_key_encoding_agree(conn, admin, database):
    """The hand-over encodes a gather's keys in one Arrow pass; each key must get the bytes, bucket and partition
    that the one-key path (and the writer) gives it."""
    schema = pa.schema([("k_str", pa.string()), ("k_int", pa.int32()), ("day", pa.date32()),
                        ("k_dec", pa.decimal128(10, 2)), ("v", pa.string())])
    table = await _pk_table(conn, admin, database, "encodings", schema, ("k_str", "k_int", "day", "k_dec"),
                            partition_keys=["day"], bucket_count=5)
    codec = table.new_lookup().create_lookuper()._codec
    rows = [(f"k{i}\x00é" * (i % 3), i - 20, dt.date(2024, 1, 1 + i % 3), Decimal(i) / 4) for i in range(40)]
    batch = codec.encode_many(rows)
    assert not batch.errors and len(rows) >= 16  # the vectorised path
    assert [(batch.partitions[i], int(batch.buckets[i]), batch.keys[i]) for i in range(len(rows))] == \
        [codec.encode_row(r) for r in rows]
    groups = batch.groups()
    assert sorted(i for g in groups for i in g) == list(range(len(rows)))
    for g in groups:
        assert g == sorted(g) and len({(batch.partitions[i], int(batch.buckets[i])) for i in g}) == 1
    bad = codec.encode_many([*rows[:20], ("x", "not an int", dt.date(2024, 1, 1), Decimal(1)), *rows[20:]])
    assert list(bad.errors) == [20] and "'k_int'" in bad.errors[20].message
    assert bad.keys[:20] + bad.keys[21:] == batch.keys


async def test_prefix_lookup_with_the_partition_key_first_in_the_primary_key(conn, admin, database):
    schema = pa.schema([("day", pa.string()), ("user", pa.string()), ("n", pa.int32())])
    table = await _pk_table(conn, admin, database, "day_first", schema, ("day", "user", "n"),
                            partition_keys=["day"], bucket_count=3)
    assert table.get_table_info().get_bucket_keys() == ["user", "n"]
    writer = table.new_upsert().create_writer()
    for n in range(5):
        writer.upsert({"day": "d1", "user": f"u{n % 2}", "n": n})
    await writer.flush()
    lookuper = table.new_lookup().create_lookuper()
    assert await lookuper.lookup(["d1", "u1", 3]) == {"day": "d1", "user": "u1", "n": 3}
    with pytest.raises(FlussError) as e:  # the bucket key is (user, n): a prefix lookup by user alone cannot route
        table.new_lookup().lookup_by(["day", "user"]).create_lookuper()
    assert "must contain all bucket keys ['user', 'n'] in order" in e.value.message


# ------------------------------------------------------------------------------------------ failover

FAILOVER_CONFIG = {
    "log.replica.min-in-sync-replicas-number": "2",
    "log.replica.max-lag-time": "2s",
    "log.replica.fetch.wait-max-time": "100ms",
    "default.replication.factor": "3",
}


@pytest.fixture(scope="module")
def failover_cluster():
    with LocalCluster(tablet_servers=3, server_config=FAILOVER_CONFIG, zookeeper_session_timeout="2s") as c:
        yield c


@pytest_asyncio.fixture(loop_scope="session")
async def fconn(failover_cluster):
    connection = await fluss.FlussConnection.create(fluss.Config({
        "bootstrap.servers": failover_cluster.bootstrap_servers, "writer.batch-timeout": "5ms",
        "lookup.batch-timeout": "5ms", "request-timeout": "20s"}))
    yield connection
    await connection.aclose()


async def _leaders(connection, path) -> list:
    return list((await connection.run(connection.cluster.update_metadata([path]))).tables[0].buckets)


async def test_upserts_and_lookups_continue_after_a_leader_is_killed(failover_cluster, fconn):
    admin = fconn.get_admin()
    await admin.create_database("pk_failover", ignore_if_exists=True)
    path = TablePath("pk_failover", "users")
    await admin.create_table(path, TableDescriptor(Schema(USERS, primary_keys=["id"]), bucket_count=3))
    deadline = time.monotonic() + 30
    while not all(sorted(b.isr) == sorted(b.replicas) and b.leader_id >= 0 for b in await _leaders(fconn, path)):
        assert time.monotonic() < deadline, "no full ISR"
        await asyncio.sleep(0.2)
    table = await fconn.get_table(path)
    writer = table.new_upsert().create_writer()
    for i in range(300):
        writer.upsert({"id": i, "name": "before", "score": float(i), "city": None})
    await writer.flush()
    victim = (await _leaders(fconn, path))[0].leader_id
    await asyncio.to_thread(failover_cluster.kill_tablet_server, victim)
    try:
        handles = [writer.upsert({"id": i, "name": "after", "score": float(i), "city": None}) for i in range(0, 300, 2)]
        await writer.flush()
        for h in handles:
            await h.wait()
        lookuper = table.new_lookup().create_lookuper()
        rows = await asyncio.gather(*(lookuper.lookup({"id": i}) for i in range(300)))
        assert [r["name"] for r in rows] == ["after" if i % 2 == 0 else "before" for i in range(300)]
    finally:
        await asyncio.to_thread(failover_cluster.start_tablet_server, victim)


# ------------------------------------------------------------------------------------------ bad input


async def test_table_stats_count_the_committed_rows_of_every_bucket_and_partition(conn, admin, database):
    users = await _pk_table(conn, admin, database, "counted", bucket_count=3)
    writer = users.new_upsert().create_writer()
    for i in range(400):
        writer.upsert({"id": i, "name": f"u{i}", "score": 1.0, "city": "Oslo"})
    await writer.flush()
    assert (await admin.get_table_stats(users.get_table_path())).row_count == 400
    for i in range(0, 400, 4):
        writer.upsert({"id": i, "name": "again", "score": 2.0, "city": "Lima"})  # updates: the count stays
    for i in range(1, 400, 4):
        writer.delete({"id": i})
    writer.delete({"id": 10_000})  # not there: nothing to remove
    await writer.flush()
    assert (await admin.get_table_stats(users.get_table_path())).row_count == 300

    schema = pa.schema([("id", pa.int32()), ("day", pa.string()), ("v", pa.int64())])
    daily = await _pk_table(conn, admin, database, "daily", schema=schema, primary_keys=("id", "day"),
                            partition_keys=["day"], bucket_count=2)
    writer = daily.new_upsert().create_writer()
    for day, n in (("2026-12-01", 70), ("2026-12-02", 30)):
        for i in range(n):
            writer.upsert({"id": i, "day": day, "v": i})
    await writer.flush()
    assert (await admin.get_table_stats(daily.get_table_path())).row_count == 100

    log_path = TablePath(database, "log_counted")
    await admin.create_table(log_path, TableDescriptor(Schema(USERS), bucket_count=2))
    appender = (await conn.get_table(log_path)).new_append().create_writer()
    for i in range(250):
        appender.append({"id": i, "name": "n", "score": 0.0, "city": None})
    await appender.flush()
    assert (await admin.get_table_stats(log_path)).row_count == 250
    with pytest.raises(FlussError) as err:
        await admin.get_table_stats(TablePath(database, "missing"))
    assert "missing" in str(err.value)


async def test_writing_or_looking_up_a_log_table_is_refused(conn, admin, database):
    path = TablePath(database, "plain_log")
    await admin.create_table(path, TableDescriptor(Schema(USERS)))
    table = await conn.get_table(path)
    with pytest.raises(FlussError) as e:
        table.new_upsert().create_writer()
    assert e.value.error_code == ErrorCode.NON_PRIMARY_KEY_TABLE_EXCEPTION
    assert "plain_log" in e.value.message and "primary key" in e.value.message
    with pytest.raises(FlussError) as e:
        table.new_lookup().create_lookuper()
    assert e.value.error_code == ErrorCode.NON_PRIMARY_KEY_TABLE_EXCEPTION
    with pytest.raises(FlussError):
        table.new_lookup().lookup_by(["id"]).create_lookuper()


async def test_missing_or_null_primary_key_is_refused_naming_the_column(conn, admin, database):
    table = await _pk_table(conn, admin, database, "strict_pk", USERS, ("id", "name"))
    writer = table.new_upsert().create_writer()
    cases = [
        (lambda: writer.upsert({"name": "a", "score": 1.0, "city": None}), "'id'"),
        (lambda: writer.upsert({"id": 1, "name": None, "score": 1.0, "city": None}), "'name'"),
        (lambda: writer.upsert([None, "a", 1.0, None]), "'id'"),
        (lambda: writer.upsert([1, "a"]), "4"),
        (lambda: writer.upsert("not a row"), "dict, list or tuple"),
        (lambda: writer.delete({"id": 1}), "'name'"),
        (lambda: writer.delete([1, None]), "'name'"),
        (lambda: writer.delete([1]), "2 values"),
    ]
    for call, needle in cases:
        with pytest.raises(FlussError) as e:
            call()
        assert needle in e.value.message, e.value.message
    with pytest.raises(FlussError) as e:  # a wrong-typed key is refused at the call
        writer.upsert({"id": "one", "name": "a", "score": 1.0, "city": None})
    assert "column 'id'" in e.value.message and "expected int, got str" in e.value.message
    good = writer.upsert({"id": 2, "name": "b", "score": 2.0, "city": None})
    await writer.flush()
    await good.wait()
    lookuper = table.new_lookup().create_lookuper()
    assert await lookuper.lookup({"id": 2, "name": "b"}) == {"id": 2, "name": "b", "score": 2.0, "city": None}


async def test_partial_update_without_the_primary_key_is_refused(conn, admin, database):
    table = await _pk_table(conn, admin, database, "partial_bad")
    upsert = table.new_upsert()
    for call, needle in [
        (lambda: upsert.partial_update_by_name(["name", "score"]), "missing id"),
        (lambda: upsert.partial_update_by_name(["id", "nope"]), "nope"),
        (lambda: upsert.partial_update_by_index([1, 2]), "missing id"),
        (lambda: upsert.partial_update_by_index([0, 9]), "9"),
        (lambda: upsert.partial_update_by_index([0, 0]), "repeat"),
    ]:
        with pytest.raises(FlussError) as e:
            call()
        assert e.value.error_code == ErrorCode.INVALID_TARGET_COLUMN
        assert needle in e.value.message, e.value.message
    writer = table.new_upsert().partial_update_by_name(["id", "name"]).create_writer()
    with pytest.raises(FlussError) as e:
        writer.upsert({"name": "x"})
    assert "'id'" in e.value.message
    with pytest.raises(FlussError) as e:
        writer.upsert([1, "x", 2.0])  # neither the whole row nor the targets
    assert "4 or 2 values" in e.value.message


async def test_bad_lookup_keys_are_refused_naming_the_column(conn, admin, database):
    table = await _pk_table(conn, admin, database, "lookup_bad", USERS, ("id", "name"))
    lookuper = table.new_lookup().create_lookuper()
    for key, needle in [
        ({"id": 1}, "'name'"),
        ({"id": 1, "name": None}, "name"),
        ([1], "expected 2 key values"),
        ({"id": "x", "name": "a"}, "id"),
        ("id=1", "dict, list or tuple"),
    ]:
        with pytest.raises(FlussError) as e:
            await lookuper.lookup(key)
        assert needle in e.value.message, e.value.message


async def test_prefix_lookup_columns_must_be_the_bucket_key(conn, admin, database):
    schema = pa.schema([("a", pa.string()), ("b", pa.int32()), ("c", pa.int32()), ("v", pa.string())])
    table = await _pk_table(conn, admin, database, "prefix_bad", schema, ("a", "b", "c"), bucket_keys=["a", "b"])
    lookup = table.new_lookup()
    for columns, needle in [(["a"], "must contain all bucket keys ['a', 'b'] in order"),
                            (["a", "b", "v"], "must contain all bucket keys"), (["zzz"], "Unknown column name 'zzz'"),
                            (["b", "a"], "in order"), (["a", "b", "c"], "must contain all bucket keys")]:
        with pytest.raises(FlussError) as e:
            lookup.lookup_by(columns).create_lookuper()
        assert needle in e.value.message, e.value.message
    ok = lookup.lookup_by(["a", "b"]).create_lookuper()
    assert await ok.lookup(["x", 1]) == []
    with pytest.raises(FlussError) as e:
        await ok.lookup({"a": "x"})
    assert "'b'" in e.value.message

    not_prefix = await _pk_table(conn, admin, database, "prefix_not_leading", schema, ("a", "b", "c"),
                                 bucket_keys=["b"])
    with pytest.raises(FlussError) as e:
        not_prefix.new_lookup().lookup_by(["b"]).create_lookuper()
    assert "is not a prefix subset of the physical primary keys" in e.value.message and "['b']" in e.value.message
