"""``fluss.client.batch_decode``: fetched batches decoded on the pool give exactly what inline decoding gives."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pyarrow as pa
import pytest

from fluss import ErrorCode, FlussError
from fluss.client import batch_decode
from fluss.record.change_type import ChangeType
from fluss.record.log_batch import COMPRESSION_ZSTD, build_batch, iter_batches
from fluss.record.schema_evolution import SchemaHistory

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64()), ("s", pa.string())])
READ = SchemaHistory(SCHEMA).read  # what a scanner decodes each batch with
ROWS = 5_000


def _log(batches: int, rows: int = ROWS) -> bytearray:
    """``batches`` ZSTD batches of incompressible rows at consecutive offsets, the odd ones with change types."""
    rng = np.random.default_rng(7)
    out = bytearray()
    for i in range(batches):
        rb = pa.record_batch([pa.array(np.arange(i * rows, (i + 1) * rows)), pa.array(rng.integers(0, 2**62, rows)),
                              pa.array([None if j % 7 == 0 else f"r{j}" for j in range(rows)])], schema=SCHEMA)
        cts = np.full(rows, int(ChangeType.UpdateAfter), np.uint8) if i % 2 else None
        out += build_batch(rb, schema_id=1, compression=COMPRESSION_ZSTD, change_types=cts, base_offset=i * rows,
                           commit_timestamp=1000 + i)
    return out


@contextmanager
def _counting_pool() -> Iterator[list]:
    """Counts the tasks submitted to the decode pool while the block runs (the list of their functions)."""
    used: list = []
    pool = batch_decode.decode_pool()
    original_submit = pool.submit

    def counting_submit(fn, *args, **kwargs):
        used.append(fn)
        return original_submit(fn, *args, **kwargs)

    pool.submit = counting_submit
    try:
        yield used
    finally:
        del pool.submit


async def test_pool_decoding_equals_inline_decoding_in_order():
    data = _log(20)
    assert len(data) > batch_decode.PARALLEL_MIN_BYTES
    batches = list(iter_batches(data))
    with _counting_pool() as used:
        parallel = await batch_decode.decode_fetched(batches, READ, True)
    assert len(used) == len(batches)  # one task per batch went to the pool
    inline = [batch_decode.decode_batch(b, READ, True) for b in batches]
    assert len(parallel) == len(inline) == 20
    for (rb, cts), (rb2, cts2) in zip(parallel, inline, strict=True):
        assert rb.equals(rb2)
        assert np.array_equal(cts, cts2)
    table = pa.Table.from_batches([rb for rb, _ in parallel])
    assert table.column("k").to_pylist() == list(range(20 * ROWS))


async def test_small_responses_decode_inline():
    data = _log(1)
    batches = list(iter_batches(data))
    pool = batch_decode.decode_pool()
    pool.submit = lambda *a, **k: pytest.fail("a small response must not go to the pool")
    try:
        (rb, cts), = await batch_decode.decode_fetched(batches, READ, True)
    finally:
        del pool.submit
    assert rb.num_rows == ROWS and not cts.any()


async def test_one_large_batch_decodes_on_the_pool():
    """A response of one large batch (a full scan's usual answer: one ~1 MiB batch per bucket) decodes off the
    calling thread, so the client's I/O loop receives the other leaders' answers meanwhile."""
    data = _log(1, rows=40_000)
    assert len(data) > batch_decode.PARALLEL_MIN_BYTES
    batches = list(iter_batches(data))
    with _counting_pool() as used:
        (rb, cts), = await batch_decode.decode_fetched(batches, READ, True)
    assert len(used) == 1
    assert rb.column("k").to_pylist() == list(range(40_000)) and not cts.any()


async def test_a_corrupt_batch_fails_the_whole_response_with_its_offset():
    data = _log(12)
    batches = list(iter_batches(data))
    end_of_victim = sum(b.size_in_bytes for b in batches[:6])
    data[end_of_victim - 10] ^= 0xFF  # a byte of batch 5's Arrow body
    with pytest.raises(FlussError) as e:
        await batch_decode.decode_fetched(list(iter_batches(data)), READ, True)
    assert e.value.error_code == ErrorCode.CORRUPT_RECORD_EXCEPTION
    assert str(5 * ROWS) in e.value.message
