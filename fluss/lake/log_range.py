"""Reading a bounded range of a table's log: per bucket, the records in ``[start, end)``.

Both the tiering job (the range it tiers) and Union Read (the log after the lake snapshot) need "exactly these
offsets, then stop", which the streaming scanner does not give by itself: batches that cross ``end`` are cut,
a bucket is unsubscribed once it reaches ``end``, and a read that makes no progress for ``stall_timeout_s``
fails instead of hanging.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import AsyncIterator

from fluss.client.scanner import RecordBatch
from fluss.errors import ErrorCode, FlussError

Ranges = dict[int, tuple[int, int]]  # bucket -> [start, end)


async def poll_batches(scanner, timeout_ms: int) -> list[RecordBatch]:
    """One ``poll_record_batch`` of a batch scanner, without blocking the event loop."""
    blocking = getattr(scanner, "poll_record_batch_sync", None)
    if blocking is not None:
        return await asyncio.to_thread(blocking, timeout_ms)
    result = scanner.poll_record_batch(timeout_ms)
    return await result if inspect.isawaitable(result) else result


async def iter_log_range(scanner, ranges: Ranges, poll_timeout_ms: int = 500,
                         stall_timeout_s: float = 60.0) -> AsyncIterator[RecordBatch]:
    """Yields the record batches of every bucket's ``[start, end)``."""
    pos = {b: s for b, (s, e) in ranges.items() if e > s}
    if not pos:
        return
    scanner.subscribe_buckets(dict(pos))
    last_progress = time.monotonic()
    while pos:
        batches = scanner.poll_record_batch_sync(poll_timeout_ms)
        if batches:
            last_progress = time.monotonic()
        elif time.monotonic() - last_progress > stall_timeout_s:
            raise FlussError(f"Reading log ranges {ranges} made no progress for {stall_timeout_s}s "
                             f"(at {pos})", ErrorCode.REQUEST_TIME_OUT)
        for rb in batches:
            b = rb.bucket.bucket_id
            if b not in pos:
                continue
            end = ranges[b][1]
            if rb.base_offset >= end:
                continue
            if rb.last_offset >= end:
                k = end - rb.base_offset
                rb = RecordBatch(rb.batch.slice(0, k), rb.bucket, rb.base_offset, end - 1, rb.change_types[:k],
                                 rb.timestamp)
            if rb.batch.num_rows:
                yield rb
            pos[b] = rb.last_offset + 1
            if pos[b] >= end:
                del pos[b]
                scanner.unsubscribe(b)
