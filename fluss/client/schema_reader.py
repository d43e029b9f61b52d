"""How a client reader decodes batches of any schema id of its table (ALTER TABLE ADD).

A reader fixes its columns when it is created: its table info's columns, or its projection (indexes into that
schema). Batches of an older schema id come back with the columns added since filled with nulls; a batch of a
schema id newer than the reader's table info makes it fetch the table info again (the body cannot be decoded
without the new columns' types) and the new columns are dropped, so a reader's rows keep one shape for its
whole life. The rules are ``fluss.record.schema_evolution``'s.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

import pyarrow as pa

from fluss.metadata import TableInfo
from fluss.record.log_batch import LogBatch
from fluss.record.schema_evolution import SchemaHistory


class SchemaReader:
    """Decodes one reader's batches (see the module docstring).

    Args:
        table: the table info the reader was created with.
        projection: the column indexes the tablet server projects fetched batches for (None: not projected).
        columns: the column indexes the reader returns (default: the projection, else every column).
        fetch_info: returns the table's latest info (called when a batch has a newer schema id).
    """

    def __init__(self, table: TableInfo, projection: list[int] | None,
                 fetch_info: Callable[[], Awaitable[TableInfo]] | None = None,
                 columns: list[int] | None = None) -> None:
        self.table_id = table.table_id
        self.history = SchemaHistory.of(table)
        self.projection = list(projection) if projection is not None else None
        if columns is None:
            columns = self.projection if self.projection is not None else list(range(len(self.history.schema)))
        self.columns = list(columns)
        self.schema = pa.schema([self.history.schema.field(c) for c in self.columns])
        self._fetch_info = fetch_info
        self._direct_id = self._direct_schema_id()

    def _direct_schema_id(self) -> int:
        """The schema id whose bodies hold exactly this reader's columns (decoded with no extra work), or -1."""
        history = self.history
        if self.projection is not None or len(self.columns) == len(history.schema):
            return history.current_id  # projected: every projected column exists in the latest schema
        return -1

    def knows_all(self, batches: Iterable[LogBatch]) -> bool:
        """Whether :meth:`learn` has nothing to do for these batches (every schema id is known, or unusable)."""
        newest = max((b.schema_id for b in batches), default=0)
        return self.history.knows(newest) or newest < 1 or self._fetch_info is None

    async def learn(self, batches: Iterable[LogBatch]) -> None:
        """Fetches the table info again when a batch has a schema id this reader does not know yet."""
        newest = max((b.schema_id for b in batches), default=0)
        if self.history.knows(newest) or newest < 1 or self._fetch_info is None:
            return  # an id below 1 fails in read() with SCHEMA_NOT_EXIST
        info = await self._fetch_info()
        if info.table_id == self.table_id and info.schema_id > self.history.current_id:
            self.history = SchemaHistory.of(info)
            self._direct_id = self._direct_schema_id()

    def read(self, batch: LogBatch) -> pa.RecordBatch:
        """The batch's rows as this reader's columns (columns added after the batch was written: null)."""
        if batch.schema_id == self._direct_id:
            return batch.to_arrow(self.schema)
        return self.history.read(batch, self.columns, self.projection)

    def read_rows(self, batch: LogBatch) -> pa.RecordBatch:
        """A batch of unprojected rows (lookup and KV scan results) as this reader's columns."""
        if batch.schema_id == self._direct_id and self.projection is None:
            return batch.to_arrow(self.schema)
        return self.history.read(batch, self.columns, None)


__all__ = ["SchemaReader"]
