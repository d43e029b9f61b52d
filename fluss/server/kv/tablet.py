"""The KV tablet: the RocksDB state of one primary-key bucket on its leader, and its write path.

A :class:`KvTablet` owns one RocksDB (``rocksdict.Rdict`` in raw mode) under ``<directory>/db``. Keys are
the encoded primary key (:mod:`fluss.key.encoding`), values the encoded full row
(:mod:`fluss.record.indexed_rows`). The tablet does not own the bucket's log; the caller (the replica)
drives it through the write path:

1. :meth:`KvTablet.prepare_batch` turns a batch of upserts/deletes into the changelog records to append
   to the log. It reads the old values of all keys in one batched read (the pre-write buffer first, then
   one RocksDB multi-get), applies the merge engine row by row (several writes to one key in a batch see
   each other), and stages the resulting values in an in-memory **pre-write buffer**, each tagged with
   the log offset of the changelog record that produced it. Nothing reaches RocksDB yet.
2. The caller appends the changelog to the log at ``log_offset``. If that fails it calls
   :meth:`KvTablet.abort_from` to drop the staged values at and after the offset.
3. When the high watermark advances, :meth:`KvTablet.flush_up_to` writes the staged values below it to
   RocksDB in one ``WriteBatch``, together with the new flushed offset under a reserved key.

Consistency contract: :meth:`lookup`, :meth:`prefix_lookup` and :meth:`scan_all` read RocksDB only, so they
never return a value whose log record is above the high watermark (a record that a leader change could
still truncate). The write path itself reads through the pre-write buffer, so consecutive batches build on
each other before they are committed.

``flushed_offset`` is the log offset up to which (exclusive) RocksDB holds every change. It is written in
the same ``WriteBatch`` as the data (reserved key :data:`FLUSHED_OFFSET_KEY`, outside the key space of
encoded primary keys, which start with 0x00/0x01), so it is always consistent with the data and travels
inside snapshots. ``row_count``, the number of keys RocksDB holds, is kept the same way
(:data:`ROW_COUNT_KEY`): each changelog record that creates a key (+I) adds one, each that removes one (-D)
subtracts one, counted per batch with numpy, so ``COUNT(*)`` needs no scan. Writes skip RocksDB's WAL: the
log is the write-ahead log, and a crash loses at most a suffix of flushed batches together with their offset,
which recovery replays with :meth:`apply_changelog`.

A tablet may be used from several threads; an internal lock serialises the write path, flushes and checkpoints so
that a checkpoint always matches ``flushed_offset``. RocksDB calls are split into calls of at most
:data:`ROCKSDB_CALL_ENTRIES` entries (rocksdict holds the GIL during a call), so a large flush or read never
stalls the tablet server's event loop for long; the tablet server runs all of them on its KV executor.
"""

from __future__ import annotations

import bisect
import logging
import os
import re
import shutil
import threading
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
from rocksdict import Checkpoint, Options, Rdict, WriteBatch, WriteOptions

from fluss.errors import ErrorCode, FlussError
from fluss.key.encoding import encode_keys
from fluss.record.change_type import ChangeType
from fluss.record.indexed_rows import decode_evolved
from fluss.record.log_format import kv_format_of, row_codec_of
from fluss.record.schema_evolution import SchemaHistory
from fluss.server.kv.merge import (
    DELETE_BEHAVIOR,
    FIRST_ROW,
    ChangelogImage,
    DeleteBehavior,
    MergeEngine,
    changelog_image_of,
    physical_rows,
    rows_to_batch,
)
from fluss.types import RowSchema

log = logging.getLogger(__name__)

