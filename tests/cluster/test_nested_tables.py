"""ARRAY, MAP and ROW columns end to end on the shared cluster: log tables (rows, Arrow, pandas; record and batch
scans; projection; every compression), primary-key tables (upsert, partial update, delete, lookups, prefix
lookups, the changelog, merge engines), partitioned tables, property tests of random nested schemas, and bad
nested input refused naming the column and the path inside the value, with nothing written."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
import uuid
from decimal import Decimal

import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fluss import EARLIEST_OFFSET, ChangeType, ErrorCode, FlussError, Schema, TableDescriptor, TablePath
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.types import RowSchema
from tests.nested_strategies import ALL_LEAVES, expected, nested_types, values_of

pytestmark = pytest.mark.asyncio(loop_scope="session")

EVENTS = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    ("tags", pa.list_(pa.field("item", pa.string(), nullable=False))),
    ("attrs", pa.map_(pa.string(), pa.list_(pa.int32()))),
    ("profile", pa.struct([("age", pa.int32()), ("city", pa.string()),
                           ("seen", pa.timestamp("ms", tz="UTC")), ("score", pa.decimal128(5, 2))])),
    ("grid", pa.list_(pa.list_(pa.float64()))),
])
UTC = dt.UTC


def _event(i: int) -> dict:
    return {
        "id": i,
        "tags": [f"t{i}", "x"] if i % 4 else [],
        "attrs": {"a": [i, i + 1], "b": []} if i % 3 else None,
        "profile": {"age": i, "city": None if i % 2 else "Oslo",
                    "seen": dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(milliseconds=i),
                    "score": Decimal(i % 100) / 4} if i % 5 else None,
        "grid": [[float(i)], [], None],
    }


def _read_back(row: dict) -> dict:
    """A written row as reads return it: maps as (key, value) lists, decimals at the column scale."""
    out = dict(row)
    if out["attrs"] is not None:
        out["attrs"] = list(out["attrs"].items())
    if out["profile"] is not None:
        out["profile"] = {**out["profile"], "score": out["profile"]["score"].quantize(Decimal("0.01"))}
    return out


async def _table(conn, admin, database, name, schema, primary_keys=None, **kw):
    path = TablePath(database, name)
    await admin.create_table(path, TableDescriptor(Schema(schema, primary_keys=primary_keys), **kw))
    return await conn.get_table(path)


async def _records(table, buckets, expected_count: int, projection=None, partition_id=None) -> list:
    scan = table.new_scan()
    if projection:
        scan = scan.project_by_name(projection)
    scanner = await scan.create_log_scanner()
    if partition_id is None:
        scanner.subscribe_buckets({b: EARLIEST_OFFSET for b in buckets})
    else:
        scanner.subscribe_partition_buckets({(partition_id, b): EARLIEST_OFFSET for b in buckets})
    got = []
    deadline = time.monotonic() + 20
    while len(got) < expected_count and time.monotonic() < deadline:
        got.extend(await scanner.poll(300))
    return got


# ============================================================================================ log tables


@pytest.mark.parametrize("compression", ["ZSTD", "LZ4_FRAME", "NONE"])
async def test_nested_log_table_round_trips_rows_arrow_and_pandas(conn, admin, database, compression):
    table = await _table(conn, admin, database, f"events_{compression.lower()}", EVENTS, bucket_count=2,
                         properties={"table.log.arrow.compression.type": compression})
    assert table.get_table_info().get_schema().get_column_types() == [
        "bigint NOT NULL", "array<string NOT NULL>", "map<string NOT NULL,array<int>>",
        "row<age: int, city: string, seen: timestamp_ltz(3), score: decimal(5,2)>", "array<array<double>>"]
    writer = table.new_append().create_writer()
    rows = [_event(i) for i in range(60)]
    handles = [writer.append(r) for r in rows[:20]]  # dicts
    handles += [writer.append([r[k] for k in EVENTS.names]) for r in rows[20:30]]  # lists in column order
    writer.write_arrow_batch(pa.RecordBatch.from_pylist(rows[30:45], schema=EVENTS))
    writer.write_pandas(pd.DataFrame(rows[45:]))  # maps as dicts, rows as dicts in object columns
    await writer.flush()
    for h in handles:
        await h.wait()

    records = await _records(table, [0, 1], len(rows))
    assert sorted((r.row for r in records), key=lambda r: r["id"]) == [_read_back(r) for r in rows]
    assert {r.change_type for r in records} == {ChangeType.AppendOnly}

    scanner = await table.new_scan().create_record_batch_log_scanner()
    scanner.subscribe_buckets({0: EARLIEST_OFFSET, 1: EARLIEST_OFFSET})
    arrow = await scanner.to_arrow()
    assert arrow.schema.field("attrs").type == pa.map_(pa.string(), pa.list_(pa.int32()))
    assert arrow.num_rows == len(rows)
    assert sorted(arrow.to_pylist(), key=lambda r: r["id"]) == [_read_back(r) for r in rows]

    projected = await _records(table, [0, 1], len(rows), projection=["profile", "id"])
    assert sorted((r.row for r in projected), key=lambda r: r["id"]) == [
        {"profile": _read_back(r)["profile"], "id": r["id"]} for r in rows]


async def test_projection_of_nested_columns_is_served_by_the_tablet_server(conn, admin, database):
    table = await _table(conn, admin, database, "wide", EVENTS, bucket_count=1)
    writer = table.new_append().create_writer()
    writer.write_arrow_batch(pa.RecordBatch.from_pylist([_event(i) for i in range(500)], schema=EVENTS))
    await writer.flush()
    scanner = await table.new_scan().project_by_name(["grid", "attrs"]).create_record_batch_log_scanner()
    scanner.subscribe(0, EARLIEST_OFFSET)
    got = await scanner.to_arrow()
    assert got.schema.names == ["grid", "attrs"]
    assert got.column("grid").to_pylist() == [_event(i)["grid"] for i in range(500)]


async def test_bad_nested_rows_are_refused_at_append_naming_the_path_and_are_not_written(conn, admin, database):
    table = await _table(conn, admin, database, "strict", EVENTS, bucket_count=1)
    writer = table.new_append().create_writer()
    good = writer.append(_event(1))
    bad_rows = [
        ({**_event(2), "tags": ["ok", None]}, r"column 'tags' .*: at tags\[1\]: null value where NOT NULL is declared"),
        ({**_event(3), "attrs": {None: [1]}}, r"column 'attrs' .*: at attrs\{key #0\}: null map key"),
        ({**_event(4), "attrs": {"k": [1, "two"]}}, r"at attrs\['k'\]\[1\]: expected int, got str 'two'"),
        ({**_event(5), "profile": {"age": "old"}}, r"at profile.age: expected int, got str 'old'"),
        ({**_event(6), "grid": [[1.0], "row"]}, r"at grid\[1\]: expected a list or tuple, got str 'row'"),
    ]
    for row, message in bad_rows:  # checked at the call, as the official client converts a row in append()
        with pytest.raises(FlussError, match=message) as info:
            writer.append(row)
        assert info.value.error_code == ErrorCode.CLIENT_ERROR
    with pytest.raises(FlussError, match=r"column 'tags' .* row 0, at tags\[0\]: null value where NOT NULL"):
        writer.write_arrow_batch(pa.RecordBatch.from_pylist([{**_event(7), "tags": [None]}], schema=pa.schema(
            [f.with_type(pa.list_(pa.string())) if f.name == "tags" else f for f in EVENTS])))
    await writer.flush()  # nothing failed after the calls: flush() has nothing to report
    await good.wait()
    assert [r.row["id"] for r in await _records(table, [0], 1)] == [1]
    end = (await conn.get_admin().list_offsets(table.get_table_path(), [0], __import__("fluss").OffsetSpec.latest()))
    assert end == {0: 1}  # only the good row reached the log


async def test_the_servers_refuse_a_null_inside_a_not_null_nested_value_from_a_raw_writer(conn, admin, database):
    """A writer that skips the client's checks: ProduceLog and PutKv batches whose Arrow body is valid but holds a
    null where a nested NOT NULL is declared are refused by the leader, naming the path; nothing is written."""
    from fluss import TableBucket
    from fluss.record.log_batch import build_batch

    loose = pa.schema([f.with_type(pa.list_(pa.string())) if f.name == "tags" else f for f in EVENTS])
    rows = pa.RecordBatch.from_pylist([{**_event(1), "tags": ["a", None]}], schema=loose)
    cases = [("raw_log", None, "ProduceLog", None), ("raw_pk", ["id"], "PutKv", [3])]
    for name, keys, rpc, types in cases:
        table = await _table(conn, admin, database, name, EVENTS, primary_keys=keys, bucket_count=1)
        info = table.get_table_info()
        meta = await conn.run(conn.cluster.table(info.table_path, refresh=True))
        leader = conn.cluster.leader_address(meta, TableBucket(info.table_id, 0))
        data = build_batch(rows, schema_id=info.schema_id, change_types=types)
        if rpc == "ProduceLog":
            request = pb.ProduceLogRequest(acks=-1, table_id=info.table_id, timeout_ms=10_000,
                                           buckets=[pb.ProduceBucketPb(partition_id=-1, bucket_id=0, records=data)])
        else:
            request = pb.PutKvRequest(acks=-1, table_id=info.table_id, timeout_ms=10_000,
                                      buckets=[pb.PutKvBucketPb(partition_id=-1, bucket_id=0, records=data)])
        deadline = time.monotonic() + 20
        while True:  # the leader hosts the bucket once the coordinator's notification has reached it
            error = (await conn.run(conn.cluster.tablet_call(leader, rpc, request))).buckets[0].error
            if error.code not in (ErrorCode.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION, ErrorCode.LEADER_NOT_AVAILABLE_EXCEPTION) \
                    or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.1)
        assert error.code == ErrorCode.INVALID_TABLE_EXCEPTION, error
        assert f"{rpc} to table {info.table_path}" in error.message
        assert "at tags[1]: null value where NOT NULL is declared" in error.message
        end = await conn.get_admin().list_offsets(info.table_path, [0], __import__("fluss").OffsetSpec.latest())
        assert end == {0: 0}


async def test_nested_key_columns_are_refused_by_the_servers(conn, admin, database):
    tags = pa.schema([("id", pa.int32()), ("tags", pa.list_(pa.string())), ("region", pa.struct([("a", pa.int32())]))])
    with pytest.raises(FlussError, match="bucket key column 'tags' has type ARRAY<STRING>: ARRAY, MAP and ROW "
                                         "columns cannot be bucket key columns") as info:
        await admin.create_table(TablePath(database, "bk"), TableDescriptor(Schema(tags), bucket_keys=["tags"]))
    assert info.value.error_code == ErrorCode.INVALID_TABLE_EXCEPTION
    with pytest.raises(FlussError, match="partition key column 'region' has type ROW<a INT>"):
        await admin.create_table(TablePath(database, "pk"), TableDescriptor(Schema(tags), partition_keys=["region"]))
    # a client that skips the schema checks gets the same answer from the coordinator
    raw = pb.CreateTableRequest(table_path=TablePath(database, "raw").to_pb(), descriptor=pb.TableDescriptorPb(
        schema=pb.SchemaPb(columns=[pb.ColumnPb(name="tags", data_type="ARRAY<INT>"),
                                    pb.ColumnPb(name="v", data_type="INT")], primary_keys=["tags"])))
    with pytest.raises(FlussError, match="primary key column 'tags' has type ARRAY<INT>"):
        await conn.run(conn.cluster.admin_call("CreateTable", raw))
    assert await admin.list_tables(database) == []


# ============================================================================================ primary keys

PROFILES = pa.schema([
    pa.field("id", pa.int32(), nullable=False),
    pa.field("region", pa.string(), nullable=False),
    ("tags", pa.list_(pa.string())),
    ("prefs", pa.map_(pa.string(), pa.struct([("on", pa.bool_()), ("level", pa.int8())]))),
    ("address", pa.struct([("street", pa.string()), ("zip", pa.list_(pa.int16()))])),
])


def _profile(i: int, version: int = 0) -> dict:
    return {"id": i, "region": "eu" if i % 2 else "us", "tags": [f"v{version}", str(i)],
            "prefs": {"mail": {"on": bool(i % 2), "level": version % 100}},
            "address": {"street": f"{i} Main St", "zip": [i % 1000, version]}}


def _profile_back(row: dict) -> dict:
    return {**row, "prefs": None if row["prefs"] is None else list(row["prefs"].items())}


async def test_nested_pk_table_upserts_lookups_partial_updates_deletes_and_changelog(conn, admin, database):
    table = await _table(conn, admin, database, "profiles", PROFILES, primary_keys=["id", "region"],
                         bucket_count=2, bucket_keys=["id"])
    writer = table.new_upsert().create_writer()
    for i in range(40):
        writer.upsert(_profile(i))
    await writer.flush()
    lookuper = table.new_lookup().create_lookuper()
    rows = await asyncio.gather(*(lookuper.lookup({"id": i, "region": "eu" if i % 2 else "us"}) for i in range(40)))
    assert rows == [_profile_back(_profile(i)) for i in range(40)]

    partial = table.new_upsert().partial_update_by_name(["id", "region", "address"]).create_writer()
    partial.upsert({"id": 3, "region": "eu", "address": {"street": None, "zip": []}})
    await partial.flush()
    writer.upsert(_profile(4, version=2))
    writer.delete({"id": 5, "region": "eu"})
    await writer.flush()
    assert await lookuper.lookup({"id": 3, "region": "eu"}) == {
        **_profile_back(_profile(3)), "address": {"street": None, "zip": []}}
    assert await lookuper.lookup({"id": 4, "region": "us"}) == _profile_back(_profile(4, version=2))
    assert await lookuper.lookup({"id": 5, "region": "eu"}) is None

    prefix = table.new_lookup().lookup_by(["id"]).create_lookuper()
    assert await prefix.lookup({"id": 6}) == [_profile_back(_profile(6))]

    changes = await _records(table, [0, 1], 40 + 2 + 2 + 1)
    by_key = {}
    for r in changes:
        by_key.setdefault(r.row["id"], []).append((r.change_type, r.row))
    assert by_key[4] == [(ChangeType.Insert, _profile_back(_profile(4))),
                         (ChangeType.UpdateBefore, _profile_back(_profile(4))),
                         (ChangeType.UpdateAfter, _profile_back(_profile(4, version=2)))]
    assert by_key[5][-1] == (ChangeType.Delete, _profile_back(_profile(5)))
    assert by_key[3][-1][1]["address"] == {"street": None, "zip": []}

    snapshot = await table.new_scan().limit(100).create_bucket_batch_scanner(
        __import__("fluss").TableBucket(table.get_table_info().table_id, 0)).to_arrow()
    assert snapshot.schema.field("prefs").type == PROFILES.field("prefs").type
    assert all(r["tags"] is not None for r in snapshot.to_pylist())


async def test_merge_engines_treat_a_nested_value_as_one_value(conn, admin, database):
    schema = pa.schema([pa.field("k", pa.int32(), nullable=False), ("ver", pa.int64()),
                        ("items", pa.list_(pa.int32())), ("meta", pa.map_(pa.string(), pa.string()))])
    first = await _table(conn, admin, database, "first", schema, primary_keys=["k"],
                         properties={"table.merge-engine": "first_row"})
    versioned = await _table(conn, admin, database, "versioned", schema, primary_keys=["k"],
                             properties={"table.merge-engine": "versioned",
                                         "table.merge-engine.versioned.ver-column": "ver"})
    agg = await _table(conn, admin, database, "agg", schema, primary_keys=["k"],
                       properties={"table.merge-engine": "aggregation", "fields.items.agg": "last_value",
                                   "fields.meta.agg": "first_value_ignore_nulls", "fields.ver.agg": "sum"})
    for table in (first, versioned, agg):
        w = table.new_upsert().create_writer()
        w.upsert({"k": 1, "ver": 5, "items": [1], "meta": {"a": "1"}})
        w.upsert({"k": 1, "ver": 3, "items": [2, 2], "meta": None})
        w.upsert({"k": 1, "ver": 9, "items": None, "meta": {"c": "3"}})
        await w.flush()
    results = [await t.new_lookup().create_lookuper().lookup({"k": 1}) for t in (first, versioned, agg)]
    assert results[0] == {"k": 1, "ver": 5, "items": [1], "meta": [("a", "1")]}
    assert results[1] == {"k": 1, "ver": 9, "items": None, "meta": [("c", "3")]}
    assert results[2] == {"k": 1, "ver": 17, "items": None, "meta": [("a", "1")]}
    with pytest.raises(FlussError, match="aggregate function 'sum' of column 'items' needs a numeric type.*ARRAY<INT>"):
        await _table(conn, admin, database, "bad_agg", schema, primary_keys=["k"],
                     properties={"table.merge-engine": "aggregation", "fields.items.agg": "sum"})


async def test_partitioned_tables_with_nested_columns(conn, admin, database):
    log_schema = pa.schema([("day", pa.string()), ("payload", pa.struct([("v", pa.list_(pa.int64()))]))])
    log_table = await _table(conn, admin, database, "plog", log_schema, partition_keys=["day"], bucket_count=1)
    w = log_table.new_append().create_writer()
    for d in ("d1", "d2"):
        for i in range(3):
            w.append({"day": d, "payload": {"v": [i] * i}})
    await w.flush()
    parts = {p.partition_name: p.partition_id for p in await admin.list_partition_infos(log_table.get_table_path())}
    got = await _records(log_table, [0], 3, partition_id=parts["d2"])
    assert [r.row for r in got] == [{"day": "d2", "payload": {"v": [i] * i}} for i in range(3)]

    pk_schema = pa.schema([pa.field("day", pa.string(), nullable=False), pa.field("id", pa.int32(), nullable=False),
                           ("m", pa.map_(pa.int32(), pa.list_(pa.string())))])
    pk_table = await _table(conn, admin, database, "ppk", pk_schema, primary_keys=["day", "id"],
                            partition_keys=["day"], bucket_count=2)
    w = pk_table.new_upsert().create_writer()
    w.upsert({"day": "d1", "id": 1, "m": {1: ["x"], 2: None}})
    w.upsert({"day": "d2", "id": 1, "m": [(3, [])]})
    await w.flush()
    lookuper = pk_table.new_lookup().create_lookuper()
    assert await lookuper.lookup({"day": "d1", "id": 1}) == {"day": "d1", "id": 1, "m": [(1, ["x"]), (2, None)]}
    assert await lookuper.lookup({"day": "d2", "id": 1}) == {"day": "d2", "id": 1, "m": [(3, [])]}


# ============================================================================================ properties


@st.composite
def _nested_schemas(draw):
    types = draw(st.lists(nested_types(ALL_LEAVES, max_depth=3), min_size=1, max_size=3))
    return [(f"c{i}", t) for i, t in enumerate(types)]


def _schema(columns, pk: bool) -> Schema:
    rs = RowSchema.from_json({"columns": [{"name": "id", "type": "INT NOT NULL"}] +
                             [{"name": n, "type": str(t)} for n, t in columns],
                             "primary_keys": ["id"] if pk else []})
    return Schema(rs.to_arrow(), primary_keys=rs.primary_keys)


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
async def test_random_nested_schemas_round_trip_append_scan_and_upsert_lookup(conn, admin, database, data):
    columns = data.draw(_nested_schemas())
    rows = data.draw(st.lists(st.tuples(*[values_of(t) for _, t in columns]), min_size=1, max_size=15))
    want = [{"id": i, **{n: expected(t, v) for (n, t), v in zip(columns, r, strict=True)}} for i, r in enumerate(rows)]
    suffix = uuid.uuid4().hex[:6]

    log_path = TablePath(database, f"log_{suffix}")
    await admin.create_table(log_path, TableDescriptor(_schema(columns, pk=False), bucket_count=1))
    log_table = await conn.get_table(log_path)
    writer = log_table.new_append().create_writer()
    handles = [writer.append([i, *r]) for i, r in enumerate(rows)]
    await writer.flush()
    for h in handles:
        await h.wait()
    assert [r.row for r in await _records(log_table, [0], len(rows))] == want

    pk_path = TablePath(database, f"pk_{suffix}")
    await admin.create_table(pk_path, TableDescriptor(_schema(columns, pk=True), bucket_count=2))
    pk_table = await conn.get_table(pk_path)
    upserts = pk_table.new_upsert().create_writer()
    for i, r in enumerate(rows):
        upserts.upsert([i, *r])
    await upserts.flush()
    lookuper = pk_table.new_lookup().create_lookuper()
    assert await asyncio.gather(*(lookuper.lookup({"id": i}) for i in range(len(rows)))) == want
    await admin.drop_table(log_path)
    await admin.drop_table(pk_path)
