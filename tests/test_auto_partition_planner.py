"""Auto-partitioning decisions (fluss.server.coordinator.auto_partition) with an injected clock: partition names
exactly as Fluss formats them, create-ahead and retention across many checks (day, month and year boundaries),
time zones, multi-key tables, and the option checks at CREATE TABLE / ALTER TABLE."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from fluss import FlussError, Schema, TableDescriptor, TableInfo, TablePath
from fluss.server.coordinator.auto_partition import (
    AutoPartitionPlanner,
    AutoPartitionStrategy,
    check_auto_partition,
)


def _at(*args: int, tz: dt.tzinfo = dt.UTC) -> float:
    return dt.datetime(*args, tzinfo=tz).timestamp()


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def _info(partition_keys: list[str], **props: str) -> TableInfo:
    schema = Schema(pa.schema([("id", pa.int64()), ("dt", pa.string()), ("region", pa.string())]))
    desc = TableDescriptor(schema, partition_keys=partition_keys, bucket_count=1,
                           properties={"table.auto-partition.enabled": "true", "table.auto-partition.time-zone": "UTC",
                                       **props})
    return TableInfo(TablePath("db", "t"), 1, 1, desc, 0, 0)


def _strategy(partition_keys=("dt",), **props: str) -> AutoPartitionStrategy:
    strategy = AutoPartitionStrategy.of(_info(list(partition_keys), **props))
    assert strategy is not None
    return strategy


@pytest.mark.parametrize("unit, expected", [
    ("HOUR", ["2024091922", "2024091923", "2024092000"]),
    ("DAY", ["20240919", "20240920", "20240921"]),
    ("MONTH", ["202409", "202410", "202411"]),
    ("QUARTER", ["20243", "20244", "20251"]),
    ("YEAR", ["2024", "2025", "2026"]),
])
def test_partition_names_are_formatted_as_fluss_names_them(unit, expected):
    planner = AutoPartitionPlanner(Clock(_at(2024, 9, 19, 22, 30)))
    plan = planner.plan(_strategy(**{"table.auto-partition.time-unit": unit,
                                     "table.auto-partition.num-precreate": "3"}), {})
    assert [spec["dt"] for spec in plan.create] == expected
    assert plan.drop == []


def test_the_time_zone_decides_the_current_partition():
    planner = AutoPartitionPlanner(Clock(_at(2024, 9, 19, 22, 30)))  # 06:30 on the 20th in Shanghai
    shanghai = {"table.auto-partition.time-zone": "Asia/Shanghai", "table.auto-partition.num-precreate": "1"}
    assert planner.plan(_strategy(**shanghai), {}).create == [{"dt": "20240920"}]
    hourly = {**shanghai, "table.auto-partition.time-unit": "HOUR"}
    assert planner.plan(_strategy(**hourly), {}).create == [{"dt": "2024092006"}]


def test_precreate_and_retention_follow_fluss_example():
    """Fluss's docs: on 2024-11-11, num-precreate 3 creates 20241111..13; num-retention 3 keeps 20241108..10."""
    planner = AutoPartitionPlanner(Clock(_at(2024, 11, 11, 9)))
    existing = {f"202411{d:02d}": {"dt": f"202411{d:02d}"} for d in range(5, 12)}
    existing["archive"] = {"dt": "archive"}  # not a time value: never dropped by retention
    plan = planner.plan(_strategy(**{"table.auto-partition.num-precreate": "3",
                                     "table.auto-partition.num-retention": "3"}), existing)
    assert plan.create == [{"dt": "20241112"}, {"dt": "20241113"}]
    assert plan.drop == ["20241105", "20241106", "20241107"]