#: Reserved RocksDB key holding the flushed log offset (8 bytes big-endian).
FLUSHED_OFFSET_KEY = b"\xff\xfffluss.kv.flushed-log-offset"
#: Reserved RocksDB key holding the number of keys (8 bytes big-endian), written with the flushed offset.
ROW_COUNT_KEY = b"\xff\xfffluss.kv.row-count"
#: First byte of every reserved key; encoded primary keys never start with it.
RESERVED_PREFIX = b"\xff"
#: The keys of the tablet's own state: never a row (an encoded primary key may itself start with 0xff, e.g. a
#: large INT, so rows are told from them by the whole key, not a prefix).
_RESERVED_KEYS = frozenset({FLUSHED_OFFSET_KEY, ROW_COUNT_KEY})
#: Sub-directory of a tablet directory holding the RocksDB files.
DB_DIR = "db"
#: Sidecar file naming this local RocksDB instance (SST file names are unique only within one instance).
INSTANCE_ID_FILE = "kv-instance-id"
#: Most entries per RocksDB write or multi-get: rocksdict holds the GIL during a call (a few microseconds per
#: entry), so larger writes and reads are split and no call stalls the server's other threads for long.
ROCKSDB_CALL_ENTRIES = 4096

OP_UPSERT = 0
OP_DELETE = 1

_INSERT = int(ChangeType.Insert)
_UPDATE_BEFORE = int(ChangeType.UpdateBefore)
_UPDATE_AFTER = int(ChangeType.UpdateAfter)
_DELETE = int(ChangeType.Delete)


@dataclass
class KvChangelog:
    """The changelog records a prepared batch produced, to be appended to the bucket's log."""

    batch: pa.RecordBatch  # full rows in the table's Arrow schema
    change_types: np.ndarray  # uint8 ChangeType per row

    @property
    def num_records(self) -> int:
        return self.batch.num_rows


_SERVER_PATH = re.compile(r"/[^\s:'\",]+")


def _storage_error(message: str) -> FlussError:
    """A KV storage error for clients: RocksDB's messages name files, which stay in the server's log."""
    log.error("KV storage error: %s", message)
    return FlussError(_SERVER_PATH.sub("<file>", message), ErrorCode.KV_STORAGE_EXCEPTION)


