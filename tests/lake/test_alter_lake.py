"""ALTER TABLE on a live table of the lake cluster: the servers apply the change without a restart (retention
follows a new ``table.log.ttl``), the tiering job's scheduler picks up a table that became lake-enabled (its
Paimon table is created by the ALTER) and follows a new ``table.datalake.freshness``; a partition dropped by
auto-partitioning stays readable from the lake."""

from __future__ import annotations

import asyncio
import datetime as dt
import time

import pyarrow as pa
import pytest
from lake_helpers import EVENTS, append, create, events, ids, paimon_rows, paimon_table, tier

from fluss import ErrorCode, FlussError, OffsetSpec, TableChange, TablePath
from fluss.lake.paimon import SYSTEM_COLUMNS
from fluss.lake.snapshot import list_lake_tables
from fluss.lake.union_read import read_lake, union_read
from tiering_job.job import due_tasks

pytestmark = pytest.mark.asyncio(loop_scope="session")

NO_LAKE = {"table.datalake.enabled": "false"}


async def _earliest(admin, path: TablePath) -> int:
    return (await admin.list_offsets(path, [0], OffsetSpec.earliest()))[0]


async def test_a_shorter_ttl_applies_to_the_live_log(lake_conn, lake_db):
    path = TablePath(lake_db, "ttl_live")
    await create(lake_conn, path, EVENTS, buckets=1, **NO_LAKE)  # table.log.ttl: the 7d default
    for start in range(0, 600, 60):
        await append(lake_conn, path, events(start, 60))  # 8kb segments: several roll
    admin = lake_conn.get_admin()
    await asyncio.sleep(1.2)  # retention runs every 500 ms: with 7d nothing expires
    assert await _earliest(admin, path) == 0

    await admin.alter_table(path, [TableChange.set("table.log.ttl", "1s")])
    await append(lake_conn, path, events(600, 60))
    deadline = time.monotonic() + 20
    while await _earliest(admin, path) == 0:
        assert time.monotonic() < deadline, "retention never used the altered table.log.ttl"
        await asyncio.sleep(0.3)

    await admin.alter_table(path, [TableChange.reset("table.log.ttl")])  # back to 7d: nothing more expires
    kept = await _earliest(admin, path)
    await append(lake_conn, path, events(660, 60))
    await asyncio.sleep(1.5)
    assert await _earliest(admin, path) == kept


async def test_enabling_the_lake_creates_the_lake_table_and_the_tiering_job_picks_it_up(lake_conn, lake_db,
                                                                                        warehouse):
    path = TablePath(lake_db, "late_lake")
    info = await create(lake_conn, path, EVENTS, buckets=2, **{**NO_LAKE, "bucket.key": "id"})
    await append(lake_conn, path, events(0, 80))
    assert info.table_id not in [i.table_id for i, _ in await list_lake_tables(lake_conn)]
    assert info.table_id not in [t["table_id"] for t in await due_tasks(lake_conn, force=False)]

    admin = lake_conn.get_admin()
    await admin.alter_table(path, [TableChange.set("table.datalake.enabled", "true")])
    info = await admin.get_table_info(path)
    assert info.get_properties()["table.datalake.format"] == "paimon"
    assert info.get_properties()["table.datalake.paimon.warehouse"] == warehouse
    lake_columns = [f.name for f in paimon_table(warehouse, path).table_schema.fields]
    assert lake_columns == EVENTS.names + [f.name for f in SYSTEM_COLUMNS]  # the table's columns, then Fluss's
    assert info.table_id in [t["table_id"] for t in await due_tasks(lake_conn, force=False)]

    result = await tier(lake_conn, info)  # what the job's operator runs for the task
    assert result.rows == 80
    assert ids(paimon_rows(paimon_table(warehouse, path))) == list(range(80))
    await append(lake_conn, path, events(80, 20))
    assert ids(await union_read(lake_conn, path)) == list(range(100))

    # freshness: with 1h the table is not due again; with 1ms it is
    await admin.alter_table(path, [TableChange.set("table.datalake.freshness", "1h")])
    assert info.table_id not in [t["table_id"] for t in await due_tasks(lake_conn, force=False)]
    await admin.alter_table(path, [TableChange.set("table.datalake.freshness", "1ms")])
    assert info.table_id in [t["table_id"] for t in await due_tasks(lake_conn, force=False)]

    await admin.alter_table(path, [TableChange.reset("table.datalake.enabled")])
    assert info.table_id not in [i.table_id for i, _ in await list_lake_tables(lake_conn)]


