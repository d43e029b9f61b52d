"""Checks of user-supplied names and table descriptors before anything is written to ZooKeeper.

``resolve_table`` turns a requested ``TableDescriptor`` into the one that is stored: bucket count and bucket
keys resolved from the descriptor, the ``bucket.num``/``bucket.key`` properties and the server defaults.
Every failure is a ``FlussError`` whose message names the offending name, column or option.
"""

from __future__ import annotations

import re

from fluss.config_values import parse_duration_ms, parse_int
from fluss.errors import ErrorCode, FlussError
from fluss.metadata import TableDescriptor

NAME_PATTERN = re.compile(r"^[A-Za-z0-9_\-]+$")
MAX_NAME_LENGTH = 200

COMPRESSION_TYPES = ("ZSTD", "LZ4_FRAME", "NONE")
MERGE_ENGINES = ("first_row", "versioned", "aggregation")
CHANGELOG_IMAGES = ("FULL", "WAL")
DELETE_BEHAVIORS = ("ALLOW", "IGNORE", "DISABLE")


def check_name(kind: str, name: str, code: int) -> None:
    if not name:
        raise FlussError(f"{kind} name must not be empty", code)
    if len(name) > MAX_NAME_LENGTH:
        raise FlussError(f"{kind} name '{name[:40]}...' is longer than {MAX_NAME_LENGTH} characters", code)
    if not NAME_PATTERN.match(name):
        raise FlussError(f"{kind} name '{name}' is invalid: only letters, digits, '_' and '-' are allowed", code)


def check_database_name(name: str) -> None:
    check_name("Database", name, ErrorCode.INVALID_DATABASE_EXCEPTION)


def check_table_name(name: str) -> None:
    check_name("Table", name, ErrorCode.INVALID_TABLE_EXCEPTION)


def _invalid(msg: str) -> FlussError:
    return FlussError(msg, ErrorCode.INVALID_TABLE_EXCEPTION)


def resolve_table(desc: TableDescriptor, table: str, default_buckets: int, max_buckets: int) -> TableDescriptor:
    """Validates a descriptor and returns it with bucket count and bucket keys resolved."""
    columns = desc.get_schema().get_column_names()
    if not columns:
        raise _invalid(f"Table '{table}' must have at least one column")
    seen: set[str] = set()
    for name in columns:
        if not name or not name.strip():
            raise _invalid(f"Table '{table}' has a column with an empty name")
        if name in seen:
            raise _invalid(f"Table '{table}' has duplicate column '{name}'")
        seen.add(name)

    pks = desc.get_schema().get_primary_keys()
    _check_subset(table, "Primary key", pks, seen)
    if len(set(pks)) != len(pks):
        raise _invalid(f"Primary key of table '{table}' repeats a column: {pks}")
    _check_subset(table, "Partition key", desc.partition_keys, seen)
    if pks and desc.partition_keys:
        missing = [k for k in desc.partition_keys if k not in pks]
        if missing:
            raise _invalid(f"Partition key {missing} of primary-key table '{table}' must be part of the primary key {pks}")

    props = dict(desc.properties)
    bucket_keys = list(desc.bucket_keys)
    if not bucket_keys and props.get("bucket.key"):
        bucket_keys = [k.strip() for k in props["bucket.key"].split(",") if k.strip()]
    _check_subset(table, "Bucket key", bucket_keys, seen)
    if pks:
        physical_pk = [k for k in pks if k not in desc.partition_keys]
        if not bucket_keys:
            bucket_keys = physical_pk
        outside = [k for k in bucket_keys if k not in physical_pk]
        if outside:
            raise _invalid(f"Bucket key {outside} of table '{table}' must be part of the primary key "
                           f"(without partition keys): {physical_pk}")
    if desc.partition_keys and any(k in desc.partition_keys for k in bucket_keys):
        raise _invalid(f"Bucket key {bucket_keys} of table '{table}' must not contain partition keys")

    bucket_count = desc.bucket_count
    if bucket_count is None and props.get("bucket.num"):
        bucket_count = parse_int(props["bucket.num"], "bucket.num")
    if bucket_count is None:
        bucket_count = default_buckets
    if bucket_count < 1:
        raise FlussError(f"Bucket count of table '{table}' must be at least 1, got {bucket_count}",
                         ErrorCode.INVALID_TABLE_EXCEPTION)
    if bucket_count > max_buckets:
        raise FlussError(f"Bucket count {bucket_count} of table '{table}' exceeds max.bucket.num ({max_buckets})",
                         ErrorCode.BUCKET_MAX_NUM_EXCEPTION)
    _check_properties(table, props, seen)
    props.pop("bucket.num", None)
    props.pop("bucket.key", None)
    return TableDescriptor(
        desc.get_schema(), partition_keys=desc.partition_keys, bucket_count=bucket_count, bucket_keys=bucket_keys,
        comment=desc.comment, properties=props, custom_properties=desc.custom_properties,
    )


def _check_subset(table: str, what: str, keys: list[str], columns: set[str]) -> None:
    for k in keys:
        if k not in columns:
            raise _invalid(f"{what} column '{k}' of table '{table}' does not exist (columns: {sorted(columns)})")


def _check_properties(table: str, props: dict[str, str], columns: set[str]) -> None:
    def choice(key: str, allowed: tuple[str, ...], case_insensitive: bool = True) -> None:
        if key in props:
            value = props[key].upper() if case_insensitive else props[key]
            options = tuple(a.upper() for a in allowed) if case_insensitive else allowed
            if value not in options:
                raise FlussError(f"Invalid value '{props[key]}' for table option '{key}' of table '{table}' "
                                 f"(allowed: {', '.join(allowed)})", ErrorCode.INVALID_CONFIG_EXCEPTION)

    choice("table.log.arrow.compression.type", COMPRESSION_TYPES)
    choice("table.log.format", ("ARROW",))
    choice("table.merge-engine", MERGE_ENGINES)
    choice("table.changelog.image", CHANGELOG_IMAGES)
    choice("table.delete.behavior", DELETE_BEHAVIORS)
    for key in ("table.log.ttl", "table.log.local-ttl", "table.datalake.freshness"):
        if key in props:
            try:
                parse_duration_ms(props[key], key)
            except FlussError as e:
                raise FlussError(f"{e.message} of table '{table}'", ErrorCode.INVALID_CONFIG_EXCEPTION) from None
    for key in ("table.replication.factor", "table.log.arrow.compression.zstd.level"):
        if key in props:
            try:
                parse_int(props[key], key)
            except FlussError as e:
                raise FlussError(f"{e.message} of table '{table}'", ErrorCode.INVALID_CONFIG_EXCEPTION) from None
    ver = props.get("table.merge-engine.versioned.ver-column")
    if ver is not None and ver not in columns:
        raise FlussError(f"Version column '{ver}' of table '{table}' does not exist",
                         ErrorCode.INVALID_CONFIG_EXCEPTION)