class KvTablet:
    """The RocksDB state, pre-write buffer and write path of one primary-key bucket (see module doc)."""

    def __init__(
        self,
        directory: Path,
        db: Rdict,
        schema: RowSchema,
        schema_id: int,
        properties: Mapping[str, str],
        engine: MergeEngine,
        instance_id: str,
        column_counts: Sequence[int] = (),
    ) -> None:
        self.directory = directory
        self.schema = schema
        self.schema_id = schema_id
        # values of older schema ids (ALTER TABLE ADD) decode with their columns, the later ones null
        self.history = SchemaHistory(schema.to_arrow(), column_counts, schema_id)
        self.properties = dict(properties)
        self.engine = engine
        self.changelog_image = changelog_image_of(properties)
        #: The value layout of ``table.kv.format`` (COMPACTED or INDEXED): ``encode_rows`` / ``decode_rows``.
        self.format = kv_format_of(properties)  # COMPACTED or INDEXED
        self.codec = row_codec_of(self.format)
        self.instance_id = instance_id
        self._db: Rdict | None = db
        self._arrow_schema = schema.to_arrow()
        self._pk_indices = schema.primary_key_indices
        self._write_opts = WriteOptions()
        self._write_opts.disable_wal = True
        self._lock = threading.RLock()
        raw = db.get(FLUSHED_OFFSET_KEY)
        self._flushed_offset = int.from_bytes(raw, "big") if raw is not None else 0
        raw = db.get(ROW_COUNT_KEY)
        self._row_count = int.from_bytes(raw, "big") if raw is not None else _count_keys(db)
        # Pre-write buffer: parallel lists in log-offset order, and the latest staged entry per key.
        self._st_offsets: list[int] = []
        self._st_keys: list[bytes] = []
        self._st_values: list[bytes | None] = []
        self._st_deltas: list[int] = []  # +1 the record created its key, -1 removed it, 0 replaced its value
        self._index: dict[bytes, tuple[int, bytes | None]] = {}

    # ------------------------------------------------------------------ lifecycle
    @classmethod
    def open(
        cls, directory: Path, schema: RowSchema, schema_id: int, properties: Mapping[str, str],
        column_counts: Sequence[int] = (),
    ) -> KvTablet:
        """Open (or create) the tablet stored in ``directory``.

        Raises:
            FlussError: INVALID_CONFIG_EXCEPTION / INVALID_TABLE_EXCEPTION for a bad merge-engine
                configuration (validated before anything is created), KV_STORAGE_EXCEPTION if RocksDB
                cannot be opened.
        """
        engine = MergeEngine.from_properties(properties, schema)
        changelog_image_of(properties)
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        id_file = directory / INSTANCE_ID_FILE
        if id_file.exists():
            instance_id = id_file.read_text().strip()
        else:
            instance_id = uuid.uuid4().hex
            tmp = id_file.with_suffix(".tmp")
            tmp.write_text(instance_id)
            os.replace(tmp, id_file)
        opts = Options(raw_mode=True)
        opts.create_if_missing(True)
        try:
            db = Rdict(str(directory / DB_DIR), opts)
        except Exception as e:  # rocksdict raises plain Exception
            raise _storage_error(f"cannot open RocksDB in {directory / DB_DIR}: {e}") from e
        return cls(directory, db, schema, schema_id, properties, engine, instance_id, column_counts)

    def close(self) -> None:
        """Flush RocksDB's memtable (so a restart needs no replay of flushed batches) and close it.
        Staged (unflushed) values are dropped: their log records are above the high watermark."""
        with self._lock:
            if self._db is None:
                return
            try:
                self._db.flush()
            finally:
                self._db.close()
                self._db = None
                self._clear_staged()

    def __enter__(self) -> KvTablet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def db(self) -> Rdict:
        if self._db is None:
            raise _storage_error("the KV tablet is closed")
        return self._db

    @property
    def flushed_offset(self) -> int:
        """Log offset up to which (exclusive) RocksDB has applied every change."""
        return self._flushed_offset

    @property
    def row_count(self) -> int:
        """Number of keys RocksDB holds (the committed rows, those below the flushed offset)."""
        return self._row_count

    @property
    def size_in_bytes(self) -> int:
        """RocksDB's SST files and memtables (its own counters: no file walk); 0 when closed."""
        db = self._db
        if db is None:
            return 0
        return sum(db.property_int_value(name) or 0
                   for name in ("rocksdb.total-sst-files-size", "rocksdb.cur-size-all-mem-tables"))

    @property
    def staged_count(self) -> int:
        """Number of values in the pre-write buffer."""
        return len(self._st_offsets)

    @property
    def arrow_schema(self) -> pa.Schema:
        return self._arrow_schema

    def update_schema(self, schema: RowSchema, schema_id: int, column_counts: Sequence[int]) -> None:
        """ALTER TABLE ADD reached the tablet: rows are merged, stored and read with the new schema from now on
        (stored values of older ids are read with nulls for the added columns)."""
        if schema_id == self.schema_id:
            return
        history = SchemaHistory(schema.to_arrow(), column_counts, schema_id)
        engine = MergeEngine.from_properties(self.properties, schema)
        with self._lock:
            self.schema, self.schema_id, self.history, self.engine = schema, schema_id, history, engine
            self._arrow_schema = history.schema

    # ------------------------------------------------------------------ write path
    def prepare_batch(
        self,
        batch: pa.RecordBatch,
        ops: np.ndarray | Sequence[int],
        target_columns: Sequence[int] | None,
        log_offset: int,
    ) -> KvChangelog:
        """Apply a batch of upserts (op 0) and deletes (op 1) to the pre-write buffer; return the changelog.

        ``batch`` has the table's columns (a delete row needs at least its primary key); with
        ``target_columns`` (a partial update) only those columns are read from upsert rows.
        ``log_offset`` is the offset the first changelog record will get in the log.

        Raises:
            FlussError: nothing is staged when any of these is raised: CORRUPT_RECORD_EXCEPTION for a null
                primary key, INVALID_TARGET_COLUMN for bad target columns, DELETION_DISABLED_EXCEPTION
                for a delete with ``table.delete.behavior=DISABLE``, KV_STORAGE_EXCEPTION for an offset
                below the staged or flushed ones or a malformed batch.
        """
        with self._lock:
            db = self.db
            batch = self._conform(batch)
            n = batch.num_rows
            op_list = self._check_ops(ops, n)
            targets = self.engine.check_target_columns(target_columns)
            floor = self._next_offset_floor()
            if log_offset < floor:
                raise _storage_error(f"log offset {log_offset} is below the tablet's next offset {floor}")
            if n == 0:
                return self._empty_changelog()
            self._check_primary_key(batch)
            has_delete = OP_DELETE in op_list
            if has_delete and self.engine.delete_behavior == DeleteBehavior.DISABLE:
                raise FlussError(
                    f"deletion is disabled for this table ('{DELETE_BEHAVIOR}'=DISABLE, merge engine "
                    f"'{self.engine.name}')",
                    ErrorCode.DELETION_DISABLED_EXCEPTION,
                )
            keys = encode_keys(batch, self._pk_indices)
            current = self._read_current(db, keys)
            if self.engine.whole_row and targets is None:
                changelog, staged = self._merge_whole_rows(batch, op_list, keys, current, log_offset)
            else:
                changelog, staged = self._merge_fields(batch, op_list, keys, current, targets, log_offset)
            offsets, skeys, svalues = staged
            self._st_offsets.extend(offsets)
            self._st_keys.extend(skeys)
            self._st_values.extend(svalues)
            self._st_deltas.extend(_key_count_deltas(changelog.change_types, offsets, log_offset))
            self._index.update(zip(skeys, zip(offsets, svalues, strict=True), strict=True))
            return changelog

    def abort_from(self, log_offset: int) -> None:
        """Drop staged values whose log records are at or after ``log_offset`` (their append failed or
        the log was truncated there)."""
        with self._lock:
            cut = bisect.bisect_left(self._st_offsets, log_offset)
            if cut == len(self._st_offsets):
                return
            del self._st_offsets[cut:], self._st_keys[cut:], self._st_values[cut:], self._st_deltas[cut:]
            self._index = {
                k: (o, v) for o, k, v in zip(self._st_offsets, self._st_keys, self._st_values, strict=True)
            }

    def has_staged_below(self, high_watermark: int) -> bool:
        """Whether values staged for log records below ``high_watermark`` still wait to reach RocksDB (safe to
        call from another thread than the one flushing: a racing answer is corrected by the next call)."""
        try:
            return self._st_offsets[0] < high_watermark
        except IndexError:
            return False

    def flush_up_to(self, high_watermark: int) -> int:
        """Write the staged values whose log records are below ``high_watermark`` to RocksDB, with the new
        flushed offset; returns the number of values written.

        The values go in ``WriteBatch``es of at most :data:`ROCKSDB_CALL_ENTRIES`, each with the flushed offset it
        completes (the offset of the first value it leaves staged; ``high_watermark`` for the last one), so every
        intermediate state is a prefix of the committed changelog and a crash in between replays from a consistent
        offset. The lock is released between batches, so a write (``prepare_batch``) waits for one batch at most.
        """
        written = 0
        while True:
            with self._lock:
                db = self.db
                below = bisect.bisect_left(self._st_offsets, high_watermark)
                if below == 0 and high_watermark <= self._flushed_offset:
                    return written
                cut = min(below, ROCKSDB_CALL_ENTRIES)
                last = cut == below
                new_flushed = max(self._flushed_offset, high_watermark) if last else self._st_offsets[cut]
                new_count = self._row_count + sum(self._st_deltas[:cut])
                wb = WriteBatch(raw_mode=True)
                keys = self._st_keys[:cut]
                for k, v in zip(keys, self._st_values[:cut], strict=True):
                    if v is None:
                        wb.delete(k)
                    else:
                        wb.put(k, v)
                wb.put(FLUSHED_OFFSET_KEY, new_flushed.to_bytes(8, "big"))
                wb.put(ROW_COUNT_KEY, new_count.to_bytes(8, "big"))
                try:
                    db.write(wb, self._write_opts)
                except Exception as e:
                    raise _storage_error(f"RocksDB write of {cut} values failed: {e}") from e
                self._flushed_offset = new_flushed
                self._row_count = new_count
                del self._st_offsets[:cut], self._st_keys[:cut], self._st_values[:cut], self._st_deltas[:cut]
                index = self._index
                for k in keys:
                    entry = index.get(k)
                    if entry is not None and entry[0] < new_flushed:
                        del index[k]
                written += cut
                if last:
                    return written

    # ------------------------------------------------------------------ recovery
    def apply_changelog(
        self, batch: pa.RecordBatch, change_types: np.ndarray | Sequence[int], end_offset: int
    ) -> None:
        """Replay changelog records (from the log, after the flushed offset) straight into RocksDB:
        +I/+U put the row, -D deletes the key, -U is skipped. ``end_offset`` is the offset after the last
        record and becomes the flushed offset. Only the last change of each key is written. The row count
        moves by the number of +I records minus the number of -D records: the changelog after the flushed
        offset was produced from exactly the state RocksDB holds.

        Raises:
            FlussError: KV_STORAGE_EXCEPTION if values are staged (recovery happens before serving
                writes) or a change type is not a primary-key change type.
        """
        with self._lock:
            db = self.db
            if self._st_offsets:
                raise _storage_error(
                    "cannot replay the changelog while values are staged in the pre-write buffer"
                )
            batch = self._conform(batch)
            cts = np.asarray(change_types, dtype=np.uint8)
            if len(cts) != batch.num_rows:
                raise _storage_error(f"{len(cts)} change types for {batch.num_rows} records")
            if ((cts < _INSERT) | (cts > _DELETE)).any():
                bad = int(cts[np.flatnonzero((cts < _INSERT) | (cts > _DELETE))[0]])
                raise _storage_error(f"change type {bad} is not a primary-key changelog change type")
            relevant = np.flatnonzero(cts != _UPDATE_BEFORE)
            wb = WriteBatch(raw_mode=True)
            if len(relevant):
                sub = batch.take(pa.array(relevant))
                sub_ct = cts[relevant].tolist()
                keys = encode_keys(sub, self._pk_indices)
                last: dict[bytes, int] = {}
                for i, k in enumerate(keys):
                    last[k] = i
                final = sorted(last.values())
                puts = [i for i in final if sub_ct[i] != _DELETE]
                values = (
                    self.codec.encode_rows(sub.take(pa.array(puts, type=pa.int64())), self.schema_id) if puts else []
                )
                value_of = dict(zip(puts, values, strict=True))
                for n, i in enumerate(final, 1):
                    v = value_of.get(i)
                    if v is None:
                        wb.delete(keys[i])
                    else:
                        wb.put(keys[i], v)
                    if n % ROCKSDB_CALL_ENTRIES == 0 and n < len(final):
                        # data only (the offset and count go with the last batch): a crash in between replays
                        # from the old offset, which writes the same final values again
                        db.write(wb, self._write_opts)
                        wb = WriteBatch(raw_mode=True)
            new_flushed = max(self._flushed_offset, end_offset)
            created, removed = int(np.count_nonzero(cts == _INSERT)), int(np.count_nonzero(cts == _DELETE))
            new_count = self._row_count + created - removed
            wb.put(FLUSHED_OFFSET_KEY, new_flushed.to_bytes(8, "big"))
            wb.put(ROW_COUNT_KEY, new_count.to_bytes(8, "big"))
            db.write(wb, self._write_opts)
            self._flushed_offset = new_flushed
            self._row_count = new_count

    def recount_rows(self) -> int:
        """Counts the keys RocksDB holds and stores that as the row count (after a replay that did not start
        where the state ended: records between them were lost, so +I/-D no longer add up); returns it."""
        with self._lock:
            db = self.db
            count = _count_keys(db)
            wb = WriteBatch(raw_mode=True)
            wb.put(ROW_COUNT_KEY, count.to_bytes(8, "big"))
            db.write(wb, self._write_opts)
            self._row_count = count
            return count

    # ------------------------------------------------------------------ reads (committed state)
    def lookup(self, keys: Sequence[bytes]) -> list[bytes | None]:
        """The committed values of encoded primary keys (batched multi-gets; None = absent). The reserved keys of
        the tablet's own state are never a row."""
        if not keys:
            return []
        values = _multi_get(self.db, list(keys))
        if not _RESERVED_KEYS.isdisjoint(keys):
            values = [None if k in _RESERVED_KEYS else v for k, v in zip(keys, values, strict=True)]
        return values

    def lookup_rows(self, keys: Sequence[bytes]) -> pa.RecordBatch:
        """The committed rows of the keys, one row per key in order; an absent key gives an all-null row
        (its primary-key columns are null too, which is how to tell)."""
        return decode_evolved(self.lookup(keys), self.history, self.codec)

    def prefix_lookup(self, prefix: bytes) -> list[bytes]:
        """The committed values of all keys starting with ``prefix`` (an encoded bucket-key prefix), in
        key order."""
        out = []
        for k, v in self.db.items(from_key=prefix):
            if not k.startswith(prefix):
                break
            if k not in _RESERVED_KEYS:
                out.append(v)
        return out

    def scan_all(self, limit: int | None = None) -> tuple[pa.RecordBatch, int]:
        """A consistent snapshot of the committed rows (at most ``limit``, in key order) and the log
        offset to continue reading the changelog from."""
        with self._lock:
            snap = self.db.snapshot()
            offset = self._flushed_offset
        values = []
        for k, v in snap.items():
            if limit is not None and len(values) >= limit:
                break
            if k not in _RESERVED_KEYS:
                values.append(v)
        del snap
        return decode_evolved(values, self.history, self.codec), offset

    # ------------------------------------------------------------------ snapshots
    def create_checkpoint(self, path: Path) -> int:
        """A RocksDB checkpoint of the committed state in ``path`` (which must not exist); returns the log
        offset it covers (its flushed offset)."""
        with self._lock:
            db = self.db
            db.flush()
            try:
                Checkpoint(db).create_checkpoint(str(path))
            except Exception as e:
                shutil.rmtree(path, ignore_errors=True)
                raise _storage_error(f"RocksDB checkpoint into {path} failed: {e}") from e
            return self._flushed_offset

    # ------------------------------------------------------------------ internals
    def _clear_staged(self) -> None:
        self._st_offsets.clear()
        self._st_keys.clear()
        self._st_values.clear()
        self._st_deltas.clear()
        self._index.clear()

    def _next_offset_floor(self) -> int:
        return max(self._flushed_offset, self._st_offsets[-1] + 1 if self._st_offsets else 0)

    def _empty_changelog(self) -> KvChangelog:
        return KvChangelog(_empty_batch(self._arrow_schema), np.zeros(0, dtype=np.uint8))

    def _conform(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        schema = self._arrow_schema
        if isinstance(batch, pa.Table):
            batch = batch.combine_chunks().to_batches()[0] if batch.num_rows else _empty_batch(schema)
        if batch.schema.equals(schema):
            return batch
        if batch.num_columns < len(schema) and batch.schema.names == schema.names[:batch.num_columns]:
            batch = self.history.pad(batch)  # a writer of an older schema id: the added columns are null
            if batch.schema.equals(schema):
                return batch
        if batch.schema.names != schema.names:
            raise _storage_error(
                f"batch columns {batch.schema.names} do not match the table columns {schema.names}"
            )
        columns = []
        for arr, f in zip(batch.columns, schema, strict=True):
            if not arr.type.equals(f.type):
                try:
                    arr = arr.cast(f.type, safe=True)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                    raise _storage_error(
                        f"column '{f.name}' has type {arr.type}, expected {f.type}: {e}"
                    ) from e
            columns.append(arr)
        return pa.RecordBatch.from_arrays(columns, schema=schema)

    def _check_ops(self, ops: np.ndarray | Sequence[int], n: int) -> list[int]:
        arr = np.asarray(ops)
        if arr.shape != (n,):
            raise _storage_error(f"{arr.size} ops for {n} rows")
        if n and ((arr < 0) | (arr > OP_DELETE)).any():
            bad = arr[np.flatnonzero((arr < 0) | (arr > OP_DELETE))[0]]
            raise _storage_error(f"unknown KV op {bad} (0 = upsert, 1 = delete)")
        return arr.astype(np.uint8).tolist()

    def _check_primary_key(self, batch: pa.RecordBatch) -> None:
        for i in self._pk_indices:
            arr = batch.column(i)
            if arr.null_count:
                row = int(np.flatnonzero(arr.is_null().to_numpy(zero_copy_only=False))[0])
                raise FlussError(
                    f"primary key column '{batch.schema.field(i).name}' is null in row {row}",
                    ErrorCode.CORRUPT_RECORD_EXCEPTION,
                )

    def _read_current(self, db: Rdict, keys: list[bytes]) -> dict[bytes, bytes | None]:
        """Latest value of each distinct key: the pre-write buffer first, then one RocksDB multi-get."""
        current: dict[bytes, bytes | None] = {}
        missing = []
        index = self._index
        for k in dict.fromkeys(keys):
            entry = index.get(k)
            if entry is None:
                missing.append(k)
            else:
                current[k] = entry[1]
        if missing:
            current.update(zip(missing, _multi_get(db, missing), strict=True))
        return current

    def _build_changelog(
        self, batch: pa.RecordBatch, old_values: list[bytes], sources: list[int], change_types: list[int]
    ) -> KvChangelog:
        if not sources:
            return self._empty_changelog()
        if old_values:
            old = decode_evolved(old_values, self.history, self.codec)
            table = pa.Table.from_batches([batch, old])
        else:
            table = pa.Table.from_batches([batch])
        out = table.take(pa.array(sources, type=pa.int64())).combine_chunks()
        return KvChangelog(out.to_batches()[0], np.array(change_types, dtype=np.uint8))

    def _merge_whole_rows(
        self,
        batch: pa.RecordBatch,
        ops: list[int],
        keys: list[bytes],
        current: dict[bytes, bytes | None],
        log_offset: int,
    ) -> tuple[KvChangelog, tuple[list[int], list[bytes], list[bytes | None]]]:
        """Last-row / first-row engines on full rows: values are chosen whole, never decoded."""
        n = batch.num_rows
        values = self.codec.encode_rows(batch, self.schema_id)
        first_row = self.engine.name == FIRST_ROW
        full = self.changelog_image == ChangelogImage.FULL
        apply_deletes = self.engine.delete_behavior == DeleteBehavior.ALLOW
        cts: list[int] = []
        sources: list[int] = []
        old_values: list[bytes] = []
        st_off: list[int] = []
        st_keys: list[bytes] = []
        st_vals: list[bytes | None] = []
        for i in range(n):
            k = keys[i]
            old = current[k]
            if ops[i] == OP_UPSERT:
                if old is None:
                    cts.append(_INSERT)
                    sources.append(i)
                elif first_row:
                    continue
                else:
                    if full:
                        cts.append(_UPDATE_BEFORE)
                        sources.append(n + len(old_values))
                        old_values.append(old)
                    cts.append(_UPDATE_AFTER)
                    sources.append(i)
                v = values[i]
            else:
                if old is None or not apply_deletes:
                    continue
                cts.append(_DELETE)
                sources.append(n + len(old_values))
                old_values.append(old)
                v = None
            current[k] = v
            st_off.append(log_offset + len(cts) - 1)
            st_keys.append(k)
            st_vals.append(v)
        return self._build_changelog(batch, old_values, sources, cts), (st_off, st_keys, st_vals)

    def _merge_fields(
        self,
        batch: pa.RecordBatch,
        ops: list[int],
        keys: list[bytes],
        current: dict[bytes, bytes | None],
        targets: frozenset[int] | None,
        log_offset: int,
    ) -> tuple[KvChangelog, tuple[list[int], list[bytes], list[bytes | None]]]:
        """Any engine and partial updates: rows are merged field by field as Python values."""
        engine = self.engine
        schema = self._arrow_schema
        stored = [k for k, v in current.items() if v is not None]
        decoded = (
            physical_rows(decode_evolved([current[k] for k in stored], self.history, self.codec)) if stored else []
        )
        rows: dict[bytes, list | None] = dict.fromkeys(current)
        rows.update(zip(stored, decoded, strict=True))
        new_rows = physical_rows(batch)
        full = self.changelog_image == ChangelogImage.FULL
        apply_deletes = engine.delete_behavior == DeleteBehavior.ALLOW
        cts: list[int] = []
        out_rows: list[list] = []
        st_off: list[int] = []
        st_keys: list[bytes] = []
        st_rows: list[list | None] = []
        for i, k in enumerate(keys):
            old = rows[k]
            if ops[i] == OP_UPSERT:
                row = engine.upsert(old, new_rows[i], targets)
                if row is old:
                    continue
            else:
                if old is None or not apply_deletes:
                    continue
                row = engine.delete(old, targets)
            if old is None:
                cts.append(_INSERT)
                out_rows.append(row)
            elif row is None:
                cts.append(_DELETE)
                out_rows.append(old)
            else:
                if full:
                    cts.append(_UPDATE_BEFORE)
                    out_rows.append(old)
                cts.append(_UPDATE_AFTER)
                out_rows.append(row)
            rows[k] = row
            st_off.append(log_offset + len(cts) - 1)
            st_keys.append(k)
            st_rows.append(row)
        if not cts:
            return self._empty_changelog(), ([], [], [])
        live = [r for r in st_rows if r is not None]
        encoded = iter(self.codec.encode_rows(rows_to_batch(live, schema), self.schema_id) if live else [])
        st_vals = [None if r is None else next(encoded) for r in st_rows]
        changelog = KvChangelog(rows_to_batch(out_rows, schema), np.array(cts, dtype=np.uint8))
        return changelog, (st_off, st_keys, st_vals)


def _key_count_deltas(change_types: np.ndarray, offsets: list[int], log_offset: int) -> list[int]:
    """Per staged value, how it moves the key count: the change type of the changelog record it was staged
    with (at ``offsets[i] - log_offset`` in the batch's changelog) is +I (+1), -D (-1) or +U (0)."""
    if not offsets:
        return []
    cts = change_types[np.asarray(offsets, dtype=np.int64) - log_offset]
    return ((cts == _INSERT).astype(np.int8) - (cts == _DELETE).astype(np.int8)).tolist()


def _multi_get(db: Rdict, keys: list[bytes]) -> list[bytes | None]:
    """``db.get(keys)`` in calls of at most :data:`ROCKSDB_CALL_ENTRIES` keys."""
    if len(keys) <= ROCKSDB_CALL_ENTRIES:
        return db.get(keys)
    out: list[bytes | None] = []
    for start in range(0, len(keys), ROCKSDB_CALL_ENTRIES):
        out.extend(db.get(keys[start:start + ROCKSDB_CALL_ENTRIES]))
    return out


def _count_keys(db: Rdict) -> int:
    """Number of primary keys in a RocksDB written before the row count was kept (read once, on open)."""
    n = 0
    for k in db.keys():
        if k not in _RESERVED_KEYS:
            n += 1
    return n


def _empty_batch(schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array([], type=f.type) for f in schema], schema=schema)


__all__ = ["FLUSHED_OFFSET_KEY", "OP_DELETE", "OP_UPSERT", "KvChangelog", "KvTablet"]
