"""The Paimon side of the lake: table mapping, bucket-exact writes and the idempotent, offset-recording commit.

Table mapping (a lake-enabled Fluss table ``db.t`` ↔ the Paimon table ``db.t`` in the filesystem catalog), so that
Paimon and every engine on it treat the lake table as a normal Paimon table:

* Columns and types: the Fluss row schema's Arrow form (``fluss.types``) converted by pypaimon; CHAR(n) becomes
  STRING, TIMESTAMP/TIMESTAMP_LTZ keep the precision of their Arrow unit (0, 3, 6 or 9) and TIME(p) becomes
  TIME(min(p, 3)) (Paimon stores TIME as milliseconds of the day; finer values are truncated). ARRAY, MAP and ROW
  become Paimon's ARRAY, MAP and ROW with the same nullability at every level, the same rules applying inside.
  Then the system
  columns Fluss adds to lake tables, :data:`SYSTEM_COLUMNS`: ``__bucket`` INT (the Fluss bucket), ``__offset``
  BIGINT (the record's log offset) and ``__timestamp`` TIMESTAMP_LTZ(3) (its batch commit time); a Fluss table
  may not have columns of these names.
* Primary key and partition keys: the same. A table with a bucket key (every primary-key table, and log tables
  with ``bucket.key``) is a fixed-bucket Paimon table: ``bucket`` = the Fluss bucket count, ``bucket-key`` = the
  Fluss bucket key. Its rows are routed by Paimon's own bucket function (``table.bucket.function = paimon``,
  ``fluss.key.paimon_row``), so Fluss bucket ``b`` is Paimon bucket ``b``: Paimon's bucket pruning on key
  filters, its writers and its compaction agree with the tiering job. A log table without a bucket key (rows
  spread sticky or round-robin) is a bucket-unaware append table (``bucket = -1``); ``__bucket`` says which
  Fluss bucket a row came from.
* Merge engine (``table.merge-engine``): unset → Paimon's ``deduplicate``; ``first_row`` → ``first-row``;
  ``versioned`` → ``deduplicate`` with ``sequence.field`` = the version column; ``aggregation`` →
  ``deduplicate``: the changelog the job tiers holds Fluss's merged rows (a Paimon-side aggregation would add
  them up again), so the lake keeps the last one.
* Table properties ``paimon.<option>`` are Paimon options of the lake table (as in Fluss), except those the
  mapping sets (:data:`FLUSS_SET_OPTIONS`).
* Primary-key tables get one more STRING column after the system columns, :data:`ROW_KIND_COLUMN`
  (``__row_kind``), declared as Paimon's ``rowkind.field``: the tiering job writes the Fluss changelog (+I, +U,
  -D; -U is dropped, the +U that follows replaces the row) and Paimon's merge turns -D into a deletion.
  Readers see ``+I``/``+U`` in it; :meth:`PaimonLake.read` drops it (and the system columns unless asked).

Lake tables created before this layout (no system columns, ``bucket-key`` = the first column of a log table,
tables routed with the ``default`` bucket function) keep working: writers and readers go by the columns the
Paimon table has.

Writes name the bucket (``TableWrite.write_arrow(batch, bucket=b)``): a Fluss bucket's records go to the same
Paimon bucket, with no re-hashing (the server already checked each row's bucket). The records of a Fluss
partition go to the Paimon partition of the same values (every row of a Fluss partition holds its partition
values; the Paimon partition is named once per batch, not extracted row by row).

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

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from fluss.errors import ErrorCode, FlussError
from fluss.fs import filesystem
from fluss.key.bucket_function import PAIMON as PAIMON_BUCKETING
from fluss.key.bucket_function import bucketing_of
from fluss.lake.config import (
    PAIMON,
    TABLE_LAKE_PREFIX,
    TABLE_PAIMON_OPTION_PREFIX,
    is_lake_enabled,
    lake_format,
    paimon_catalog_options,
)
from fluss.metadata import TableInfo, TablePath
from fluss.types import ARRAY, MAP, ROW, TIME

log = logging.getLogger(__name__)

COMMIT_USER = "fluss-tiering"
ROW_KIND_COLUMN = "__row_kind"
BUCKET_COLUMN = "__bucket"
OFFSET_COLUMN = "__offset"
TIMESTAMP_COLUMN = "__timestamp"
#: The system columns Fluss adds at the end of a lake table (before ``__row_kind``), with their Arrow types.
SYSTEM_COLUMNS = (
    pa.field(BUCKET_COLUMN, pa.int32()),
    pa.field(OFFSET_COLUMN, pa.int64()),
    pa.field(TIMESTAMP_COLUMN, pa.timestamp("ms", tz="UTC")),
)
SYSTEM_COLUMN_NAMES = frozenset(f.name for f in SYSTEM_COLUMNS)
#: Paimon options the table mapping sets: a ``paimon.*`` table property may not set them.
FLUSS_SET_OPTIONS = frozenset({"bucket", "bucket-key", "path", "primary-key", "partition", "rowkind.field",
                               "merge-engine", "sequence.field"})

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
    """The Arrow schema of the Paimon table for this Fluss table: its columns, the system columns and, for a
    primary-key table, :data:`ROW_KIND_COLUMN`."""
    schema = info.row_schema.to_arrow()
    clash = [f.name for f in schema if f.name in SYSTEM_COLUMN_NAMES or f.name == ROW_KIND_COLUMN]
    if clash:
        raise FlussError(f"Column(s) {clash} of lake table '{info.table_path}' clash with the lake table's system "
                         f"columns ({', '.join(sorted(SYSTEM_COLUMN_NAMES | {ROW_KIND_COLUMN}))}): rename them",
                         ErrorCode.INVALID_TABLE_EXCEPTION)
    fields = [pa.field(f.name, f.type, f.nullable) for f in schema]  # drop fluss.type metadata
    fields.extend(SYSTEM_COLUMNS)
    if info.has_primary_key():
        fields.append(pa.field(ROW_KIND_COLUMN, pa.string(), nullable=True))
    return pa.schema(fields)


def paimon_table_options(info: TableInfo) -> dict[str, str]:
    """The Paimon options of the lake table (see the module docstring)."""
    props = info.get_properties()
    bucket_keys = info.get_bucket_keys()
    if bucket_keys and bucketing_of(info).name != PAIMON_BUCKETING:
        raise FlussError(f"Table '{info.table_path}' routes rows with the '{bucketing_of(info).name}' bucket "
                         f"function, not Paimon's: its buckets cannot be a Paimon lake table's",
                         ErrorCode.INVALID_TABLE_EXCEPTION)
    options: dict[str, str] = {}
    for key, value in props.items():
        if key.startswith(TABLE_PAIMON_OPTION_PREFIX):
            option = key[len(TABLE_PAIMON_OPTION_PREFIX):]
            if option in FLUSS_SET_OPTIONS:
                raise FlussError(f"Table option '{key}' of table '{info.table_path}': the Paimon option '{option}' "
                                 f"is set by Fluss from the table definition", ErrorCode.INVALID_CONFIG_EXCEPTION)
            options[option] = value
    if bucket_keys:
        options["bucket"] = str(info.num_buckets)
        options["bucket-key"] = ",".join(bucket_keys)
    else:
        options["bucket"] = "-1"  # rows spread sticky/round-robin: a bucket-unaware append table
    if info.has_primary_key():
        options["rowkind.field"] = ROW_KIND_COLUMN
        engine = (props.get("table.merge-engine") or "").strip().lower()
        if engine == "first_row":
            options["merge-engine"] = "first-row"
        elif engine == "versioned":
            options["sequence.field"] = props["table.merge-engine.versioned.ver-column"]
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

    def add_columns(self, info: TableInfo, first_new: int) -> None:
        """ALTER TABLE ADD: the columns of ``info`` from index ``first_new`` on are added to the Paimon table,
        before the system columns (Paimon's schema evolution: files written before read them as null). A column
        the lake table already has (a retried ALTER) is skipped."""
        from pypaimon.schema.data_types import PyarrowFieldParser
        from pypaimon.schema.schema_change import Move, SchemaChange

        ident = self.identifier(info.table_path)
        table = self.catalog.get_table(ident)
        have = set(self._arrow_schema(table).names)
        anchor = next((f.name for f in SYSTEM_COLUMNS if f.name in have), None)
        changes = []
        for f in list(info.row_schema.to_arrow())[first_new:]:
            if f.name in have:
                continue
            dtype = PyarrowFieldParser.to_paimon_type(f.type, True)
            column = info.row_schema.columns[info.row_schema.to_arrow().get_field_index(f.name)]
            changes.append(SchemaChange.add_column(f.name, dtype, column.comment,
                                                   Move.before(f.name, anchor) if anchor else None))
        if changes:
            self.catalog.alter_table(ident, changes)
            log.info("added column(s) %s to lake table %s", [c.field_names[0] for c in changes], ident)

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
             partitions: list[Mapping[str, str]] | None = None, bucket: int | None = None,
             system_columns: bool = False) -> pa.Table:
        """The lake table's rows (at ``snapshot_id`` if given), without :data:`ROW_KIND_COLUMN` and, unless
        ``system_columns``, without the :data:`SYSTEM_COLUMNS`.

        ``partitions`` (partition specs) prunes the scan on the string-typed partition keys; the result may still
        hold rows of other partitions when some keys are not strings (callers filter exactly). ``bucket``: only
        that Paimon bucket (= Fluss bucket; a bucketed lake table).
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
        drop = [c for c in result.column_names
                if c == ROW_KIND_COLUMN or (not system_columns and c in SYSTEM_COLUMN_NAMES)]
        return result.drop_columns(drop) if drop else result

    def new_writer(self, info: TableInfo) -> LakeWriter:
        return LakeWriter(self, info)


def _fix_time_precision(fields, info: TableInfo) -> None:
    """TIME(p) for pypaimon's TIME(0), at every depth: Paimon stores TIME as milliseconds of the day, so
    p = min(Fluss p, 3)."""
    by_name = {c.name: c.data_type for c in info.row_schema.columns}
    for f in fields:
        t = by_name.get(f.name)
        if t is not None:
            f.type = _with_time_precision(f.type, t)


def _with_time_precision(paimon_type, t):
    from pypaimon.schema.data_types import ArrayType, AtomicType, MapType, RowType

    if t.root == TIME:
        return AtomicType(f"TIME({min(t.precision or 0, 3)})", paimon_type.nullable)
    if isinstance(paimon_type, ArrayType) and t.root == ARRAY:
        paimon_type.element = _with_time_precision(paimon_type.element, t.element_type)
    elif isinstance(paimon_type, MapType) and t.root == MAP:
        paimon_type.key = _with_time_precision(paimon_type.key, t.key_type)
        paimon_type.value = _with_time_precision(paimon_type.value, t.value_type)
    elif isinstance(paimon_type, RowType) and t.root == ROW:
        for pf, ff in zip(paimon_type.fields, t.fields, strict=True):
            pf.type = _with_time_precision(pf.type, ff.data_type)
    return paimon_type


def _holds_time(t: pa.DataType) -> bool:
    """Whether an Arrow type is or holds a time type (Paimon's TIME is milliseconds: finer values truncate)."""
    if pa.types.is_time(t):
        return True
    return any(_holds_time(t.field(i).type) for i in range(t.num_fields))


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
        # lake tables of the current layout carry the system columns; older ones do not
        self._system_columns = SYSTEM_COLUMN_NAMES.issubset(self.schema.names)
        # a log table without a bucket key is bucket-unaware in Paimon (bucket -1): its rows go to bucket 0
        self._bucketed = int(self.table.options.bucket()) > 0
        self._fs_options = {k: v for k, v in lake.catalog_options.items() if k.startswith("s3.")}
        self.rows_written = 0

    def write(self, bucket: int, batch: pa.RecordBatch, change_types: np.ndarray | None,
              base_offset: int | None = None, timestamp: int | None = None) -> None:
        """Writes one Fluss log batch of ``bucket`` (``change_types``: Fluss change type bytes per row;
        ``base_offset``: the log offset of its first row, ``timestamp``: its commit time in ms; None when the
        rows do not come from the log, e.g. a KV state)."""
        n = batch.num_rows
        offsets = None if base_offset is None else np.arange(base_offset, base_offset + n, dtype=np.int64)
        if self._pk:
            kinds = _ROW_KINDS[np.asarray(change_types, dtype=np.int64)]
            keep = np.asarray(change_types) != _UPDATE_BEFORE
            if not keep.all():
                batch = batch.filter(pa.array(keep))
                kinds = kinds[keep]
                offsets = None if offsets is None else offsets[keep]
            if batch.num_rows == 0:
                return
            batch = batch.append_column(ROW_KIND_COLUMN, pa.array(kinds, pa.string()))
        if batch.num_rows == 0:
            return
        if self._system_columns:
            batch = with_system_columns(batch, bucket, offsets, timestamp)
        paimon_bucket = bucket if self._bucketed else 0
        if self._partition_keys:
            self._write_partition(paimon_bucket, self._conform(batch))
        elif self._bucketed:
            self._write.write_arrow(self._conform(batch), bucket=bucket)
        else:
            self._write.write_arrow(self._conform(batch))
        self.rows_written += batch.num_rows

    def _write_partition(self, bucket: int, batch: pa.RecordBatch) -> None:
        """Writes rows of one Fluss partition: they all hold its partition values, so the Paimon partition is
        named once (pypaimon 2.1's bucket-given write extracts it row by row, a Python loop per row)."""
        columns = [batch.column(k) for k in self._partition_keys]
        write = self._write
        private = hasattr(write, "_prepare_arrow_data") and hasattr(write, "_write_partition_bucket_batch")
        if not private or any(pc.count_distinct(c, mode="all").as_py() != 1 for c in columns):
            # the public path (rejects a batch of mixed partitions)
            write.write_arrow(batch, bucket=bucket) if self._bucketed else write.write_arrow(batch)
            return
        if not 0 <= bucket < max(self.info.num_buckets, 1):
            raise ValueError(f"bucket {bucket} out of range [0, {self.info.num_buckets})")
        data = write._prepare_arrow_data(batch)
        if data.num_rows:
            write._write_partition_bucket_batch(tuple(c[0].as_py() for c in columns), bucket, data)

    def _conform(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        arrays = []
        names = set(batch.schema.names)
        for f in self.schema:
            if f.name not in names:  # a column added (ALTER TABLE ADD) after these rows were read: null
                arrays.append(pa.nulls(batch.num_rows, f.type))
                continue
            col = batch.column(f.name)
            # TIME is milliseconds in Paimon: finer Fluss TIME values (also nested ones) are truncated
            arrays.append(col if col.type == f.type else col.cast(f.type, safe=not _holds_time(f.type)))
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def commit(self, offsets: dict[BucketKey, int], max_timestamps: dict[BucketKey, int],
               previous: TieredProgress | None) -> int:
        """Commits everything written with the given progress (all buckets) and returns the snapshot id."""
        identifier = (previous.snapshot_id if previous else 0) + 1
        messages = self._write.prepare_commit(identifier)
        if self._pk:
            _fix_delete_row_counts(messages, self._fs_options)
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


def with_system_columns(batch: pa.RecordBatch, bucket: int, offsets: np.ndarray | None,
                        timestamp: int | None) -> pa.RecordBatch:
    """``batch`` plus ``__bucket``, ``__offset`` and ``__timestamp`` (null when unknown)."""
    n = batch.num_rows
    bucket_type, offset_type, ts_type = (f.type for f in SYSTEM_COLUMNS)
    batch = batch.append_column(BUCKET_COLUMN, pa.array(np.full(n, bucket, np.int32), bucket_type))
    batch = batch.append_column(OFFSET_COLUMN, pa.nulls(n, offset_type) if offsets is None
                                else pa.array(offsets, offset_type))
    return batch.append_column(TIMESTAMP_COLUMN, pa.nulls(n, ts_type) if timestamp is None
                               else pa.array(np.full(n, timestamp, np.int64), pa.int64()).cast(ts_type))


def _fix_delete_row_counts(messages, fs_options: Mapping[str, str]) -> None:
    """``fs_options``: the catalog's ``s3.*`` options (a warehouse on object storage)."""
    for message in messages:
        for meta in message.new_files:
            path = meta.file_path
            if not path:
                continue
            fs, fs_path = filesystem(path, fs_options)
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

    def add_columns(self, info: TableInfo, first_new: int) -> None:
        if is_lake_enabled(info):
            self.lake.add_columns(info, first_new)


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
