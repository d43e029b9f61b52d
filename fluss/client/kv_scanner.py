"""Snapshot scans of a primary-key bucket: its current rows (at most ``limit``) and the changelog offset to
continue from — what Flink's ``full`` startup mode and bounded ``limit`` scans read (the ScanKv RPC)."""

from __future__ import annotations

import pyarrow as pa

from fluss.client.retry import RetryPolicy, call_with_retry, refresh_table
from fluss.errors import ErrorCode, FlussError
from fluss.metadata import TableBucket, TableInfo
from fluss.record.log_batch import LogBatch
from fluss.rpc.errors import raise_for_error
from fluss.rpc.gen import fluss_api_pb2 as pb


class KvSnapshotScanner:
    """Reads one bucket of a primary-key table as it is now (``to_arrow``); ``log_offset`` tells where its
    changelog continues after that snapshot."""

    def __init__(self, connection, table: TableInfo, bucket: TableBucket, projection: list[int] | None,
                 limit: int | None) -> None:
        self._io = connection.io_thread()
        self._table = table
        self._bucket = bucket
        self._projection = projection
        self._limit = limit
        self.log_offset: int | None = None

    async def to_arrow(self) -> pa.Table:
        batch, self.log_offset = await self._io.wait(self._scan())
        table = pa.Table.from_batches([batch]) if batch is not None else self._table.row_schema.to_arrow().empty_table()
        if self._projection is not None:
            table = table.select(self._projection)
        return table

    async def to_pandas(self):
        return (await self.to_arrow()).to_pandas()

    async def _scan(self) -> tuple[pa.RecordBatch | None, int]:
        client = self._io.client

        async def scan_once() -> tuple[pa.RecordBatch | None, int]:
            meta = client.tables.get(self._table.table_path)
            address = client.leader_address(meta, self._bucket) if meta is not None else None
            if address is None:
                raise FlussError(f"No leader for {self._bucket}", ErrorCode.LEADER_NOT_AVAILABLE_EXCEPTION)
            resp = await client.tablet_call(address, "ScanKv", pb.ScanKvRequest(
                table_id=self._table.table_id, partition_id=self._bucket.partition_id_or_none_value,
                bucket_id=self._bucket.bucket_id, limit=self._limit or 0))
            raise_for_error(resp.error)
            schema = self._table.row_schema.to_arrow()
            return (LogBatch(resp.rows).to_arrow(schema) if resp.rows else None), resp.log_offset

        pid = [self._bucket.partition_id] if self._bucket.partition_id is not None else []
        await refresh_table(client, self._table, pid)
        return await call_with_retry(scan_once, RetryPolicy.from_config(client.config),
                                     f"ScanKv of {self._bucket} of table '{self._table.table_path}'",
                                     lambda: refresh_table(client, self._table, pid))

    def __repr__(self) -> str:
        return f"KvSnapshotScanner({self._table.table_path}, {self._bucket}, limit={self._limit})"
