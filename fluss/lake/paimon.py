"""The Paimon side of the lake: table mapping, bucket-exact writes and the idempotent, offset-recording commit.

Table mapping (a lake-enabled Fluss table ``db.t`` ↔ the Paimon table ``db.t`` in the filesystem catalog):

* Columns and types: the Fluss row schema's Arrow form (``fluss.types``) converted by pypaimon; CHAR(n) becomes
  STRING, TIMESTAMP/TIMESTAMP_LTZ keep the precision of their Arrow unit (0, 3, 6 or 9) and TIME(p) becomes
  TIME(min(p, 3)) (Paimon stores TIME as milliseconds of the day; finer values are truncated).
* Primary key, partition keys: the same. ``bucket`` = the Fluss bucket count; ``bucket-key`` = the Fluss bucket
  key (for a log table without one: its first non-partition column - rows are never re-hashed by us, see below,
  so this only matters to foreign writers).
* Primary-key tables get one extra STRING column, :data:`ROW_KIND_COLUMN` (``__row_kind``), declared as Paimon's
  ``rowkind.field``: the tiering job writes the Fluss changelog (+I, +U, -D; -U is dropped, the +U that follows
  replaces the row) and Paimon's merge turns -D into a deletion. Readers see ``+I``/``+U`` in it;
  :func:`read_lake` drops it.

Writes name the bucket (``TableWrite.write_arrow(batch, bucket=b)``): a Fluss bucket's records go to the same
Paimon bucket, with no re-hashing, so the Fluss bucket function never has to be reimplemented for Paimon. The
records of a Fluss partition go to the Paimon partition of the same values (every row of a Fluss partition
holds its partition values; the Paimon partition is named once per batch, not extracted row by row).

Commits use the fixed commit user :data:`COMMIT_USER` and put the Fluss progress into the snapshot properties:
``fluss.table-id``, ``fluss.offsets`` (JSON ``{"<partition_id>:<bucket>": next offset to tier}``, for every
bucket ever tiered, not only those in this commit), ``fluss.max-timestamps`` (same keys). The latest such
snapshot is therefore the authoritative tiering progress; the coordinator's lake snapshot is a copy reported
after the commit. :meth:`PaimonLake.tiered_progress` reads it back.

pypaimon 2.1 writes ``delete_row_count = 0`` into the metadata of primary-key data files even when they hold
deletions, which lets readers take the "raw" path and return -D rows. :meth:`LakeWriter.commit` counts the
deletions of the files it wrote and fixes the metadata before committing.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from fluss.errors import ErrorCode, FlussError
from fluss.lake.config import (
    PAIMON,
    TABLE_LAKE_PREFIX,
    is_lake_enabled,
    lake_format,
    paimon_catalog_options,
)
from fluss.metadata import TableInfo, TablePath
from fluss.types import TIME

log = logging.getLogger(__name__)

COMMIT_USER = "fluss-tiering"
ROW_KIND_COLUMN = "__row_kind"

SNAPSHOT_TABLE_ID = "fluss.table-id"
SNAPSHOT_OFFSETS = "fluss.offsets"
SNAPSHOT_MAX_TIMESTAMPS = "fluss.max-timestamps"

#: How many snapshots back :meth:`PaimonLake.tiered_progress` looks for the latest tiering commit (snapshots by
#: other writers, e.g. a compaction, may sit on top of it).
MAX_SNAPSHOTS_SCANNED = 50

# Fluss change types (fluss.record.change_type) → Paimon row-kind strings; -U (2) is dropped.
_APPEND_ONLY, _INSERT, _UPDATE_BEFORE, _UPDATE_AFTER, _DELETE = 0, 1, 2, 3, 4
_ROW_KINDS = np.array(["+I", "+I", "-U", "+U", "-D"], dtype=object)
# Paimon _VALUE_KIND bytes of retractions (UPDATE_BEFORE, DELETE).
_PAIMON_RETRACT_KINDS = pa.array([1, 3], pa.int8())

BucketKey = tuple[int, int]  # (partition_id or -1, bucket)


def bucket_key_str(key: BucketKey) -> str:
    return f"{key[0]}:{key[1]}"


def parse_bucket_key(text: str) -> BucketKey:
    pid, bucket = text.split(":")
    return int(pid), int(bucket)


@dataclass
class TieredProgress:
    """The Fluss progress recorded in a Paimon snapshot by the tiering job."""

    snapshot_id: int
    table_id: int
    offsets: dict[BucketKey, int] = field(default_factory=dict)
    max_timestamps: dict[BucketKey, int] = field(default_factory=dict)
    commit_time: int = 0


def paimon_arrow_schema(info: TableInfo) -> pa.Schema:
    """The Arrow schema of the Paimon table for this Fluss table (with :data:`ROW_KIND_COLUMN` for PK tables)."""
    schema = info.row_schema.to_arrow()
    schema = pa.schema([pa.field(f.name, f.type, f.nullable) for f in schema])  # drop fluss.type metadata
    if info.has_primary_key():
        schema = schema.append(pa.field(ROW_KIND_COLUMN, pa.string(), nullable=True))
    return schema


def paimon_table_options(info: TableInfo) -> dict[str, str]:
    bucket_keys = info.get_bucket_keys()
    if not bucket_keys and not info.has_primary_key():
        # Paimon needs a bucket key for a bucketed append table, and not a partition key
        partition_keys = set(info.get_partition_keys())
        bucket_keys = [c for c in info.get_column_names() if c not in partition_keys][:1]
    options = {"bucket": str(info.num_buckets)}
    if bucket_keys:
        options["bucket-key"] = ",".join(bucket_keys)
    if info.has_primary_key():
        options["rowkind.field"] = ROW_KIND_COLUMN
    return options


class PaimonLake:
    """A Paimon filesystem catalog holding the lake tables of one Fluss cluster."""

    def __init__(self, catalog_options: Mapping[str, str]) -> None:
        from pypaimon import CatalogFactory

        self.catalog_options = dict(catalog_options)
        self.catalog = CatalogFactory.create(self.catalog_options)

    @classmethod
    def from_server_options(cls, server_options: Mapping[str, str]) -> PaimonLake:
        fmt = lake_format(server_options)
        if fmt != PAIMON:
            raise FlussError(f"datalake.format is {fmt!r}: only 'paimon' is supported",
                             ErrorCode.LAKE_STORAGE_NOT_CONFIGURED_EXCEPTION)
        return cls(paimon_catalog_options(server_options))

    @classmethod
    def from_warehouse(cls, warehouse: str) -> PaimonLake:
        return cls(paimon_catalog_options({"datalake.paimon.warehouse": warehouse}))

    @staticmethod
    def identifier(path: TablePath) -> str:
        return f"{path.database_name}.{path.table_name}"

    # ------------------------------------------------------------ tables

    def create_table(self, info: TableInfo) -> None:
        """Creates the Paimon table for ``info``; an existing empty table with the same columns is reused.

        Raises LAKE_TABLE_ALREADY_EXIST when a table of that name exists with other columns or with data (its
        data would otherwise show up in the new table's Union Read).
        """
        from pypaimon import Schema
        from pypaimon.catalog.catalog_exception import TableNotExistException

        ident = self.identifier(info.table_path)
        expected = paimon_arrow_schema(info)
        try:
            existing = self.catalog.get_table(ident)
        except TableNotExistException:
            existing = None
        if existing is not None:
            if self._arrow_schema(existing).names != expected.names:
                raise FlussError(f"Lake table '{ident}' already exists with columns "
                                 f"{self._arrow_schema(existing).names}, expected {expected.names}",
                                 ErrorCode.LAKE_TABLE_ALREADY_EXIST)
            if existing.snapshot_manager().get_latest_snapshot() is not None:
                raise FlussError(f"Lake table '{ident}' already exists and holds data (of a dropped Fluss table?): "
                                 f"drop it from the Paimon warehouse or use another name",
                                 ErrorCode.LAKE_TABLE_ALREADY_EXIST)
            return  # an empty lake table of the same shape (e.g. a create that failed later): reuse it
        self.catalog.create_database(info.table_path.database_name, True)
        schema = Schema.from_pyarrow_schema(
            expected, partition_keys=info.get_partition_keys() or None,
            primary_keys=info.get_primary_keys() or None, options=paimon_table_options(info),
            comment=info.comment)
        _fix_time_precision(schema.fields, info)
        self.catalog.create_table(ident, schema, True)
        log.info("created lake table %s (%d buckets) in %s", ident, info.num_buckets,
                 self.catalog_options.get("warehouse"))

    def get_table(self, path: TablePath):
        from pypaimon.catalog.catalog_exception import TableNotExistException

        try:
            return self.catalog.get_table(self.identifier(path))
        except TableNotExistException:
            raise FlussError(f"Lake table '{path}' does not exist in the Paimon warehouse "
                             f"{self.catalog_options.get('warehouse')}", ErrorCode.TABLE_NOT_EXIST) from None

    @staticmethod
    def _arrow_schema(table) -> pa.Schema:
        from pypaimon.schema.data_types import PyarrowFieldParser

        return PyarrowFieldParser.from_paimon_schema(table.table_schema.fields)

    # ------------------------------------------------------------ progress and reads

    def tiered_progress(self, path: TablePath, table_id: int) -> TieredProgress | None:
        """The progress recorded by the latest tiering commit of this Fluss table id, or None."""
        manager = self.get_table(path).snapshot_manager()
        snapshot = manager.get_latest_snapshot()
        for _ in range(MAX_SNAPSHOTS_SCANNED):
            if snapshot is None:
                return None
            props = snapshot.properties or {}
            if snapshot.commit_user == COMMIT_USER and SNAPSHOT_TABLE_ID in props:
                if int(props[SNAPSHOT_TABLE_ID]) != table_id:
                    return None  # progress of an earlier Fluss table of the same name
                return TieredProgress(
                    snapshot_id=snapshot.id, table_id=table_id,
                    offsets={parse_bucket_key(k): int(v) for k, v in json.loads(props[SNAPSHOT_OFFSETS]).items()},
                    max_timestamps={parse_bucket_key(k): int(v)
                                    for k, v in json.loads(props.get(SNAPSHOT_MAX_TIMESTAMPS, "{}")).items()},
                    commit_time=int(snapshot.time_millis or 0))
            if snapshot.id <= 1:
                return None
            snapshot = manager.get_snapshot_by_id(snapshot.id - 1)
        return None

    def read(self, path: TablePath, snapshot_id: int | None = None,
             partitions: list[Mapping[str, str]] | None = None, bucket: int | None = None) -> pa.Table:
        """The lake table's rows (at ``snapshot_id`` if given), without :data:`ROW_KIND_COLUMN`.

        ``partitions`` (partition specs) prunes the scan on the string-typed partition keys; the result may still
        hold rows of other partitions when some keys are not strings (callers filter exactly). ``bucket``: only
        that Paimon bucket (= Fluss bucket).
        """
        table = self.get_table(path)
        if snapshot_id is not None:
            table = table.copy({"scan.snapshot-id": str(snapshot_id)})
        builder = table.new_read_builder()
        if partitions is not None:
            predicate = _partition_predicate(builder, table, partitions)
            if predicate is not None:
                builder = builder.with_filter(predicate)
        splits = builder.new_scan().plan().splits()
        if bucket is not None:
            splits = [s for s in splits if s.bucket == bucket]
        result = builder.new_read().to_arrow(splits) if splits else None
        if result is None:
            result = self._arrow_schema(table).empty_table()
        if ROW_KIND_COLUMN in result.column_names:
            result = result.drop_columns([ROW_KIND_COLUMN])
        return result

    def new_writer(self, info: TableInfo) -> LakeWriter:
        return LakeWriter(self, info)


def _fix_time_precision(fields, info: TableInfo) -> None:
    """TIME(p) for pypaimon's TIME(0): Paimon stores TIME as milliseconds of the day, so p = min(Fluss p, 3)."""
    from pypaimon.schema.data_types import AtomicType

    by_name = {c.name: c.data_type for c in info.row_schema.columns}
    for f in fields:
        t = by_name.get(f.name)
        if t is not None and t.root == TIME:
            f.type = AtomicType(f"TIME({min(t.precision or 0, 3)})", f.type.nullable)


def _partition_predicate(builder, table, partitions: list[Mapping[str, str]]):
    """``OR`` over the specs of ``AND`` over their string-typed keys; None when that would not prune anything."""
    from pypaimon.common.predicate_builder import PredicateBuilder

    string_keys = [f.name for f in table.table_schema.fields
                   if f.name in table.partition_keys and str(f.type).split("(")[0].split(" ")[0]
                   in ("STRING", "VARCHAR", "CHAR")]
    factory = builder.new_predicate_builder()
    alternatives = []
    for spec in partitions:
        terms = [factory.equal(k, spec[k]) for k in string_keys if k in spec]
        if not terms:
            return None  # this spec matches everything the pushdown could express
        alternatives.append(PredicateBuilder.and_predicates(terms))
    return PredicateBuilder.or_predicates(alternatives) if alternatives else None


class LakeWriter:
    """Writes Fluss log batches of one table into Paimon, bucket by bucket, then commits them once."""

    def __init__(self, lake: PaimonLake, info: TableInfo) -> None:
        self.info = info
        self.table = lake.get_table(info.table_path)
        self.schema = PaimonLake._arrow_schema(self.table)
        self._builder = self.table.new_stream_write_builder()._with_commit_user(COMMIT_USER)
        self._write = self._builder.new_write()
        self._pk = info.has_primary_key()
        self._partition_keys = info.get_partition_keys()
        self.rows_written = 0

    def write(self, bucket: int, batch: pa.RecordBatch, change_types: np.ndarray | None) -> None:
        """Writes one Fluss log batch of ``bucket`` (``change_types``: Fluss change type bytes per row)."""
        if self._pk:
            kinds = _ROW_KINDS[np.asarray(change_types, dtype=np.int64)]
            keep = np.asarray(change_types) != _UPDATE_BEFORE
            if not keep.all():
                batch = batch.filter(pa.array(keep))
                kinds = kinds[keep]
            if batch.num_rows == 0:
                return
            batch = batch.append_column(ROW_KIND_COLUMN, pa.array(kinds, pa.string()))
        if batch.num_rows == 0:
            return
        if self._partition_keys:
            self._write_partition(bucket, self._conform(batch))
        else:
            self._write.write_arrow(self._conform(batch), bucket=bucket)
        self.rows_written += batch.num_rows

    def _write_partition(self, bucket: int, batch: pa.RecordBatch) -> None:
        """Writes rows of one Fluss partition: they all hold its partition values, so the Paimon partition is
        named once (pypaimon 2.1's bucket-given write extracts it row by row, a Python loop per row)."""
        columns = [batch.column(k) for k in self._partition_keys]
        write = self._write
        private = hasattr(write, "_prepare_arrow_data") and hasattr(write, "_write_partition_bucket_batch")
        if not private or any(pc.count_distinct(c, mode="all").as_py() != 1 for c in columns):
            write.write_arrow(batch, bucket=bucket)  # the public path (rejects a batch of mixed partitions)
            return
        if not 0 <= bucket < self.info.num_buckets:
            raise ValueError(f"bucket {bucket} out of range [0, {self.info.num_buckets})")
        data = write._prepare_arrow_data(batch)
        if data.num_rows:
            write._write_partition_bucket_batch(tuple(c[0].as_py() for c in columns), bucket, data)

    def _conform(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        arrays = []
        for f in self.schema:
            col = batch.column(f.name)
            # TIME is milliseconds in Paimon: finer Fluss TIME values are truncated
            arrays.append(col if col.type == f.type else col.cast(f.type, safe=not pa.types.is_time(f.type)))
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def commit(self, offsets: dict[BucketKey, int], max_timestamps: dict[BucketKey, int],
               previous: TieredProgress | None) -> int:
        """Commits everything written with the given progress (all buckets) and returns the snapshot id."""
        identifier = (previous.snapshot_id if previous else 0) + 1
        messages = self._write.prepare_commit(identifier)
        if self._pk:
            _fix_delete_row_counts(messages)
        props = {SNAPSHOT_TABLE_ID: str(self.info.table_id),
                 SNAPSHOT_OFFSETS: json.dumps({bucket_key_str(k): v for k, v in sorted(offsets.items())}),
                 SNAPSHOT_MAX_TIMESTAMPS: json.dumps({bucket_key_str(k): v
                                                      for k, v in sorted(max_timestamps.items())})}
        committer = self._builder.new_commit()
        try:
            committer.commit(messages, identifier, snapshot_properties=props)
        finally:
            committer.close()
        latest = self.table.snapshot_manager().get_latest_snapshot()
        return int(latest.id)

    def close(self) -> None:
        try:
            self._write.close()
        except Exception:  # noqa: BLE001 - closing after a failure must not hide it
            log.debug("closing the lake writer failed", exc_info=True)


def _fix_delete_row_counts(messages) -> None:
    for message in messages:
        for meta in message.new_files:
            path = meta.file_path
            if not path:
                continue
            fs, fs_path = fsspec.core.url_to_fs(path)
            kinds = pq.read_table(fs_path, columns=["_VALUE_KIND"], filesystem=fs).column(0)
            meta.delete_row_count = int(pc.sum(pc.is_in(kinds, _PAIMON_RETRACT_KINDS).cast(pa.int64())).as_py() or 0)


# ---------------------------------------------------------------- the lake catalog of the coordinator

class PaimonLakeCatalog:
    """The ``paimon`` lake format of ``fluss.lake.catalog``: creates the Paimon table of a lake-enabled table (run
    by the coordinator's lake catalog worker, never in the coordinator process itself)."""

    def __init__(self, server_options: Mapping[str, str]) -> None:
        self.lake = PaimonLake.from_server_options(server_options)

    def create_table(self, info: TableInfo) -> None:
        if not is_lake_enabled(info):
            return
        self.lake.create_table(info)


def lake_of_table(info: TableInfo, warehouse: str | None = None) -> PaimonLake:
    """The lake of a table: ``warehouse`` if given, else the catalog options recorded in its properties."""
    if warehouse is not None:
        return PaimonLake.from_warehouse(warehouse)
    props = info.get_properties()
    options = {k[len(TABLE_LAKE_PREFIX):]: v for k, v in props.items() if k.startswith(TABLE_LAKE_PREFIX)}
    if "warehouse" not in options:
        raise FlussError(f"Table '{info.table_path}' records no lake warehouse ({TABLE_LAKE_PREFIX}warehouse); "
                         f"pass the warehouse explicitly", ErrorCode.LAKE_STORAGE_NOT_CONFIGURED_EXCEPTION)
    return PaimonLake(options)


__all__ = ["COMMIT_USER", "ROW_KIND_COLUMN", "LakeWriter", "PaimonLake", "PaimonLakeCatalog", "TieredProgress",
           "lake_of_table", "paimon_arrow_schema"]
