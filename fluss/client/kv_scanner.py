"""Snapshot scans of a primary-key bucket: its current rows (at most ``limit``) and the changelog offset to
continue from — what Flink's ``full`` startup mode and bounded ``limit`` scans read (the ScanKv RPC)."""

from __future__ import annotations

import asyncio
import time

import pyarrow as pa

from fluss.errors import ErrorCode, FlussError
from fluss.metadata import TableBucket, TableInfo
from fluss.record.log_batch import LogBatch
from fluss.rpc.errors import to_error
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
        path = self._table.table_path
        deadline = time.monotonic() + client.request_timeout_s
        while True:
            meta = await client.table(path, refresh=True)
            address = client.leader_address(meta, self._bucket)
            err: FlussError | None = None
            if address is None:
                err = FlussError(f"No leader for {self._bucket}", ErrorCode.LEADER_NOT_AVAILABLE_EXCEPTION)
            else:
                try:
                    resp = await client.tablet_call(address, "ScanKv", pb.ScanKvRequest(
                        table_id=self._table.table_id, partition_id=self._bucket.partition_id_or_none_value,
                        bucket_id=self._bucket.bucket_id, limit=self._limit or 0))
                    err = to_error(resp.error)
                except FlussError as e:
                    err = e
            if err is None:
                schema = self._table.row_schema.to_arrow()
                return (LogBatch(resp.rows).to_arrow(schema) if resp.rows else None), resp.log_offset
            if not err.is_retriable or time.monotonic() > deadline:
                raise err
            await asyncio.sleep(0.1)

    def __repr__(self) -> str:
        return f"KvSnapshotScanner({self._table.table_path}, {self._bucket}, limit={self._limit})"
