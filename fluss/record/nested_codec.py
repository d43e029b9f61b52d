"""The KV value encoding of ARRAY, MAP and ROW values (a nested column is a variable-width field of the row
codec, :mod:`fluss.record.indexed_rows`, whose bytes are described here).

Every nested value is one self-contained byte string. Elements, keys, values and fields are *slots*: a
fixed-width type (see the row codec: BOOLEAN 1 byte, INT 4, BIGINT/TIMESTAMP 8, DECIMAL 8 or 16, BINARY(n) n...)
takes its width, zeros when null; any other type (CHAR/STRING/BYTES, or a nested type) is variable::

    ARRAY   u32 count || null bitmap of the elements || section(elements)
    MAP     u32 count || null bitmap of the values   || section(keys) || section(values)   (keys are never null)
    ROW     null bitmap of the fields || the fixed slots in field order || for each variable field in field
            order: u32 byte length || its bytes                       (the row codec's layout, without schema id)

    section(fixed type of width w)   count * w bytes
    section(variable type)           count * u32 byte lengths || the bytes of each in order (length 0 if null)

A null bitmap has ceil(n / 8) bytes, bit i (LSB first) set when item i is null. All integers are little-endian.
Strings are UTF-8; a nested value inside a nested value is its own encoding.

Both directions are vectorised over all values of a column at once, one nesting level at a time: the items of a
level become one flat array (Arrow's child array when encoding; gathered slots, length tables and byte
ranges when decoding), encoded or decoded by the same functions, and placed with cumulative-sum scatters and
gathers. No Python runs per value or per element.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from fluss.errors import ErrorCode, FlussError
from fluss.record.indexed_rows import _ColumnLayout, _decode_fixed, _fixed_bytes, _slot, _var_parts

_FOUR = np.arange(4)


def is_nested(t: pa.DataType) -> bool:
    types = pa.types
    return types.is_list(t) or types.is_large_list(t) or types.is_map(t) or types.is_struct(t)


def _width(t: pa.DataType) -> int | None:
    return None if is_nested(t) else _slot(t)[0]


def _layout(t: pa.DataType) -> _ColumnLayout:
    width, dtype, arrow_width = _slot(t)
    return _ColumnLayout(0, t, width, 0, dtype, arrow_width)


def _bitmap_bytes(counts: np.ndarray) -> np.ndarray:
    return (counts + 7) // 8


def _starts(lengths: np.ndarray) -> np.ndarray:
    out = np.zeros(len(lengths), dtype=np.int64)
    if len(lengths) > 1:
        np.cumsum(lengths[:-1], out=out[1:])
    return out


def _u32_bytes(values: np.ndarray) -> np.ndarray:
    return values.astype("<u4").view(np.uint8).reshape(len(values), 4)


def _u32_at(data: np.ndarray, pos: np.ndarray) -> np.ndarray:
    if not len(pos):
        return np.zeros(0, dtype=np.int64)
    return np.ascontiguousarray(data[pos[:, None] + _FOUR]).view("<u4").reshape(len(pos)).astype(np.int64)


def _scatter_bytes(out: np.ndarray, dest_starts: np.ndarray, lengths: np.ndarray, content: np.ndarray) -> None:
    """Writes ``content`` (the concatenation of pieces of ``lengths``) to ``out`` at ``dest_starts``."""
    total = len(content)
    if not total:
        return
    src_starts = _starts(lengths)
    out[np.repeat(dest_starts - src_starts, lengths) + np.arange(total)] = content


def _gather_bytes(data: np.ndarray, pos: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    total = int(lengths.sum()) if len(lengths) else 0
    if total > len(data) or (len(lengths) and int(lengths.min()) < 0):  # disjoint ranges of one buffer
        raise FlussError(f"stored nested values claim {total} bytes of a {len(data)}-byte buffer",
                         ErrorCode.CORRUPT_RECORD_EXCEPTION)
    if not total:
        return np.zeros(0, dtype=np.uint8)
    return data[np.repeat(pos - _starts(lengths), lengths) + np.arange(total)]


# ================================================================================================ encode


def encode_values(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(byte length of each value, concatenated bytes) of a column's values; a null value has length 0."""
    t = arr.type
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _encode_list(arr, is_map=False)
    if pa.types.is_map(t):
        return _encode_list(arr, is_map=True)
    if pa.types.is_struct(t):
        return _encode_struct(arr)
    width = _width(t)
    if width is None:
        return _var_parts(arr)
    valid = arr.is_valid().to_numpy(zero_copy_only=False) if arr.null_count else None
    slots = _fixed_bytes(arr, _layout(t), valid)
    return np.full(len(arr), width, dtype=np.int64), np.ascontiguousarray(slots).reshape(-1)


def _list_offsets(arr: pa.Array) -> tuple[np.ndarray, pa.Array]:
    from fluss.nested_values import _list_parts

    offsets, values = _list_parts(arr)
    return offsets.astype(np.int64), values


