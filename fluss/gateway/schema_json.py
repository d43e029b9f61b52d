"""Table definitions between FIP-49 JSON and the client's ``TableDescriptor`` / ``TableInfo``.

Column types travel as FIP-49 type objects (``{"type": "DECIMAL", "precision": 10, "scale": 2}``, type roots
named as Fluss's Java ``DataTypeRoot``: ``INTEGER``, ``TIME_WITHOUT_TIME_ZONE``, ``TIMESTAMP_WITHOUT_TIME_ZONE``,
``TIMESTAMP_WITH_LOCAL_TIME_ZONE``); a table description also gives each column's type as Fluss prints it
(``"type": "DECIMAL(10, 2) NOT NULL"``). On input a column's ``data_type`` may be that text instead.
"""

from __future__ import annotations

import fluss
from fluss.errors import FlussError
from fluss.gateway.errors import UNSUPPORTED, GatewayError, invalid
from fluss.gateway.models import ColumnBody, CreateTableBody, DataTypeBody
from fluss.types import (
    BINARY,
    CHAR,
    DECIMAL,
    INT,
    TEMPORAL_PRECISION_ROOTS,
    TIME,
    TIMESTAMP,
    TIMESTAMP_LTZ,
    Column,
    DataType,
    RowSchema,
    parse_type,
)

#: Fluss type root -> FIP-49 type name (where they differ).
_FIP_NAMES = {INT: "INTEGER", TIME: "TIME_WITHOUT_TIME_ZONE", TIMESTAMP: "TIMESTAMP_WITHOUT_TIME_ZONE",
              TIMESTAMP_LTZ: "TIMESTAMP_WITH_LOCAL_TIME_ZONE"}
_FROM_FIP = {v: k for k, v in _FIP_NAMES.items()}
_NESTED = ("ARRAY", "MAP", "ROW", "MULTISET")


def type_to_json(t: DataType) -> dict:
    out: dict = {"type": _FIP_NAMES.get(t.root, t.root)}
    if t.root in (CHAR, BINARY):
        out["length"] = t.length
    elif t.root == DECIMAL:
        out["precision"], out["scale"] = t.precision, t.scale
    elif t.root in TEMPORAL_PRECISION_ROOTS:
        out["precision"] = t.precision
    return out


def type_from_json(body: DataTypeBody | str, nullable: bool, column: str) -> DataType:
    try:
        if isinstance(body, str):
            return parse_type(body).with_nullable(nullable)
        root = body.type.strip().upper()
        if root in _NESTED:
            raise GatewayError(UNSUPPORTED, f"column '{column}': {root} columns are not supported yet")
        root = _FROM_FIP.get(root, root)
        if root == "INTEGER":
            root = INT
        return DataType(root, nullable=nullable, length=body.length, precision=body.precision, scale=body.scale)
    except FlussError as e:
        raise invalid(f"column '{column}': {e.message}") from None


def column_to_json(c: Column) -> dict:
    out = {"name": c.name, "data_type": type_to_json(c.data_type), "nullable": c.data_type.nullable,
           "type": str(c.data_type)}
    if c.comment is not None:
        out["comment"] = c.comment
    return out


def table_to_json(info: fluss.TableInfo) -> dict:
    path = info.table_path
    return {
        "database": path.database_name,
        "table": path.table_name,
        "table_id": info.table_id,
        "schema_id": info.schema_id,
        "columns": [column_to_json(c) for c in info.row_schema.columns],
        "primary_key": info.get_primary_keys(),
        "partitioned_by": info.get_partition_keys(),
        "distribution": {"bucket_count": info.num_buckets, "bucket_keys": info.get_bucket_keys()},
        "configs": info.get_properties(),
        "custom_properties": info.get_custom_properties(),
        "comment": info.comment,
        "created_time": info.created_time,
        "modified_time": info.modified_time,
    }


def _column(body: ColumnBody, in_primary_key: bool) -> Column:
    if in_primary_key and body.nullable:
        raise invalid(f"primary-key column '{body.name}' cannot be nullable")
    nullable = not in_primary_key if body.nullable is None else body.nullable
    try:
        return Column(body.name, type_from_json(body.data_type, nullable, body.name), body.comment)
    except FlussError as e:
        raise invalid(e.message) from None


def descriptor_from_json(body: CreateTableBody) -> fluss.TableDescriptor:
    """The client's descriptor of a create-table body; client-side checks (columns, keys) raise 400 here."""
    pk = list(body.primary_key or [])
    names = [c.name for c in body.columns]
    for key in pk:
        if key not in names:
            raise invalid(f"primary-key column '{key}' is not among the columns ({', '.join(names)})")
    for key in body.partitioned_by:
        if key not in names:
            raise invalid(f"partition key '{key}' is not among the columns ({', '.join(names)})")
    reserved = [k for k in body.custom_properties if k.startswith("table.")]
    if reserved:
        raise invalid(f"custom property '{reserved[0]}' uses the reserved 'table.' prefix: put Fluss table "
                      "properties in 'configs'")
    try:
        schema = fluss.Schema.of(RowSchema([_column(c, c.name in pk) for c in body.columns], pk))
        distribution = body.distribution
        return fluss.TableDescriptor(
            schema,
            partition_keys=list(body.partitioned_by),
            bucket_count=distribution.bucket_count if distribution else None,
            bucket_keys=list(distribution.bucket_keys) if distribution else None,
            comment=body.comment,
            properties=dict(body.configs),
            custom_properties=dict(body.custom_properties),
        )
    except FlussError as e:
        raise invalid(e.message) from None
