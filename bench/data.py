"""The benchmark rows: about 42 bytes of values in 10 columns, made as Arrow record batches.

Every system gets exactly the same rows. Column ``ts`` is the send time in microseconds (the latency scenarios
overwrite it when the row is sent); ``seq`` numbers the rows; the rest is seeded random data, so a run is repeatable.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

SCHEMA = pa.schema([
    ("ts", pa.int64()), ("seq", pa.int64()),
    ("i0", pa.int32()), ("i1", pa.int32()),
    ("f0", pa.float32()), ("f1", pa.float32()),
    ("h0", pa.int16()), ("h1", pa.int16()),
    ("s0", pa.string()), ("s1", pa.string()),
])
PROJECTED = ["seq", "i0"]  # the 2 of 10 columns read by the projected scans
STRING_LEN = 3
LOGICAL_ROW_BYTES = 8 + 8 + 4 + 4 + 4 + 4 + 2 + 2 + STRING_LEN + STRING_LEN  # 42: values only, no offsets


def _strings(rng: np.random.Generator, n: int, prefix: str) -> pa.Array:
    """``n`` strings of STRING_LEN characters (``prefix`` + digits), built without a per-row Python loop."""
    digits = STRING_LEN - len(prefix)
    codes = rng.integers(0, 10**digits, n)
    chars = np.empty((n, STRING_LEN), dtype=np.uint8)
    chars[:, : len(prefix)] = np.frombuffer(prefix.encode(), dtype=np.uint8)
    for k in range(digits):  # per digit position, not per row
        chars[:, STRING_LEN - 1 - k] = ord("0") + (codes // 10**k) % 10
    offsets = np.arange(0, (n + 1) * STRING_LEN, STRING_LEN, dtype=np.int32)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(chars.tobytes())])


def make_batch(n: int, seed: int = 0, start_seq: int = 0) -> pa.RecordBatch:
    """``n`` benchmark rows as one record batch."""
    rng = np.random.default_rng(seed)
    return pa.record_batch([
        pa.array(np.zeros(n, dtype=np.int64)),
        pa.array(np.arange(start_seq, start_seq + n, dtype=np.int64)),
        pa.array(rng.integers(0, 2**31 - 1, n, dtype=np.int32)),
        pa.array(rng.integers(0, 2**31 - 1, n, dtype=np.int32)),
        pa.array(rng.random(n, dtype=np.float32)),
        pa.array(rng.random(n, dtype=np.float32)),
        pa.array(rng.integers(0, 2**15 - 1, n, dtype=np.int16)),
        pa.array(rng.integers(0, 2**15 - 1, n, dtype=np.int16)),
        _strings(rng, n, "k"),
        _strings(rng, n, "v"),
    ], schema=SCHEMA)


def with_timestamp(batch: pa.RecordBatch, ts_us: int) -> pa.RecordBatch:
    """The same rows with column ``ts`` set to ``ts_us`` (the send time, microseconds since the epoch).

    It runs between taking the send time and the write, inside the measured latency: replacing the one column
    costs ~11 us, rebuilding the batch from all ten ~39 us (more after an idle gap)."""
    return batch.set_column(0, batch.schema.field(0), pa.array(np.full(batch.num_rows, ts_us, dtype=np.int64)))


def arrow_bytes_per_row(batch: pa.RecordBatch) -> float:
    """Bytes per row in Arrow memory (values plus string offsets), the basis of every MB/s figure."""
    return batch.nbytes / max(1, batch.num_rows)


# The nested table of ``log.append.nested`` / ``log.scan.nested``: ``ts`` and ``seq`` as above, then an array of
# 5 ints, a map of 3 entries and a row of 3 fields: the shapes of issue 14's benchmark, next to the flat table.
NESTED_ARRAY_LEN = 5
NESTED_MAP_KEYS = ("k0", "k1", "k2")
NESTED_SCHEMA = pa.schema([
    ("ts", pa.int64()), ("seq", pa.int64()),
    ("tags", pa.list_(pa.int32())),
    ("attrs", pa.map_(pa.string(), pa.int32())),
    ("point", pa.struct([("x", pa.int32()), ("y", pa.float64()), ("name", pa.string())])),
])


def make_nested_batch(n: int, seed: int = 0, start_seq: int = 0) -> pa.RecordBatch:
    """``n`` rows of ``NESTED_SCHEMA`` as one record batch, built from numpy buffers (no per-row Python)."""
    rng = np.random.default_rng(seed)
    tags = pa.ListArray.from_arrays(
        pa.array(np.arange(0, (n + 1) * NESTED_ARRAY_LEN, NESTED_ARRAY_LEN, dtype=np.int32)),
        pa.array(rng.integers(0, 2**31 - 1, n * NESTED_ARRAY_LEN, dtype=np.int32)))
    width = len(NESTED_MAP_KEYS)
    keys = pa.array(np.tile(np.array(NESTED_MAP_KEYS, dtype=object), n), pa.string())
    attrs = pa.MapArray.from_arrays(pa.array(np.arange(0, (n + 1) * width, width, dtype=np.int32)), keys,
                                    pa.array(rng.integers(0, 2**31 - 1, n * width, dtype=np.int32)))
    point = pa.StructArray.from_arrays(
        [pa.array(rng.integers(0, 2**31 - 1, n, dtype=np.int32)), pa.array(rng.random(n)), _strings(rng, n, "p")],
        fields=list(NESTED_SCHEMA.field("point").type))
    return pa.record_batch([
        pa.array(np.zeros(n, dtype=np.int64)),
        pa.array(np.arange(start_seq, start_seq + n, dtype=np.int64)),
        tags, attrs, point,
    ], schema=NESTED_SCHEMA)
