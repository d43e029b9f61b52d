"""FlussTable and its builders: ``new_append()``, ``new_scan()``, ``new_upsert()`` (``fluss.client.upsert``) and
``new_lookup()`` (``fluss.client.lookup``)."""

from __future__ import annotations

from fluss.client.batch_scanner import BatchScanner, kv_state_scanner
from fluss.client.lookup import TableLookup
from fluss.client.scanner import LogScanner
from fluss.client.upsert import TableUpsert
from fluss.client.writer import AppendWriter
from fluss.errors import ErrorCode, FlussError
from fluss.metadata import TableBucket, TableInfo, TablePath
from fluss.record.log_format import require_arrow_log_format


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
    """Builder of scanners: projection by index or name, and a row limit for a bucket batch scanner."""

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
        """A positive row limit; it enables ``create_bucket_batch_scanner`` (log scanners refuse a limit)."""
        if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
            raise FlussError(f"Limit must be a positive integer, got {n!r}", ErrorCode.CLIENT_ERROR)
        self._limit = n
        return self

    async def create_log_scanner(self) -> LogScanner:
        """A record scanner (``poll``): a log table's records (+A), or a primary-key table's changelog."""
        self._refuse_limit("create_log_scanner")
        return LogScanner(self._table._conn, self._table.get_table_info(), self._projection, True)

    async def create_record_batch_log_scanner(self) -> LogScanner:
        """An Arrow batch scanner (``poll_arrow``, ``poll_record_batch``, ``to_arrow``...) of a log table in the
        ARROW log format (a primary-key table's changelog has per-record change types: use
        ``create_log_scanner``)."""
        self._refuse_limit("create_record_batch_log_scanner")
        info = self._table.get_table_info()
        if info.has_primary_key():
            raise FlussError(f"Batch-mode log scan does not support primary-key table '{info.table_path}'; use "
                             "create_log_scanner() to read its changelog record by record",
                             ErrorCode.CLIENT_ERROR)
        require_arrow_log_format(info, "A record-batch log scan")
        return LogScanner(self._table._conn, info, self._projection, False)

    def create_changelog_batch_scanner(self) -> LogScanner:
        """Arrow batches with their change types, also of a primary-key table's changelog (the tiering job, union
        reads and the gateway use it; this client's addition, as is ``RecordBatch.change_types``)."""
        return LogScanner(self._table._conn, self._table.get_table_info(), self._projection, False)

    def create_bucket_batch_scanner(self, bucket: TableBucket) -> BatchScanner:
        """A one-shot bounded scan of ``bucket`` (needs ``limit``; see ``fluss.client.batch_scanner``)."""
        info = self._table.get_table_info()
        if self._limit is None:
            raise FlussError("create_bucket_batch_scanner() needs a limit: call limit(n) first", ErrorCode.CLIENT_ERROR)
        if not isinstance(bucket, TableBucket):
            raise FlussError(f"create_bucket_batch_scanner() takes a TableBucket, got {type(bucket).__name__}",
                             ErrorCode.CLIENT_ERROR)
        if bucket.table_id != info.table_id:
            raise FlussError(f"{bucket} is not a bucket of table '{info.table_path}' (table id {info.table_id})",
                             ErrorCode.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION)
        if info.is_partitioned() != (bucket.partition_id is not None):
            raise FlussError(f"Table '{info.table_path}' is {'' if info.is_partitioned() else 'not '}partitioned: "
                             f"{bucket} {'needs' if info.is_partitioned() else 'must not have'} a partition id",
                             ErrorCode.PARTITION_NOT_EXISTS)
        num_buckets = info.num_buckets
        if bucket.partition_id is not None:  # a partition has its own bucket count
            io = self._table._conn.io_thread()
            num_buckets = io.call(io.client.bucket_count(info.table_path, bucket.partition_id)) or num_buckets
        if not 0 <= bucket.bucket_id < num_buckets:
            raise FlussError(f"Bucket {bucket.bucket_id} does not exist in table '{info.table_path}' "
                             f"({num_buckets} buckets)", ErrorCode.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION)
        if not info.has_primary_key():
            require_arrow_log_format(info, "A bucket batch scan of a log table")
        return BatchScanner(self._table._conn, info, bucket, self._projection, self._limit)

    def create_kv_state_scanner(self, bucket: TableBucket) -> BatchScanner:
        """Beyond the official API: a scanner of a primary-key bucket's whole current state (no limit; used by
        union reads and the lake tiering job)."""
        info = self._table.get_table_info()
        if not info.has_primary_key():
            raise FlussError(f"create_kv_state_scanner() reads a primary-key table; '{info.table_path}' has none",
                             ErrorCode.CLIENT_ERROR)
        return kv_state_scanner(self._table._conn, info, bucket)

    def _refuse_limit(self, method: str) -> None:
        if self._limit is not None:
            raise FlussError(f"{method}() does not support a limit; use limit(n).create_bucket_batch_scanner(bucket)",
                             ErrorCode.CLIENT_ERROR)

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
