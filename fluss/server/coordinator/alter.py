"""ALTER TABLE ... SET / RESET: which keys a live table may change, and its properties after the change.

The coordinator applies a request's changes in order to a copy of the table's properties; the request is all or
nothing (one refused change refuses them all, nothing is stored). Rules, each failure naming the key and the table:

* a **table option** (a key of the table-option registry's namespace: ``table.*``, ``bucket.*``, ...) must be
  known (else the closest known key is named), implemented, and declared ``alterable`` in ``fluss.table_options``
  (``table.log.ttl``, ``table.datalake.enabled``, ``table.datalake.freshness``, ...); SET parses the value with the
  option's type and bounds and stores it as a table property, RESET removes the property so the default applies;
* ``bootstrap.servers`` and ``connector`` are refused: they belong to the Flink session, not to the table;
* a **connector option** (``scan.*``, ``lookup.*``, ``sink.*``, ``client.*``) must be known to the connector
  registry and its value valid; like any other key it is stored as a *custom property*, which the servers never
  read and the Flink connector uses as the table's default (as at CREATE TABLE);
* any other key is a custom property (a user's own key).

Setting a key to the value it has, or resetting a key that is not set, is allowed and changes nothing.

``bucket.num`` (SET only) is the bucket count of the partitions a **partitioned** table creates from then on; each
partition keeps the count it was created with (``PartitionRegistration.bucket_count``), and clients route each
partition by its own count. It is refused on a non-partitioned table (its rows are spread over its buckets by hash:
another count would move every key), on a lake-enabled table (the Paimon table has one fixed bucket count for all
partitions), by RESET, and outside ``1..max.bucket.num`` (the coordinator checks the upper bound).

**ADD COLUMN** (``TableChange.add_column``) appends a column after the last one and makes a new schema id
(``fluss.record.schema_evolution``): the column must be nullable (data written before has no value for it),
its name new (compared case-insensitively, as Flink and the lake do; a computed column the Flink catalog
keeps as ``schema.{i}.name`` counts) and not a lake system column
(``__bucket``, ``__offset``, ``__timestamp``, ``__row_kind``), its position LAST (Fluss supports no other). Primary key,
partition keys and bucket keys never change: a new column is none of them. Several ADDs of one request make one
schema id.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fluss.errors import ErrorCode, FlussError
from fluss.metadata import TableChange, TableInfo
from fluss.options import Option
from fluss.server.coordinator.auto_partition import check_auto_partition
from fluss.table_options import (
    BUCKET_NUM,
    CONNECTOR_OPTIONS,
    DATALAKE_ENABLED,
    LOG_LOCAL_TTL,
    LOG_TTL,
    TABLE_OPTIONS,
    check_log_ttls,
)
from fluss.types import Column, RowSchema

#: A computed column of the Flink catalog (``schema.{i}.name`` in the table's custom properties).
FLINK_COLUMN_NAME = re.compile(r"schema\.\d+\.name")

#: Column names the lake table adds after the table's own (``fluss.lake.paimon.SYSTEM_COLUMNS``).
LAKE_SYSTEM_COLUMNS = ("__bucket", "__offset", "__timestamp", "__row_kind")

AUTO_PARTITION_PREFIX = "table.auto-partition."

#: Keys an ALTER TABLE never stores (they say where the table is, not what it is).
SESSION_KEYS = ("bootstrap.servers", "connector")


def alter_error(message: str) -> FlussError:
    return FlussError(message, ErrorCode.INVALID_ALTER_TABLE_EXCEPTION)


@dataclass
class AlteredProperties:
    """A table's properties after an ALTER, and the table-option keys whose value changed."""

    properties: dict[str, str]
    custom_properties: dict[str, str]
    changed_options: set[str] = field(default_factory=set)
    bucket_count: int | None = None  # the bucket count of partitions created from now on (SET bucket.num)

    def changed(self, option: Option) -> bool:
        return option.key in self.changed_options


def alterable_option_keys() -> list[str]:
    return sorted(o.key for o in TABLE_OPTIONS if o.alterable and o.implemented)


def _table_option(key: str, where: str) -> Option:
    option = TABLE_OPTIONS.resolve(key, where)  # unknown (closest named) or not implemented: refused
    if not option.alterable:
        raise alter_error(f"Table option '{key}' of {where} cannot be changed on a live table; the options that "
                          f"can: {', '.join(alterable_option_keys())}")
    return option