def _unit_values(t: float, unit: str, offsets: range) -> list[str]:
    """Independent of the module: the UTC partition values of the units ``offsets`` away from time ``t``."""
    now = dt.datetime.fromtimestamp(t, dt.UTC)
    out = []
    for k in offsets:
        if unit == "HOUR":
            out.append((now + dt.timedelta(hours=k)).strftime("%Y%m%d%H"))
        elif unit == "DAY":
            out.append((now + dt.timedelta(days=k)).strftime("%Y%m%d"))
        else:
            months = {"MONTH": 1, "QUARTER": 3}[unit]
            m = now.year * 12 + now.month - 1 + k * months
            year, month = divmod(m, 12)
            out.append(f"{year}{month + 1:02d}" if unit == "MONTH" else f"{year}{month // 3 + 1}")
    return out


@pytest.mark.parametrize("unit, step, checks", [
    ("DAY", dt.timedelta(hours=7), 200),  # across month and year ends
    ("HOUR", dt.timedelta(minutes=25), 200),  # across day ends
    ("MONTH", dt.timedelta(days=11), 120),
    ("QUARTER", dt.timedelta(days=40), 40),
])
def test_checks_over_time_keep_exactly_the_window(unit, step, checks):
    """Many checks with a moving clock: after each one the table has exactly the retained past units it ever had,
    the current one and the pre-created one, and nothing else; every partition is created once."""
    start = _at(2023, 12, 30, 21)
    clock = Clock(start)
    planner = AutoPartitionPlanner(clock)
    strategy = _strategy(**{"table.auto-partition.time-unit": unit, "table.auto-partition.num-precreate": "2",
                            "table.auto-partition.num-retention": "2"})
    first = _unit_values(start, unit, range(0, 1))[0]
    partitions: dict[str, dict[str, str]] = {}
    created: list[str] = []
    for _ in range(checks):
        plan = planner.plan(strategy, partitions)
        for spec in plan.create:
            assert spec["dt"] not in partitions
            partitions[spec["dt"]] = spec
            created.append(spec["dt"])
        for name in plan.drop:
            del partitions[name]
        window = [v for v in _unit_values(clock.t, unit, range(-2, 2)) if v >= first]
        assert sorted(partitions) == window
        assert planner.plan(strategy, partitions).create == [] and planner.plan(strategy, partitions).drop == []
        clock.t += step.total_seconds()
    assert created == sorted(created) and len(set(created)) == len(created) > 5


def test_several_partition_keys_drop_by_the_time_key_and_create_nothing():
    planner = AutoPartitionPlanner(Clock(_at(2024, 11, 11, 9)))
    strategy = _strategy(("region", "dt"), **{"table.auto-partition.key": "dt",
                                              "table.auto-partition.num-retention": "1"})
    assert strategy.num_precreate == 0
    existing = {"US$20241109": {"region": "US", "dt": "20241109"}, "EU$20241110": {"region": "EU", "dt": "20241110"},
                "US$20241111": {"region": "US", "dt": "20241111"}}
    plan = planner.plan(strategy, existing)
    assert plan.create == [] and plan.drop == ["US$20241109"]


def _check(partition_keys, props, creating=True):
    schema = Schema(pa.schema([("id", pa.int64()), ("dt", pa.string()), ("n", pa.int32()), ("region", pa.string())]))
    return check_auto_partition({"table.auto-partition.enabled": "true", **props}, partition_keys,
                                schema.row_schema, "db.t", creating)


