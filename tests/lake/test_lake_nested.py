"""ARRAY, MAP and ROW columns through the lake: the tiering job writes them to Paimon (log tables, primary-key
tables with updates and deletes, a COMPACTED-log table), pypaimon and Java Paimon read them back, Union Read
returns lake + log with nested values intact; and a property test of random nested schemas through tiering +
union read."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lake_helpers import append, apply_ops, create, paimon_rows, paimon_table, tier
from paimon_java import java_rows, paimon_dump

from fluss import TablePath
from fluss.lake.paimon import ROW_KIND_COLUMN, SYSTEM_COLUMN_NAMES
from fluss.lake.union_read import union_read
from fluss.types import RowSchema
from tests.nested_strategies import PORTABLE_LEAVES, expected, nested_types, values_of

pytestmark = pytest.mark.asyncio(loop_scope="session")

PROFILES = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    ("tags", pa.list_(pa.field("item", pa.string(), nullable=False))),
    ("prefs", pa.map_(pa.string(), pa.list_(pa.int32()))),
    ("address", pa.struct([("city", pa.string()), ("geo", pa.struct([("lat", pa.float64()), ("lon", pa.float64())])),
                           ("since", pa.timestamp("us")), ("fee", pa.decimal128(8, 2))])),
])
#: what Java Paimon reports for PROFILES
PROFILES_IN_PAIMON = [
    "BIGINT NOT NULL", "ARRAY<STRING NOT NULL>", "MAP<STRING NOT NULL, ARRAY<INT>>",
    "ROW<`city` STRING, `geo` ROW<`lat` DOUBLE, `lon` DOUBLE>, `since` TIMESTAMP(6), `fee` DECIMAL(8, 2)>",
]


def profile(i: int, version: int = 0) -> dict:
    return {"id": i, "tags": [f"t{i}"] * (i % 3) + [f"v{version}"],
            "prefs": {"a": [i, version], "b": None} if i % 4 else {},
            "address": None if i % 7 == 3 else {"city": f"c{i}", "geo": {"lat": i / 2, "lon": -i / 4},
                                                 "since": dt.datetime(2026, 1, 1) + dt.timedelta(seconds=i),
                                                 "fee": Decimal(i) / 4}}


def as_read(row: dict) -> dict:
    out = dict(row)
    out["prefs"] = list(row["prefs"].items())
    if out["address"] is not None:
        out["address"] = {**out["address"], "fee": out["address"]["fee"].quantize(Decimal("0.01"))}
    return out


async def test_nested_tables_tier_and_read_back_through_pypaimon_java_paimon_and_union_read(lake_conn, lake_db,
                                                                                             warehouse):
    log_path = TablePath(lake_db, "nested_log")
    log_info = await create(lake_conn, log_path, PROFILES, buckets=2, **{"bucket.key": "id"})
    written = [profile(i) for i in range(40)]
    await append(lake_conn, log_path, pa.RecordBatch.from_pylist(written[:30], schema=PROFILES))
    await tier(lake_conn, log_info)
    await append(lake_conn, log_path, pa.RecordBatch.from_pylist(written[30:], schema=PROFILES))  # the log tail
    union = await union_read(lake_conn, log_path)
    assert sorted(union.to_pylist(), key=lambda r: r["id"]) == [as_read(r) for r in written]
    assert union.schema.field("prefs").type == PROFILES.field("prefs").type

    pk_path = TablePath(lake_db, "nested_pk")
    pk_info = await create(lake_conn, pk_path, PROFILES, pk=["id"], buckets=2,
                           **{"table.log.format": "COMPACTED"})
    state: dict[int, dict] = {}
    await apply_ops(lake_conn, pk_path, [("u", profile(i)) for i in range(30)], state)
    await tier(lake_conn, pk_info)
    await apply_ops(lake_conn, pk_path, [("u", profile(3, version=2)), ("d", 4), ("u", profile(31, version=1))],
                    state)
    await tier(lake_conn, pk_info)
    await apply_ops(lake_conn, pk_path, [("u", profile(5, version=9)), ("d", 6)], state)  # only in the log
    union = await union_read(lake_conn, pk_path)
    assert {r["id"]: r for r in union.to_pylist()} == {k: as_read(v) for k, v in state.items()}

    lake = paimon_rows(paimon_table(warehouse, pk_path)).drop_columns([ROW_KIND_COLUMN, *sorted(SYSTEM_COLUMN_NAMES)])
    lake_state = {k: v for k, v in state.items() if k not in (5, 6)} | {5: profile(5), 6: profile(6)}
    assert {r["id"]: r for r in lake.to_pylist()} == {k: as_read(v) for k, v in lake_state.items()}

    dumped = paimon_dump(warehouse, lake_db, "nested_log", "nested_pk")
    schema, rows = dumped["nested_log"]
    assert [(f["name"], f["type"]) for f in schema["fields"]][: len(PROFILES)] == list(zip(PROFILES.names, PROFILES_IN_PAIMON,
                                                                          strict=True))
    tiered = pa.Table.from_pylist(written[:30], schema=PROFILES)
    assert sorted(({k: r["row"][k] for k in PROFILES.names} for r in rows), key=lambda r: r["id"]) == \
        java_rows(tiered)  # the table's columns; the lake's system columns follow them
    schema, rows = dumped["nested_pk"]
    got = {r["row"]["id"]: {k: r["row"][k] for k in PROFILES.names} for r in rows}
    want = pa.Table.from_pylist(sorted(lake_state.values(), key=lambda r: r["id"]), schema=PROFILES)
    assert got == {r["id"]: r for r in java_rows(want)}


@st.composite
def _nested_columns(draw):
    types = draw(st.lists(nested_types(PORTABLE_LEAVES, max_depth=3), min_size=1, max_size=3))
    return [(f"c{i}", t) for i, t in enumerate(types)]


@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
async def test_random_nested_schemas_round_trip_through_tiering_and_union_read(lake_conn, lake_db, data):
    columns = data.draw(_nested_columns())
    pk = data.draw(st.booleans())
    rows = data.draw(st.lists(st.tuples(*[values_of(t) for _, t in columns]), min_size=1, max_size=12))
    schema = RowSchema.from_json({"columns": [{"name": "id", "type": "BIGINT NOT NULL"}] +
                                  [{"name": n, "type": str(t)} for n, t in columns],
                                  "primary_keys": ["id"] if pk else []}).to_arrow()
    path = TablePath(lake_db, f"rnd_{uuid.uuid4().hex[:8]}")
    info = await create(lake_conn, path, schema, pk=["id"] if pk else None, buckets=2,
                        **({} if pk else {"bucket.key": "id"}))
    table = await lake_conn.get_table(path)
    writer = table.new_upsert().create_writer() if pk else table.new_append().create_writer()
    half = len(rows) // 2
    for i, r in enumerate(rows[:half]):
        (writer.upsert if pk else writer.append)([i, *r])
    await writer.flush()
    await tier(lake_conn, info)
    for i, r in enumerate(rows[half:], start=half):
        (writer.upsert if pk else writer.append)([i, *r])
    await writer.flush()
    want = [{"id": i, **{n: expected(t, v) for (n, t), v in zip(columns, r, strict=True)}} for i, r in enumerate(rows)]
    got = sorted((await union_read(lake_conn, path)).to_pylist(), key=lambda r: r["id"])
    assert got == want
    await lake_conn.get_admin().drop_table(path)
