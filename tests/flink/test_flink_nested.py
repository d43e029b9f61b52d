"""ARRAY, MAP and ROW columns through the Flink connector (PyFlink, the session's one JVM): catalog type mapping
both ways, Flink SQL writes read by the Python client, Python writes read by Flink (projection, nested field
access), upserts and a lookup join returning nested values, ``t$binlog`` (before/after images), a table in a row
log format, and a property test of random nested schemas through Flink SQL ``INSERT INTO ... SELECT``."""

from __future__ import annotations

import datetime as dt
import uuid

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fluss
from fluss.types import RowSchema
from tests.nested_strategies import PORTABLE_LEAVES, expected, nested_types, values_of

CATALOG = "fluss_catalog"  # created by the session fixtures in conftest.py


def _rows(table_result) -> list[tuple]:
    with table_result.collect() as results:
        return [tuple(r) for r in results]


def _plain(value):
    """A PyFlink value as plain Python: Row -> tuple, list -> list, dict -> sorted (key, value) items."""
    from pyflink.common import Row

    if isinstance(value, Row):
        return tuple(_plain(v) for v in value)
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return sorted((k, _plain(v)) for k, v in value.items())
    return value


async def _scan(conn, path: fluss.TablePath, n: int) -> list[dict]:
    table = await conn.get_table(path)
    scanner = await table.new_scan().create_log_scanner()
    info = table.get_table_info()
    scanner.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in range(info.num_buckets)})
    out = []
    for _ in range(100):
        out.extend(r.row for r in await scanner.poll(300))
        if len(out) >= n:
            break
    return out


async def test_catalog_maps_nested_types_both_ways(batch_env, admin, flink_db):
    batch_env.execute_sql(f"""
        CREATE TABLE {CATALOG}.{flink_db}.profiles (
            id INT NOT NULL,
            tags ARRAY<STRING NOT NULL>,
            attrs MAP<STRING, ARRAY<INT>>,
            address ROW<city STRING, geo ROW<lat DOUBLE, lon DOUBLE> NOT NULL>,
            PRIMARY KEY (id) NOT ENFORCED)
    """).wait()
    info = await admin.get_table_info(fluss.TablePath(flink_db, "profiles"))
    assert info.get_schema().get_column_types() == [
        "int NOT NULL", "array<string NOT NULL>", "map<string NOT NULL,array<int>>",
        "row<city: string, geo: row<lat: double, lon: double> NOT NULL>"]
    described = {r[0]: r[1] for r in _rows(batch_env.execute_sql(f"DESCRIBE {CATALOG}.{flink_db}.profiles"))}
    assert described["tags"] == "ARRAY<STRING NOT NULL>"
    assert described["attrs"] == "MAP<STRING NOT NULL, ARRAY<INT>>"
    assert described["address"] == "ROW<`city` STRING, `geo` ROW<`lat` DOUBLE, `lon` DOUBLE> NOT NULL>"
    with pytest.raises(Exception, match="primary key column 'tags' has type ARRAY<STRING>"):
        batch_env.execute_sql(f"""CREATE TABLE {CATALOG}.{flink_db}.bad (tags ARRAY<STRING> NOT NULL, v INT,
            PRIMARY KEY (tags) NOT ENFORCED)""").wait()


async def test_flink_writes_nested_values_the_python_client_reads(batch_env, conn, flink_db):
    t = f"{CATALOG}.{flink_db}.events"
    batch_env.execute_sql(f"""CREATE TABLE {t} (id BIGINT, tags ARRAY<STRING>, attrs MAP<STRING, INT>,
        p ROW<a INT, b ARRAY<DOUBLE>, ts TIMESTAMP(3)>) WITH ('bucket.num' = '2', 'bucket.key' = 'id')""").wait()
    batch_env.execute_sql(f"""INSERT INTO {t} VALUES
        (1, ARRAY['x', 'y'], MAP['k', 1, 'z', CAST(NULL AS INT)],
         ROW(7, ARRAY[1.5, -2.0], TIMESTAMP '2024-01-01 12:00:00.123')),
        (2, CAST(NULL AS ARRAY<STRING>), CAST(NULL AS MAP<STRING, INT>),
         CAST(NULL AS ROW<a INT, b ARRAY<DOUBLE>, ts TIMESTAMP(3)>)),
        (3, ARRAY[CAST(NULL AS STRING)], MAP['only', 3], ROW(CAST(NULL AS INT), CAST(NULL AS ARRAY<DOUBLE>),
         CAST(NULL AS TIMESTAMP(3))))""").wait()
    got = sorted(await _scan(conn, fluss.TablePath(flink_db, "events"), 3), key=lambda r: r["id"])
    assert got[0]["tags"] == ["x", "y"] and sorted(got[0]["attrs"]) == [("k", 1), ("z", None)]
    assert got[0]["p"] == {"a": 7, "b": [1.5, -2.0], "ts": dt.datetime(2024, 1, 1, 12, 0, 0, 123000)}
    assert got[1] == {"id": 2, "tags": None, "attrs": None, "p": None}
    assert got[2] == {"id": 3, "tags": [None], "attrs": [("only", 3)], "p": {"a": None, "b": None, "ts": None}}


