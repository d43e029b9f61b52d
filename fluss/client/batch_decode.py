"""Decoding fetched log batches on several cores.

A projected scan spends most of its client time decompressing the few columns it keeps, and one batch's
columns give Arrow little to spread over its threads. Large fetch responses are therefore decoded a batch per
task on a small shared thread pool: CRC32C and Arrow's decompression release the GIL, so the batches of one
response (and of responses from several tablet servers) decode at the same time. Small responses — the steady
state of a tailing scanner — decode inline, where a thread hop would only add latency.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa

from fluss.record.log_batch import LogBatch

# Below this many response bytes batches decode on the calling thread.
PARALLEL_MIN_BYTES = 256 * 1024
DECODE_THREADS = max(2, min(8, os.cpu_count() or 2))

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def decode_pool() -> ThreadPoolExecutor:
    """The process-wide decode pool (created on first use; idle workers end with the interpreter)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(DECODE_THREADS, thread_name_prefix="fluss-decode")
        return _pool


Reader = Callable[[LogBatch], pa.RecordBatch]  # decodes one batch's body (``SchemaReader.read``)


def decode_batch(batch: LogBatch, read: Reader, check_crc: bool) -> tuple[pa.RecordBatch, np.ndarray]:
    """One batch's rows and change types, its CRC checked first when asked."""
    if check_crc:
        batch.ensure_valid()
    return read(batch), batch.change_types()


async def decode_fetched(batches: list[LogBatch], read: Reader, check_crc: bool
                         ) -> list[tuple[pa.RecordBatch, np.ndarray]]:
    """Every batch decoded, in order: inline when the response is small, otherwise a task per batch on
    ``decode_pool`` (one large batch too: the I/O loop goes on receiving while it decompresses)."""
    if sum(b.size_in_bytes for b in batches) < PARALLEL_MIN_BYTES:
        return [decode_batch(b, read, check_crc) for b in batches]
    loop = asyncio.get_running_loop()
    pool = decode_pool()
    return list(await asyncio.gather(*(loop.run_in_executor(pool, decode_batch, b, read, check_crc)
                                       for b in batches)))
