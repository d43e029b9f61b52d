"""``BatchScanner``: a one-shot, bounded scan of one bucket (``table.new_scan().limit(n)
.create_bucket_batch_scanner(bucket)``), as in the official client.

The scan runs on the first ``next_batch()`` (or ``collect_all_batches()`` / ``to_arrow()`` / ``to_pandas()``)
and yields one batch, then the scanner is spent (``next_batch()`` gives None). It is not retried past the
retry policy's deadline: an error leaves the scanner spent. What it reads, as Fluss's LimitScan does:

* a primary-key table: at most ``n`` of the bucket's current rows (its KV state, the ScanKv RPC);
  ``log_offset`` then says where the bucket's changelog continues after that state (used by Flink's ``full``
  startup mode and union reads);
* a log table: the last ``n`` records below the high watermark (from ``max(log start, high watermark - n)``).

A projection set on the ``TableScan`` applies to the batch.
"""

from __future__ import annotations

import pyarrow as pa

from fluss.client.retry import RetryPolicy, call_with_retry, refresh_table
from fluss.client.schema_reader import SchemaReader
from fluss.errors import ErrorCode, FlussError
from fluss.metadata import EARLIEST_OFFSET, OffsetSpec, TableBucket, TableInfo
from fluss.record.log_batch import LogBatch
from fluss.rpc.errors import raise_for_error
from fluss.rpc.gen import fluss_api_pb2 as pb


class BatchScanner:
    """One bounded scan of one bucket (see the module docstring)."""

    def __init__(self, connection, table: TableInfo, bucket: TableBucket, projection: list[int] | None,
                 limit: int | None) -> None:
        self._conn = connection
        self._io = connection.io_thread()
        self._table = table
        self._bucket = bucket
        self._projection = projection
        self._limit = limit
        self._spent = False
        schema = table.row_schema.to_arrow()
        self._schema = schema if projection is None else pa.schema([schema.field(i) for i in projection])
        #: For a primary-key table, the changelog offset that follows the scanned state (after the scan).
        self.log_offset: int | None = None

    @property
    def bucket(self) -> TableBucket:
        return self._bucket

    async def next_batch(self):
        """The scan's batch on the first call (a ``RecordBatch``), then None."""
        from fluss.client.scanner import RecordBatch

        if self._spent:
            return None
        self._spent = True
        if self._table.has_primary_key():
            batch, self.log_offset = await self._io.wait(self._scan_kv())
            base = last = -1
        else:
            batch, base, last = await self._scan_log()
        if self._projection is not None and batch is not None and self._table.has_primary_key():
            batch = batch.select(self._projection)
        if batch is None:
            batch = pa.RecordBatch.from_pylist([], schema=self._schema)
        return RecordBatch(batch, self._bucket, base, last)

    async def collect_all_batches(self) -> list:
        out = []
        while (batch := await self.next_batch()) is not None:
            out.append(batch)
        return out

    async def to_arrow(self) -> pa.Table:
        batches = [b.batch for b in await self.collect_all_batches() if b.batch.num_rows]
        return pa.Table.from_batches(batches, schema=self._schema) if batches else self._schema.empty_table()

    async def to_pandas(self):
        return (await self.to_arrow()).to_pandas()

    # ------------------------------------------------------------------ the two kinds of scan

    async def _scan_log(self) -> tuple[pa.RecordBatch | None, int, int]:
        from fluss.client.scanner import LogScanner

        admin = self._conn.get_admin()
        path, tb = self._table.table_path, self._bucket
        if tb.partition_id is None:
            latest = (await admin.list_offsets(path, [tb.bucket_id], OffsetSpec.latest()))[tb.bucket_id]
        else:
            name = await self._partition_name(tb.partition_id)
            latest = (await admin.list_partition_offsets(path, name, [tb.bucket_id], OffsetSpec.latest()))[
                tb.bucket_id]
        start = max(0, latest - self._limit)
        scanner = LogScanner(self._conn, self._table, self._projection, record_mode=False)
        try:
            if tb.partition_id is None:
                scanner.subscribe(tb.bucket_id, start if start > 0 else EARLIEST_OFFSET)
            else:
                scanner.subscribe_partition(tb.partition_id, tb.bucket_id, start if start > 0 else EARLIEST_OFFSET)
            table = await scanner.to_arrow()
        finally:
            await scanner.aclose()
        if table.num_rows > self._limit:
            table = table.slice(table.num_rows - self._limit)
        if not table.num_rows:
            return None, -1, -1
        return table.combine_chunks().to_batches()[0], latest - table.num_rows, latest - 1

    async def _partition_name(self, partition_id: int) -> str:
        for p in await self._conn.get_admin().list_partition_infos(self._table.table_path):
            if p.partition_id == partition_id:
                return p.partition_name
        raise FlussError(f"Partition {partition_id} of table '{self._table.table_path}' does not exist",
                         ErrorCode.PARTITION_NOT_EXISTS)

    async def _scan_kv(self) -> tuple[pa.RecordBatch | None, int]:
        client = self._io.client

        async def latest_info() -> TableInfo:
            return (await client.table(self._table.table_path, refresh=True)).info

        reader = SchemaReader(self._table, None, latest_info)

        async def scan_once() -> tuple[pa.RecordBatch | None, int]:
            meta = client.tables.get(self._table.table_path)
            address = client.leader_address(meta, self._bucket) if meta is not None else None
            if address is None:
                raise FlussError(f"No leader for {self._bucket}", ErrorCode.LEADER_NOT_AVAILABLE_EXCEPTION)
            resp = await client.tablet_call(address, "ScanKv", pb.ScanKvRequest(
                table_id=self._table.table_id, partition_id=self._bucket.partition_id_or_none_value,
                bucket_id=self._bucket.bucket_id, limit=self._limit or 0))
            raise_for_error(resp.error)
            if not resp.rows:
                return None, resp.log_offset
            batch = LogBatch(resp.rows)
            await reader.learn([batch])  # rows of a schema id newer than this scanner's table info
            return reader.read_rows(batch), resp.log_offset

        pid = [self._bucket.partition_id] if self._bucket.partition_id is not None else []
        await refresh_table(client, self._table, pid)
        return await call_with_retry(scan_once, RetryPolicy.from_config(client.config),
                                     f"ScanKv of {self._bucket} of table '{self._table.table_path}'",
                                     lambda: refresh_table(client, self._table, pid))

    def __repr__(self) -> str:
        return f"BatchScanner({self._table.table_path}, {self._bucket}, limit={self._limit})"


def kv_state_scanner(connection, table: TableInfo, bucket: TableBucket) -> BatchScanner:
    """A scanner of a primary-key bucket's whole current state (no limit), for union reads and the tiering job."""
    return BatchScanner(connection, table, bucket, None, None)
