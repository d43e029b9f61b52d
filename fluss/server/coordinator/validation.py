"""Checks of user-supplied names and table descriptors before anything is written to ZooKeeper.

``resolve_table`` turns a requested ``TableDescriptor`` into the one that is stored: bucket count and bucket
keys resolved from the descriptor, the ``bucket.num``/``bucket.key`` properties and the server defaults; its
table options are checked by the options registry (``fluss.table_options``) and by the same merge-engine code the
tablet servers run. ``check_metadata_size`` keeps what is stored within what one ZooKeeper node can hold.
Every failure is a ``FlussError`` whose message names the offending name, column or option.
"""

from __future__ import annotations

import re

from fluss.config_values import parse_int
from fluss.errors import ErrorCode, FlussError
from fluss.metadata import TableDescriptor
from fluss.server.coordinator.auto_partition import check_auto_partition
from fluss.server.kv.merge import MergeEngine, changelog_image_of
from fluss.table_options import validate_table_properties
from fluss.types import key_type_error

NAME_PATTERN = re.compile(r"^[A-Za-z0-9_\-]+$")
MAX_NAME_LENGTH = 200

#: Metadata limits: ZooKeeper refuses a request over ~1 MiB (jute.maxbuffer) by dropping the connection, so the
#: coordinator refuses oversized metadata first, with an error naming what is too large.
MAX_COMMENT_BYTES = 64 << 10
MAX_PROPERTY_KEY_LENGTH = 512
MAX_PROPERTY_VALUE_BYTES = 64 << 10
MAX_METADATA_BYTES = 512 << 10


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
    _check_properties(table, props, desc)
    props.update(check_auto_partition(props, desc.partition_keys, desc.get_schema().row_schema, table, creating=True))
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
    row_schema = desc.get_schema().row_schema
    for kind, keys in (("primary key", pks), ("bucket key", bucket_keys), ("partition key", desc.partition_keys)):
        for k in keys:
            error = key_type_error(kind, k, row_schema.column(k).data_type)
            if error is not None:
                raise FlussError(f"Table '{table}': {error.message}", error.error_code)

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


def _check_properties(table: str, props: dict[str, str], desc: TableDescriptor) -> None:
    """The registry's rules for every table option, then the tablet servers' own checks of the same properties
    (merge engine against the schema, changelog image), so a table the coordinator accepts always opens."""
    schema = desc.get_schema()
    has_pk = bool(schema.get_primary_keys())
    validate_table_properties(props, table, has_pk)
    if has_pk:
        try:
            MergeEngine.from_properties(props, schema.row_schema)
            changelog_image_of(props)
        except FlussError as e:
            raise FlussError(f"{e.message} (table '{table}')", e.error_code) from None


def check_metadata_size(what: str, comment: str | None, properties: dict[str, str], encoded_bytes: int) -> None:
    """Refuses metadata too large for one ZooKeeper node (ZooKeeper would drop the connection instead)."""
    comment_bytes = len((comment or "").encode())
    if comment_bytes > MAX_COMMENT_BYTES:
        raise FlussError(f"The comment of {what} is {comment_bytes} bytes; at most {MAX_COMMENT_BYTES} are allowed",
                         ErrorCode.INVALID_CONFIG_EXCEPTION)
    for key, value in properties.items():
        if len(key) > MAX_PROPERTY_KEY_LENGTH:
            raise FlussError(f"Property key '{key[:40]}...' of {what} is longer than {MAX_PROPERTY_KEY_LENGTH} "
                             "characters", ErrorCode.INVALID_CONFIG_EXCEPTION)
        if len(value.encode()) > MAX_PROPERTY_VALUE_BYTES:
            raise FlussError(f"The value of property '{key}' of {what} is {len(value.encode())} bytes; at most "
                             f"{MAX_PROPERTY_VALUE_BYTES} are allowed", ErrorCode.INVALID_CONFIG_EXCEPTION)
    if encoded_bytes > MAX_METADATA_BYTES:
        raise FlussError(f"The metadata of {what} (schema, comments and properties) is {encoded_bytes} bytes; at "
                         f"most {MAX_METADATA_BYTES} are allowed", ErrorCode.INVALID_CONFIG_EXCEPTION)
