"""The value encoding of a primary-key table's rows in RocksDB: one compact byte string per full row.

The key of a RocksDB entry is the encoded primary key (:mod:`fluss.key.encoding`); its value is the whole
row (primary-key columns included), encoded as::

    value = schema_id || null_bitmap || fixed_section || var_section

    schema_id      int16 little-endian: the id of the table schema the row was written with
    null_bitmap    ceil(num_columns / 8) bytes; bit i (LSB first, byte i // 8) set = column i is null
    fixed_section  one slot per fixed-width column, in column order, always present (zero bytes when
                   the value is null), so every row of a schema has the same fixed-section layout:
        BOOLEAN                      1 byte (0 / 1)
        TINYINT / SMALLINT / INT / BIGINT   1 / 2 / 4 / 8 bytes two's complement, little-endian
        FLOAT / DOUBLE               4 / 8 bytes IEEE-754 little-endian (bit pattern kept: NaN payloads,
                                     -0.0 survive)
        DECIMAL(p, s), p <= 18       8 bytes: the unscaled value as int64 little-endian
        DECIMAL(p, s), p > 18        16 bytes: the unscaled value as int128 little-endian
        DATE                         4 bytes: days since 1970-01-01, int32
        TIME(p)                      4 bytes int32 (p <= 3: seconds / millis) or 8 bytes int64
                                     (p > 3: micros / nanos) in the Arrow unit of the column
        TIMESTAMP(p), TIMESTAMP_LTZ(p)  8 bytes int64 in the Arrow unit of the column (UTC for LTZ)
        BINARY(n)                    n bytes
    var_section    for each variable-width column (CHAR, STRING, BYTES, ARRAY, MAP, ROW), in column order:
                   uint32 little-endian byte length || the bytes (UTF-8 for strings; the encoding of
                   :mod:`fluss.record.nested_codec` for nested values); length 0 if null

The units are those of the column's Arrow type (see :mod:`fluss.types`), so encoding is a copy of Arrow
buffers: both directions are vectorised with numpy over a whole batch (fixed-width slots are gathered /
scattered as (rows, width) byte matrices; variable-width fields with one cumulative-sum scatter each).

Decoding needs the schema the value was written with. :func:`decode_rows` takes one Arrow schema for all
values (the tablet's current schema); values of another schema id are rejected until schema evolution
(added nullable columns) is implemented.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from fluss.errors import ErrorCode, FlussError
from fluss.record.schema_evolution import SchemaHistory

#: Bytes of the schema-id header.
SCHEMA_ID_BYTES = 2


@dataclass(frozen=True)
class _ColumnLayout:
    index: int
    arrow_type: pa.DataType
    width: int | None  # slot bytes in the fixed section; None = variable width
    offset: int = 0  # slot offset within the value (fixed columns only)
    store_dtype: str | None = None  # numpy dtype of the stored slot, e.g. "<i8" (None = raw bytes)
    arrow_width: int | None = None  # bytes per value in the Arrow data buffer


@dataclass(frozen=True)
class RowLayout:
    """The byte layout of values of one Arrow schema (computed once per schema)."""

    schema: pa.Schema
    bitmap_bytes: int
    fixed_end: int  # offset of the var section
    columns: tuple[_ColumnLayout, ...]

    @property
    def fixed(self) -> list[_ColumnLayout]:
        return [c for c in self.columns if c.width is not None]

    @property
    def var(self) -> list[_ColumnLayout]:
        return [c for c in self.columns if c.width is None]


_LAYOUTS: dict[pa.Schema, RowLayout] = {}
_LAYOUTS_BY_ID: dict[int, tuple[pa.Schema, RowLayout]] = {}


def _slot(t: pa.DataType) -> tuple[int | None, str | None, int | None]:
    """(slot width, stored numpy dtype, Arrow buffer width) of a column type."""
    types = pa.types
    if types.is_boolean(t):
        return 1, "u1", None
    if types.is_integer(t) or types.is_floating(t):
        w = t.bit_width // 8
        kind = "f" if types.is_floating(t) else ("u" if types.is_unsigned_integer(t) else "i")
        return w, f"<{kind}{w}", w
    if types.is_decimal128(t):
        return (8, "<i8", 16) if t.precision <= 18 else (16, None, 16)
    if types.is_date32(t) or types.is_time32(t):
        return 4, "<i4", 4
    if types.is_time64(t) or types.is_timestamp(t) or types.is_date64(t):
        return 8, "<i8", 8
    if types.is_fixed_size_binary(t):
        return t.byte_width, None, t.byte_width
    if types.is_string(t) or types.is_binary(t) or types.is_large_string(t) or types.is_large_binary(t):
        return None, None, None
    if types.is_list(t) or types.is_large_list(t) or types.is_map(t) or types.is_struct(t):
        return None, None, None  # nested values: variable width, encoded by ``nested_codec``
    raise FlussError(f"the KV row codec does not support Arrow type '{t}'", ErrorCode.KV_STORAGE_EXCEPTION)


def layout_of(schema: pa.Schema) -> RowLayout:
    """The (cached) value layout of an Arrow schema."""
    hit = _LAYOUTS_BY_ID.get(id(schema))
    if hit is not None and hit[0] is schema:  # the same schema object again: no schema hash (costly)
        return hit[1]
    cached = _LAYOUTS.get(schema)
    if cached is not None:
        _remember(schema, cached)
        return cached
    bitmap = (len(schema) + 7) // 8
    offset = SCHEMA_ID_BYTES + bitmap
    cols = []
    for i, f in enumerate(schema):
        width, dtype, arrow_width = _slot(f.type)
        cols.append(_ColumnLayout(i, f.type, width, offset, dtype, arrow_width))
        if width is not None:
            offset += width
    layout = RowLayout(schema, bitmap, offset, tuple(cols))
    _LAYOUTS[schema] = layout
    _remember(schema, layout)
    return layout


def _remember(schema: pa.Schema, layout: RowLayout) -> None:
    if len(_LAYOUTS_BY_ID) >= 256:  # callers passing a fresh schema object each time must not grow it
        _LAYOUTS_BY_ID.clear()
    _LAYOUTS_BY_ID[id(schema)] = (schema, layout)  # holding the schema keeps its id from being reused


# ============================================================================================ encode


def _valid_mask(arr: pa.Array) -> np.ndarray | None:
    if arr.null_count == 0:
        return None
    return arr.is_valid().to_numpy(zero_copy_only=False)


def _fixed_bytes(arr: pa.Array, col: _ColumnLayout, valid: np.ndarray | None) -> np.ndarray:
    """(n, width) uint8 slot bytes of a fixed-width column (zeros where null)."""
    n = len(arr)
    w = col.width
    if n == 0:
        return np.zeros((0, w), dtype=np.uint8)
    if pa.types.is_boolean(arr.type):
        values = arr.fill_null(False).to_numpy(zero_copy_only=False).astype(np.uint8)
        return values.reshape(n, 1)
    buf = arr.buffers()[1]
    aw = col.arrow_width
    raw = np.frombuffer(buf, dtype=np.uint8, count=n * aw, offset=arr.offset * aw).reshape(n, aw)
    out = raw[:, :w] if w != aw else raw  # decimal(p <= 18): the low 8 bytes of the int128 (LE)
    if valid is not None:
        out = out * valid[:, None].astype(np.uint8)
    return out


def _var_parts(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(lengths int64, content uint8) of a string/binary column; null values have length 0."""
    if len(arr) == 0:  # writers may send no offsets buffer at all for an empty array (Arrow Java does)
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint8)
    if arr.null_count:
        arr = arr.fill_null("" if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type) else b"")
    large = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    n = len(arr)
    bufs = arr.buffers()
    offsets = np.frombuffer(
        bufs[1], dtype=np.int64 if large else np.int32, count=n + 1, offset=arr.offset * (8 if large else 4)
    )
    start, end = int(offsets[0]), int(offsets[-1])
    data = (
        np.frombuffer(bufs[2], dtype=np.uint8, count=end - start, offset=start)
        if bufs[2] is not None and end > start
        else np.zeros(0, np.uint8)
    )
    return np.diff(offsets).astype(np.int64), data