async def test_flink_reads_python_written_nested_values_with_projection_and_field_access(batch_env, conn, admin,
                                                                                         flink_db):
    path = fluss.TablePath(flink_db, "metrics")
    schema = pa.schema([("host", pa.string()), ("samples", pa.list_(pa.float64())),
                        ("labels", pa.map_(pa.string(), pa.string())),
                        ("meta", pa.struct([("zone", pa.string()), ("rack", pa.int32())]))])
    await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(schema), bucket_count=2))
    writer = (await conn.get_table(path)).new_append().create_writer()
    rows = [{"host": f"h{i}", "samples": [i / 2, i / 4], "labels": {"env": "prod" if i % 2 else "dev"},
             "meta": {"zone": f"z{i % 3}", "rack": i}} for i in range(30)]
    writer.write_arrow(pa.Table.from_pylist(rows, schema=schema))
    await writer.flush()
    t = f"{CATALOG}.{flink_db}.metrics"
    got = _rows(batch_env.execute_sql(
        f"SELECT host, samples[2], labels['env'], meta.zone, meta FROM {t} WHERE meta.rack < 5"))
    assert sorted((r[0], r[1], r[2], r[3], _plain(r[4])) for r in got) == sorted(
        (r["host"], r["samples"][1], r["labels"]["env"], r["meta"]["zone"], (r["meta"]["zone"], r["meta"]["rack"]))
        for r in rows if r["meta"]["rack"] < 5)
    assert "project=[" in batch_env.explain_sql(f"SELECT samples FROM {t}")


async def test_upserts_and_a_lookup_join_return_nested_values(batch_env, conn, flink_db):
    c = f"{CATALOG}.{flink_db}"
    batch_env.execute_sql(f"""CREATE TABLE {c}.users (id INT NOT NULL, roles ARRAY<STRING>,
        prefs MAP<STRING, BOOLEAN>, home ROW<city STRING, zip INT>, PRIMARY KEY (id) NOT ENFORCED)
        WITH ('bucket.num' = '2')""").wait()
    batch_env.execute_sql(f"""INSERT INTO {c}.users VALUES
        (1, ARRAY['admin'], MAP['mail', TRUE], ROW('Oslo', 150)),
        (2, ARRAY['dev', 'ops'], MAP['mail', FALSE, 'sms', TRUE], ROW('Lima', 15001))""").wait()
    batch_env.execute_sql(f"""INSERT INTO {c}.users VALUES
        (2, ARRAY['dev'], CAST(NULL AS MAP<STRING, BOOLEAN>), ROW('Lima', 15002))""").wait()
    lookuper = (await conn.get_table(fluss.TablePath(flink_db, "users"))).new_lookup().create_lookuper()
    assert await lookuper.lookup({"id": 2}) == {"id": 2, "roles": ["dev"], "prefs": None,
                                                "home": {"city": "Lima", "zip": 15002}}
    # the PyFlink environment is shared by the session's tests: a view name of this test only, dropped after
    batch_env.execute_sql("CREATE TEMPORARY VIEW nested_probes AS SELECT * FROM (VALUES (1), (2), (3)) AS v(id)").wait()
    try:
        got = _rows(batch_env.execute_sql(f"""
            SELECT p.id, u.roles, u.prefs, u.home FROM (SELECT *, PROCTIME() AS pt FROM nested_probes) AS p
            LEFT JOIN {c}.users FOR SYSTEM_TIME AS OF p.pt AS u ON p.id = u.id"""))
    finally:
        batch_env.execute_sql("DROP TEMPORARY VIEW IF EXISTS nested_probes")
    assert sorted((r[0], _plain(r[1]), _plain(r[2]), _plain(r[3])) for r in got) == [
        (1, ["admin"], [("mail", True)], ("Oslo", 150)), (2, ["dev"], None, ("Lima", 15002)),
        (3, None, None, None)]