@pytest.mark.parametrize("unit, pattern, expected", [
    ("DAY", "yyyy-MM-dd", ["2024-12-30", "2024-12-31", "2025-01-01"]),
    ("DAY", "dd.MM.yyyy", ["30.12.2024", "31.12.2024", "01.01.2025"]),
    ("DAY", "yy_M_d", ["24_12_30", "24_12_31", "25_1_1"]),
    ("HOUR", "yyyy-MM-dd'T'HH", ["2024-12-30T22", "2024-12-30T23", "2024-12-31T00"]),
    ("MONTH", "yyyy-MM", ["2024-12", "2025-01", "2025-02"]),
    ("QUARTER", "yyyy'q'Q", ["2024q4", "2025q1", "2025q2"]),
    ("YEAR", "'y'yyyy", ["y2024", "y2025", "y2026"]),
])
def test_a_time_format_names_partitions_and_retention_reads_the_names_back(unit, pattern, expected):
    """``table.auto-partition.time-format``: values in the pattern; retention compares the times the names stand
    for (``dd.MM.yyyy`` does not sort as text), and names the pattern does not read are kept."""
    props = {"table.auto-partition.time-unit": unit, "table.auto-partition.time-format": pattern,
             "table.auto-partition.num-precreate": "3", "table.auto-partition.num-retention": "1"}
    now = _at(2024, 12, 30, 22, 30)
    plan = AutoPartitionPlanner(Clock(now)).plan(_strategy(**props), {})
    assert [spec["dt"] for spec in plan.create] == expected and plan.drop == []
    # one unit later (the first one is the retained past unit), two units later (the first one expires)
    created = {v: {"dt": v} for v in expected} | {"archive": {"dt": "archive"}, "2024": {"dt": "2024"}}
    next_unit, unit_after = {"HOUR": ((2024, 12, 30, 23, 30), (2024, 12, 31, 0, 30)),
                             "DAY": ((2024, 12, 31, 12), (2025, 1, 1, 12)),
                             "MONTH": ((2025, 1, 15), (2025, 2, 15)), "QUARTER": ((2025, 2, 15), (2025, 5, 15)),
                             "YEAR": ((2025, 6, 1), (2026, 6, 1))}[unit]
    assert AutoPartitionPlanner(Clock(_at(*next_unit))).plan(_strategy(**props), created).drop == []
    assert AutoPartitionPlanner(Clock(_at(*unit_after))).plan(_strategy(**props), created).drop == [expected[0]]


@pytest.mark.parametrize("unit, pattern, words", [
    ("DAY", "yyyy-MM", "must have each field of the time unit DAY once (year, month, day)"),
    ("DAY", "yyyy-MM-dd-HH", "and no other"),
    ("MONTH", "yyyy-MM-MM", "must have each field of the time unit MONTH once"),
    ("DAY", "yyyy/MM/dd", "not valid"),
    ("DAY", "yyyy-MMM-dd", "'MMM' is not a supported pattern field"),
    ("DAY", "yyyyMMdd'T", "unclosed quote"),
    ("DAY", "EEE yyyyMMdd", "'EEE' is not a supported pattern field"),
    ("YEAR", "yyy", "'y' may appear as yy or yyyy"),
])
def test_bad_time_formats_are_refused_naming_the_problem(unit, pattern, words):
    with pytest.raises(FlussError) as e:
        _check(["dt"], {"table.auto-partition.time-unit": unit, "table.auto-partition.time-format": pattern})
    assert words in e.value.message and "db.t" in e.value.message and pattern in e.value.message


@pytest.mark.parametrize("keys, props, words", [
    ([], {}, "needs a partitioned table"),
    (["dt", "region"], {}, "'table.auto-partition.key'"),
    (["dt"], {"table.auto-partition.key": "region"}, "not one of its partition keys"),
    (["n"], {}, "must be a STRING column"),
    (["dt"], {"table.auto-partition.time-zone": "Mars/Olympus"}, "Unknown time zone 'Mars/Olympus'"),
    (["dt"], {"table.auto-partition.time-unit": "WEEK"}, "WEEK"),
    (["dt", "region"], {"table.auto-partition.key": "dt", "table.auto-partition.num-precreate": "2"},
     "must be 0"),
])
def test_bad_auto_partition_options_are_refused_naming_them(keys, props, words):
    with pytest.raises(FlussError) as e:
        _check(keys, props)
    assert words in e.value.message and "db.t" in e.value.message


def test_several_partition_keys_default_to_no_precreate():
    assert _check(["dt", "region"], {"table.auto-partition.key": "dt"}) == {
        "table.auto-partition.num-precreate": "0"}
    assert _check(["dt"], {}) == {}
