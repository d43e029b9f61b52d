"""Shared helpers of the lake tests: schemas, writes through the client, tiering, pypaimon-only reads."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
from pypaimon import CatalogFactory

from fluss import FlussError, OffsetSpec, Schema, TableDescriptor, TablePath
from fluss.lake.paimon import lake_of_table
from fluss.lake.snapshot import get_latest_lake_snapshot
from fluss.lake.tiering import tier_table

LAKE = {"table.datalake.enabled": "true"}

EVENTS = pa.schema([
    pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("score", pa.float64()),
    ("qty", pa.int32()), ("price", pa.decimal128(10, 2)), ("day", pa.date32()), ("at", pa.timestamp("us")),
])
ACCOUNTS = pa.schema([pa.field("id", pa.int64(), nullable=False), ("owner", pa.string()), ("balance", pa.int64())])


def events(start: int, n: int) -> pa.RecordBatch:
    ids = list(range(start, start + n))
    return pa.RecordBatch.from_pydict({
        "id": ids, "name": [f"e{i}" for i in ids], "score": [i / 4 for i in ids], "qty": [i % 7 for i in ids],
        "price": [decimal.Decimal(i) / 100 for i in ids], "day": [dt.date(2026, 1, 1 + i % 28) for i in ids],
        "at": [dt.datetime(2026, 1, 1) + dt.timedelta(seconds=i) for i in ids],
    }, schema=EVENTS)


async def create(conn, path: TablePath, schema: pa.Schema, pk: list[str] | None = None, buckets: int = 3,
                 partition_keys: list[str] | None = None, **props: str):
    await conn.get_admin().create_table(path, TableDescriptor(
        Schema(schema, primary_keys=pk), partition_keys=partition_keys, bucket_count=buckets,
        properties={**LAKE, **props}))
    return await conn.get_admin().get_table_info(path)


async def append(conn, path: TablePath, *batches: pa.RecordBatch) -> None:
    writer = (await conn.get_table(path)).new_append().create_writer()
    for b in batches:
        writer.write_arrow_batch(b)
    await writer.flush()


async def apply_ops(conn, path: TablePath, ops: list[tuple], state: dict[int, dict]) -> None:
    """Upserts (``("u", row)``) and deletes (``("d", id)`` or ``("d", key columns)``) through the client,
    mirrored into ``state`` (keyed by ``id``)."""
    writer = (await conn.get_table(path)).new_upsert().create_writer()
    for op, arg in ops:
        if op == "u":
            writer.upsert(arg)
            state[arg["id"]] = arg
        else:
            key = arg if isinstance(arg, dict) else {"id": arg}
            writer.delete(key)
            state.pop(key["id"], None)
    await writer.flush()


async def tier(conn, info, report: bool = True):
    try:
        coordinator = await get_latest_lake_snapshot(conn, info.table_path)
    except FlussError:
        coordinator = None
    return await tier_table(conn, lake_of_table(info), info, coordinator, report=report)


def paimon_table(warehouse: str, path: TablePath):
    """The lake table through pypaimon alone (no project code)."""
    return CatalogFactory.create({"warehouse": warehouse}).get_table(f"{path.database_name}.{path.table_name}")


def paimon_rows(table) -> pa.Table:
    builder = table.new_read_builder()
    return builder.new_read().to_arrow(builder.new_scan().plan().splits())


def ids(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


def by_id(table: pa.Table) -> dict[int, dict]:
    return {r["id"]: r for r in table.to_pylist()}


async def ends(conn, info) -> dict[int, int]:
    return await conn.get_admin().list_offsets(info.table_path, list(range(info.num_buckets)), OffsetSpec.latest())
