"""Auto-partitioning: which time partitions a table should have now, as Fluss defines it.

A table with ``table.auto-partition.enabled = true`` has a *time key*: its only partition key, or the one named by
``table.auto-partition.key`` when it has several (a STRING or CHAR column). Time values are formatted per
``table.auto-partition.time-unit`` exactly as Fluss names them::

    HOUR yyyyMMddHH (2024091922)   DAY yyyyMMdd (20240919)   MONTH yyyyMM (202409)   QUARTER yyyyQ (20243)   YEAR yyyy

or by the pattern ``table.auto-partition.time-format`` gives (``yyyy-MM-dd``; see
:mod:`fluss.server.coordinator.partition_time_format`), in ``table.auto-partition.time-zone`` (default: the coordinator's local time zone). At each check
(``auto-partition.check.interval`` on the coordinator, and at once when such a table is created or its
``num-precreate`` / ``num-retention`` is altered) the coordinator:

* creates the partitions of the current unit and the ``num-precreate - 1`` following ones that do not exist yet
  (only for a single partition key: with several keys the other values are unknown, so ``num-precreate`` must be 0,
  and is set to 0 at CREATE TABLE when not given);
* drops every partition whose time value is older than the current unit minus ``num-retention`` units. Only values
  the table's format reads back are considered: a manually created partition with another value (``archive``) is
  never dropped by retention. "Older" compares the times values stand for, not their text.

:class:`AutoPartitionPlanner` takes a clock (``() -> epoch seconds``), so tests can move time at will.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from fluss.metadata import TableInfo
from fluss.options import config_error
from fluss.server.coordinator.partition_time_format import PartitionTimeFormat
from fluss.table_options import (
    AUTO_PARTITION_ENABLED,
    AUTO_PARTITION_KEY,
    AUTO_PARTITION_NUM_PRECREATE,
    AUTO_PARTITION_NUM_RETENTION,
    AUTO_PARTITION_TIME_FORMAT,
    AUTO_PARTITION_TIME_UNIT,
    AUTO_PARTITION_TIME_ZONE,
)
from fluss.types import STRING_ROOTS, RowSchema


def shift(moment: dt.datetime, unit: str, units: int) -> dt.datetime:
    """``moment`` moved by ``units`` whole time units (calendar arithmetic for months, quarters and years)."""
    if unit == "HOUR":
        return (moment.astimezone(dt.UTC) + dt.timedelta(hours=units)).astimezone(moment.tzinfo)
    if unit == "DAY":
        return moment + dt.timedelta(days=units)
    months = {"MONTH": 1, "QUARTER": 3, "YEAR": 12}[unit] * units
    index = moment.year * 12 + (moment.month - 1) + months
    return moment.replace(year=index // 12, month=index % 12 + 1, day=1)


def local_time(epoch_s: float, zone: str | None) -> dt.datetime:
    if zone:
        return dt.datetime.fromtimestamp(epoch_s, ZoneInfo(zone))
    return dt.datetime.fromtimestamp(epoch_s).astimezone()


@dataclass(frozen=True)
class AutoPartitionStrategy:
    """A table's auto-partitioning settings (typed, from its properties)."""

    time_key: str
    time_unit: str
    num_precreate: int
    num_retention: int
    time_zone: str | None
    partition_keys: tuple[str, ...]
    time_format: PartitionTimeFormat

    @classmethod
    def of(cls, info: TableInfo) -> AutoPartitionStrategy | None:
        """The strategy of an auto-partitioned table; None when auto-partitioning is off."""
        props = info.get_properties()
        if not info.is_partitioned() or not AUTO_PARTITION_ENABLED.value_of(props):
            return None
        keys = info.get_partition_keys()
        unit = AUTO_PARTITION_TIME_UNIT.value_of(props)
        return cls(time_key=AUTO_PARTITION_KEY.value_of(props) or keys[0],
                   time_unit=unit,
                   num_precreate=AUTO_PARTITION_NUM_PRECREATE.value_of(props) if len(keys) == 1 or
                   AUTO_PARTITION_NUM_PRECREATE.key in props else 0,
                   num_retention=AUTO_PARTITION_NUM_RETENTION.value_of(props),
                   time_zone=AUTO_PARTITION_TIME_ZONE.value_of(props), partition_keys=tuple(keys),
                   time_format=PartitionTimeFormat.of(unit, AUTO_PARTITION_TIME_FORMAT.value_of(props),
                                                      f"table '{info.table_path}'"))