async def test_binlog_pairs_before_and_after_images(batch_env, conn, admin, flink_db):
    path = fluss.TablePath(flink_db, "accounts")
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), ("owner", pa.string()),
                        ("tags", pa.list_(pa.string()))])
    await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(schema, primary_keys=["id"]), bucket_count=1))
    writer = (await conn.get_table(path)).new_upsert().create_writer()
    writer.upsert({"id": 1, "owner": "a", "tags": ["x"]})
    writer.upsert({"id": 2, "owner": "b", "tags": []})
    await writer.flush()
    writer.upsert({"id": 1, "owner": "a2", "tags": ["x", "y"]})
    writer.delete({"id": 2})
    await writer.flush()
    got = _rows(batch_env.execute_sql(
        f"SELECT _change_type, _log_offset, `before`, `after` FROM {CATALOG}.{flink_db}.`accounts$binlog`"))
    assert [(r[0], r[1], _plain(r[2]), _plain(r[3])) for r in got] == [
        ("insert", 0, None, (1, "a", ["x"])),
        ("insert", 1, None, (2, "b", [])),
        ("update", 3, (1, "a", ["x"]), (1, "a2", ["x", "y"])),
        ("delete", 4, (2, "b", []), None),
    ]
    names = [r[0] for r in _rows(batch_env.execute_sql(f"DESCRIBE {CATALOG}.{flink_db}.`accounts$binlog`"))]
    assert names == ["_change_type", "_log_offset", "_commit_timestamp", "before", "after"]
    fields = _rows(batch_env.execute_sql(
        f"SELECT `after`.owner FROM {CATALOG}.{flink_db}.`accounts$binlog` WHERE _change_type = 'update'"))
    assert fields == [("a2",)]
    log_path = fluss.TablePath(flink_db, "events")
    await admin.create_table(log_path, fluss.TableDescriptor(fluss.Schema(pa.schema([("v", pa.int32())]))))
    with pytest.raises(Exception, match="has no primary key: \\$binlog is available for primary-key tables only"):
        batch_env.execute_sql(f"SELECT * FROM {CATALOG}.{flink_db}.`events$binlog`").wait()


async def test_a_row_log_format_table_through_flink(batch_env, conn, flink_db):
    t = f"{CATALOG}.{flink_db}.compact"
    batch_env.execute_sql(f"""CREATE TABLE {t} (id BIGINT, name STRING, tags ARRAY<STRING>)
        WITH ('table.log.format' = 'COMPACTED', 'bucket.num' = '2', 'bucket.key' = 'id')""").wait()
    batch_env.execute_sql(f"INSERT INTO {t} VALUES (1, 'a', ARRAY['x']), (2, 'b', ARRAY['y', 'z'])").wait()
    assert sorted(_rows(batch_env.execute_sql(f"SELECT tags[1], id FROM {t}"))) == [("x", 1), ("y", 2)]
    got = sorted(await _scan(conn, fluss.TablePath(flink_db, "compact"), 2), key=lambda r: r["id"])
    assert got == [{"id": 1, "name": "a", "tags": ["x"]}, {"id": 2, "name": "b", "tags": ["y", "z"]}]


@st.composite
def _nested_columns(draw):
    types = draw(st.lists(nested_types(PORTABLE_LEAVES, max_depth=3), min_size=1, max_size=3))
    return [(f"c{i}", t) for i, t in enumerate(types)]


@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
async def test_random_nested_schemas_round_trip_flink_sql_insert_and_select(batch_env, conn, admin, flink_db, data):
    columns = data.draw(_nested_columns())
    rows = data.draw(st.lists(st.tuples(*[values_of(t) for _, t in columns]), min_size=1, max_size=10))
    schema = RowSchema.from_json({"columns": [{"name": "id", "type": "INT NOT NULL"}] +
                                  [{"name": n, "type": str(t)} for n, t in columns]}).to_arrow()
    suffix = uuid.uuid4().hex[:6]
    source, target = fluss.TablePath(flink_db, f"src_{suffix}"), fluss.TablePath(flink_db, f"dst_{suffix}")
    for path in (source, target):
        await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(schema), bucket_count=1))
    writer = (await conn.get_table(source)).new_append().create_writer()
    for i, r in enumerate(rows):
        writer.append([i, *r])
    await writer.flush()
    batch_env.execute_sql(f"INSERT INTO {CATALOG}.{flink_db}.dst_{suffix} "
                          f"SELECT * FROM {CATALOG}.{flink_db}.src_{suffix}").wait()
    want = [{"id": i, **{n: expected(t, v) for (n, t), v in zip(columns, r, strict=True)}} for i, r in enumerate(rows)]
    # Flink read every nested value (its Arrow reader), carried it as Flink data and wrote it (its Arrow writer);
    # what it wrote is compared with the input (collecting nested rows into PyFlink costs a py4j call per value)
    assert sorted(await _scan(conn, target, len(rows)), key=lambda r: r["id"]) == want
    assert _rows(batch_env.execute_sql(f"SELECT COUNT(*) FROM {CATALOG}.{flink_db}.dst_{suffix}")) == [(len(rows),)]
