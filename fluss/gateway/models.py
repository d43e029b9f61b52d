"""Request and response bodies of the REST API (pydantic models: they are the OpenAPI schemas too).

Shapes follow FIP-49 (apache/fluss ``fluss-gateway/openapi.yaml``) where it defines them - list responses with
``next_page_token``, ``CreateTableBody``, ``TableResponse``, the write body with ``entries`` and
``partial_update_columns``, ``WriteResponse`` - and extend them where this gateway does more (reads, offsets,
stats, lake snapshots, idempotent writes). Extra fields on a FIP-49 shape are additive: a FIP-49 client ignores
them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

_STRICT = ConfigDict(extra="forbid")


class HealthResponse(BaseModel):
    status: str
    uptime_ms: int = Field(ge=0, description="Milliseconds since the gateway process started.")


class ReadyResponse(BaseModel):
    status: str


class ClustersResponse(BaseModel):
    """The configured cluster ids, in lexical order (a configuration echo: no connection is touched)."""

    clusters: list[str]


class ErrorDetail(BaseModel):
    row: int = Field(description="Index of the row (write entry, lookup key) in the request.")
    column: str | None = None
    reason: str


class ErrorBody(BaseModel):
    code: str = Field(description="Stable snake_case error code (see docs/gateway.md).")
    message: str
    request_id: str = Field(description="The x-request-id of the request.")
    details: list[ErrorDetail] | None = Field(None, description="Per-row problems of a rejected body.")


class ErrorEnvelope(BaseModel):
    """REST error envelope: ``{"error": {"code", "message", "request_id"}}``."""

    error: ErrorBody


# ----------------------------------------------------------------------------------------------- databases

class DatabasesResponse(BaseModel):
    databases: list[str]
    next_page_token: str | None = Field(None, description="Present only while more entries follow.")


class CreateDatabaseBody(BaseModel):
    model_config = _STRICT
    database: str = Field(min_length=1)
    comment: str | None = None
    custom_properties: dict[str, str] | None = None


class DatabaseResponse(BaseModel):
    database: str
    comment: str | None = None
    custom_properties: dict[str, str] = Field(default_factory=dict)
    created_time: int | None = None
    modified_time: int | None = None


# ----------------------------------------------------------------------------------------------- tables

class DataTypeBody(BaseModel):
    """A Fluss column type: ``type`` is the type root (FIP-49 names: ``INTEGER``, ``TIMESTAMP_WITHOUT_TIME_ZONE``,
    ... - Fluss's short names ``INT``, ``TIMESTAMP``, ``TIMESTAMP_LTZ``, ``TIME`` are accepted too); ``length``,
    ``precision`` and ``scale`` as the type takes them. Nullability belongs to the column."""

    model_config = _STRICT
    type: str
    length: int | None = Field(None, ge=1)
    precision: int | None = Field(None, ge=0, le=38)
    scale: int | None = Field(None, ge=0, le=38)


class ColumnBody(BaseModel):
    model_config = _STRICT
    name: str = Field(min_length=1)
    data_type: DataTypeBody | str = Field(description="A type object, or Fluss's type text such as 'DECIMAL(10, 2)'.")
    nullable: bool | None = Field(None, description="Primary-key columns default to false and reject true; "
                                                    "other columns default to true.")
    comment: str | None = None


class DistributionBody(BaseModel):
    model_config = _STRICT
    bucket_count: int | None = Field(None, ge=1)
    bucket_keys: list[str] = Field(default_factory=list)


class CreateTableBody(BaseModel):
    model_config = _STRICT
    table_name: str = Field(min_length=1)
    columns: list[ColumnBody] = Field(min_length=1)
    primary_key: list[str] | None = Field(None, description="Primary-key columns; omit for a log table.")
    partitioned_by: list[str] = Field(default_factory=list)
    distribution: DistributionBody | None = None
    comment: str | None = None
    configs: dict[str, str] = Field(default_factory=dict, description="Fluss table properties (table.*).")
    custom_properties: dict[str, str] = Field(default_factory=dict)
    validate_only: bool = Field(False, description="Build and validate the definition without creating it.")


class AddColumnChange(BaseModel):
    model_config = _STRICT
    kind: Literal["add_column"]
    name: str = Field(min_length=1)
    data_type: DataTypeBody | str = Field(description="A type object, or Fluss's type text such as 'INT'.")
    comment: str | None = None


class SetConfigChange(BaseModel):
    model_config = _STRICT
    kind: Literal["set_config"]
    key: str = Field(min_length=1, description="A Fluss table option (table.*) or a custom property.")
    value: str


class ResetConfigChange(BaseModel):
    model_config = _STRICT
    kind: Literal["reset_config"]
    key: str = Field(min_length=1, description="Removes the explicitly configured value.")


class AlterTableBody(BaseModel):
    """Body of ``PATCH .../tables/{table}``: changes applied together (one schema id for the added columns)."""

    model_config = _STRICT
    changes: list[Annotated[AddColumnChange | SetConfigChange | ResetConfigChange, Field(discriminator="kind")]] = \
        Field(min_length=1, description="An added column must be nullable: existing rows have no value for it. "
                                        "Keys under 'table.' are Fluss table options, others custom properties.")


class ColumnResponse(BaseModel):
    name: str
    data_type: dict[str, Any]
    nullable: bool
    type: str = Field(description="The column type as Fluss prints it, e.g. 'DECIMAL(10, 2) NOT NULL'.")
    comment: str | None = None


class DistributionResponse(BaseModel):
    bucket_count: int
    bucket_keys: list[str]


class TableResponse(BaseModel):
    database: str
    table: str
    table_id: int
    schema_id: int
    columns: list[ColumnResponse]
    primary_key: list[str]
    partitioned_by: list[str]
    distribution: DistributionResponse
    configs: dict[str, str]
    custom_properties: dict[str, str]
    comment: str | None = None
    created_time: int
    modified_time: int


class ValidateOnlyResponse(BaseModel):
    validate_only: bool
    database: str
    table: str
    column_count: int
    primary_key: list[str]


class TablesResponse(BaseModel):
    tables: list[str]
    next_page_token: str | None = None


# ----------------------------------------------------------------------------------------------- partitions

class PartitionEntry(BaseModel):
    name: str = Field(description="Fluss partition name (values in partition-key order joined by '$').")
    partition: dict[str, str]
    partition_id: int


class PartitionsResponse(BaseModel):
    partitions: list[PartitionEntry]
    next_page_token: str | None = None


class CreatePartitionBody(BaseModel):
    model_config = _STRICT
    partition: dict[str, str]


class PartitionResponse(BaseModel):
    database: str
    table: str
    partition: dict[str, str]
    name: str


# ----------------------------------------------------------------------------------------------- offsets etc.

class BucketOffset(BaseModel):
    partition: str | None = Field(None, description="Partition name (partitioned tables).")
    bucket: int
    offset: int


class OffsetsResponse(BaseModel):
    spec: str
    offsets: list[BucketOffset]


class StatsResponse(BaseModel):
    row_count: int


class LakeSnapshotResponse(BaseModel):
    snapshot_id: int
    commit_time: int
    offsets: list[BucketOffset] = Field(description="Per bucket: the next Fluss offset the lake does not hold.")


# ----------------------------------------------------------------------------------------------- writes

class WriteEntry(BaseModel):
    """One entry: exactly one of ``append``, ``upsert``, ``delete``, whose value is the row object."""

    model_config = _STRICT
    id: str | None = Field(None, description="Caller correlation value echoed by the outcome (default: the "
                                             "entry's index).")
    append: dict[str, Any] | None = None
    upsert: dict[str, Any] | None = None
    delete: dict[str, Any] | None = None


class WriteBody(BaseModel):
    model_config = _STRICT
    entries: list[WriteEntry] = Field(min_length=1)
    partial_update_columns: list[str] | None = Field(
        None, min_length=1, description="Columns every upsert of the request writes (primary-key tables; must "
                                        "include the primary key); other columns keep their stored values.")


class WriteSuccess(BaseModel):
    id: str


class WriteFailure(BaseModel):
    id: str
    error_code: str
    message: str


class WriteResponse(BaseModel):
    """Ordered entry outcomes, sent only once every entry's outcome is known (acknowledged per ``acks``)."""

    row_count: int
    success_count: int
    error_count: int
    successes: list[WriteSuccess]
    failures: list[WriteFailure]
    acks: str = Field(description="What a success means: 'all' = in every in-sync replica, '1' = on the leader.")
    idempotency_key: str | None = Field(None, description="The Idempotency-Key the write was made under.")
    replayed: bool = Field(False, description="True when an earlier attempt with this key already wrote the "
                                              "rows and this answer repeats its outcome.")


class ArrowWriteResponse(BaseModel):
    row_count: int
    operation: Literal["append", "upsert", "delete"]
    acks: str
    idempotency_key: str | None = None
    replayed: bool = False


# ----------------------------------------------------------------------------------------------- reads

class LookupBody(BaseModel):
    model_config = _STRICT
    keys: list[dict[str, Any]] = Field(min_length=1, description="Primary-key values by column name (for a "
                                                                 "partitioned table including the partition keys).")
    columns: list[str] | None = Field(None, description="Columns to return (default: all).")


class LookupResponse(BaseModel):
    rows: list[dict[str, Any] | None] = Field(description="One entry per key, in key order; null when absent.")
    found: int


class PrefixLookupBody(BaseModel):
    model_config = _STRICT
    prefixes: list[dict[str, Any]] = Field(min_length=1, description="Values of the lookup columns: the bucket "
                                                                     "key (+ partition keys) by column name.")
    columns: list[str] | None = None
    limit: int | None = Field(None, ge=1)


class PrefixLookupResponse(BaseModel):
    results: list[list[dict[str, Any]]] = Field(description="Per prefix, in order: the matching rows.")
    row_count: int
    truncated: bool = False


class ScanBucketBody(BaseModel):
    model_config = _STRICT
    bucket: int = Field(ge=0)
    partition: str | None = None
    offset: int | None = Field(None, ge=0, description="Start offset (default: the request's 'from').")


class ScanBody(BaseModel):
    model_config = _STRICT
    buckets: list[ScanBucketBody] | None = Field(
        None, description="Buckets and their start offsets (default: every bucket of the table, or of "
                          "'partitions').")
    partitions: list[str] | None = None
    start: Literal["earliest", "latest"] | None = Field(None, description="Start of buckets without an offset "
                                                                           "(default earliest).")
    timestamp: int | None = Field(None, ge=0, description="Start buckets without an offset at the first record "
                                                          "committed at or after this epoch-millisecond time.")
    limit: int = Field(1000, ge=1)
    columns: list[str] | None = None


class ScanRecordOut(BaseModel):
    partition: str | None = None
    bucket: int
    offset: int
    change_type: str
    timestamp: int
    row: dict[str, Any]


class ScanResponse(BaseModel):
    records: list[ScanRecordOut]
    row_count: int
    next_offsets: list[BucketOffset] = Field(description="Where each bucket continues: pass them back as "
                                                         "'buckets' to read the next page.")
    end_offsets: list[BucketOffset] = Field(description="The high watermark of each bucket when the scan began.")
    complete: bool = Field(description="True when every bucket was read up to its end offset.")


class UnionReadBody(BaseModel):
    model_config = _STRICT
    limit: int = Field(1000, ge=1)
    columns: list[str] | None = None
    partitions: list[str] | None = None


class UnionReadResponse(BaseModel):
    rows: list[dict[str, Any]]
    row_count: int
    truncated: bool
    lake_snapshot_id: int | None = None
