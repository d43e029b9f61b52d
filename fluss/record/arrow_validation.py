"""Full validation of a decoded record batch, with the string and binary columns checked vectorized.

``RecordBatch.validate(full=True)`` checks a string column value by value (offsets, then UTF-8 of each value),
about 4.5 ns a row on the benchmark rows: a fifth of what the leader's batch validation costs per batch. The
same guarantees hold when checked over whole buffers:

- the offsets are monotonic, start at 0 or more and end within the data buffer (one numpy pass);
- a string column's bytes from its first offset to its last decode as UTF-8 (CPython's decoder, whose ASCII path
  runs at memory speed) and, when they are not all ASCII, every offset falls on a character boundary: the values
  tile that range, so each value is then valid UTF-8 on its own.

Columns of other types keep Arrow's own full validation (nested types, decimals' precision). When a vectorized
check fails, Arrow's validation of that column decides, so the error is Arrow's and a column Arrow accepts (a
null slot over bytes that are not UTF-8) is accepted.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

_OFFSET_TYPES = {
    pa.string(): (np.int32, True), pa.binary(): (np.int32, False),
    pa.large_string(): (np.int64, True), pa.large_binary(): (np.int64, False),
}


# Below this many rows Arrow's own full validation is the cheaper one: the vectorized checks cost ~50-100 us of
# numpy and Python set-up per batch (a 20-row batch: ~55 us against Arrow's 2-3 us; of the benchmark rows, 8,192
# take ~92-130 us either way, 16,384 take 116-130 against 222-226 us, 40,000 take 152-182 against 537-569 us).
VECTORIZED_MIN_ROWS = 8192


def validate_full(rows: pa.RecordBatch) -> None:
    """Raises ``pa.ArrowInvalid`` when ``rows`` is not valid Arrow data (as ``rows.validate(full=True)`` does)."""
    if rows.num_rows < VECTORIZED_MIN_ROWS:
        rows.validate(full=True)
    else:
        validate_vectorized(rows)


def validate_vectorized(rows: pa.RecordBatch) -> None:
    """:func:`validate_full` with the string and binary columns checked over whole buffers."""
    rows.validate()  # structure and buffer sizes of every column
    for column in rows.columns:
        kind = _OFFSET_TYPES.get(column.type)
        if kind is None or column.null_count == len(column) or not _offsets_valid(column, *kind):
            column.validate(full=True)


def _offsets_valid(column: pa.Array, offset_type: type, utf8: bool) -> bool:
    """Whether the offsets (and, for strings, the UTF-8) of a string or binary column are valid."""
    _, offsets_buffer, data_buffer = column.buffers()
    n = len(column)
    offsets = np.frombuffer(offsets_buffer, dtype=offset_type, count=n + 1,
                            offset=column.offset * np.dtype(offset_type).itemsize)
    first, last = int(offsets[0]), int(offsets[-1])
    data_size = data_buffer.size if data_buffer is not None else 0
    if first < 0 or last > data_size or (n and bool((offsets[1:] < offsets[:-1]).any())):
        return False
    if not utf8 or first == last:
        return True
    data = memoryview(data_buffer)[first:last]
    try:
        text = str(data, "utf-8")
    except UnicodeDecodeError:
        return False
    if text.isascii():
        return True
    starts = offsets[:-1]
    starts = starts[starts < last] - first
    continuation = (np.frombuffer(data, dtype=np.uint8)[starts] & 0xC0) == 0x80
    return not bool(continuation.any())
