"""The COMPACTED row layout: rows with variable-length integers and no bytes for nulls, for ``table.kv.format``
and ``table.log.format`` = COMPACTED (:mod:`fluss.record.log_format`).

A row is::

    row = schema_id || null_bitmap || the value of every non-null column, in column order

    schema_id      int16 little-endian
    null_bitmap    ceil(num_columns / 8) bytes; bit i (LSB first) set = column i is null (and takes no bytes)
    BOOLEAN, TINYINT                       1 byte
    SMALLINT                               2 bytes little-endian
    INT, DATE, TIME(p <= 3)                zig-zag varint (1 to 5 bytes)
    BIGINT, TIME(p > 3), TIMESTAMP(p),     zig-zag varint (1 to 10 bytes)
    TIMESTAMP_LTZ(p), DECIMAL(p <= 18)     (DECIMAL: the unscaled value)
    FLOAT, DOUBLE                          4 / 8 bytes IEEE-754 little-endian
    DECIMAL(p > 18)                        16 bytes: the unscaled value as int128 little-endian
    BINARY(n)                              n bytes
    CHAR, STRING, BYTES                    varint byte length || the bytes (UTF-8 for strings)
    ARRAY, MAP, ROW                        varint byte length || the nested encoding (:mod:`fluss.record.nested_codec`)

A varint is LEB128 (7 bits per byte, least significant group first, high bit set on every byte but the last);
zig-zag maps signed to unsigned (0, -1, 1, -2 ... -> 0, 1, 2, 3 ...), so small magnitudes take one byte. Temporal
values are in the Arrow unit of the column (:mod:`fluss.types`), as in the indexed layout.

Compared with the INDEXED layout (:mod:`fluss.record.indexed_rows`: fixed slots, u32 lengths) a row is smaller,
at the price of decoding columns one after the other: both directions are still vectorised over all rows of a
batch, one column at a time (varints are written from a (rows, 10) byte matrix and read by finding each row's
first byte without the continuation bit), never a Python loop per row.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from fluss.errors import ErrorCode, FlussError
from fluss.record.indexed_rows import SCHEMA_ID_BYTES, _var_parts
from fluss.record.nested_codec import decode_values, encode_values, is_nested

_MAX_VARINT = 10

# column kinds
_BYTE, _SHORT, _VARINT, _F32, _F64, _INT128, _FIXED, _BYTES, _NESTED = range(9)


def _kind(t: pa.DataType) -> tuple[int, int]:
    """(kind, width for fixed kinds) of a column type."""
    types = pa.types
    if types.is_boolean(t) or types.is_int8(t):
        return _BYTE, 1
    if types.is_int16(t):
        return _SHORT, 2
    if types.is_int32(t) or types.is_int64(t) or types.is_date32(t) or types.is_time32(t) or types.is_time64(t) \
            or types.is_timestamp(t):
        return _VARINT, 0
    if types.is_decimal128(t):
        return (_VARINT, 0) if t.precision <= 18 else (_INT128, 16)
    if types.is_float32(t):
        return _F32, 4
    if types.is_float64(t):
        return _F64, 8
    if types.is_fixed_size_binary(t):
        return _FIXED, t.byte_width
    if types.is_string(t) or types.is_binary(t) or types.is_large_string(t) or types.is_large_binary(t):
        return _BYTES, 0
    if is_nested(t):
        return _NESTED, 0
    raise FlussError(f"the COMPACTED row layout does not support Arrow type '{t}'", ErrorCode.KV_STORAGE_EXCEPTION)


def _starts(lengths: np.ndarray) -> np.ndarray:
    out = np.zeros(len(lengths), dtype=np.int64)
    if len(lengths) > 1:
        np.cumsum(lengths[:-1], out=out[1:])
    return out


# ================================================================================================ varints


def _zigzag(values: np.ndarray) -> np.ndarray:
    v = values.astype(np.int64)
    return ((v << 1) ^ (v >> 63)).view(np.uint64)


def _unzigzag(u: np.ndarray) -> np.ndarray:
    return (u >> np.uint64(1)).view(np.int64) ^ -(u & np.uint64(1)).view(np.int64)


def varint_parts(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(byte length, concatenated bytes) of the LEB128 varints of unsigned values."""
    n = len(u)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint8)
    top = int(u.max())
    width = max(1, (top.bit_length() + 6) // 7)  # bytes of the largest value: the matrix needs no more columns
    nbytes = np.ones(n, dtype=np.int64)
    for k in range(1, width):
        nbytes += u >= np.uint64(1 << (7 * k))
    groups = np.empty((n, width), dtype=np.uint8)
    for k in range(width):
        group = ((u >> np.uint64(7 * k)) & np.uint64(0x7F)).astype(np.uint8)
        if k < width - 1:
            group |= (nbytes > k + 1).astype(np.uint8) << 7
        groups[:, k] = group
    if (nbytes == width).all():
        return nbytes, groups.reshape(-1)
    return nbytes, groups[np.arange(width) < nbytes[:, None]]


def read_varints(data: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(unsigned values, byte lengths) of the varints at ``pos``: one pass per byte group, over only the values
    that continue (``data`` must have 10 spare bytes at its end)."""
    first = data[pos]
    values = (first & 0x7F).astype(np.uint64)
    nbytes = np.ones(len(pos), dtype=np.int64)
    more = np.flatnonzero(first & 0x80)
    k = 1
    while len(more):
        if k >= _MAX_VARINT:
            raise FlussError("a stored row holds a varint longer than 10 bytes", ErrorCode.CORRUPT_RECORD_EXCEPTION)
        b = data[pos[more] + k]
        values[more] |= (b & 0x7F).astype(np.uint64) << np.uint64(7 * k)
        nbytes[more] += 1
        more = more[(b & 0x80) != 0]
        k += 1
    return values, nbytes


# ================================================================================================ encode


def _column_parts(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(byte length of each row's value - 0 when null, concatenated bytes of the non-null values)."""
    t = arr.type
    kind, width = _kind(t)
    n = len(arr)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint8)
    valid = arr.is_valid().to_numpy(zero_copy_only=False) if arr.null_count else None
    if kind in (_BYTES, _NESTED):
        lengths, content = _var_parts(arr) if kind == _BYTES else encode_values(arr)
        prefix_len, prefix = varint_parts(lengths.astype(np.uint64))
        if valid is not None:
            prefix = prefix[np.repeat(valid, prefix_len)]
            prefix_len = prefix_len * valid
        total = prefix_len + lengths
        out = np.zeros(int(total.sum()), dtype=np.uint8)
        starts = _starts(total)
        keep = np.flatnonzero(total)
        _scatter(out, starts[keep], prefix_len[keep], prefix)
        _scatter(out, starts[keep] + prefix_len[keep], lengths[keep], content)
        return total, out
    if kind == _VARINT:
        if pa.types.is_decimal128(t):
            raw = np.frombuffer(arr.buffers()[1], dtype="<i8", count=2 * n, offset=arr.offset * 16)[::2]
        else:
            view = pa.int32() if (pa.types.is_int32(t) or pa.types.is_date32(t) or pa.types.is_time32(t)) \
                else pa.int64()
            raw = arr.view(view).fill_null(0).to_numpy(zero_copy_only=False)
        u = _zigzag(raw if valid is None else raw[valid])
        lengths_present, content = varint_parts(u)
        if valid is None:
            return lengths_present, content
        lengths = np.zeros(n, dtype=np.int64)
        lengths[valid] = lengths_present
        return lengths, content
    if kind == _BYTE and pa.types.is_boolean(t):
        values = arr.fill_null(False).to_numpy(zero_copy_only=False).astype(np.uint8).reshape(n, 1)
    else:
        buf = arr.buffers()[1]
        values = np.frombuffer(buf, dtype=np.uint8, count=n * width, offset=arr.offset * width).reshape(n, width)
    if valid is not None:
        values = values[valid]
        lengths = valid.astype(np.int64) * width
    else:
        lengths = np.full(n, width, dtype=np.int64)
    return lengths, np.ascontiguousarray(values).reshape(-1)


def _scatter(out: np.ndarray, dest: np.ndarray, lengths: np.ndarray, content: np.ndarray) -> None:
    if len(content):
        out[np.repeat(dest - _starts(lengths), lengths) + np.arange(len(content))] = content


def encode_rows_buffer(batch: pa.RecordBatch, schema_id: int) -> tuple[np.ndarray, np.ndarray]:
    """Every row of ``batch`` encoded into one uint8 buffer, and the ``num_rows + 1`` row offsets in it."""
    n = batch.num_rows
    ncols = batch.num_columns
    if n == 0:
        return np.zeros(0, dtype=np.uint8), np.zeros(1, dtype=np.int64)
    bitmap_bytes = (ncols + 7) // 8
    nulls = np.zeros((n, bitmap_bytes * 8), dtype=bool)
    parts = []
    row_len = np.full(n, SCHEMA_ID_BYTES + bitmap_bytes, dtype=np.int64)
    for i in range(ncols):
        arr = batch.column(i)
        if arr.null_count:
            nulls[:, i] = arr.is_null().to_numpy(zero_copy_only=False)
        lengths, content = _column_parts(arr)
        parts.append((lengths, content))
        row_len += lengths
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(row_len, out=offsets[1:])
    out = np.zeros(int(offsets[-1]), dtype=np.uint8)
    starts = offsets[:-1]
    head = np.zeros((n, SCHEMA_ID_BYTES + bitmap_bytes), dtype=np.uint8)
    head[:, :SCHEMA_ID_BYTES] = np.frombuffer(np.int16(schema_id).astype("<i2").tobytes(), dtype=np.uint8)
    head[:, SCHEMA_ID_BYTES:] = np.packbits(nulls, axis=1, bitorder="little")
    out[starts[:, None] + np.arange(head.shape[1])] = head
    cursor = starts + head.shape[1]
    for lengths, content in parts:
        _scatter(out, cursor, lengths, content)
        cursor = cursor + lengths
    return out, offsets


def encode_rows(batch: pa.RecordBatch, schema_id: int) -> list[bytes]:
    """The encoded bytes of every row of ``batch``."""
    if batch.num_rows == 0:
        return []
    blob, offsets = encode_rows_buffer(batch, schema_id)
    data = blob.tobytes()
    bounds = offsets.tolist()
    return [data[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


# ================================================================================================ decode


def _validity(valid: np.ndarray) -> tuple[pa.Buffer | None, int]:
    nulls = int(len(valid) - np.count_nonzero(valid))
    return (None, 0) if nulls == 0 else (pa.py_buffer(np.packbits(valid, bitorder="little")), nulls)


def _decode_column(t: pa.DataType, data: np.ndarray, cursor: np.ndarray, valid: np.ndarray
                   ) -> tuple[pa.Array, np.ndarray]:
    """The column at ``cursor`` (rows where ``valid`` is False hold no bytes) and the cursor after it."""
    n = len(cursor)
    kind, width = _kind(t)
    present = np.flatnonzero(valid)
    pos = cursor[present]
    advance = np.zeros(n, dtype=np.int64)
    validity, null_count = _validity(valid)
    if kind in (_BYTES, _NESTED):
        lengths_u, prefix = read_varints(data, pos)
        lengths = lengths_u.astype(np.int64)
        advance[present] = prefix + lengths
        if kind == _NESTED:
            full_pos = np.zeros(n, dtype=np.int64)
            full_len = np.zeros(n, dtype=np.int64)
            full_pos[present], full_len[present] = pos + prefix, lengths
            return decode_values(t, data, full_pos, full_len, valid if null_count else None), cursor + advance
        all_lengths = np.zeros(n, dtype=np.int64)
        all_lengths[present] = lengths
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(all_lengths, out=offsets[1:])
        total = int(offsets[-1])
        if total > len(data) or (len(lengths) and int(lengths.min()) < 0):  # disjoint ranges of one buffer
            raise FlussError(f"stored values claim {total} bytes of a {len(data)}-byte buffer",
                             ErrorCode.CORRUPT_RECORD_EXCEPTION)
        content = data[np.repeat(pos + prefix - _starts(lengths), lengths) + np.arange(total)] if total \
            else np.zeros(0, dtype=np.uint8)
        large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
        arr = pa.Array.from_buffers(t, n, [validity, pa.py_buffer(offsets if large else offsets.astype(np.int32)),
                                           pa.py_buffer(content)], null_count)
        return arr, cursor + advance
    if kind == _VARINT:
        u, nbytes = read_varints(data, pos)
        advance[present] = nbytes
        signed = _unzigzag(u)
        if pa.types.is_decimal128(t):
            values = np.zeros((n, 2), dtype="<i8")
            values[present, 0] = signed
            values[present, 1] = signed >> 63
        else:
            narrow = pa.types.is_int32(t) or pa.types.is_date32(t) or pa.types.is_time32(t)
            values = np.zeros(n, dtype="<i4" if narrow else "<i8")
            values[present] = signed
        return pa.Array.from_buffers(t, n, [validity, pa.py_buffer(values)], null_count), cursor + advance
    advance[present] = width
    raw = np.zeros((n, width), dtype=np.uint8)
    if len(present):
        raw[present] = data[pos[:, None] + np.arange(width)]
    if pa.types.is_boolean(t):
        bits = np.packbits(raw[:, 0].astype(bool), bitorder="little")
        return pa.Array.from_buffers(t, n, [validity, pa.py_buffer(bits)], null_count), cursor + advance
    return pa.Array.from_buffers(t, n, [validity, pa.py_buffer(raw)], null_count), cursor + advance


def decode_rows_buffer(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, schema: pa.Schema,
                       schema_id: int | None = None) -> pa.RecordBatch:
    """The rows stored at ``starts`` in the uint8 buffer ``data`` as a batch of ``schema``.

    Raises:
        FlussError: KV_STORAGE_EXCEPTION if ``schema_id`` is given and a row carries another one;
            CORRUPT_RECORD_EXCEPTION if a row's fields run past its end.
    """
    n = len(starts)
    ncols = len(schema)
    if n == 0:
        return pa.RecordBatch.from_arrays([pa.nulls(0, f.type) for f in schema], schema=schema)
    bitmap_bytes = (ncols + 7) // 8
    head_len = SCHEMA_ID_BYTES + bitmap_bytes
    if int(lengths.min()) < head_len:
        raise FlussError(f"a stored row has {int(lengths.min())} bytes, fewer than its {head_len}-byte header",
                         ErrorCode.CORRUPT_RECORD_EXCEPTION)
    padded = np.concatenate([data, np.zeros(_MAX_VARINT + 16, dtype=np.uint8)])
    head = padded[starts[:, None] + np.arange(head_len)]
    if schema_id is not None:
        ids = np.ascontiguousarray(head[:, :SCHEMA_ID_BYTES]).view("<i2").reshape(n)
        if (ids != schema_id).any():
            bad = int(ids[np.flatnonzero(ids != schema_id)[0]])
            raise FlussError(f"a stored row has schema id {bad}, expected {schema_id} (schema evolution of stored "
                             "values is not supported yet)", ErrorCode.KV_STORAGE_EXCEPTION)
    valid = ~np.unpackbits(head[:, SCHEMA_ID_BYTES:], axis=1, bitorder="little")[:, :ncols].astype(bool)
    cursor = starts + head_len
    arrays = []
    for i, f in enumerate(schema):
        arr, cursor = _decode_column(f.type, padded, cursor, valid[:, i])
        arrays.append(arr)
    if (cursor != starts + lengths).any():
        row = int(np.flatnonzero(cursor != starts + lengths)[0])
        raise FlussError(f"a stored row (#{row}) of {int(lengths[row])} bytes does not match its schema "
                         f"({int(cursor[row] - starts[row])} bytes decoded)", ErrorCode.CORRUPT_RECORD_EXCEPTION)
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def decode_rows(values: Sequence[bytes | None], schema: pa.Schema, schema_id: int | None = None) -> pa.RecordBatch:
    """The rows of encoded values as a batch of ``schema``; a ``None`` value gives an all-null row."""
    present_idx = [i for i, v in enumerate(values) if v is not None] if None in values else None
    present = [values[i] for i in present_idx] if present_idx is not None else list(values)
    if not present:
        return pa.RecordBatch.from_arrays([pa.nulls(len(values), f.type) for f in schema], schema=schema)
    lengths = np.fromiter(map(len, present), dtype=np.int64, count=len(present))
    batch = decode_rows_buffer(np.frombuffer(b"".join(present), dtype=np.uint8), _starts(lengths), lengths, schema,
                               schema_id)
    if present_idx is None:
        return batch
    positions = np.full(len(values), -1, dtype=np.int64)
    positions[present_idx] = np.arange(len(present))
    return batch.take(pa.array(positions, mask=positions < 0))


__all__ = ["decode_rows", "decode_rows_buffer", "encode_rows", "encode_rows_buffer", "read_varints", "varint_parts"]