@dataclass
class AutoPartitionPlan:
    """What one check does for one table: specs of partitions to create, names of partitions to drop."""

    create: list[dict[str, str]] = field(default_factory=list)
    drop: list[str] = field(default_factory=list)


class AutoPartitionPlanner:
    """Decides the partitions of auto-partitioned tables at the time its clock tells (see the module docstring)."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock

    def plan(self, strategy: AutoPartitionStrategy, existing: Mapping[str, Mapping[str, str]]) -> AutoPartitionPlan:
        """``existing``: partition name -> spec."""
        now = local_time(self.clock(), strategy.time_zone)
        out = AutoPartitionPlan()
        if strategy.num_precreate > 0 and len(strategy.partition_keys) == 1:
            names = set(existing)
            for k in range(strategy.num_precreate):
                value = strategy.time_format.format(shift(now, strategy.time_unit, k))
                if value not in names:
                    out.create.append({strategy.time_key: value})
                    names.add(value)
        oldest_kept = strategy.time_format.parse(
            strategy.time_format.format(shift(now, strategy.time_unit, -strategy.num_retention)))
        for name, spec in sorted(existing.items()):
            time_value = strategy.time_format.parse(spec.get(strategy.time_key, ""))
            if time_value is not None and time_value < oldest_kept:
                out.drop.append(name)
        return out


_ZONE = re.compile(r"^[A-Za-z0-9_+\-/]+$")


def check_auto_partition(properties: Mapping[str, str], partition_keys: list[str], schema: RowSchema,
                         table: str, creating: bool) -> dict[str, str]:
    """Checks the auto-partition options of a table (at CREATE TABLE and after an ALTER); returns properties to
    add (``num-precreate`` 0 for a new table with several partition keys that did not give it)."""
    where = f"table '{table}'"
    if not AUTO_PARTITION_ENABLED.value_of(properties, where):
        return {}
    if not partition_keys:
        raise config_error(f"'{AUTO_PARTITION_ENABLED.key}' of {where} needs a partitioned table "
                           "(PARTITIONED BY a time column)")
    key = AUTO_PARTITION_KEY.value_of(properties, where)
    if key is None:
        if len(partition_keys) > 1:
            raise config_error(f"{where} has several partition keys {partition_keys}: set "
                               f"'{AUTO_PARTITION_KEY.key}' to the one that holds the time")
        key = partition_keys[0]
    if key not in partition_keys:
        raise config_error(f"'{AUTO_PARTITION_KEY.key}' = '{key}' of {where} is not one of its partition keys "
                           f"{partition_keys}")
    column = next(c for c in schema.columns if c.name == key)
    if column.data_type.root not in STRING_ROOTS:
        raise config_error(f"The auto-partition key '{key}' of {where} must be a STRING column, not "
                           f"{column.data_type}")
    zone = AUTO_PARTITION_TIME_ZONE.value_of(properties, where)
    if zone is not None:
        try:
            if not _ZONE.match(zone):
                raise ValueError(zone)
            ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError):
            raise config_error(f"Unknown time zone '{zone}' in '{AUTO_PARTITION_TIME_ZONE.key}' of {where} "
                               "(an IANA name such as 'UTC' or 'Asia/Shanghai')") from None
    PartitionTimeFormat.of(AUTO_PARTITION_TIME_UNIT.value_of(properties, where),
                           AUTO_PARTITION_TIME_FORMAT.value_of(properties, where), where)
    AUTO_PARTITION_NUM_RETENTION.value_of(properties, where)
    if len(partition_keys) > 1:
        if AUTO_PARTITION_NUM_PRECREATE.key not in properties:
            return {AUTO_PARTITION_NUM_PRECREATE.key: "0"} if creating else {}
        if AUTO_PARTITION_NUM_PRECREATE.value_of(properties, where) != 0:
            raise config_error(f"'{AUTO_PARTITION_NUM_PRECREATE.key}' of {where} must be 0: with several partition "
                               f"keys {partition_keys} the values of the others are unknown, so no partition can "
                               "be created ahead (expired ones are still dropped)")
    return {}