def _section(child: pa.Array) -> tuple[np.ndarray, np.ndarray, bool]:
    """(per-item section bytes, content, fixed) of the items of a level: a fixed type's slots (content already
    laid out per item), or a variable type's lengths (the section also holds a u32 per item)."""
    lengths, content = encode_values(child)
    return lengths, content, _width(child.type) is not None


def _encode_list(arr: pa.Array, is_map: bool) -> tuple[np.ndarray, np.ndarray]:
    n = len(arr)
    offsets, values = _list_offsets(arr)
    counts = np.diff(offsets)
    valid = arr.is_valid().to_numpy(zero_copy_only=False) if arr.null_count else np.ones(n, dtype=bool)
    parts = [values.field(0), values.field(1)] if is_map else [values]
    sections = [_section(p) for p in parts]
    flagged = parts[-1]  # the items whose nulls the bitmap records (elements, or map values)
    bitmap = _bitmap_bytes(counts)
    m = int(offsets[-1])
    parent = np.repeat(np.arange(n), counts)
    local = np.arange(m) - np.repeat(offsets[:-1], counts)
    per_value = []  # bytes of each section, per value
    for lengths, _, fixed in sections:
        item_bytes = np.zeros(n, dtype=np.int64)
        if m:
            np.add.at(item_bytes, parent, lengths + (0 if fixed else 4))
        per_value.append(item_bytes)
    total = np.where(valid, 4 + bitmap + sum(per_value), 0)
    out = np.zeros(int(total.sum()), dtype=np.uint8)
    starts = _starts(total)
    vs = starts[valid]
    out[vs[:, None] + _FOUR] = _u32_bytes(counts[valid])
    if flagged.null_count:
        nulls = np.flatnonzero(flagged.is_null().to_numpy(zero_copy_only=False))
        p, k = parent[nulls], local[nulls]
        np.bitwise_or.at(out, starts[p] + 4 + k // 8, (1 << (k % 8)).astype(np.uint8))
    cursor = starts + 4 + bitmap
    for (lengths, content, fixed), section_bytes in zip(sections, per_value, strict=True):
        if m:
            if fixed:
                _scatter_bytes(out, cursor[valid], section_bytes[valid], content)
            else:
                table = cursor[parent] + 4 * local
                out[table[:, None] + _FOUR] = _u32_bytes(lengths)
                payload_start = cursor + 4 * counts
                _scatter_bytes(out, payload_start[valid], section_bytes[valid] - 4 * counts[valid], content)
        cursor = cursor + section_bytes
    return total, out


def _encode_struct(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    n = len(arr)
    t = arr.type
    nf = t.num_fields
    valid = arr.is_valid().to_numpy(zero_copy_only=False) if arr.null_count else np.ones(n, dtype=bool)
    bitmap_bytes = (nf + 7) // 8
    fields = [arr.field(i) for i in range(nf)]
    encoded = [encode_values(f) for f in fields]
    fixed = [_width(f.type) is not None for f in fields]
    fixed_bytes = sum(int(_width(f.type)) for f, is_fixed in zip(fields, fixed, strict=True) if is_fixed)
    var_bytes = np.zeros(n, dtype=np.int64)
    for i in range(nf):
        if not fixed[i]:
            var_bytes += 4 + encoded[i][0]
    total = np.where(valid, bitmap_bytes + fixed_bytes + var_bytes, 0)
    out = np.zeros(int(total.sum()), dtype=np.uint8)
    starts = _starts(total)
    vs = starts[valid]
    nulls = np.zeros((n, bitmap_bytes * 8), dtype=bool)
    for i, f in enumerate(fields):
        if f.null_count:
            nulls[:, i] = f.is_null().to_numpy(zero_copy_only=False)
    if nulls.any():
        out[vs[:, None] + np.arange(bitmap_bytes)] = np.packbits(nulls, axis=1, bitorder="little")[valid]
    cursor = starts + bitmap_bytes
    for i in range(nf):
        if fixed[i]:
            lengths, content = encoded[i]
            w = int(_width(fields[i].type))  # type: ignore[arg-type]
            if n:
                slots = content.reshape(n, w)[valid]
                out[cursor[valid][:, None] + np.arange(w)] = slots
            cursor = cursor + w
    for i in range(nf):
        if not fixed[i]:
            lengths, content = encoded[i]
            out[cursor[valid][:, None] + _FOUR] = _u32_bytes(lengths[valid])
            cursor = cursor + 4
            keep = np.repeat(valid, lengths)
            _scatter_bytes(out, cursor[valid], lengths[valid], content[keep] if not keep.all() else content)
            cursor = cursor + lengths
    return total, out


# ================================================================================================ decode


def decode_values(t: pa.DataType, data: np.ndarray, pos: np.ndarray, lengths: np.ndarray,
                  valid: np.ndarray | None) -> pa.Array:
    """An array of type ``t`` from values at ``pos`` (of ``lengths`` bytes) in ``data``; ``valid`` False = null."""
    n = len(pos)
    if valid is not None and not valid.all():
        present = np.flatnonzero(valid)
        inner = decode_values(t, data, pos[present], lengths[present], None)
        index = np.full(n, -1, dtype=np.int64)
        index[present] = np.arange(len(present))
        return inner.take(pa.array(index, mask=index < 0))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _decode_list(t, data, pos, is_map=False)
    if pa.types.is_map(t):
        return _decode_list(t, data, pos, is_map=True)
    if pa.types.is_struct(t):
        return _decode_struct(t, data, pos)
    width = _width(t)
    if width is None:
        content = _gather_bytes(data, pos, lengths)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
        return pa.Array.from_buffers(t, n, [None, pa.py_buffer(offsets if large else offsets.astype(np.int32)),
                                            pa.py_buffer(content)])
    slots = data[pos[:, None] + np.arange(width)] if n else np.zeros((0, width), dtype=np.uint8)
    return _decode_fixed(_layout(t), slots, None)


def _item_validity(data: np.ndarray, bitmap_pos: np.ndarray, parent: np.ndarray, local: np.ndarray) -> np.ndarray:
    if not len(parent):
        return np.ones(0, dtype=bool)
    bits = data[bitmap_pos[parent] + local // 8] >> (local % 8).astype(np.uint8) & 1
    return bits == 0


def _decode_section(t: pa.DataType, data: np.ndarray, start: np.ndarray, counts: np.ndarray, parent: np.ndarray,
                    local: np.ndarray, valid: np.ndarray | None) -> tuple[pa.Array, np.ndarray]:
    """The items of one section per value (starting at ``start``) and the bytes each value's section takes."""
    width = _width(t)
    m = len(parent)
    if width is not None:
        item_pos = start[parent] + local * width
        sizes = counts * width
        return decode_values(t, data, item_pos, np.full(m, width, dtype=np.int64), valid), sizes
    item_lengths = _u32_at(data, start[parent] + 4 * local)
    section_payload = np.zeros(len(counts), dtype=np.int64)
    if m:
        np.add.at(section_payload, parent, item_lengths)
    payload_start = start + 4 * counts
    item_pos = np.repeat(payload_start, counts) + (_starts(item_lengths) - np.repeat(_starts(section_payload), counts))
    return decode_values(t, data, item_pos, item_lengths, valid), 4 * counts + section_payload


def _decode_list(t: pa.DataType, data: np.ndarray, pos: np.ndarray, is_map: bool) -> pa.Array:
    n = len(pos)
    counts = _u32_at(data, pos)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    m = int(offsets[-1])
    if m > np.iinfo(np.int32).max:
        raise FlussError("a stored nested value has more than 2^31 elements", ErrorCode.KV_STORAGE_EXCEPTION)
    if m > len(data):  # every element takes at least one byte: a hostile count must not size the allocations
        raise FlussError(f"stored nested values claim {m} elements in a {len(data)}-byte buffer",
                         ErrorCode.CORRUPT_RECORD_EXCEPTION)
    parent = np.repeat(np.arange(n), counts)
    local = np.arange(m) - np.repeat(offsets[:-1], counts)
    flagged = _item_validity(data, pos + 4, parent, local)
    start = pos + 4 + _bitmap_bytes(counts)
    buffers = [None, pa.py_buffer(offsets.astype(np.int32))]
    if is_map:
        keys, key_bytes = _decode_section(t.key_type, data, start, counts, parent, local, None)
        items, _ = _decode_section(t.item_type, data, start + key_bytes, counts, parent, local, flagged)
        entries = pa.StructArray.from_arrays([keys, items], fields=[t.key_field, t.item_field])
        return pa.Array.from_buffers(t, n, buffers, children=[entries])
    child, _ = _decode_section(t.value_type, data, start, counts, parent, local, flagged)
    if pa.types.is_large_list(t):
        buffers[1] = pa.py_buffer(offsets)
    return pa.Array.from_buffers(t, n, buffers, children=[child])


def _decode_struct(t: pa.DataType, data: np.ndarray, pos: np.ndarray) -> pa.Array:
    n = len(pos)
    nf = t.num_fields
    bitmap_bytes = (nf + 7) // 8
    raw = data[pos[:, None] + np.arange(bitmap_bytes)] if n else np.zeros((0, bitmap_bytes), dtype=np.uint8)
    field_valid = ~np.unpackbits(raw, axis=1, bitorder="little")[:, :nf].astype(bool) if n else \
        np.ones((0, nf), dtype=bool)
    cursor = pos + bitmap_bytes
    children: list[pa.Array | None] = [None] * nf
    for i in range(nf):
        f = t.field(i)
        w = _width(f.type)
        if w is not None:
            children[i] = decode_values(f.type, data, cursor, np.full(n, w, dtype=np.int64), field_valid[:, i])
            cursor = cursor + w
    for i in range(nf):
        f = t.field(i)
        if _width(f.type) is None:
            lengths = _u32_at(data, cursor)
            children[i] = decode_values(f.type, data, cursor + 4, lengths, field_valid[:, i])
            cursor = cursor + 4 + lengths
    return pa.StructArray.from_arrays(children, fields=list(t))


__all__ = ["decode_values", "encode_values", "is_nested"]
