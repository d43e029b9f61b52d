"""Reading a bounded range of a table's log: per (partition, bucket), the records in ``[start, end)``.

Both the tiering job (the range it tiers) and Union Read (the log after the lake snapshot) need "exactly these
offsets, then stop", which the streaming scanner does not give by itself: batches that cross ``end`` are cut,
a bucket is unsubscribed once it reaches ``end``, and a read that makes no progress for ``stall_timeout_s``
fails instead of hanging.

A partition dropped while it is read never reaches its ``end``: when the read makes no progress for
``recheck_s`` (or the scanner reports ``PARTITION_NOT_EXISTS``), the ``gone`` callback is asked which of the
unfinished keys belong to dropped partitions, and those are given up (the caller sees how far each got from the
batches it received).

Ranges are keyed by :data:`BucketKey` ``(partition_id, bucket)``, with ``partition_id = -1``
(``NO_PARTITION``) for a non-partitioned table, the same keys as the offsets in the Paimon snapshot properties.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable

from fluss import RecordBatch
from fluss.errors import ErrorCode, FlussError
from fluss.metadata import NO_PARTITION

BucketKey = tuple[int, int]  # (partition_id or NO_PARTITION, bucket)
Ranges = dict[BucketKey, tuple[int, int]]  # -> [start, end)


def key_of(rb: RecordBatch) -> BucketKey:
    """The ``(partition_id, bucket)`` key of a scanned batch."""
    return rb.bucket.partition_id_or_none_value, rb.bucket.bucket_id


async def poll_batches(scanner, timeout_ms: int) -> list[RecordBatch]:
    """One ``poll_record_batch`` of a batch scanner, without blocking the event loop."""
    blocking = getattr(scanner, "poll_record_batch_sync", None)
    if blocking is not None:
        return await asyncio.to_thread(blocking, timeout_ms)
    result = scanner.poll_record_batch(timeout_ms)
    return await result if inspect.isawaitable(result) else result


def _subscribe(scanner, key: BucketKey, offset: int) -> None:
    pid, bucket = key
    if pid == NO_PARTITION:
        scanner.subscribe(bucket, offset)
    else:
        scanner.subscribe_partition(pid, bucket, offset)


def _unsubscribe(scanner, key: BucketKey) -> None:
    pid, bucket = key
    if pid == NO_PARTITION:
        scanner.unsubscribe(bucket)
    else:
        scanner.unsubscribe_partition(pid, bucket)


GoneCheck = Callable[[list[BucketKey]], Awaitable[set[BucketKey]]]


async def iter_log_range(scanner, ranges: Ranges, poll_timeout_ms: int = 500, stall_timeout_s: float = 60.0,
                         gone: GoneCheck | None = None, recheck_s: float = 2.0) -> AsyncIterator[RecordBatch]:
    """Yields the record batches of every ``(partition, bucket)``'s ``[start, end)``."""
    pos = {k: s for k, (s, e) in ranges.items() if e > s}
    if not pos:
        return
    for k, s in pos.items():
        _subscribe(scanner, k, s)
    last_progress = last_check = time.monotonic()
    while pos:
        try:
            batches = await poll_batches(scanner, poll_timeout_ms)
        except FlussError as e:
            if gone is None or e.error_code != ErrorCode.PARTITION_NOT_EXISTS:
                raise
            if not await _give_up_gone(scanner, pos, gone):
                raise
            continue
        now = time.monotonic()
        if batches:
            last_progress = now
        elif gone is not None and now - max(last_progress, last_check) > recheck_s:
            last_check = now
            if await _give_up_gone(scanner, pos, gone):
                continue
        if not batches and now - last_progress > stall_timeout_s:
            raise FlussError(f"Reading log ranges {ranges} made no progress for {stall_timeout_s}s "
                             f"(at {pos})", ErrorCode.REQUEST_TIME_OUT)
        for rb in batches:
            k = key_of(rb)
            if k not in pos:
                continue
            end = ranges[k][1]
            if rb.base_offset >= end:
                continue
            if rb.last_offset >= end:
                n = end - rb.base_offset
                rb = RecordBatch(rb.batch.slice(0, n), rb.bucket, rb.base_offset, end - 1, rb.change_types[:n],
                                 rb.timestamp)
            if rb.batch.num_rows:
                yield rb
            pos[k] = rb.last_offset + 1
            if pos[k] >= end:
                del pos[k]
                _unsubscribe(scanner, k)


async def _give_up_gone(scanner, pos: dict[BucketKey, int], gone: GoneCheck) -> bool:
    dropped = await gone(sorted(pos))
    for k in dropped:
        if k in pos:
            del pos[k]
            _unsubscribe(scanner, k)
    return bool(dropped)
