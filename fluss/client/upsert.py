"""Writing to primary-key tables: ``table.new_upsert()`` → ``TableUpsert`` → ``UpsertWriter``.

An ``UpsertWriter`` shares the append writer's machinery (``fluss.client.writer``): rows are collected into
chunks, turned into Arrow, split per (partition, bucket) by the bucket key (for a primary-key table the
primary key minus the partition keys unless ``bucket.key`` says otherwise), encoded as log batches and sent
with one request in flight per bucket, idempotent writer ids and retries. What differs:

- every row carries a change type: ``+U`` for ``upsert(row)`` and ``-D`` for ``delete(pk)`` (a delete row
  holds the primary-key columns, every other column null); the change types travel as the batch's
  change-type vector, so upserts and deletes of one bucket stay in the order they were written;
- the request is PutKv, with ``target_columns`` for a partial update (``partial_update_by_name`` /
  ``partial_update_by_index``): only those columns are written, the others keep their stored values,
  and the primary key must be among them.

Bad input is refused as early as it can be: a log table, unknown or out-of-range target columns, targets
without every primary-key column when the writer is created; a row or key that cannot be written (missing,
unknown or null key column, wrong type, out of range: ``fluss.row_check``) in ``upsert``/``delete`` at the
call, naming the row, column and reason, like ``append`` does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from fluss.client.writer import Sender, WriteResultHandle, _TableWriter
from fluss.errors import ErrorCode, FlussError
from fluss.metadata import TableBucket, TableInfo
from fluss.record.change_type import ChangeType
from fluss.record.log_batch import build_batch
from fluss.row_check import RowChecker
from fluss.row_convert import conform_batch, rows_to_batch
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.types import RowSchema

_CHANGE_TYPE_COLUMN = "__change_type__"


class _KvOp(NamedTuple):
    """One pending write of an upsert writer (a tuple, so the shared row checks accept it)."""

    change_type: int
    row: Mapping | Sequence


class KvSender(Sender):
    """The sender of an upsert writer: PutKv requests, with the writer's target columns."""

    RPC = "PutKv"

    def __init__(self, *args, target_columns: list[int] | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.target_columns = list(target_columns or [])

    def _new_request(self):
        return pb.PutKvRequest(acks=self.acks, table_id=self.table.table_id,
                               timeout_ms=int(self.client.request_timeout_s * 1000),
                               target_columns=self.target_columns)

    def _bucket_request(self, tb: TableBucket, records: bytes):
        return pb.PutKvBucketPb(partition_id=tb.partition_id_or_none_value, bucket_id=tb.bucket_id, records=records)


def _require_primary_key(info: TableInfo, what: str) -> None:
    if not info.has_primary_key():
        raise FlussError(f"Table '{info.table_path}' has no primary key: {what} needs a primary-key table "
                         "(use new_append() to write a log table)", ErrorCode.NON_PRIMARY_KEY_TABLE_EXCEPTION)


def check_target_columns(info: TableInfo, indices: Sequence[int]) -> list[int]:
    """Validates partial-update target columns (in range, distinct, including the whole primary key)."""
    names = info.get_column_names()
    bad = [i for i in indices if not isinstance(i, int | np.integer) or isinstance(i, bool) or not 0 <= i < len(names)]
    if bad:
        raise FlussError(f"Partial update column index {bad[0]!r} is out of range: table '{info.table_path}' has "
                         f"{len(names)} columns ({', '.join(names)})", ErrorCode.INVALID_TARGET_COLUMN)
    targets = [int(i) for i in indices]
    if not targets:
        raise FlussError(f"Partial update of table '{info.table_path}' needs at least the primary key columns "
                         f"{info.get_primary_keys()}", ErrorCode.INVALID_TARGET_COLUMN)
    if len(set(targets)) != len(targets):
        raise FlussError(f"Partial update columns {[names[i] for i in targets]} of table '{info.table_path}' "
                         "repeat a column", ErrorCode.INVALID_TARGET_COLUMN)
    missing = [pk for pk in info.get_primary_keys() if names.index(pk) not in targets]
    if missing:
        raise FlussError(f"Partial update of table '{info.table_path}' must include every primary key column; "
                         f"missing {', '.join(missing)} (targets: {', '.join(names[i] for i in targets)})",
                         ErrorCode.INVALID_TARGET_COLUMN)
    return targets


class TableUpsert:
    """Builder of an ``UpsertWriter`` (full rows, or a partial update of some columns)."""

    def __init__(self, table) -> None:
        self._table = table
        self._targets: list[int] | None = None

    def partial_update_by_name(self, columns: list[str]) -> TableUpsert:
        info: TableInfo = self._table.get_table_info()
        names = info.get_column_names()
        if isinstance(columns, str):
            raise FlussError("partial_update_by_name takes a list of column names", ErrorCode.INVALID_TARGET_COLUMN)
        unknown = [c for c in columns if c not in names]
        if unknown:
            raise FlussError(f"Partial update column(s) {unknown} do not exist in table '{info.table_path}' "
                             f"(columns: {', '.join(names)})", ErrorCode.INVALID_TARGET_COLUMN)
        self._targets = check_target_columns(info, [names.index(c) for c in columns])
        return self

    def partial_update_by_index(self, column_indices: list[int]) -> TableUpsert:
        self._targets = check_target_columns(self._table.get_table_info(), list(column_indices))
        return self

    def create_writer(self) -> UpsertWriter:
        info = self._table.get_table_info()
        _require_primary_key(info, "new_upsert()")
        return UpsertWriter(self._table._conn, info, self._targets)

    def __repr__(self) -> str:
        return f"TableUpsert({self._table.get_table_path()}, target_columns={self._targets})"


class UpsertWriter(_TableWriter):
    """Upserts and deletes rows of a primary-key table by primary key."""

    def __init__(self, connection, table: TableInfo, target_columns: list[int] | None = None) -> None:
        _require_primary_key(table, "an UpsertWriter")
        schema = table.row_schema
        self._targets = check_target_columns(table, target_columns) if target_columns is not None else None
        self._pk_names = list(schema.primary_keys)
        self._pk_indices = schema.primary_key_indices
        ncols = len(schema.columns)
        # where each primary-key value sits in a delete's positional key (the key values, or a whole row)
        self._delete_positional_pk = {ncols: self._pk_indices, len(self._pk_indices): list(range(len(self._pk_names)))}
        super().__init__(connection, table)
        self._data_columns = len(self._arrow_schema)
        where = f"table '{table.table_path}'"
        if self._targets is None:
            self._upsert_checker = RowChecker(schema, f"upsert to {where}")
        else:
            self._upsert_checker = RowChecker(schema, f"upsert to {where}", columns=self._targets,
                                              positional={ncols: self._targets,
                                                          len(self._targets): list(range(len(self._targets)))},
                                              extra_keys="known")
        self._delete_checker = RowChecker(schema, f"delete from {where}", columns=self._pk_indices,
                                          positional={ncols: self._pk_indices,
                                                      len(self._pk_indices): list(range(len(self._pk_indices)))},
                                          extra_keys="any")

    def _make_sender(self) -> Sender:
        return KvSender(self._io, self._table, self._config, self._budget, target_columns=self._targets)

    # ------------------------------------------------------------ public API

    def upsert(self, row: dict | list | tuple) -> WriteResultHandle:
        """Inserts the row, or replaces (partial update: updates the target columns of) the row with its key."""
        self._upsert_checker.check(row)
        return self._add_row(_KvOp(ChangeType.UpdateAfter, row))

    def delete(self, pk: dict | list | tuple) -> WriteResultHandle:
        """Deletes the row with this primary key: a dict with the key columns (other entries are ignored), or
        a list/tuple of the key values in primary-key order (or a whole row in schema order).

        For a partial-update writer the server (as Fluss does) sets the target columns to null and removes the
        row only when no other non-key column holds a value."""
        self._delete_checker.check(pk)
        return self._add_row(_KvOp(ChangeType.Delete, pk))

    def upsert_arrow_batch(self, batch: pa.RecordBatch | pa.Table) -> WriteResultHandle:
        """Upserts every row of Arrow data at once, in row order: the table's columns (matched by name, types
        converted without loss), or for a partial-update writer its target columns. The data is checked before
        anything is queued: a missing or unknown column, a lossy type or a null primary key raise here."""
        return self._write_conformed(self._conform_columns(batch, self._targets),
                                     _change_types(ChangeType.UpdateAfter))

    def delete_arrow_batch(self, batch: pa.RecordBatch | pa.Table) -> WriteResultHandle:
        """Deletes the rows whose primary keys are in the Arrow data (its primary-key columns; other columns
        are ignored), in row order, as ``delete`` does for one key."""
        keys = _select(batch, self._pk_names, f"delete_arrow_batch on table '{self._table.table_path}'")
        return self._write_conformed(self._conform_columns(keys, self._pk_indices), _change_types(ChangeType.Delete))

    async def flush(self) -> None:
        """Sends every upsert and delete so far and waits until they are acknowledged (or failed)."""
        await super().flush()

    def __repr__(self) -> str:
        return f"UpsertWriter({self._table.table_path}, target_columns={self._targets})"

    # ------------------------------------------------------------ conversion

    def _user_row(self, op: _KvOp):
        return op.row

    def _rows_to_batch(self, ops: list[_KvOp]) -> pa.RecordBatch:
        """Arrow rows of the table schema plus a trailing change-type column (dropped when encoding)."""
        upserts = [i for i, op in enumerate(ops) if op.change_type != ChangeType.Delete]
        deletes = [i for i, op in enumerate(ops) if op.change_type == ChangeType.Delete]
        parts = []
        if upserts:
            parts.append(rows_to_batch(self._uniform([ops[i].row for i in upserts]), self._schema, self._targets))
        if deletes:
            rows = [self._key_of(ops[i].row) for i in deletes]
            parts.append(rows_to_batch(rows, self._schema, self._pk_indices))
        if len(parts) == 1:
            batch = parts[0]
        else:  # back to the order of the calls
            order = np.empty(len(ops), dtype=np.int64)
            order[np.asarray(upserts + deletes, dtype=np.int64)] = np.arange(len(ops))
            table = pa.Table.from_batches(parts).take(pa.array(order))
            batch = table.combine_chunks().to_batches()[0] if table.num_rows else parts[0]
        types = np.fromiter((op.change_type for op in ops), dtype=np.uint8, count=len(ops))
        return batch.append_column(_CHANGE_TYPE_COLUMN, pa.array(types, pa.uint8()))

    def _uniform(self, rows: list) -> list:
        """Dict and positional rows mixed in one chunk all become dicts (row conversion wants one shape)."""
        if all(isinstance(r, Mapping) for r in rows) or all(isinstance(r, list | tuple) for r in rows):
            return rows
        names = self._schema.column_names
        shapes = {len(names): names}
        if self._targets is not None:
            shapes.setdefault(len(self._targets), [names[i] for i in self._targets])
        out = []
        for r in rows:
            cols = shapes.get(len(r)) if isinstance(r, list | tuple) else None
            out.append(dict(zip(cols, r, strict=True)) if cols is not None else r)
        return out

    def _key_of(self, row: Mapping | Sequence) -> dict:
        """A delete's key as a dict: from a dict (other entries ignored), the key values in primary-key order,
        or a whole row in schema order."""
        if isinstance(row, Mapping):
            return {k: row[k] for k in self._pk_names}
        at = self._delete_positional_pk[len(row)]
        return {k: row[i] for k, i in zip(self._pk_names, at, strict=True)}

    def _conform_columns(self, data: pa.RecordBatch | pa.Table,
                         columns: list[int] | None) -> pa.RecordBatch | list[pa.RecordBatch]:
        """Arrow data holding the table columns at ``columns`` (None: every column) conformed to them, then
        widened to the table's Arrow schema with the other columns null (they are not written)."""
        if columns is None:
            return conform_batch(data, self._schema)
        cols = [self._schema.columns[i] for i in columns]
        conformed = conform_batch(data, RowSchema(cols, list(self._pk_names)))
        names = [c.name for c in cols]

        def widen(b: pa.RecordBatch) -> pa.RecordBatch:
            arrays = [b.column(names.index(f.name)) if f.name in names else pa.nulls(b.num_rows, f.type)
                      for f in self._arrow_schema]
            return pa.RecordBatch.from_arrays(arrays, schema=self._arrow_schema)

        return [widen(b) for b in conformed] if isinstance(conformed, list) else widen(conformed)

    def _encode_piece(self, piece: pa.RecordBatch) -> bytes:
        n = self._data_columns
        change_types = piece.column(n).to_numpy(zero_copy_only=False).astype(np.uint8)
        data = pa.RecordBatch.from_arrays(piece.columns[:n], schema=self._arrow_schema)
        return build_batch(data, schema_id=self._table.schema_id, compression=self._compression,
                           zstd_level=self._zstd_level, change_types=change_types,
                           min_compressed_bytes=self._min_compressed_bytes)


def _change_types(change_type: int):
    """The ``extend`` of an Arrow write: every row of a conformed batch gets ``change_type``."""

    def extend(batch: pa.RecordBatch) -> pa.RecordBatch:
        types = pa.array(np.full(batch.num_rows, int(change_type), dtype=np.uint8), pa.uint8())
        return batch.append_column(_CHANGE_TYPE_COLUMN, types)

    return extend


def _select(data: pa.RecordBatch | pa.Table, names: list[str], where: str) -> pa.RecordBatch | pa.Table:
    """The ``names`` columns of Arrow data, naming the first one it lacks."""
    if not isinstance(data, pa.RecordBatch | pa.Table):
        raise FlussError(f"{where}: expected a pyarrow RecordBatch or Table, got {type(data).__name__}",
                         ErrorCode.CLIENT_ERROR)
    missing = [n for n in names if n not in data.schema.names]
    if missing:
        raise FlussError(f"{where}: primary key column '{missing[0]}' is missing from the Arrow data",
                         ErrorCode.CLIENT_ERROR)
    return data.select(names)
