"""Schema ids of a table whose columns only ever append (ALTER TABLE ADD), and reading data of older ids.

A table's schema id starts at 1 and grows by one with each ALTER TABLE ADD; ZooKeeper keeps every version
(``.../tables/{t}/schemas/{id}``). Columns are only ever appended, nullable, after the last one, so the schema
of id ``k`` is the first ``n_k`` columns of the current schema: a table's whole history is its list of column
counts ``n_1 <= n_2 <= ... <= n_current`` (``TableInfo.schema_column_counts``, entry ``k - 1`` for id ``k``).

Every log batch header carries the schema id its Arrow body was written with, and every KV value starts with
one (``fluss.record.indexed_rows``). Data is never rewritten when a column is added; readers adapt:

* a body of schema id ``k`` holds columns ``0 .. n_k - 1``; read with the current schema, the columns added
  since are all null (:meth:`SchemaHistory.read`);
* a body projected by the tablet server for the column indexes ``P`` (indexes into the current schema, which
  stay valid for every later one) holds the entries of ``P`` below ``n_k``, in ``P``'s order (column 0 alone
  when there is none, so the body still carries its row count); the others are filled with nulls on the
  client;
* a reader fixes the columns it returns when it is created (its table info's columns, or its projection). A
  batch of a schema id newer than the reader knows is decoded after the reader refreshed its table info, and
  the new columns are dropped: a long-lived reader keeps its shape; a reader created after the ALTER sees them.

An unknown schema id (0, negative, or newer than the table has) is ``SCHEMA_NOT_EXIST``.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from fluss.errors import ErrorCode, FlussError
from fluss.record.log_batch import LogBatch


class SchemaHistory:
    """The column counts of every schema id of one table, and how to read a body of any of them.

    Args:
        schema: the Arrow schema of the latest schema id (what ``column_counts[-1]`` columns are).
        column_counts: entry ``i`` is the column count of schema id ``i + 1``; empty means one schema id
            (``schema_id``, default 1) with all the columns, as a table never altered.
        where: how errors name the table.
    """

    def __init__(self, schema: pa.Schema, column_counts: Sequence[int] = (), schema_id: int = 1,
                 where: str = "the table") -> None:
        counts = list(column_counts) or [len(schema)] * max(1, schema_id)
        if any(b < a for a, b in zip(counts, counts[1:], strict=False)) or counts[-1] != len(schema) or counts[0] < 1:
            raise FlussError(f"Schema history of {where} is inconsistent: column counts {counts} for a latest "
                             f"schema of {len(schema)} columns", ErrorCode.SCHEMA_NOT_EXIST)
        self.schema = schema
        self.counts = counts
        self.where = where
        self._schemas: dict[int, pa.Schema] = {}

    @classmethod
    def of(cls, info) -> SchemaHistory:  # noqa: ANN001 - a fluss.metadata.TableInfo (imported lazily there)
        return cls(info.row_schema.to_arrow(), info.schema_column_counts, info.schema_id,
                   f"table '{info.table_path}'")

    @property
    def current_id(self) -> int:
        return len(self.counts)

    def knows(self, schema_id: int) -> bool:
        return 1 <= schema_id <= len(self.counts)

    def column_count(self, schema_id: int) -> int:
        """How many (leading) columns a body of ``schema_id`` holds; raises SCHEMA_NOT_EXIST when unknown."""
        if not self.knows(schema_id):
            raise FlussError(f"Schema id {schema_id} does not exist for {self.where} (its schema ids are 1 to "
                             f"{self.current_id})", ErrorCode.SCHEMA_NOT_EXIST)
        return self.counts[schema_id - 1]

    def schema_id_with(self, num_columns: int) -> int:
        """The schema id whose rows have ``num_columns`` columns (each ADD adds columns, so it is one id)."""
        for sid in range(len(self.counts), 0, -1):
            if self.counts[sid - 1] == num_columns:
                return sid
        raise FlussError(f"No schema id of {self.where} has {num_columns} columns (counts {self.counts})",
                         ErrorCode.SCHEMA_NOT_EXIST)

    def schema_of(self, schema_id: int) -> pa.Schema:
        """The Arrow schema of ``schema_id``: the first ``column_count(schema_id)`` columns."""
        got = self._schemas.get(schema_id)
        if got is None:
            n = self.column_count(schema_id)
            got = self.schema if n == len(self.schema) else pa.schema(list(self.schema)[:n])
            self._schemas[schema_id] = got
        return got

    def body_columns(self, schema_id: int, projection: Sequence[int] | None) -> list[int]:
        """The current-schema indexes a body of ``schema_id`` holds, in body order (``projection``: projected by
        the server for those indexes)."""
        n = self.column_count(schema_id)
        if projection is None:
            return list(range(n))
        return [c for c in projection if c < n] or [0]  # no projected column yet: the first one carries the rows

    def complete(self, body: pa.RecordBatch, held: Sequence[int], columns: Sequence[int]) -> pa.RecordBatch:
        """``columns`` (current-schema indexes) of a body holding ``held``: the missing ones all null."""
        if list(held) == list(columns):
            return body
        at = {c: i for i, c in enumerate(held)}
        arrays, fields = [], []
        for c in columns:
            f = self.schema.field(c)
            fields.append(f.with_nullable(True) if c not in at else f)
            arrays.append(body.column(at[c]) if c in at else pa.nulls(body.num_rows, f.type))
        return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))

    def read(self, batch: LogBatch, columns: Sequence[int] | None = None,
             projection: Sequence[int] | None = None) -> pa.RecordBatch:
        """The rows of ``batch`` as ``columns`` of the current schema (all columns when None).

        ``projection``: the column indexes the tablet server projected the batch for (None: not projected).
        """
        if batch.schema_id == len(self.counts) and projection is None and columns is None:
            return batch.to_arrow(self.schema)  # the common case: the batch has the current schema
        held = self.body_columns(batch.schema_id, projection)
        body = batch.to_arrow(pa.schema([self.schema.field(c) for c in held]))
        return self.complete(body, held, range(len(self.schema)) if columns is None else columns)

    def pad(self, rows: pa.RecordBatch) -> pa.RecordBatch:
        """Rows of a leading subset of the columns (an older schema) with the later columns added as nulls."""
        n = rows.num_columns
        if n == len(self.schema):
            return rows
        return self.complete(rows, range(n), range(len(self.schema)))


__all__ = ["SchemaHistory"]
