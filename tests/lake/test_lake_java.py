"""The tiered Paimon tables are readable by Java Paimon alone (``java/PaimonDump.java``, Paimon's public API,
no project code): schema and rows of a log table with every scalar type, a primary-key table with updates and
deletes over two rounds, and a partitioned primary-key table.
"""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest
from lake_helpers import ACCOUNTS, append, apply_ops, create, tier
from paimon_java import java_rows, paimon_dump

from fluss import TablePath
from fluss.lake.paimon import ROW_KIND_COLUMN

pytestmark = pytest.mark.asyncio(loop_scope="session")

TYPES = pa.schema([
    pa.field("id", pa.int64(), nullable=False), ("flag", pa.bool_()), ("tiny", pa.int8()), ("small", pa.int16()),
    ("qty", pa.int32()), ("ratio", pa.float32()), ("score", pa.float64()), ("name", pa.string()),
    ("raw", pa.binary()), ("price", pa.decimal128(10, 2)), ("day", pa.date32()), ("clock", pa.time32("ms")),
    ("at", pa.timestamp("us")), ("at_ltz", pa.timestamp("ms", tz="UTC")),
])
#: the Paimon types Java reports for TYPES
TYPES_IN_PAIMON = ["BIGINT NOT NULL", "BOOLEAN", "TINYINT", "SMALLINT", "INT", "FLOAT", "DOUBLE", "STRING", "BYTES",
                   "DECIMAL(10, 2)", "DATE", "TIME(3)", "TIMESTAMP(6)", "TIMESTAMP(3) WITH LOCAL TIME ZONE"]
#: the system columns at the end of every lake table, as Java Paimon reports them
SYSTEM_IN_PAIMON = [("__bucket", "INT"), ("__offset", "BIGINT"), ("__timestamp", "TIMESTAMP(3) WITH LOCAL TIME ZONE")]
ORDERS = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("region", pa.string(), nullable=False),
                    ("item", pa.string()), ("amount", pa.int64())])


def typed_rows(start: int, n: int) -> pa.RecordBatch:
    rows = range(start, start + n)
    return pa.RecordBatch.from_pydict({
        "id": list(rows), "flag": [i % 2 == 0 for i in rows], "tiny": [i % 100 - 50 for i in rows],
        "small": [i * 7 for i in rows], "qty": [None if i % 10 == 3 else i for i in rows],
        "ratio": [i / 8 for i in rows], "score": [i * 1.1 for i in rows], "name": [f"n\"{i}\\é" for i in rows],
        "raw": [bytes([i % 256, 255 - i % 256]) for i in rows],
        "price": [decimal.Decimal(i * 101) / 100 for i in rows], "day": [dt.date(2026, 2, 1 + i % 28) for i in rows],
        "clock": [dt.time(i % 24, i % 60, i % 60, (i % 1000) * 1000) for i in rows],
        "at": [dt.datetime(2026, 1, 1, 12) + dt.timedelta(microseconds=i * 1_000_001) for i in rows],
        "at_ltz": [dt.datetime(2026, 3, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=i * 1234) for i in rows],
    }, schema=TYPES)


def fields(schema: dict) -> list[tuple[str, str]]:
    return [(f["name"], f["type"]) for f in schema["fields"]]


def by_id(rows: list[dict]) -> dict[int, dict]:
    return {r["row"]["id"]: r["row"] for r in rows}


async def test_tiered_tables_are_readable_by_java_paimon_alone(lake_conn, lake_db, warehouse):
    # a log table with every scalar type
    log_path = TablePath(lake_db, "java_types")
    log_info = await create(lake_conn, log_path, TYPES, buckets=2, **{"bucket.key": "id"})
    written = pa.Table.from_batches([typed_rows(0, 60), typed_rows(60, 40)])
    await append(lake_conn, log_path, *written.to_batches())
    await tier(lake_conn, log_info)

    # a primary-key table with updates and deletes, over two rounds (deletes of keys tiered in the first)
    pk_path = TablePath(lake_db, "java_accounts")
    pk_info = await create(lake_conn, pk_path, ACCOUNTS, pk=["id"], buckets=2)
    state: dict[int, dict] = {}
    await apply_ops(lake_conn, pk_path, [("u", {"id": i, "owner": f"o{i}", "balance": i}) for i in range(40)]
                    + [("u", {"id": 3, "owner": "o3", "balance": 300}), ("d", 4), ("u", {"id": 99, "owner": "x",
                                                                                     "balance": 0}), ("d", 99)], state)
    await tier(lake_conn, pk_info)
    await apply_ops(lake_conn, pk_path, [("d", 5), ("d", 6), ("u", {"id": 7, "owner": "seven", "balance": -7}),
                                         ("u", {"id": 50, "owner": "new", "balance": 50}), ("d", 8),
                                         ("u", {"id": 8, "owner": "again", "balance": 88})], state)
    await tier(lake_conn, pk_info)

    # a partitioned primary-key table
    part_path = TablePath(lake_db, "java_orders")
    part_info = await create(lake_conn, part_path, ORDERS, pk=["id", "region"], buckets=2,
                             partition_keys=["region"])
    orders: dict[int, dict] = {}
    await apply_ops(lake_conn, part_path, [("u", {"id": i, "region": ("EU", "US", "APAC")[i % 3], "item": f"i{i}",
                                                  "amount": i}) for i in range(30)], orders)
    await tier(lake_conn, part_info)
    await apply_ops(lake_conn, part_path, [("d", {"id": 1, "region": "US"}),
                                           ("u", {"id": 2, "region": "APAC", "item": "changed", "amount": -2}),
                                           ("u", {"id": 31, "region": "LATAM", "item": "new", "amount": 31})], orders)
    await tier(lake_conn, part_info)

    dumped = paimon_dump(warehouse, lake_db, "java_types", "java_accounts", "java_orders")
    schema, rows = dumped["java_types"]
    assert fields(schema) == list(zip(TYPES.names, TYPES_IN_PAIMON, strict=True)) + SYSTEM_IN_PAIMON
    assert schema["primary_keys"] == [] and schema["partition_keys"] == []
    assert schema["options"]["bucket"] == "2" and schema["options"]["bucket-key"] == "id"
    assert {r["kind"] for r in rows} == {"+I"}
    assert sorted(({k: r["row"][k] for k in TYPES.names} for r in rows), key=lambda r: r["id"]) == java_rows(
        written.sort_by("id"))
    assert sorted(r["row"]["__offset"] for r in rows if r["row"]["__bucket"] == 0) == list(
        range(sum(r["row"]["__bucket"] == 0 for r in rows)))

    schema, rows = dumped["java_accounts"]
    assert fields(schema) == [("id", "BIGINT NOT NULL"), ("owner", "STRING"), ("balance", "BIGINT"),
                              *SYSTEM_IN_PAIMON, (ROW_KIND_COLUMN, "STRING")]
    assert schema["primary_keys"] == ["id"] and schema["options"]["rowkind.field"] == ROW_KIND_COLUMN
    got = by_id(rows)
    assert {i: {k: r[k] for k in ACCOUNTS.names} for i, r in got.items()} == state
    assert len(rows) == len(state)
    assert {r[ROW_KIND_COLUMN] for r in got.values()} <= {"+I", "+U"}

    schema, rows = dumped["java_orders"]
    assert schema["primary_keys"] == ["id", "region"] and schema["partition_keys"] == ["region"]
    got = by_id(rows)
    assert {i: {k: r[k] for k in ORDERS.names} for i, r in got.items()} == orders
    assert len(rows) == len(orders)
