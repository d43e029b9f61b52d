"""FlussTable and its builders: ``new_append()``, ``new_scan()``, ``new_upsert()`` (``fluss.client.upsert``) and
``new_lookup()`` (``fluss.client.lookup``)."""

from __future__ import annotations

from fluss.client.kv_scanner import KvSnapshotScanner
from fluss.client.lookup import TableLookup
from fluss.client.scanner import LogScanner
from fluss.client.upsert import TableUpsert
from fluss.client.writer import AppendWriter
from fluss.errors import ErrorCode, FlussError
from fluss.metadata import TableBucket, TableInfo, TablePath


class TableAppend:
    def __init__(self, table: FlussTable) -> None:
        self._table = table

    def create_writer(self) -> AppendWriter:
        if self._table.has_primary_key():
            raise FlussError(f"Table '{self._table.get_table_path()}' has a primary key: use new_upsert()",
                             ErrorCode.CLIENT_ERROR)
        return AppendWriter(self._table._conn, self._table.get_table_info())

    def __repr__(self) -> str:
        return f"TableAppend({self._table.get_table_path()})"


class TableScan:
    """Builder for log scanners: projection by index or name, and an optional row limit."""

    def __init__(self, table: FlussTable) -> None:
        self._table = table
        self._projection: list[int] | None = None
        self._limit: int | None = None

    def project(self, indices: list[int]) -> TableScan:
        n = self._table.get_table_info().get_column_count()
        bad = [i for i in indices if not isinstance(i, int) or i < 0 or i >= n]
        if bad or not indices or len(set(indices)) != len(indices):
            raise FlussError(f"Invalid projection {indices} for table '{self._table.get_table_path()}' with {n} "
                             "columns (indices must be distinct and in range)", ErrorCode.INVALID_COLUMN_PROJECTION)
        self._projection = list(indices)
        return self

    def project_by_name(self, names: list[str]) -> TableScan:
        columns = self._table.get_table_info().get_column_names()
        missing = [n for n in names if n not in columns]
        if missing:
            raise FlussError(f"Column(s) {missing} do not exist in table '{self._table.get_table_path()}' "
                             f"(columns: {columns})", ErrorCode.INVALID_COLUMN_PROJECTION)
        return self.project([columns.index(n) for n in names])

    def limit(self, n: int) -> TableScan:
        if n <= 0:
            raise FlussError(f"Limit must be positive, got {n}", ErrorCode.CLIENT_ERROR)
        self._limit = n
        return self

    async def create_log_scanner(self) -> LogScanner:
        return LogScanner(self._table._conn, self._table.get_table_info(), self._projection, True, self._limit)

    async def create_record_batch_log_scanner(self) -> LogScanner:
        return LogScanner(self._table._conn, self._table.get_table_info(), self._projection, False, self._limit)

    async def create_bucket_batch_scanner(self, bucket_id: int, partition_id: int | None = None):
        """A bounded scanner of one bucket: for a log table its log from the earliest offset, for a
        primary-key table its current rows (a KV snapshot scan); ``limit`` rows at most."""
        info = self._table.get_table_info()
        if info.has_primary_key():
            if bucket_id < 0 or bucket_id >= info.num_buckets:
                raise FlussError(f"Bucket {bucket_id} does not exist in table '{info.table_path}' "
                                 f"({info.num_buckets} buckets)", ErrorCode.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION)
            return KvSnapshotScanner(self._table._conn, info, TableBucket(info.table_id, bucket_id, partition_id),
                                     self._projection, self._limit)
        scanner = await self.create_record_batch_log_scanner()
        if partition_id is None:
            scanner.subscribe(bucket_id, -2)
        else:
            scanner.subscribe_partition(partition_id, bucket_id, -2)
        return scanner

    def __repr__(self) -> str:
        return f"TableScan({self._table.get_table_path()}, projection={self._projection}, limit={self._limit})"


class FlussTable:
    def __init__(self, connection, info: TableInfo) -> None:
        self._conn = connection
        self._info = info

    def new_append(self) -> TableAppend:
        return TableAppend(self)

    def new_scan(self) -> TableScan:
        return TableScan(self)

    def new_upsert(self) -> TableUpsert:
        return TableUpsert(self)

    def new_lookup(self) -> TableLookup:
        return TableLookup(self)

    def get_table_info(self) -> TableInfo:
        return self._info

    def get_table_path(self) -> TablePath:
        return self._info.table_path

    def has_primary_key(self) -> bool:
        return self._info.has_primary_key()

    def __repr__(self) -> str:
        return f"FlussTable({self._info.table_path})"