def apply_option_changes(info: TableInfo, changes: list[TableChange]) -> AlteredProperties:
    """The properties of ``info`` after ``changes`` (see the module docstring); raises on the first refused one."""
    where = f"table '{info.table_path}'"
    if not changes:
        raise alter_error(f"ALTER TABLE of {where} has no changes")
    props = info.get_properties()
    custom = info.get_custom_properties()
    before = dict(props)
    bucket_count: int | None = None
    for change in changes:
        if change.kind == TableChange.ADD_COLUMN:
            continue  # apply_column_changes
        key = change.key.strip() if change.key else ""
        if not key:
            raise alter_error(f"ALTER TABLE of {where}: an option key is empty")
        if key in SESSION_KEYS:
            raise alter_error(f"'{key}' of {where} cannot be set or reset: it belongs to the client session, "
                              "not to the table")
        if key == BUCKET_NUM.key:
            bucket_count = _bucket_num_change(info, change, where)
            continue
        if TABLE_OPTIONS.owns(key):
            option = _table_option(key, where)
            if change.kind == TableChange.SET:
                option.parse(change.value, where)  # raises INVALID_CONFIG_EXCEPTION naming the key
                props[key] = str(change.value).strip()
            else:
                props.pop(key, None)
            continue
        if CONNECTOR_OPTIONS.owns(key):
            connector_option = CONNECTOR_OPTIONS.get(key)
            if connector_option is None:
                raise FlussError(CONNECTOR_OPTIONS.unknown_key_message(key, where), ErrorCode.INVALID_CONFIG_EXCEPTION)
            if change.kind == TableChange.SET:
                connector_option.parse(change.value, where)
        if change.kind == TableChange.SET:
            custom[key] = str(change.value)
        else:
            custom.pop(key, None)
    if bucket_count is not None and bucket_count != info.num_buckets:
        if BUCKET_NUM.key in props:  # a table created with the option keeps it true
            props[BUCKET_NUM.key] = str(bucket_count)
    else:
        bucket_count = None
    changed = {k for k in set(before) | set(props) if before.get(k) != props.get(k)}
    if bucket_count is not None:
        changed.add(BUCKET_NUM.key)
        if DATALAKE_ENABLED.value_of(props):
            raise alter_error(f"Cannot change 'bucket.num' of {where}: it is lake-enabled (table.datalake.enabled), "
                              f"and its Paimon table has one bucket count ({info.num_buckets}) for every partition")
    if LOG_TTL.key in changed or LOG_LOCAL_TTL.key in changed:
        check_log_ttls(props, where)
    if any(k.startswith(AUTO_PARTITION_PREFIX) for k in changed):
        check_auto_partition(props, info.get_partition_keys(), info.row_schema, str(info.table_path), creating=False)
    return AlteredProperties(props, custom, changed, bucket_count)


def _bucket_num_change(info: TableInfo, change: TableChange, where: str) -> int:
    """The bucket count a SET bucket.num asks for (see the module docstring); raises when it is refused."""
    if change.kind != TableChange.SET:
        raise alter_error(f"'bucket.num' of {where} cannot be reset: set the bucket count of future partitions instead")
    if not info.is_partitioned():
        raise alter_error(f"Cannot change 'bucket.num' of {where} ({info.num_buckets} buckets): it is not "
                          "partitioned, and its rows are spread over its buckets by hash, so another count would "
                          "misplace every key already written (only a partitioned table's future partitions can "
                          "get another count)")
    return int(BUCKET_NUM.parse(change.value, where))  # an integer >= 1, else INVALID_CONFIG_EXCEPTION


def apply_column_changes(info: TableInfo, changes: list[TableChange]) -> RowSchema | None:
    """The table's schema after the ADD COLUMN changes of ``changes`` (None when there is none); raises
    INVALID_ALTER_TABLE_EXCEPTION naming the column and the table on the first refused one."""
    adds = [c for c in changes if c.kind == TableChange.ADD_COLUMN]
    if not adds:
        return None
    where = f"table '{info.table_path}'"
    schema = info.row_schema
    columns = list(schema.columns)
    taken = {c.name.lower(): c.name for c in columns}
    # computed columns the Flink catalog keeps in custom properties (schema.{i}.name) are columns too for Flink
    for key, value in info.get_custom_properties().items():
        if FLINK_COLUMN_NAME.fullmatch(key):
            taken.setdefault(value.lower(), value)
    for change in adds:
        column: Column = change.column
        name = column.name
        if change.position != TableChange.LAST:
            raise alter_error(f"Cannot add column '{name}' to {where} at position {change.position}: columns can "
                              "only be added after the last one (LAST)")
        if name.lower() in taken:
            raise alter_error(f"Cannot add column '{name}' to {where}: column '{taken[name.lower()]}' already "
                              "exists")
        if name.lower() in LAKE_SYSTEM_COLUMNS:
            raise alter_error(f"Cannot add column '{name}' to {where}: the name is reserved for the lake table's "
                              f"system columns ({', '.join(LAKE_SYSTEM_COLUMNS)})")
        if not column.data_type.nullable:
            raise alter_error(f"Cannot add column '{name}' {column.data_type} to {where}: an added column must be "
                              "nullable (rows written before have no value for it)")
        columns.append(column)
        taken[name.lower()] = name
    return RowSchema(columns, list(schema.primary_keys))
