"""Auto-partitioning on the shared cluster (``auto-partition.check.interval`` 1s): partitions created ahead at
CREATE TABLE with Fluss's names, expired ones dropped on schedule (their data released), multi-key tables, and
``num-retention`` / ``num-precreate`` changed by ALTER TABLE taking effect at once."""

from __future__ import annotations

import asyncio
import datetime as dt
import time

import pyarrow as pa
import pytest

from fluss import ErrorCode, FlussError, OffsetSpec, Schema, TableChange, TableDescriptor, TablePath

pytestmark = pytest.mark.asyncio(loop_scope="session")

EVENTS = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("region", pa.string())])


def _hours(offsets: range) -> list[str]:
    now = dt.datetime.now(dt.UTC)
    return [(now + dt.timedelta(hours=k)).strftime("%Y%m%d%H") for k in offsets]


async def _names(admin, path: TablePath) -> list[str]:
    return sorted(p.partition_name for p in await admin.list_partition_infos(path))


async def _eventually(fn, expected, what: str, timeout_s: float = 15.0):
    deadline = time.monotonic() + timeout_s
    while (got := await fn()) != expected:
        assert time.monotonic() < deadline, f"{what}: {got} != {expected}"
        await asyncio.sleep(0.2)


async def test_hourly_table_gets_partitions_ahead_and_loses_expired_ones(admin, conn, database):
    path = TablePath(database, "hourly")
    before = _hours(range(3))
    await admin.create_table(path, TableDescriptor(Schema(EVENTS), partition_keys=["dt"], bucket_count=1, properties={
        "table.auto-partition.enabled": "true", "table.auto-partition.time-unit": "HOUR",
        "table.auto-partition.time-zone": "UTC", "table.auto-partition.num-precreate": "3",
        "table.auto-partition.num-retention": "2"}))
    names = await _names(admin, path)  # created with the table
    assert names in (before, _hours(range(3)), sorted(set(before) | set(_hours(range(3)))))

    # a partition with a non-time value (written to) stays; an expired one goes at the next check (1s)
    writer = (await conn.get_table(path)).new_append().create_writer()
    writer.write_arrow_batch(pa.RecordBatch.from_pydict({"id": [1, 2], "dt": ["archive", names[0]],
                                                         "region": ["US", "US"]}, schema=EVENTS))
    await writer.flush()  # creates 'archive' (dynamic partition creation)
    await admin.create_partition(path, {"dt": "2020010100"})
    await _eventually(lambda: _names(admin, path), sorted(["archive", *_hours(range(3))]), "expired dropped")


async def test_multi_key_table_drops_expired_partitions_by_its_time_key(admin, database):
    path = TablePath(database, "by_region")
    await admin.create_table(path, TableDescriptor(Schema(EVENTS), partition_keys=["region", "dt"], bucket_count=1,
                                                   properties={"table.auto-partition.enabled": "true",
                                                               "table.auto-partition.key": "dt",
                                                               "table.auto-partition.time-zone": "UTC",
                                                               "table.auto-partition.num-retention": "1"}))
    info = await admin.get_table_info(path)
    assert info.get_properties()["table.auto-partition.num-precreate"] == "0"
    assert await _names(admin, path) == []
    today = dt.datetime.now(dt.UTC).strftime("%Y%m%d")
    for spec in ({"region": "US", "dt": "20200101"}, {"region": "EU", "dt": today}):
        await admin.create_partition(path, spec)
    await _eventually(lambda: _names(admin, path), [f"EU${today}"], "expired (US, 20200101) dropped")
    with pytest.raises(FlussError) as e:
        await admin.alter_table(path, [TableChange.set("table.auto-partition.num-precreate", "2")])
    assert e.value.error_code == ErrorCode.INVALID_CONFIG_EXCEPTION and "must be 0" in e.value.message


async def test_altering_precreate_and_retention_applies_at_once(admin, database):
    path = TablePath(database, "yearly")
    await admin.create_table(path, TableDescriptor(Schema(EVENTS), partition_keys=["dt"], bucket_count=1, properties={
        "table.auto-partition.enabled": "true", "table.auto-partition.time-unit": "YEAR",
        "table.auto-partition.time-zone": "UTC", "table.auto-partition.num-precreate": "1",
        "table.auto-partition.num-retention": "10"}))
    year = dt.datetime.now(dt.UTC).year
    assert await _names(admin, path) == [str(year)]
    await admin.create_partition(path, {"dt": str(year - 5)})
    await asyncio.sleep(1.5)  # a check ran: 5 years back is within 10
    assert await _names(admin, path) == [str(year - 5), str(year)]

    await admin.alter_table(path, [TableChange.set("table.auto-partition.num-precreate", "3"),
                                   TableChange.set("table.auto-partition.num-retention", "2")])
    assert await _names(admin, path) == [str(year), str(year + 1), str(year + 2)]  # done by the ALTER itself
    for key in ("table.auto-partition.time-unit", "table.auto-partition.enabled", "table.auto-partition.key"):
        with pytest.raises(FlussError) as e:
            await admin.alter_table(path, [TableChange.set(key, "DAY")])
        assert e.value.error_code == ErrorCode.INVALID_ALTER_TABLE_EXCEPTION and key in e.value.message


