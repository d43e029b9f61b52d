"""Follower replication: a follower pulls each bucket's log from its leader with FetchLog (follower id set).

One fetch loop per leader server covers every bucket this server follows from it. The fetch offset a
follower asks for is its log end offset, which is how the leader learns follower progress and moves the
high watermark. Fetched batches already carry offsets and are appended as they are.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import grpc

from fluss.errors import ErrorCode
from fluss.metadata import TableBucket
from fluss.rpc.channels import ChannelPool
from fluss.rpc.gen import fluss_api_pb2 as pb

log = logging.getLogger(__name__)


class ReplicaFetcherManager:
    def __init__(self, manager, resolve_address: Callable[[int], str | None], max_wait_ms: int,
                 max_bytes: int = 16 * 1024 * 1024) -> None:
        self.manager = manager
        self.resolve_address = resolve_address
        self.max_wait_ms = max_wait_ms
        self.max_bytes = max_bytes
        self.channels = ChannelPool()
        self._buckets: dict[int, set[TableBucket]] = {}
        self._tasks: dict[int, asyncio.Task] = {}

    def add(self, tb: TableBucket, leader: int) -> None:
        self.remove(tb)
        if leader < 0:
            return
        self._buckets.setdefault(leader, set()).add(tb)
        if leader not in self._tasks or self._tasks[leader].done():
            self._tasks[leader] = asyncio.create_task(self._fetch_loop(leader), name=f"fetch-from-{leader}")

    def remove(self, tb: TableBucket) -> None:
        for buckets in self._buckets.values():
            buckets.discard(tb)

    async def _fetch_loop(self, leader: int) -> None:
        while self._buckets.get(leader):
            address = await asyncio.to_thread(self.resolve_address, leader)
            if address is None:
                await asyncio.sleep(0.5)
                continue
            try:
                await self._fetch_once(leader, self.channels.tablet(address))
            except grpc.aio.AioRpcError as e:
                log.debug("fetch from leader %d failed: %s", leader, e.code())
                await asyncio.sleep(0.2)
            except Exception:  # noqa: BLE001 - keep replicating
                log.exception("follower fetch from %d failed", leader)
                await asyncio.sleep(0.5)
        self._tasks.pop(leader, None)

    async def _fetch_once(self, leader: int, stub) -> None:
        by_table: dict[int, list[TableBucket]] = {}
        for tb in sorted(self._buckets.get(leader, ())):
            if tb in self.manager.replicas:
                by_table.setdefault(tb.table_id, []).append(tb)
        if not by_table:
            await asyncio.sleep(0.1)
            return
        req = pb.FetchLogRequest(follower_id=self.manager.server_id, max_bytes=self.max_bytes, min_bytes=1,
                                 max_wait_ms=self.max_wait_ms)
        for table_id, tbs in by_table.items():
            req.tables.append(pb.FetchTablePb(table_id=table_id, buckets=[
                pb.FetchBucketPb(partition_id=tb.partition_id_or_none_value, bucket_id=tb.bucket_id,
                                 fetch_offset=self.manager.replicas[tb].log.log_end_offset,
                                 max_bytes=self.max_bytes) for tb in tbs]))
        resp = await stub.FetchLog(req, timeout=self.max_wait_ms / 1000 + 10)
        for t in resp.tables:
            for b in t.buckets:
                tb = TableBucket(t.table_id, b.bucket_id, b.partition_id)
                replica = self.manager.replicas.get(tb)
                if replica is None or replica.is_leader:
                    continue
                if b.error.code == ErrorCode.LOG_OFFSET_OUT_OF_RANGE_EXCEPTION:
                    await asyncio.to_thread(replica.log.truncate_to, min(b.high_watermark, replica.log.log_end_offset))
                    continue
                if b.error.code:
                    continue
                if b.records:
                    await asyncio.to_thread(replica.log.append_as_follower, b.records)
                hw = min(b.high_watermark, replica.log.log_end_offset)
                if hw > replica.log.high_watermark:
                    replica.log.update_high_watermark(hw)

    async def close(self) -> None:
        self._buckets.clear()
        for task in self._tasks.values():
            task.cancel()
        await self.channels.close()
