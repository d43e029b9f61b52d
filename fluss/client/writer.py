"""The write path of the client: ``AppendWriter`` and the machinery it shares with later writers.

Rows (``append``) are collected and turned into Arrow column by column when a chunk is full, when
``writer.batch-timeout`` passes, or on ``flush()``; Arrow input (``write_arrow_batch``) is conformed to the
table schema at once. Each chunk is split per (partition, bucket) with vectorized bucket ids (without a bucket
key: sticky, a new bucket per batch of ``writer.batch-size``, or round-robin), encoded as log batches
(``fluss.record.log_batch``) and handed, batch by batch as each is encoded, to the ``Sender`` on the client's
I/O thread, so sending overlaps encoding.

The sender groups batches per leader into ProduceLog requests of at most ``writer.request-max-size``, encoded
straight to wire bytes (``produce_wire``), and retries retriable errors after refreshing metadata. An idempotent
writer has up to ``writer.max-inflight-requests-per-bucket`` batches in flight per bucket and keeps their order
(see ``Sender``); otherwise one request is in flight per bucket, so a retry never reorders a bucket. Encoded
bytes waiting to be acknowledged are capped by ``writer.buffer.memory-size``: a writer that would exceed it
blocks until acknowledgements free room (backpressure).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import logging
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING

import grpc
import numpy as np
import pyarrow as pa

from fluss.client.cluster_client import ClusterClient, TableMetadata
from fluss.client.config import Config
from fluss.client.io_thread import IoThread
from fluss.client.produce_wire import encode_write_request
from fluss.client.retry import RetryAction, RetryPolicy, RetryState, refresh_table
from fluss.errors import ErrorCode, FlussError
from fluss.key.bucket_function import bucketing_of
from fluss.key.partition import partition_names_of
from fluss.metadata import TableBucket, TableInfo
from fluss.record.log_batch import (
    HEADER_SIZE,
    Buffer,
    build_batch,
    parse_compression,
    read_header,
    writer_header,
)
from fluss.record.log_format import log_format_of
from fluss.row_check import RowChecker, short_repr
from fluss.row_convert import conform_batch, dataframe_to_arrow, rows_to_batch
from fluss.rpc.errors import raise_for_error, to_error
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.table_options import LOG_ARROW_COMPRESSION_TYPE, LOG_ARROW_COMPRESSION_ZSTD_LEVEL

if TYPE_CHECKING:  # not at import: pandas takes 0.6 s to import and comes with the DataFrame a caller writes
    import pandas as pd

log = logging.getLogger(__name__)

ROWS_PER_CHUNK = 8192
# Batches a leader remembers per idempotent writer to answer resends (``fluss.server.log.writer_state``): the
# most a writer may have in flight per bucket, as in Fluss.
MAX_IN_FLIGHT_WITH_IDEMPOTENCE = 5


def max_in_flight_batches(config: Config) -> int:
    """``writer.max-inflight-requests-per-bucket``, checked as Fluss does for an idempotent writer."""
    n = config.writer_max_inflight_requests_per_bucket
    if not 1 <= n <= MAX_IN_FLIGHT_WITH_IDEMPOTENCE:
        raise FlussError(f"writer.max-inflight-requests-per-bucket must be between 1 and "
                         f"{MAX_IN_FLIGHT_WITH_IDEMPOTENCE} when writer.enable-idempotence is true, got {n}",
                         ErrorCode.INVALID_CONFIG_EXCEPTION)
    return n


class WriteResultHandle:
    """Completes when the rows it stands for are acknowledged (``await handle.wait()``)."""

    def __init__(self, chunk: _Chunk, row: int | None = None) -> None:
        self._chunk = chunk
        self._row = row

    async def wait(self) -> None:
        await asyncio.wrap_future(self._chunk.done)
        if self._row is not None and self._row in self._chunk.row_errors:
            raise self._chunk.row_errors[self._row]

    def __repr__(self) -> str:
        return f"WriteResultHandle(done={self._chunk.done.done()})"


@dataclass
class _Chunk:
    """Rows written together: one future for all of them, per-row errors for rejected rows.

    The writing thread adds pending batches while the I/O thread acknowledges earlier ones, so the count
    is changed under a lock.
    """

    done: concurrent.futures.Future = field(default_factory=concurrent.futures.Future)
    pending_batches: int = 0
    row_errors: dict[int, FlussError] = field(default_factory=dict)
    #: the writer's record of failures (``_Failures``), told of every batch that fails for good
    failures: _Failures | None = None
    first_row: int = 0  # the writer's number of the chunk's first row
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add_pending(self, n: int) -> None:
        with self._lock:
            self.pending_batches += n

    def batch_done(self, error: BaseException | None, record: bool = True) -> None:
        """One batch of the chunk is acknowledged (``error`` None) or failed for good (recorded for the
        writer's next flush unless ``record`` is False: the error was raised to the caller instead)."""
        with self._lock:
            if error is not None and record and self.failures is not None:
                self.failures.add(error if isinstance(error, FlussError)
                                  else FlussError(str(error), ErrorCode.CLIENT_ERROR))
            if self.done.done():
                return
            if error is not None:
                self.done.set_exception(error)
                return
            self.pending_batches -= 1
            if self.pending_batches <= 0:
                self.done.set_result(None)


class _Failures:
    """What a writer could not write since its last ``flush()``: ``flush()`` raises them as one FlussError.

    Rows refused when their chunk was converted, and batches that failed for good at the server, are added
    from the writing thread, the linger thread and the I/O thread, hence the lock."""

    MAX_KEPT = 20

    def __init__(self, table: str) -> None:
        self._table = table
        self._lock = threading.Lock()
        self._errors: list[FlussError] = []
        self._count = 0

    def add(self, error: FlussError) -> None:
        with self._lock:
            if any(e is error for e in self._errors):  # one failed request reported by each of its batches
                return
            self._count += 1
            if len(self._errors) < self.MAX_KEPT:
                self._errors.append(error)

    def raise_if_any(self) -> None:
        """Raises (and forgets) the failures since the last call; one line per failure kept."""
        with self._lock:
            errors, count = self._errors, self._count
            self._errors, self._count = [], 0
        if not errors:
            return
        more = f" (and {count - len(errors)} more)" if count > len(errors) else ""
        lines = "\n  ".join(e.message for e in errors)
        raise FlussError(f"{count} write(s) to table '{self._table}' failed since the last flush{more}:\n  {lines}",
                         errors[0].error_code)


@dataclass
class _PendingBatch:
    bucket: TableBucket
    partition_name: str | None
    data: bytes
    chunk: _Chunk
    retry: RetryState | None = None  # since its first failed send (shared by the batches of one request)
    sequenced: bool = False
    sequence: int = -1  # the batch sequence, once sequenced
    header: bytes | None = None  # ``data``'s header re-stamped with the writer id and sequence, once sequenced
    queued_at: float = 0.0  # when the sender got it (perf_counter), until its first send; with client metrics

    def parts(self) -> list[Buffer]:
        """The batch as sent: ``data``, or the stamped header and ``data``'s body (not copied)."""
        if self.header is None:
            return [self.data]
        return [self.header, memoryview(self.data)[HEADER_SIZE:]]


class MemoryBudget:
    """Bytes of encoded batches not yet acknowledged; ``acquire`` blocks the writing thread when full."""

    def __init__(self, limit: int, wait_timeout_s: float) -> None:
        self.limit = limit
        self.used = 0
        self.waiting = 0  # threads blocked in acquire (a client metric)
        self.wait_timeout_s = wait_timeout_s
        self._cond = threading.Condition()

    def acquire(self, n: int) -> None:
        deadline = time.monotonic() + self.wait_timeout_s
        with self._cond:
            # a single batch larger than the whole buffer is let through alone
            while self.used > 0 and self.used + n > self.limit:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise FlussError(f"Write buffer full ({self.used} of {self.limit} bytes) for longer than "
                                     "writer.buffer.wait-timeout", ErrorCode.CLIENT_ERROR)
                self.waiting += 1
                try:
                    self._cond.wait(remaining)
                finally:
                    self.waiting -= 1
            self.used += n

    def release(self, n: int) -> None:
        with self._cond:
            self.used -= n
            self._cond.notify_all()


class Sender:
    """Ships pending batches to bucket leaders; runs on the I/O thread.

    ``RPC``, ``_new_request`` and ``_bucket_request`` say what a request looks like (ProduceLog here; the
    upsert writer's sender sends PutKv); batching, ordering, idempotence and retries are the same for both.

    In flight per bucket: one request (with every queued batch that fits) — or, for an idempotent writer
    whose RPC the tablet server orders by batch sequence (``PIPELINED_RPCS``), up to
    ``writer.max-inflight-requests-per-bucket`` batches in any number of requests, as Fluss does. Pipelined
    batches keep their order: sequences are given in queue order at first send, a failed batch goes back to
    its place in the queue, and the leader appends a writer's batches in sequence order (a request that
    arrives before its predecessor waits for it, see ``ReplicaManager.produce``). After a batch fails for
    good, the later batches of its bucket are numbered again once none is in flight; after the leader answers
    UNKNOWN_WRITER_ID for a bucket whose earlier batches were all acknowledged (it forgot the writer), from 0.
    """

    RPC = "ProduceLog"
    PIPELINED_RPCS = frozenset({"ProduceLog"})

    def __init__(self, io: IoThread, table: TableInfo, config: Config, budget: MemoryBudget) -> None:
        self.io = io
        self.client: ClusterClient = io.client
        self.table = table
        self.config = config
        self.budget = budget
        acks = str(config.writer_acks).lower()
        if acks not in ("0", "1", "all", "-1"):
            raise FlussError(f"Invalid writer.acks '{config.writer_acks}': use 0, 1 or all",
                             ErrorCode.INVALID_REQUIRED_ACKS)
        self.acks = -1 if acks in ("all", "-1") else int(acks)
        self.max_request = config.writer_request_max_size
        self.policy = RetryPolicy.from_config(config, max_attempts=config.writer_retries)
        self._dead: FlussError | None = None  # the table is gone: every batch fails with this
        self._refreshing = False
        self.queues: dict[TableBucket, deque[_PendingBatch]] = defaultdict(deque)
        self.in_flight: dict[TableBucket, list[_PendingBatch]] = defaultdict(list)
        self._backoff: dict[TableBucket, int] = defaultdict(int)  # failed requests waiting out their retry delay
        self._renumber_from: dict[TableBucket, int] = {}  # renumber from this sequence (a batch failed for good)
        self._wakeup: asyncio.Event | None = None
        self._task: asyncio.Task | None = None
        self._idle: asyncio.Event | None = None
        self.meta: TableMetadata | None = None
        self.idempotent = config.writer_enable_idempotence
        self.writer_id = -1
        self.next_sequence: dict[TableBucket, int] = defaultdict(int)
        self.max_in_flight = max_in_flight_batches(config) if self.idempotent and self.RPC in self.PIPELINED_RPCS \
            else None  # None: one request at a time
        metrics = self.client.metrics  # client.metrics.enabled: counted per batch and per request
        self.metrics = metrics.writer(table.table_path, budget) if metrics is not None else None

    async def start(self) -> None:
        self._wakeup = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self.meta = await self.client.table(self.table.table_path, refresh=True)
        if self.idempotent:
            self.writer_id = (await self.client.admin_call("InitWriter", pb.InitWriterRequest())).writer_id
        self._task = asyncio.create_task(self._run())

    def enqueue(self, batches: list[_PendingBatch]) -> None:
        """Called on the I/O loop."""
        if self._dead is not None:
            self._complete(batches, self._dead)
            return
        if self.metrics is not None:
            now = time.perf_counter()
            for b in batches:
                b.queued_at = now
        for b in batches:
            self.queues[b.bucket].append(b)
        self._idle.clear()
        self._wakeup.set()

    async def wait_idle(self) -> None:
        await self._idle.wait()

    def _room(self, tb: TableBucket) -> int:
        """How many more batches of ``tb`` may be sent now (0: none)."""
        if not self.queues[tb] or self._backoff[tb] or tb in self._renumber_from:
            return 0
        flying = len(self.in_flight[tb])
        if self.max_in_flight is None:
            return 0 if flying else len(self.queues[tb])
        return max(0, self.max_in_flight - flying)

    async def _run(self) -> None:
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            ready = {tb: room for tb in list(self.queues) if (room := self._room(tb))}
            if not ready:
                if not any(self.in_flight.values()) and not any(self.queues.values()):
                    self._idle.set()
                continue
            by_leader: dict[str, dict[TableBucket, int]] = defaultdict(dict)
            missing = False
            for tb, room in ready.items():
                addr = self.client.leader_address(self.meta, tb)
                if addr is None:
                    missing = True
                    continue
                by_leader[addr][tb] = room
            if missing:
                asyncio.create_task(self._refresh_and_wake(0.1))
            for addr, rooms in by_leader.items():
                asyncio.create_task(self._send(addr, self._take(rooms)))

    def _take(self, rooms: dict[TableBucket, int]) -> dict[TableBucket, list[_PendingBatch]]:
        """Moves up to ``room`` queued batches per bucket (and ``writer.request-max-size`` bytes in all, but at
        least one batch per bucket) in flight, giving sequences to batches sent for the first time."""
        taken: dict[TableBucket, list[_PendingBatch]] = {}
        size = 0
        for tb, room in rooms.items():
            q = self.queues[tb]
            batches: list[_PendingBatch] = []
            while q and len(batches) < room and (not batches or size + len(q[0].data) <= self.max_request):
                if self.idempotent and batches and self._sequence_of(tb, q[0]) != batches[-1].sequence + 1:
                    break  # one request carries consecutive sequences (the leader refuses a gap inside one)
                b = q.popleft()
                if self.idempotent and not b.sequenced:  # sequences are given at first send, in queue order
                    b.sequence = self.next_sequence[tb]
                    b.header = writer_header(b.data, self.writer_id, b.sequence)
                    self.next_sequence[tb] += 1
                    b.sequenced = True
                size += len(b.data)
                batches.append(b)
            taken[tb] = batches
            self.in_flight[tb] += batches
        return taken

    def _sequence_of(self, tb: TableBucket, b: _PendingBatch) -> int:
        """The sequence ``b`` has, or gets if it is sent now."""
        return b.sequence if b.sequenced else self.next_sequence[tb]

    async def _refresh_and_wake(self, delay: float) -> None:
        """Some buckets have no known leader: refresh the metadata; a bucket still without one past its head
        batch's retry deadline fails its queued batches with LEADER_NOT_AVAILABLE."""
        if self._refreshing:
            return
        self._refreshing = True
        try:
            await asyncio.sleep(delay)
            await self._refresh()
            for tb, q in list(self.queues.items()):
                if not q or self.client.leader_address(self.meta, tb) is not None:
                    continue
                head = q[0]
                if head.retry is None:
                    head.retry = self.policy.start(self._what(tb))
                error = FlussError(f"Bucket {tb.bucket_id} of table '{self.table.table_path}' has no leader",
                                   ErrorCode.LEADER_NOT_AVAILABLE_EXCEPTION)
                if head.retry.expired() and head.retry.failed(error) is RetryAction.FAIL:
                    self._fail_queued(tb, head.retry.final_error())
        except FlussError as e:
            log.debug("metadata refresh failed: %s", e)
        finally:
            self._refreshing = False
            self._wakeup.set()

    def _what(self, tb: TableBucket) -> str:
        return f"{self.RPC} to bucket {tb.bucket_id} of table '{self.table.table_path}'"

    async def _refresh(self) -> None:
        """Refreshes the table's metadata (``retry.refresh_table``); a dropped (or re-created) table fails every
        batch with TABLE_NOT_EXIST, a dropped partition the batches of that partition."""
        pids = {tb.partition_id for tb in self.queues if tb.partition_id is not None}
        try:
            gone = await refresh_table(self.client, self.table, pids)
        except FlussError as e:
            if e.error_code == ErrorCode.TABLE_NOT_EXIST:
                self._fail_everything(e)
            raise
        self.meta = self.client.tables[self.table.table_path]
        for tb in [tb for tb in self.queues if tb.partition_id in gone]:
            self._fail_queued(tb, FlussError(f"Partition id {tb.partition_id} of table '{self.table.table_path}' "
                                             "was dropped", ErrorCode.PARTITION_NOT_EXISTS))

    def _fail_queued(self, tb: TableBucket, error: FlussError) -> None:
        """Fails every queued (not in flight) batch of a bucket."""
        batches = list(self.queues.pop(tb, ()))
        if not batches:
            return
        sequenced = [b.sequence for b in batches if b.sequenced]
        if self.idempotent and sequenced:  # never appended: the sequences from here on are given again
            self._renumber_from[tb] = min(self._renumber_from.get(tb, sequenced[0]), *sequenced)
        self._complete(batches, error)
        if tb in self._renumber_from and not self.in_flight[tb]:
            self._renumber(tb)

    def _fail_everything(self, error: FlussError) -> None:
        """The table is gone: queued batches fail now, batches in flight when their answer comes back."""
        self._dead = error
        for tb in list(self.queues):
            batches = list(self.queues.pop(tb))
            self._complete(batches, error)
        self._wakeup.set()

    async def _send(self, addr: str, taken: dict[TableBucket, list[_PendingBatch]]) -> None:
        entries = [(self._bucket_request(tb, b""), [p for b in batches for p in b.parts()])
                   for tb, batches in taken.items()]
        retry_delay = 0.0
        refresh = False
        backoff: list[TableBucket] = []
        metrics = self.metrics
        started = time.perf_counter()
        if metrics is not None:
            self._account_queued(taken, started)
        try:
            resp = await self._call(addr, encode_write_request(self._new_request(), entries))
            results = {TableBucket(self.table.table_id, r.bucket_id, r.partition_id): r for r in resp.buckets}
        except FlussError as err:  # transport failure: every bucket of the request retries
            results = {tb: err for tb in taken}
        if metrics is not None:
            metrics.send_latency.update((time.perf_counter() - started) * 1000)
        for tb, batches in taken.items():
            r = results.get(tb)
            err = r if isinstance(r, FlussError) else (to_error(r.error) if r is not None else
                                                       FlussError("no result", ErrorCode.NETWORK_EXCEPTION))
            if err is None:
                if metrics is not None:  # before flush() can return: it then sees these batches counted
                    self._account_sent(batches)
                self._acknowledged(tb, batches)
                continue
            action = RetryAction.FAIL if self._dead is not None else self._retry_action(tb, batches, err)
            if action is not RetryAction.FAIL:
                if metrics is not None:
                    metrics.records_retry.count += sum(read_header(b.data).record_count for b in batches)
                self._requeue(tb, batches)
                self._backoff[tb] += 1
                backoff.append(tb)
                retry_delay = max(retry_delay, batches[0].retry.delay_s())
                refresh |= action is RetryAction.REFRESH
            else:
                if self.idempotent:  # never appended: the sequences from here on are given again
                    self._renumber_from[tb] = min(self._renumber_from.get(tb, batches[0].sequence),
                                                  batches[0].sequence)
                final = self._dead or (batches[0].retry.final_error() if batches[0].retry else err)
                self._complete(batches, final)
        if backoff:
            try:
                await asyncio.sleep(retry_delay)
                if refresh:
                    await self._refresh()
            except FlussError:
                pass
        for tb in backoff:
            self._backoff[tb] -= 1
        for tb, batches in taken.items():
            done = {id(b) for b in batches}
            self.in_flight[tb] = [b for b in self.in_flight[tb] if id(b) not in done]
            if tb in self._renumber_from and not self.in_flight[tb]:
                self._renumber(tb)
        self._wakeup.set()

    def _account_queued(self, taken: dict[TableBucket, list[_PendingBatch]], now: float) -> None:
        """Client metrics: how long each batch sent for the first time waited in the writer."""
        queue_time = self.metrics.batch_queue_time
        for batches in taken.values():
            for b in batches:
                if b.queued_at:
                    queue_time.update((now - b.queued_at) * 1000)
                    b.queued_at = 0.0

    def _account_sent(self, batches: list[_PendingBatch]) -> None:
        """Client metrics: records and bytes of acknowledged batches (per batch, from the batch header)."""
        m = self.metrics
        for b in batches:
            records, size = read_header(b.data).record_count, len(b.data)
            m.records_send.count += records
            m.bytes_send.count += size
            m.records_per_batch.update(records)
            m.bytes_per_batch.update(size)

    def _acknowledged(self, tb: TableBucket, batches: list[_PendingBatch]) -> None:
        first = self._renumber_from.get(tb)
        if first is not None and batches[-1].sequence > first:
            # a later batch was appended, so the one that failed was appended too (e.g. a timeout): the
            # sequences stand
            del self._renumber_from[tb]
        self._complete(batches, None)

    def _retry_action(self, tb: TableBucket, batches: list[_PendingBatch], err: FlussError) -> RetryAction:
        """The retry policy's answer for a failed request of ``batches`` (one ``RetryState`` for them, kept across
        their retries); an OUT_OF_ORDER_SEQUENCE that ``_out_of_order_retriable`` excuses is backed off."""
        state = next((b.retry for b in batches if b.retry is not None), None) or self.policy.start(self._what(tb))
        for b in batches:
            b.retry = state
        action = state.failed(err)
        if action is RetryAction.FAIL and not state.expired() \
                and (self.policy.max_attempts is None or state.attempts <= self.policy.max_attempts) \
                and (self._out_of_order_retriable(tb, batches, err) or self._unknown_writer_retriable(tb, batches, err)):
            return RetryAction.BACKOFF
        return action

    def _out_of_order_retriable(self, tb: TableBucket, batches: list[_PendingBatch], err: FlussError) -> bool:
        """OUT_OF_ORDER_SEQUENCE while an earlier batch of the bucket is still unacknowledged or failed (pipelined
        requests: the leader waited for the predecessor in vain; it comes again)."""
        if err.error_code != ErrorCode.OUT_OF_ORDER_SEQUENCE_EXCEPTION or self.max_in_flight is None:
            return False
        return self._earlier_unacknowledged(tb, batches[0].sequence)

    def _unknown_writer_retriable(self, tb: TableBucket, batches: list[_PendingBatch], err: FlussError) -> bool:
        """UNKNOWN_WRITER_ID: the leader has no batch of this writer in the bucket, and this request's first
        sequence is not 0. While an earlier batch of the bucket is unacknowledged (in flight, queued for a retry,
        or failed for good) it has yet to arrive: back off and send again. Otherwise every earlier batch was
        acknowledged, so the bucket forgot the writer (its batches expired from the log, or a log restarted
        without its writer state): the bucket's sequences restart at 0, from this batch on, once none of its
        batches is in flight (``_renumber``), and the batches are sent again."""
        if err.error_code != ErrorCode.UNKNOWN_WRITER_ID_EXCEPTION or not self.idempotent or not batches[0].sequenced:
            return False
        if not self._earlier_unacknowledged(tb, batches[0].sequence):
            log.info("%s: the leader no longer knows writer %d (its batches expired); sequences restart at 0 "
                     "from batch sequence %d", self._what(tb), self.writer_id, batches[0].sequence)
            self._renumber_from[tb] = 0
        return True

    def _earlier_unacknowledged(self, tb: TableBucket, sequence: int) -> bool:
        """Whether a batch of ``tb`` before ``sequence`` is in flight, queued again, or failed for good (its
        successors are renumbered)."""
        if tb in self._renumber_from:
            return True
        earlier = (b for b in itertools.chain(self.in_flight[tb], self.queues[tb]) if b.sequenced)
        return any(b.sequence < sequence for b in earlier)

    def _requeue(self, tb: TableBucket, batches: list[_PendingBatch]) -> None:
        """Puts failed batches back at the front, in sequence order among the other batches sent before."""
        q = self.queues[tb]
        front = list(batches)
        while q and q[0].sequenced:
            front.append(q.popleft())
        front.sort(key=lambda b: b.sequence)
        q.extendleft(reversed(front))

    def _renumber(self, tb: TableBucket) -> None:
        """After a batch failed for good (or the leader forgot the writer: from 0) and nothing of the bucket is in
        flight: the queued batches from that sequence on get new sequences at their next send."""
        first = self._renumber_from.pop(tb)
        self.next_sequence[tb] = first
        for b in self.queues[tb]:
            if b.sequenced and b.sequence >= first:
                b.sequenced, b.sequence, b.header = False, -1, None

    async def _call(self, addr: str, payload: bytes):
        """The RPC with an already encoded request (``produce_wire``); a transport failure becomes a retriable
        NETWORK_EXCEPTION, as in ``ClusterClient.tablet_call``."""
        service = pb.DESCRIPTOR.services_by_name["TabletService"]
        response_type = getattr(pb, service.methods_by_name[self.RPC].output_type.name)
        call = self.client.channels.channel(addr).unary_unary(
            f"/{service.full_name}/{self.RPC}", response_deserializer=response_type.FromString)
        try:
            resp = await call(payload, timeout=self.client.request_timeout_s + 5)
        except grpc.aio.AioRpcError as e:
            raise FlussError(f"{self.RPC} to tablet server {addr} failed: {e.code().name}",
                             ErrorCode.NETWORK_EXCEPTION) from None
        raise_for_error(resp.error)  # a request-level failure: every bucket of the request has it
        return resp

    def _new_request(self):
        return pb.ProduceLogRequest(acks=self.acks, table_id=self.table.table_id,
                                    timeout_ms=int(self.client.request_timeout_s * 1000))

    def _bucket_request(self, tb: TableBucket, records: bytes):
        return pb.ProduceBucketPb(partition_id=tb.partition_id_or_none_value, bucket_id=tb.bucket_id,
                                  records=records)

    def _complete(self, batches: list[_PendingBatch], error: FlussError | None) -> None:
        for b in batches:
            self.budget.release(len(b.data))
            b.chunk.batch_done(error)

    async def close(self) -> None:
        if self._task:
            self._task.cancel()


class _TableWriter:
    """Shared by the append and upsert writers: chunking, bucketing, encoding, sending.

    A subclass changes what a pending row is and how it becomes Arrow (``_rows_to_batch``), how a
    per-bucket piece is encoded (``_encode_piece``) and which sender ships it (``_make_sender``).
    """

    def __init__(self, connection, table: TableInfo) -> None:
        self._conn = connection
        self._table = table
        self._config: Config = connection.config
        self._schema = table.row_schema
        self._arrow_schema = self._schema.to_arrow()
        props = table.get_properties()
        self._compression = parse_compression(LOG_ARROW_COMPRESSION_TYPE.value_of(props))
        self._zstd_level = LOG_ARROW_COMPRESSION_ZSTD_LEVEL.value_of(props)
        self._min_compressed_bytes = self._config.writer_compression_min_batch_size
        self._log_format = log_format_of(props)
        self._batch_size = self._config.writer_batch_size
        self._bucket_key_idx = [self._schema.index_of(k) for k in table.get_bucket_keys()]
        self._bucketing = bucketing_of(table)  # the table's bucket function (follows its lake format)
        self._partition_idx = [self._schema.index_of(k) for k in table.get_partition_keys()]
        self._round_robin = str(self._config.writer_bucket_no_key_assigner).upper() == "ROUND_ROBIN"
        self._rr_counter = itertools.count()
        self._sticky: dict[str | None, int] = {}
        self._lock = threading.Lock()
        # Held from taking rows out of ``_rows`` until they are handed to the sender (and around an Arrow write):
        # a flush or a later write waits for a drain in progress, so flush never misses rows the linger loop
        # took, and writes reach the sender in the order they were made.
        self._send_lock = threading.RLock()
        self._rows: list = []
        self._rows_parked = asyncio.Event()  # set on the I/O loop when a row is added to an empty ``_rows``
        self._failures = _Failures(str(table.table_path))
        self._rows_added = 0  # rows given to this writer so far: a row's number in error messages
        self._chunk = self._new_chunk()
        self._budget = MemoryBudget(self._config.writer_buffer_memory_size,
                                    self._config.writer_buffer_wait_timeout_ms / 1000)
        self._io: IoThread = connection.io_thread()
        self._sender = self._make_sender()
        self._io.call(self._sender.start())
        self._linger = self._io.submit(self._linger_loop())
        connection.register(self)

    def _make_sender(self) -> Sender:
        return Sender(self._io, self._table, self._config, self._budget)

    def _new_chunk(self) -> _Chunk:
        return _Chunk(failures=self._failures, first_row=self._rows_added)

    # ------------------------------------------------------------ rows

    def _add_row(self, row: dict | list | tuple) -> WriteResultHandle:
        """Queues a row already checked by the caller (``RowChecker``)."""
        with self._lock:
            handle = WriteResultHandle(self._chunk, len(self._rows))
            first = not self._rows
            self._rows.append(row)
            self._rows_added += 1
            full = len(self._rows) >= ROWS_PER_CHUNK
        if full:
            self._drain_rows()
        elif first:  # starts the linger timer of these rows
            self._io.loop.call_soon_threadsafe(self._rows_parked.set)
        return handle

    def _drain_rows(self) -> None:
        """Converts and queues the rows added so far. Never raises: what fails is on the rows' handles and
        makes the next ``flush()`` raise."""
        with self._send_lock:
            with self._lock:
                rows, chunk = self._rows, self._chunk
                self._rows = []
                self._chunk = self._new_chunk()
            if not rows:
                return
            try:
                try:
                    batch = self._rows_to_batch(rows)
                except FlussError:
                    batch = self._convert_valid_rows(rows, chunk)
            except Exception as e:  # noqa: BLE001 - unexpected: fail the chunk's handles and the next flush
                log.warning("converting %d rows for table %s failed", len(rows), self._table.table_path,
                            exc_info=True)
                chunk.batch_done(_as_fluss_error(e))
                return
            try:
                self._write_batch(batch, chunk)
            except Exception:  # noqa: BLE001 - _write_batch failed the chunk; the next flush raises it
                log.debug("writing %d rows for table %s failed", len(rows), self._table.table_path,
                          exc_info=True)

    def _convert_valid_rows(self, rows: list, chunk: _Chunk) -> pa.RecordBatch:
        """Slow path after a failed conversion: reject the bad rows alone (each fails its handle and makes the
        next ``flush()`` raise, naming the row, column and reason), keep the others."""
        good = []
        for i, row in enumerate(rows):
            try:
                self._rows_to_batch([row])
                good.append(row)
            except FlussError as e:
                # the single-row conversion says "row 0"; the row's number in this writer says more
                detail = e.message.replace(" row 0:", ":", 1)
                error = FlussError(f"row #{chunk.first_row + i} {short_repr(self._user_row(row))}: {detail}",
                                   e.error_code)
                chunk.row_errors[i] = error
                self._failures.add(error)
        return self._rows_to_batch(good) if good else pa.RecordBatch.from_pylist([], schema=self._arrow_schema)

    def _user_row(self, row):
        """The row as the user gave it (an upsert writer queues it wrapped with its change type)."""
        return row

    def _rows_to_batch(self, rows: list) -> pa.RecordBatch:
        return rows_to_batch(rows, self._schema)

    # ------------------------------------------------------------ arrow

    def _write_arrow_batch(self, data: pa.RecordBatch | pa.Table) -> WriteResultHandle:
        """Conforms ``data`` to the table schema (naming what is wrong before anything is queued), then queues it."""
        return self._write_conformed(conform_batch(data, self._schema))

    def _write_conformed(self, batches: pa.RecordBatch | list[pa.RecordBatch],
                         extend: Callable[[pa.RecordBatch], pa.RecordBatch] | None = None) -> WriteResultHandle:
        """Splits and queues batches in the table's Arrow schema, after the rows already added;
        ``extend`` adds per-row columns the encoder reads (an upsert writer's change types)."""
        chunk = self._new_chunk()
        with self._send_lock:
            self._drain_rows()  # keep the order of earlier appends
            for batch in batches if isinstance(batches, list) else [batches]:
                self._write_batch(batch if extend is None else extend(batch), chunk, hold=True)
        self._release_chunk(chunk)
        return WriteResultHandle(chunk)

    def _write_batch(self, batch: pa.RecordBatch, chunk: _Chunk, hold: bool = False) -> None:
        """Splits a conformed batch per (partition, bucket), encodes it in pieces of ``writer.batch-size`` and
        enqueues each piece as soon as it is encoded, so sending overlaps with encoding the next one.

        Without a bucket key the sticky assigner gives each piece (each batch) the next bucket, as Fluss's
        sticky assigner moves on whenever a batch is full: a large write spreads over the buckets.
        """
        chunk.add_pending(1)  # held until every piece is enqueued
        try:
            if batch.num_rows:
                for (partition, bucket), piece in self._split(batch):
                    for part in _slices(piece, self._batch_size):
                        b = self._sticky_bucket(partition, self._bucket_count(partition)) if bucket is None else bucket
                        self._enqueue([(partition, b, self._encode_piece(part))], chunk)
        except BaseException as e:
            # raised to the caller of an Arrow write (reported there), or recorded for flush() by _drain_rows
            chunk.batch_done(_as_fluss_error(e), record=not hold)
            raise
        if not hold:
            self._release_chunk(chunk)

    def _encode_piece(self, piece: pa.RecordBatch) -> bytes:
        return build_batch(piece, schema_id=self._table.schema_id, compression=self._compression,
                           zstd_level=self._zstd_level, log_format=self._log_format,
                           min_compressed_bytes=self._min_compressed_bytes)

    def _release_chunk(self, chunk: _Chunk) -> None:
        self._io.loop.call_soon_threadsafe(chunk.batch_done, None)

    def _split(self, batch: pa.RecordBatch) -> list[tuple[tuple[str | None, int | None], pa.RecordBatch]]:
        """``((partition, bucket), rows)`` groups in write order; bucket None means sticky (chosen later)."""
        n = batch.num_rows
        partitions = partition_names_of(batch, self._partition_idx) if self._partition_idx else None
        groups: dict[str | None, np.ndarray] | None = None
        counts: dict[str, int] = {}
        if partitions is not None:
            names = np.asarray(partitions, dtype=object)
            groups = {p: np.nonzero(names == p)[0] for p in dict.fromkeys(partitions)}
            counts = self._partition_bucket_counts(list(groups))  # each partition routes by its own count
        uniform = set(counts.values()) if counts else {self._table.num_buckets}
        if len(uniform) == 1:
            buckets = self._bucket_ids(batch, uniform.pop())
        else:  # partitions of different bucket counts (ALTER TABLE SET bucket.num): each by its own
            buckets = None
            if self._bucket_key_idx or self._round_robin:
                buckets = np.empty(n, dtype=np.int64)
                for p, idx in groups.items():
                    buckets[idx] = self._bucket_ids(batch.take(pa.array(idx)), counts[p])
        if partitions is None:
            groups = {None: np.arange(n)} if buckets is None else None
        out = []
        if groups is None:  # no partitions, hashed/round-robin buckets
            order = np.argsort(buckets, kind="stable")
            sorted_b = buckets[order]
            bounds = np.flatnonzero(np.diff(sorted_b)) + 1
            taken = batch.take(pa.array(order))
            start = 0
            for end in [*bounds.tolist(), n]:
                out.append(((None, int(sorted_b[start])), taken.slice(start, end - start)))
                start = end
            return out
        for p, idx in groups.items():
            sub = batch if len(idx) == n else batch.take(pa.array(idx))
            if buckets is None:  # sticky: the bucket is chosen per piece (``_write_batch``)
                out.append(((p, None), sub))
                continue
            sub_b = buckets[idx]
            order = np.argsort(sub_b, kind="stable")
            sorted_b = sub_b[order]
            bounds = np.flatnonzero(np.diff(sorted_b)) + 1
            taken = sub.take(pa.array(order))
            start = 0
            for end in [*bounds.tolist(), len(idx)]:
                out.append(((p, int(sorted_b[start])), taken.slice(start, end - start)))
                start = end
        return out

    def _bucket_ids(self, batch: pa.RecordBatch, num_buckets: int) -> np.ndarray | None:
        """Bucket ids of rows that all go to partitions (or a table) of ``num_buckets`` buckets: hashed on the
        bucket key, round-robin, or None (sticky: chosen per piece)."""
        if self._bucket_key_idx:
            return self._bucketing.bucket_ids(batch, self._bucket_key_idx, num_buckets)
        if self._round_robin:
            n = batch.num_rows
            start = next(self._rr_counter)
            self._rr_counter = itertools.count(start + n)
            return (np.arange(n, dtype=np.int64) + start) % num_buckets
        return None

    def _bucket_count(self, partition: str | None) -> int:
        if partition is None:
            return self._table.num_buckets
        return self._partition_bucket_counts([partition])[partition]

    def _partition_bucket_counts(self, names: list[str]) -> dict[str, int]:
        """Each partition's own bucket count (a partition keeps the count it was created with); a partition the
        client does not know yet is looked up (or created, writer.dynamic-create-partition.enabled) first."""
        meta = self._io.client.tables.get(self._table.table_path)
        if meta is None or any(n not in meta.partitions for n in names):
            self._io.call(self._partition_ids(set(names)))
            meta = self._io.client.tables[self._table.table_path]
        return {n: meta.bucket_count(meta.partitions[n]) for n in names}

    def _sticky_bucket(self, partition: str | None, num_buckets: int) -> int:
        """Sticky assignment: one bucket per batch, moving on to the next for the following batch."""
        current = self._sticky.get(partition, np.random.randint(num_buckets))
        self._sticky[partition] = (current + 1) % num_buckets
        return current

    def _enqueue(self, encoded: list[tuple[str | None, int, bytes]], chunk: _Chunk) -> None:
        """Hands encoded pieces to the sender. Without partitions nothing can fail on the I/O loop, so the
        writing thread does not wait for it (``call_soon_threadsafe`` keeps the order of the pieces)."""
        for _, _, data in encoded:
            self._budget.acquire(len(data))
        chunk.add_pending(len(encoded))
        try:
            if all(p is None for p, _, _ in encoded):
                tid = self._table.table_id
                batches = [_PendingBatch(TableBucket(tid, b), None, data, chunk) for _, b, data in encoded]
                self._io.loop.call_soon_threadsafe(self._sender.enqueue, batches)
            else:
                self._io.call(self._enqueue_on_loop(encoded, chunk))
        except BaseException:
            chunk.add_pending(-len(encoded))
            for _, _, data in encoded:
                self._budget.release(len(data))
            raise

    async def _enqueue_on_loop(self, encoded: list[tuple[str | None, int, bytes]], chunk: _Chunk) -> None:
        partition_ids = await self._partition_ids({p for p, _, _ in encoded if p is not None})
        self._sender.enqueue([
            _PendingBatch(TableBucket(self._table.table_id, b, partition_ids.get(p) if p is not None else None),
                          p, data, chunk)
            for p, b, data in encoded])

    async def _partition_ids(self, names: set[str]) -> dict[str, int]:
        if not names:
            return {}
        client = self._io.client
        path = self._table.table_path
        meta = client.tables.get(path) or await client.table(path)
        missing = [n for n in names if n not in meta.partitions]
        if missing:
            await self._ensure_partitions(missing)
            meta = client.tables[path]
        return {n: meta.partitions[n] for n in names}

    async def _ensure_partitions(self, names: list[str]) -> None:
        client = self._io.client
        path = self._table.table_path
        existing = await client.admin_call("ListPartitionInfos", pb.ListPartitionInfosRequest(table_path=path.to_pb()))
        known = {p.partition_name for p in existing.partitions}
        for name in names:
            if name in known:
                continue
            if not self._config.writer_dynamic_create_partition_enabled:
                raise FlussError(f"Partition '{name}' of table '{path}' does not exist and "
                                 "writer.dynamic-create-partition.enabled is false", ErrorCode.PARTITION_NOT_EXISTS)
            spec = dict(zip(self._table.get_partition_keys(), name.split("$"), strict=True))
            await client.admin_call("CreatePartition", pb.CreatePartitionRequest(
                table_path=path.to_pb(), partition_spec=spec, ignore_if_exists=True))
        await client.update_metadata([path], partitions=[(path, n) for n in names])

    # ------------------------------------------------------------ flushing

    async def _linger_loop(self) -> None:
        """Sends the rows added one at a time ``writer.batch-timeout`` after the first of them was added (rows
        that fill a chunk first are sent by ``_add_row`` at once); while no row waits it sleeps, so an idle
        writer costs nothing however short the timeout."""
        timeout = max(self._config.writer_batch_timeout_ms, 1) / 1000
        while True:
            await self._rows_parked.wait()
            self._rows_parked.clear()
            await asyncio.sleep(timeout)
            if self._rows:
                await asyncio.to_thread(self._drain_rows)

    async def flush(self) -> None:
        """Sends everything written so far and waits until it is acknowledged.

        Raises:
            FlussError: some of what was written since the last flush was not written (a row the conversion
                refused, a batch the server refused for good), naming each row or batch and the reason.
        """
        # also when ``_rows`` is empty: the linger loop may be converting rows it took, not yet sent
        await asyncio.to_thread(self._drain_rows)
        await self._io.wait(self._sender.wait_idle())
        self._failures.raise_if_any()

    async def __aenter__(self):
        return self

    async def __aexit__(self, exc_type: type | None = None, exc_value: BaseException | None = None,
                        traceback: TracebackType | None = None) -> bool:
        """Flushes the writer (every pending record is sent and acknowledged); exceptions propagate."""
        await self.flush()
        return False

    async def aclose(self) -> None:
        """Sends what was written and waits for it (as the official client's connection close drains its
        writers), then stops. A failed write surfaces on its handle, not here."""
        try:
            await self.flush()
        except Exception:  # noqa: BLE001 - the handles carry the error
            log.debug("flushing on close failed", exc_info=True)
        self._linger.cancel()
        try:
            await self._io.wait(self._sender.close())
        except Exception:  # noqa: BLE001
            pass


def _as_fluss_error(e: BaseException) -> FlussError:
    return e if isinstance(e, FlussError) else FlussError(f"{type(e).__name__}: {e}", ErrorCode.CLIENT_ERROR)


def _slices(batch: pa.RecordBatch, target_bytes: int):
    """Cuts a batch into pieces of about ``target_bytes`` of Arrow data each."""
    if batch.num_rows <= 1 or batch.get_total_buffer_size() <= target_bytes:
        yield batch  # (the buffers' whole size bounds the sliced size, ``nbytes``, which takes far longer)
        return
    size = batch.nbytes
    if size <= target_bytes:
        yield batch
        return
    rows = max(1, int(batch.num_rows * target_bytes / size))
    for start in range(0, batch.num_rows, rows):
        yield batch.slice(start, rows)


class AppendWriter(_TableWriter):
    """Appends rows to a log table.

    ``append`` checks the row at the call (shape, column names, types, ranges: ``fluss.row_check``) and raises
    FlussError for a row that cannot be written; the Arrow and pandas writes check all of their data at the call.
    """

    def __init__(self, connection, table: TableInfo) -> None:
        super().__init__(connection, table)
        self._checker = RowChecker(self._schema, f"append to table '{table.table_path}'")

    def append(self, row: dict | list | tuple) -> WriteResultHandle:
        self._checker.check(row)
        return self._add_row(row)

    def write_arrow_batch(self, batch: pa.RecordBatch) -> WriteResultHandle:
        return self._write_arrow_batch(batch)

    def write_arrow(self, table: pa.Table) -> None:
        self._write_arrow_batch(table)

    def write_pandas(self, df: pd.DataFrame) -> None:
        self._write_arrow_batch(dataframe_to_arrow(df, self._schema))

    def __repr__(self) -> str:
        return f"AppendWriter({self._table.table_path})"