async def test_expired_partition_of_a_lake_table_stays_readable_through_union_read(lake_conn, lake_db):
    schema = EVENTS.append(pa.field("d", pa.string()))
    path = TablePath(lake_db, "daily_lake")
    info = await create(lake_conn, path, schema, buckets=1, partition_keys=["d"], **{
        "table.auto-partition.enabled": "true", "table.auto-partition.time-zone": "UTC",
        "table.auto-partition.num-retention": "7"})
    admin = lake_conn.get_admin()
    today = dt.datetime.now(dt.UTC).strftime("%Y%m%d")
    await admin.create_partition(path, {"d": "20200101"})
    await append(lake_conn, path, events(0, 30).append_column("d", pa.array(["20200101"] * 30)),
                 events(30, 20).append_column("d", pa.array([today] * 20)))
    await tier(lake_conn, info)

    await admin.alter_table(path, [TableChange.set("table.auto-partition.num-retention", "3")])
    assert "20200101" not in [p.partition_name for p in await admin.list_partition_infos(path)]
    assert ids(await read_lake(lake_conn, path, partitions=["20200101"])) == list(range(30))
    assert ids(await union_read(lake_conn, path)) == list(range(50))


async def test_add_column_reaches_the_lake_table_and_union_read_fills_nulls(lake_conn, lake_db, warehouse):
    """ALTER TABLE ADD of a lake table: the Paimon table gets the column (before Fluss's system columns), rows
    tiered before it read back null, from the lake and across the lake/log boundary."""
    path = TablePath(lake_db, "grows")
    info = await create(lake_conn, path, EVENTS, buckets=2, **{"bucket.key": "id"})
    await append(lake_conn, path, events(0, 30))
    assert (await tier(lake_conn, info)).rows == 30  # lake files of schema id 1
    old_writer = (await lake_conn.get_table(path)).new_append().create_writer()

    admin = lake_conn.get_admin()
    await admin.alter_table(path, [TableChange.add_column("region", pa.string(), "sales region")])
    lake_columns = [f.name for f in paimon_table(warehouse, path).table_schema.fields]
    assert lake_columns == [*EVENTS.names, "region", *(f.name for f in SYSTEM_COLUMNS)]

    old_writer.write_arrow_batch(events(30, 10))  # schema id 1 batches in the log, not tiered yet
    await old_writer.flush()
    writer = (await lake_conn.get_table(path)).new_append().create_writer()
    new_row = {**events(40, 1).to_pylist()[0], "region": "EU"}
    writer.append(new_row)
    await writer.flush()

    both = (await union_read(lake_conn, path)).sort_by("id")
    assert both.column_names == [*EVENTS.names, "region"] and ids(both) == list(range(41))
    assert both.column("region").to_pylist() == [None] * 40 + ["EU"]

    info = await admin.get_table_info(path)
    assert (await tier(lake_conn, info)).rows == 11  # the tiering job writes the new column too
    lake = (await read_lake(lake_conn, path)).sort_by("id")
    assert ids(lake) == list(range(41)) and lake.column("region").to_pylist() == [None] * 40 + ["EU"]
    assert (await union_read(lake_conn, path)).sort_by("id").equals(lake)


async def test_bucket_num_of_future_partitions_and_the_lake_exclude_each_other(lake_conn, lake_db, warehouse):
    """A lake table has one bucket count for every partition: ALTER TABLE SET bucket.num is refused on a
    lake-enabled table, and enabling the lake is refused while partitions of different counts exist."""
    regions = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("region", pa.string(), nullable=False)])
    admin = lake_conn.get_admin()
    lake = TablePath(lake_db, "lake_parted")
    await create(lake_conn, lake, regions, pk=["id", "region"], buckets=2, partition_keys=["region"])
    with pytest.raises(FlussError) as e:
        await admin.alter_table(lake, [TableChange.set("bucket.num", "4")])
    assert e.value.error_code == ErrorCode.INVALID_ALTER_TABLE_EXCEPTION and "lake-enabled" in e.value.message
    assert (await admin.get_table_info(lake)).num_buckets == 2

    plain = TablePath(lake_db, "plain_parted")
    await create(lake_conn, plain, regions, pk=["id", "region"], buckets=2, partition_keys=["region"], **NO_LAKE)
    await admin.create_partition(plain, {"region": "eu"})
    with pytest.raises(FlussError) as e:  # in one request too
        await admin.alter_table(plain, [TableChange.set("bucket.num", "3"),
                                        TableChange.set("table.datalake.enabled", "true")])
    assert e.value.error_code == ErrorCode.INVALID_ALTER_TABLE_EXCEPTION and "lake-enabled" in e.value.message
    await admin.alter_table(plain, [TableChange.set("bucket.num", "3")])
    await admin.create_partition(plain, {"region": "us"})
    with pytest.raises(FlussError) as e:
        await admin.alter_table(plain, [TableChange.set("table.datalake.enabled", "true")])
    assert e.value.error_code == ErrorCode.INVALID_ALTER_TABLE_EXCEPTION and "different bucket counts: 2, 3" in \
        e.value.message
    await admin.drop_partition(plain, {"region": "eu"})  # every partition has the table's count now
    await admin.alter_table(plain, [TableChange.set("table.datalake.enabled", "true")])
    assert paimon_table(warehouse, plain).table_schema.options["bucket"] == "3"