def encode_rows(batch: pa.RecordBatch, schema_id: int) -> list[bytes]:
    """The value bytes of every row of ``batch`` (the batch's schema is the value schema)."""
    if batch.num_rows == 0:
        return []
    blob, offsets = encode_rows_buffer(batch, schema_id)
    data = blob.tobytes()
    bounds = offsets.tolist()
    return [data[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def encode_rows_buffer(batch: pa.RecordBatch, schema_id: int) -> tuple[np.ndarray, np.ndarray]:
    """Every row of ``batch`` encoded into one uint8 buffer, and the ``num_rows + 1`` row offsets in it."""
    n = batch.num_rows
    layout = layout_of(batch.schema)
    if n == 0:
        return np.zeros(0, dtype=np.uint8), np.zeros(1, dtype=np.int64)
    head = np.zeros((n, layout.fixed_end), dtype=np.uint8)
    head[:, 0:2] = np.frombuffer(np.int16(schema_id).astype("<i2").tobytes(), dtype=np.uint8)
    nulls = np.zeros((n, layout.bitmap_bytes * 8), dtype=bool)
    var_cols: list[tuple[np.ndarray, np.ndarray]] = []
    for col in layout.columns:
        arr = batch.column(col.index)
        valid = _valid_mask(arr)
        if valid is not None:
            nulls[:, col.index] = ~valid
        if col.width is None:
            var_cols.append(encode_values(arr) if is_nested(arr.type) else _var_parts(arr))
        else:
            head[:, col.offset : col.offset + col.width] = _fixed_bytes(arr, col, valid)
    head[:, SCHEMA_ID_BYTES : SCHEMA_ID_BYTES + layout.bitmap_bytes] = np.packbits(
        nulls, axis=1, bitorder="little"
    )
    if not var_cols:
        return head.reshape(-1), np.arange(n + 1, dtype=np.int64) * layout.fixed_end
    row_len = np.full(n, layout.fixed_end, dtype=np.int64)
    for lengths, _ in var_cols:
        row_len += 4 + lengths
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(row_len, out=offsets[1:])
    out = np.zeros(int(offsets[-1]), dtype=np.uint8)
    starts = offsets[:-1]
    out[starts[:, None] + np.arange(layout.fixed_end)] = head
    cursor = starts + layout.fixed_end
    four = np.arange(4)
    for lengths, content in var_cols:
        out[cursor[:, None] + four] = lengths.astype("<u4").view(np.uint8).reshape(n, 4)
        cursor = cursor + 4
        if len(content):
            src_starts = np.zeros(n, dtype=np.int64)
            np.cumsum(lengths[:-1], out=src_starts[1:])
            dest = np.repeat(cursor - src_starts, lengths) + np.arange(len(content))
            out[dest] = content
        cursor = cursor + lengths
    return out, offsets


# ============================================================================================ decode


def schema_ids_of(values: Sequence[bytes]) -> np.ndarray:
    """The schema id of each value (int16), gathered from the values joined once (no per-value Python work)."""
    if not values:
        return np.zeros(0, dtype=np.int16)
    lengths = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
    if int(lengths.min()) < SCHEMA_ID_BYTES:
        raise FlussError("a stored KV value is shorter than its schema id", ErrorCode.KV_STORAGE_EXCEPTION)
    data = np.frombuffer(b"".join(values), dtype=np.uint8)
    starts = np.zeros(len(values), dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    return (data[starts].astype(np.uint16) | (data[starts + 1].astype(np.uint16) << 8)).view(np.int16)


def _validity_buffer(valid: np.ndarray | None) -> tuple[pa.Buffer | None, int]:
    if valid is None:  # no value of the batch is null
        return None, 0
    null_count = int(len(valid) - np.count_nonzero(valid))
    if null_count == 0:
        return None, 0
    return pa.py_buffer(np.packbits(valid, bitorder="little")), null_count


def _gather(data: np.ndarray, starts: np.ndarray, width: int) -> np.ndarray:
    return data[starts[:, None] + np.arange(width)]


def _decode_fixed(col: _ColumnLayout, slot: np.ndarray, valid: np.ndarray | None) -> pa.Array:
    n = len(slot)
    t = col.arrow_type
    validity, null_count = _validity_buffer(valid)
    if pa.types.is_boolean(t):
        bits = np.packbits(slot[:, 0].astype(bool), bitorder="little")
        return pa.Array.from_buffers(t, n, [validity, pa.py_buffer(bits)], null_count)
    if col.width != col.arrow_width:  # decimal(p <= 18): sign-extend int64 to int128
        low = np.ascontiguousarray(slot).view("<i8").reshape(n)
        data = np.empty((n, 2), dtype="<i8")
        data[:, 0] = low
        data[:, 1] = low >> 63
    else:
        data = np.ascontiguousarray(slot)
    return pa.Array.from_buffers(t, n, [validity, pa.py_buffer(data)], null_count)


def _decode_var(
    col: _ColumnLayout, data: np.ndarray, cursor: np.ndarray, valid: np.ndarray | None
) -> tuple[pa.Array, np.ndarray]:
    n = len(cursor)
    lengths = np.ascontiguousarray(_gather(data, cursor, 4)).view("<u4").reshape(n).astype(np.int64)
    cursor = cursor + 4
    if is_nested(col.arrow_type):
        return decode_values(col.arrow_type, data, cursor, lengths, valid), cursor + lengths
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    total = int(offsets[-1])
    if total > len(data):  # the values of one column are disjoint ranges of the buffer
        raise FlussError(f"stored values claim {total} bytes of a {len(data)}-byte buffer",
                         ErrorCode.CORRUPT_RECORD_EXCEPTION)
    if total == 0:
        content = np.zeros(0, dtype=np.uint8)
    elif (lengths == lengths[0]).all():  # equally long values: one (n, length) gather
        content = _gather(data, cursor, int(lengths[0])).reshape(total)
    else:
        content = data[np.repeat(cursor - offsets[:-1], lengths) + np.arange(total)]
    t = col.arrow_type
    large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
    validity, null_count = _validity_buffer(valid)
    arr = pa.Array.from_buffers(
        t,
        n,
        [validity, pa.py_buffer(offsets if large else offsets.astype(np.int32)), pa.py_buffer(content)],
        null_count,
    )
    return arr, cursor + lengths


def decode_rows(
    values: Sequence[bytes | None], schema: pa.Schema, schema_id: int | None = None
) -> pa.RecordBatch:
    """The rows of encoded values as a batch of ``schema``; a ``None`` value gives an all-null row.

    Raises:
        FlussError: KV_STORAGE_EXCEPTION if ``schema_id`` is given and a value carries another one, or a
            value is shorter than the schema's fixed section.
    """
    if None in values:
        present_idx: list[int] | None = [i for i, v in enumerate(values) if v is not None]
        present = [values[i] for i in present_idx]
    else:
        present_idx = None
        present = values if isinstance(values, list) else list(values)
    n = len(present)
    if n == 0:
        if not values:
            return pa.RecordBatch.from_arrays([pa.nulls(0, f.type) for f in schema], schema=schema)
        return _null_rows(schema, len(values))
    lengths = np.fromiter(map(len, present), dtype=np.int64, count=n)
    data = np.frombuffer(b"".join(present), dtype=np.uint8)
    starts = np.zeros(n, dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    batch = decode_rows_buffer(data, starts, lengths, schema, schema_id)
    if present_idx is None:
        return batch
    positions = np.full(len(values), -1, dtype=np.int64)
    positions[present_idx] = np.arange(n)
    indices = pa.array(positions, mask=positions < 0)
    return batch.take(indices)


def decode_rows_buffer(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, schema: pa.Schema,
                       schema_id: int | None = None) -> pa.RecordBatch:
    """The rows stored at ``starts`` (of ``lengths`` bytes) in the uint8 buffer ``data``, as a batch of ``schema``.

    The heads of all values (schema id, null bitmap, fixed section) are gathered in one (rows, head) matrix
    (a view when the values are equally long and back to back); null handling is skipped when no value has a
    null. Errors as :func:`decode_rows`.
    """
    layout = layout_of(schema)
    n = len(starts)
    if n == 0:
        return pa.RecordBatch.from_arrays([pa.nulls(0, f.type) for f in schema], schema=schema)
    fixed_end = layout.fixed_end
    shortest, longest = int(lengths.min()), int(lengths.max())
    if shortest < fixed_end:
        raise FlussError(
            f"a stored row has {shortest} bytes, fewer than the {fixed_end} of the schema's fixed section",
            ErrorCode.KV_STORAGE_EXCEPTION,
        )
    contiguous = shortest == longest and int(starts[0]) == 0 and len(data) == n * longest
    head = data.reshape(n, longest)[:, :fixed_end] if contiguous else _gather(data, starts, fixed_end)
    if schema_id is not None:
        ids = np.ascontiguousarray(head[:, :SCHEMA_ID_BYTES]).view("<i2").reshape(n)
        if (ids != schema_id).any():
            bad = int(ids[np.flatnonzero(ids != schema_id)[0]])
            raise FlussError(
                f"a stored row has schema id {bad}, expected {schema_id} (schema evolution of stored "
                "values is not supported yet)",
                ErrorCode.KV_STORAGE_EXCEPTION,
            )
    bitmap = head[:, SCHEMA_ID_BYTES : SCHEMA_ID_BYTES + layout.bitmap_bytes]
    valid = ~np.unpackbits(bitmap, axis=1, bitorder="little")[:, : len(schema)].astype(bool) if bitmap.any() else None
    arrays: list[pa.Array | None] = [None] * len(schema)
    for col in layout.columns:
        if col.width is not None:
            arrays[col.index] = _decode_fixed(
                col, head[:, col.offset : col.offset + col.width], None if valid is None else valid[:, col.index]
            )
    cursor = starts + fixed_end
    for col in layout.var:
        arrays[col.index], cursor = _decode_var(col, data, cursor, None if valid is None else valid[:, col.index])
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def decode_evolved(values: Sequence[bytes | None], history: SchemaHistory, codec=None) -> pa.RecordBatch:  # noqa: ANN001
    """Values written with any schema id of ``history`` as rows of its latest schema: a value of an older id
    holds the first ``n_k`` columns, the later ones come back null (``fluss.record.schema_evolution``).
    ``codec``: the KV format's row module (``fluss.record.log_format.row_codec_of``; default INDEXED). Both
    formats start a value with its schema id.

    Raises:
        FlussError: KV_STORAGE_EXCEPTION naming the id when a value has a schema id the table never had.
    """
    decode = codec.decode_rows if codec is not None else decode_rows
    current = history.current_id
    if current == 1:  # a table never altered: every value has schema id 1 (the common case costs nothing)
        return decode(values, history.schema)
    present = [v for v in values if v is not None]
    ids = schema_ids_of(present)
    if not len(ids) or (ids == current).all():
        return decode(values, history.schema)
    distinct = [int(i) for i in np.unique(ids)]
    for sid in distinct:
        if not history.knows(sid):
            raise FlussError(f"a stored KV value has schema id {sid}, but {history.where} has schema ids 1 to "
                             f"{current}", ErrorCode.KV_STORAGE_EXCEPTION)
    parts, order = [], []
    for sid in distinct:
        where = np.flatnonzero(ids == sid)
        parts.append(history.pad(decode([present[i] for i in where], history.schema_of(sid))))
        order.append(where)
    rows = pa.Table.from_batches(parts, history.schema).combine_chunks()
    position_of = np.empty(len(present), dtype=np.int64)
    position_of[np.concatenate(order)] = np.arange(len(present))
    if len(present) == len(values):
        take = pa.array(position_of)
    else:  # None values: all-null rows
        positions = np.full(len(values), -1, dtype=np.int64)
        positions[[i for i, v in enumerate(values) if v is not None]] = position_of
        take = pa.array(positions, mask=positions < 0)
    out = rows.take(take)
    return out.to_batches()[0] if out.num_rows else _null_rows(history.schema, 0)


def _null_rows(schema: pa.Schema, n: int) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.nulls(n, f.type) for f in schema], schema=schema)


from fluss.record.nested_codec import decode_values, encode_values, is_nested  # noqa: E402  (uses the above)

__all__ = ["RowLayout", "decode_evolved", "decode_rows", "decode_rows_buffer", "encode_rows", "encode_rows_buffer",
           "layout_of", "schema_ids_of"]