async def test_auto_partition_options_are_checked_at_create_table(admin, database):
    with pytest.raises(FlussError) as e:
        await admin.create_table(TablePath(database, "bad"), TableDescriptor(
            Schema(EVENTS), partition_keys=["dt", "region"], properties={"table.auto-partition.enabled": "true"}))
    assert e.value.error_code == ErrorCode.INVALID_CONFIG_EXCEPTION
    assert "'table.auto-partition.key'" in e.value.message
    assert not await admin.table_exists(TablePath(database, "bad"))


async def test_a_time_format_names_the_partitions_and_retention_reads_them(admin, database):
    """``table.auto-partition.time-format``: partitions created ahead in the pattern; an expired one in the
    pattern (day-first, so its text sorts after today's) is dropped; a bad pattern refuses the table."""
    path = TablePath(database, "formatted")
    days = [(dt.datetime.now(dt.UTC) + dt.timedelta(days=k)).strftime("%d.%m.%Y") for k in range(2)]
    await admin.create_table(path, TableDescriptor(Schema(EVENTS), partition_keys=["dt"], bucket_count=1, properties={
        "table.auto-partition.enabled": "true", "table.auto-partition.time-format": "dd.MM.yyyy",
        "table.auto-partition.time-zone": "UTC", "table.auto-partition.num-precreate": "2"}))
    assert set(days) <= set(await _names(admin, path))
    await admin.create_partition(path, {"dt": "31.12.2020"})
    await _eventually(lambda: _names(admin, path), sorted(
        (dt.datetime.now(dt.UTC) + dt.timedelta(days=k)).strftime("%d.%m.%Y") for k in range(2)), "expired dropped")

    with pytest.raises(FlussError) as e:
        await admin.create_table(TablePath(database, "badly_formatted"), TableDescriptor(
            Schema(EVENTS), partition_keys=["dt"], properties={"table.auto-partition.enabled": "true",
                                                                "table.auto-partition.time-format": "yyyy-MM"}))
    assert e.value.error_code == ErrorCode.INVALID_CONFIG_EXCEPTION
    assert "'table.auto-partition.time-format' = 'yyyy-MM'" in e.value.message and "DAY" in e.value.message
    assert not await admin.table_exists(TablePath(database, "badly_formatted"))


async def test_many_partitions_ahead_are_created_in_batches_and_all_served(admin, conn, database):
    """150 partitions ahead cross three of the coordinator's batches (64 a ZooKeeper transaction): every one is
    created within the CREATE TABLE with its own id, and the first and last of them take writes."""
    path = TablePath(database, "daily_many")
    await admin.create_table(path, TableDescriptor(Schema(EVENTS), partition_keys=["dt"], bucket_count=1, properties={
        "table.auto-partition.enabled": "true", "table.auto-partition.time-unit": "DAY",
        "table.auto-partition.time-zone": "UTC", "table.auto-partition.num-precreate": "150",
        "table.auto-partition.num-retention": "1"}))
    infos = await admin.list_partition_infos(path)
    today = dt.datetime.now(dt.UTC).date()
    expected = {(today + dt.timedelta(days=k)).strftime("%Y%m%d") for k in range(150)}
    assert {p.partition_name for p in infos} >= expected - {max(expected)}  # the day may turn during the test
    assert len({p.partition_id for p in infos}) == len(infos) >= 149
    names = sorted(p.partition_name for p in infos)
    writer = (await conn.get_table(path)).new_append().create_writer()
    writer.write_arrow_batch(pa.RecordBatch.from_pydict({"id": [1, 2], "dt": [names[0], names[-1]],
                                                         "region": ["US", "EU"]}, schema=EVENTS))
    await writer.flush()
    await writer.aclose()
    for name in (names[0], names[-1]):
        assert (await admin.list_partition_offsets(path, name, [0], OffsetSpec.latest()))[0] == 1
    await admin.drop_table(path)
