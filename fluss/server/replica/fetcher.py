"""Follower replication: a follower pulls each bucket's log from its leader with FetchLog (follower id set).

One fetch loop per leader server covers every bucket this server follows from it. The fetch offset a
follower asks for is its log end offset, which is how the leader learns follower progress and moves the
high watermark. Fetched batches already carry offsets and are appended as they are.

When a follower starts following a new leader term it first asks the leader where its own latest leader epoch
ends (OffsetForLeaderEpoch) and truncates its log there, so a divergent tail written under an old leader is
removed and nothing the new leader has is lost.

With a tiered log the leader also sends its *tiered offset* (offsets committed in remote storage), below which the
follower's local retention may delete segments. A follower whose log ends below the leader's local log start (it
was away while the leader deleted tiered segments, or it is a replica newly added by a reassignment) restarts its
log at that start: the offsets before it are served from remote storage. Before it restarts, it loads from the
bucket's committed remote log the leader-epoch history and the idempotent-writer state of the offsets before the
restart (``fluss/server/log/remote/aux_state.py``), so that as a leader it answers OffsetForLeaderEpoch and
recognises resent batches as the old leader did. The load runs in a task of its own; the bucket is not fetched
(so it cannot join the ISR) until it succeeds, and is retried with a growing backoff while remote storage or the
coordinator cannot answer.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

import grpc

from fluss.errors import ErrorCode
from fluss.metadata import TableBucket
from fluss.rpc.channels import ChannelFactory, ChannelPool
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.server.log.loop_work import SMALL_LOG_WORK_BYTES, run_log_work

log = logging.getLogger(__name__)

AUX_RETRY_INITIAL_S = 1.0
AUX_RETRY_MAX_S = 30.0


class ReplicaFetcherManager:
    def __init__(self, manager, resolve_address: Callable[[int], str | None], max_wait_ms: int,
                 max_bytes: int = 16 * 1024 * 1024, channels: ChannelFactory | None = None) -> None:
        self.manager = manager
        self.resolve_address = resolve_address
        self.max_wait_ms = max_wait_ms
        self.max_bytes = max_bytes
        self.channels = ChannelPool(channels)
        self._buckets: dict[int, set[TableBucket]] = {}
        self._tasks: dict[int, asyncio.Task] = {}
        self._needs_truncation: set[TableBucket] = set()
        self._restarting: dict[TableBucket, asyncio.Task] = {}  # loading the aux state from remote storage
        self._aux_retry: dict[TableBucket, tuple[float, float]] = {}  # bucket -> (not before (monotonic), backoff)

    def is_following(self, tb: TableBucket) -> bool:
        return any(tb in buckets for buckets in self._buckets.values())

    def add(self, tb: TableBucket, leader: int) -> None:
        self.remove(tb)
        if leader < 0:
            return
        self._needs_truncation.add(tb)
        self._buckets.setdefault(leader, set()).add(tb)
        if leader not in self._tasks or self._tasks[leader].done():
            self._tasks[leader] = asyncio.create_task(self._fetch_loop(leader), name=f"fetch-from-{leader}")

    def remove(self, tb: TableBucket) -> None:
        self._needs_truncation.discard(tb)
        for buckets in self._buckets.values():
            buckets.discard(tb)

    async def _fetch_loop(self, leader: int) -> None:
        """Fetches from ``leader`` while this server follows any bucket there. The leader's address is looked up
        in ZooKeeper once, and again only after an RPC to it failed (it may have restarted elsewhere)."""
        address: str | None = None
        while self._buckets.get(leader):
            if address is None:
                try:
                    address = await asyncio.to_thread(self.resolve_address, leader)
                except Exception as e:  # noqa: BLE001 - ZooKeeper reconnecting: try again shortly
                    log.debug("cannot resolve leader %d: %s", leader, e)
                if address is None:
                    await asyncio.sleep(0.5)
                    continue
            try:
                await self._fetch_once(leader, self.channels.tablet(address))
            except grpc.aio.AioRpcError as e:
                log.debug("fetch from leader %d failed: %s", leader, e.code())
                address = None
                await asyncio.sleep(0.2)
            except Exception:  # noqa: BLE001 - keep replicating
                log.exception("follower fetch from %d failed", leader)
                await asyncio.sleep(0.5)
        self._tasks.pop(leader, None)

    async def _truncate_to_leader(self, tb: TableBucket, stub) -> None:
        replica = self.manager.replicas.get(tb)
        if replica is None:
            return
        log_ = replica.log
        my_epoch = log_.epochs.latest_epoch
        if my_epoch < 0:
            self._needs_truncation.discard(tb)
            return
        resp = await stub.OffsetForLeaderEpoch(pb.OffsetForLeaderEpochRequest(
            follower_id=self.manager.server_id, table_id=tb.table_id, partition_id=tb.partition_id_or_none_value,
            bucket_id=tb.bucket_id, leader_epoch=my_epoch), timeout=10)
        if resp.error.code:
            # e.g. our view of the leader is stale: this bucket waits for the next NotifyLeaderAndIsr, while the
            # other buckets from this leader keep replicating (raising here would stall them all)
            log.debug("OffsetForLeaderEpoch for %s failed: %s", tb, resp.error.message)
            return
        if resp.leader_epoch < 0:
            target = log_.high_watermark
        elif resp.leader_epoch < my_epoch:
            _, my_end = log_.end_offset_for_epoch(resp.leader_epoch)
            target = min(resp.end_offset, my_end)
        else:
            target = resp.end_offset
        if target < log_.log_end_offset:
            log.info("follower %d truncates %s from %d to %d (leader epoch %d ends there)",
                     self.manager.server_id, tb, log_.log_end_offset, target, resp.leader_epoch)
            await asyncio.to_thread(log_.truncate_to, target)
        self._needs_truncation.discard(tb)

    async def _fetch_once(self, leader: int, stub) -> None:
        if self.manager.disk.failure is not None:  # nothing could be appended: wait for the disk to recover
            await asyncio.sleep(0.5)
            return
        for tb in sorted(self._needs_truncation & self._buckets.get(leader, set())):
            await self._truncate_to_leader(tb, stub)
        by_table: dict[int, list[TableBucket]] = {}
        now = time.monotonic()
        for tb in sorted(self._buckets.get(leader, ())):
            if tb in self._needs_truncation or tb in self._restarting:
                continue
            if tb in self._aux_retry and self._aux_retry[tb][0] > now:
                continue  # the last load of its aux state failed: wait for the backoff
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
        if resp.error.code:
            log.warning("fetch from leader %d refused: %s", leader, resp.error.message)
            await asyncio.sleep(0.5)
            return
        for t in resp.tables:
            for b in t.buckets:
                tb = TableBucket(t.table_id, b.bucket_id, b.partition_id)
                replica = self.manager.replicas.get(tb)
                if replica is None or replica.is_leader:
                    continue
                if b.error.code == ErrorCode.LOG_OFFSET_OUT_OF_RANGE_EXCEPTION:
                    await self._reset_out_of_range(replica, b)
                    continue
                if b.error.code:
                    continue
                replica.tiered_offset = b.tiered_offset  # what the leader has committed in remote storage
                if b.records:
                    records = b.records
                    try:
                        await run_log_work(replica.log, len(records) <= SMALL_LOG_WORK_BYTES,
                                           replica.log.append_as_follower, records)
                    except Exception as e:  # noqa: BLE001 - a full disk is reported; other buckets go on
                        observed = self.manager.disk.observe(e)
                        if observed is e:
                            raise
                        log.debug("follower append to %s failed: %s", tb, observed)
                        continue
                    self.manager.metrics.replication_bytes_in.count += len(records)
                hw = min(b.high_watermark, replica.log.log_end_offset)
                if hw > replica.log.high_watermark:
                    replica.log.update_high_watermark(hw)

    async def _reset_out_of_range(self, replica, result: pb.FetchBucketResultPb) -> None:
        """The leader refused our fetch offset: past its log end (we hold a tail it does not have: cut back to its
        high watermark, which every in-sync replica has) or below its log start (retention removed what we miss:
        start over at its log start, with the aux state of the offsets before it when the log is tiered)."""
        log_ = replica.log
        restart = log_.log_end_offset < result.log_start_offset
        target = result.log_start_offset if restart else min(result.high_watermark, log_.log_end_offset)
        log.info("follower %d resets %s from offset %d to %d (leader's log starts at %d, high watermark %d)",
                 self.manager.server_id, replica.bucket, log_.log_end_offset, target, result.log_start_offset,
                 result.high_watermark)
        if restart and self.manager.remote_log is not None:
            tb = replica.bucket
            if tb not in self._restarting:
                self._restarting[tb] = asyncio.create_task(self._restart_with_aux_state(replica, target),
                                                           name=f"aux-state-{tb}")
            return
        await asyncio.to_thread(log_.restart_at if restart else log_.truncate_to, target)

    async def _restart_with_aux_state(self, replica, offset: int) -> None:
        """Loads the leader epochs and writer state below ``offset`` from the remote log, then restarts the log at
        ``offset`` with them; on failure the log stays as it is and the bucket waits for a backoff before it is
        fetched (and found out of range) again."""
        tb = replica.bucket
        try:
            try:
                aux = await self.manager.remote_log.aux_state(tb, offset)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - the store or the coordinator is unreachable: retried
                delay = min(AUX_RETRY_MAX_S, self._aux_retry[tb][1] * 2) if tb in self._aux_retry \
                    else AUX_RETRY_INITIAL_S
                self._aux_retry[tb] = (time.monotonic() + delay, delay)
                log.warning("follower %d cannot load the leader epochs and writer state of %s below offset %d from "
                            "remote storage (%s); it stays out of the ISR and retries in %.1fs",
                            self.manager.server_id, tb, offset, getattr(e, "message", e), delay)
                return
            if (self.manager.replicas.get(tb) is not replica or replica.is_leader or not self.is_following(tb)
                    or replica.log.log_end_offset >= offset):
                return  # no longer this follower's restart
            try:
                await asyncio.to_thread(replica.log.restart_at, offset, aux.epochs if aux else None,
                                        aux.writers if aux else None)
            except Exception as e:  # noqa: BLE001 - e.g. a full disk: found out of range again on the next fetch
                log.warning("follower %d cannot restart %s at offset %d: %s", self.manager.server_id, tb, offset,
                            getattr(e, "message", e))
                return
            self._aux_retry.pop(tb, None)
            if aux is None:
                log.info("follower %d restarted %s at offset %d: the remote log has nothing below it",
                         self.manager.server_id, tb, offset)
            else:
                if aux.writers_offset != offset:
                    log.warning("follower %d: no remote segment of %s ends at %d; its writer state is as of offset "
                                "%d (batches in between are not known)", self.manager.server_id, tb, offset,
                                aux.writers_offset)
                log.info("follower %d restarted %s at offset %d with the aux state from remote storage: %s",
                         self.manager.server_id, tb, offset, aux.describe())
        finally:
            self._restarting.pop(tb, None)

    async def close(self) -> None:
        self._buckets.clear()
        for task in list(self._restarting.values()):
            task.cancel()
        for task in self._tasks.values():
            task.cancel()
        await self.channels.close()
