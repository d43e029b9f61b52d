"""A few stored rows (INDEXED or COMPACTED row layout) straight to Python values, without Arrow.

Point lookups answer with a handful of rows, often one. The column-wise decoders of :mod:`fluss.record.compacted_rows`
and :mod:`fluss.record.indexed_rows` and the Arrow-to-Python conversion after them cost a fixed few dozen numpy and
Arrow calls per column whatever the row count, so for one row they cost ~50x what reading its bytes one field after
the other does. ``row_decoder`` gives that per-field reader for schemas of plain columns: BOOLEAN, TINYINT, SMALLINT,
INT, BIGINT, FLOAT, DOUBLE, STRING and BYTES; for a schema with any other column it returns None and the caller
takes the Arrow path. A row gives the same Python values as ``fluss.row_convert.batch_to_pylist`` of the Arrow
decode (``tests/record/test_row_scalar.py`` checks both paths agree). Larger answers keep the vectorised decoders.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import pyarrow as pa

from fluss.errors import ErrorCode, FlussError
from fluss.record.indexed_rows import SCHEMA_ID_BYTES, layout_of

#: Row counts up to which the per-field decode is the cheaper one.
SCALAR_ROWS_MAX = 16

_BOOL, _I8, _I16, _I32, _I64, _F32, _F64, _STR, _BIN = range(9)
_FIXED = {_BOOL: (1, None), _I8: (1, struct.Struct("<b")), _I16: (2, struct.Struct("<h")),
          _I32: (4, struct.Struct("<i")), _I64: (8, struct.Struct("<q")), _F32: (4, struct.Struct("<f")),
          _F64: (8, struct.Struct("<d"))}
_U32 = struct.Struct("<I")

RowDecoder = Callable[[bytes | memoryview], list]


def _kind(t: pa.DataType) -> int | None:
    types = pa.types
    checks = ((types.is_boolean, _BOOL), (types.is_int8, _I8), (types.is_int16, _I16), (types.is_int32, _I32),
              (types.is_int64, _I64), (types.is_float32, _F32), (types.is_float64, _F64),
              (types.is_string, _STR), (types.is_large_string, _STR), (types.is_binary, _BIN),
              (types.is_large_binary, _BIN))
    return next((kind for check, kind in checks if check(t)), None)


def row_decoder(schema: pa.Schema, fmt: str) -> RowDecoder | None:
    """A function of one stored row of ``schema`` (row layout ``fmt``: INDEXED or COMPACTED) returning its values
    in column order; None when ``schema`` has a column it does not handle. A row it cannot read raises
    ``FlussError(CORRUPT_RECORD_EXCEPTION)``."""
    kinds = [_kind(f.type) for f in schema]
    if None in kinds:
        return None
    decode = _compacted(kinds) if fmt == "COMPACTED" else _indexed(schema, kinds) if fmt == "INDEXED" else None
    if decode is None:
        return None

    def checked(row: bytes | memoryview) -> list:
        try:
            return decode(row)
        except (IndexError, struct.error, UnicodeDecodeError, ValueError) as e:
            raise FlussError(f"a {fmt} row of {len(row)} bytes cannot be read as {len(kinds)} columns: {e}",
                             ErrorCode.CORRUPT_RECORD_EXCEPTION) from None

    return checked


def _varint(row: bytes | memoryview, pos: int) -> tuple[int, int]:
    """(the unsigned LEB128 value at ``pos``, the position after it)."""
    value = shift = 0
    while True:
        b = row[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
        if shift >= 70:
            raise ValueError("varint longer than 10 bytes")


def _compacted(kinds: list[int]) -> RowDecoder:
    """COMPACTED (:mod:`fluss.record.compacted_rows`): the non-null values one after the other."""
    start = SCHEMA_ID_BYTES + (len(kinds) + 7) // 8
    float32, float64 = _FIXED[_F32][1].unpack_from, _FIXED[_F64][1].unpack_from
    int8, int16 = _FIXED[_I8][1].unpack_from, _FIXED[_I16][1].unpack_from

    def decode(row: bytes | memoryview) -> list:
        nulls = int.from_bytes(row[SCHEMA_ID_BYTES:start], "little")
        if start > len(row):
            raise ValueError("row shorter than its null bitmap")
        pos = start
        out = []
        for i, kind in enumerate(kinds):
            if nulls >> i & 1:
                out.append(None)
            elif kind is _I32 or kind is _I64:
                u, pos = _varint(row, pos)
                out.append((u >> 1) ^ -(u & 1))
            elif kind is _STR or kind is _BIN:
                length, pos = _varint(row, pos)
                end = pos + length
                if end > len(row):
                    raise ValueError(f"a value of {length} bytes at byte {pos}")
                value = bytes(row[pos:end])
                out.append(value.decode() if kind is _STR else value)
                pos = end
            elif kind is _F64:
                out.append(float64(row, pos)[0])
                pos += 8
            elif kind is _F32:
                out.append(float32(row, pos)[0])
                pos += 4
            elif kind is _BOOL:
                out.append(row[pos] != 0)
                pos += 1
            elif kind is _I8:
                out.append(int8(row, pos)[0])
                pos += 1
            else:  # _I16
                out.append(int16(row, pos)[0])
                pos += 2
        return out

    return decode


def _indexed(schema: pa.Schema, kinds: list[int]) -> RowDecoder:
    """INDEXED (:mod:`fluss.record.indexed_rows`): fixed slots at known offsets, then u32-length values."""
    layout = layout_of(schema)
    start = SCHEMA_ID_BYTES
    bitmap_end = start + layout.bitmap_bytes
    fixed_end = layout.fixed_end
    plan = [(c.index, kinds[c.index], c.offset) for c in layout.columns]  # fixed first, in order, then var
    fixed = [(i, k, off) for i, k, off in plan if k not in (_STR, _BIN)]
    var = [(i, k) for i, k, _ in plan if k in (_STR, _BIN)]
    n = len(kinds)

    def decode(row: bytes | memoryview) -> list:
        if len(row) < fixed_end:
            raise ValueError(f"row shorter than its fixed section ({fixed_end} bytes)")
        nulls = int.from_bytes(row[start:bitmap_end], "little")
        out: list = [None] * n
        for i, kind, off in fixed:
            if not nulls >> i & 1:
                out[i] = row[off] != 0 if kind is _BOOL else _FIXED[kind][1].unpack_from(row, off)[0]
        pos = fixed_end
        for i, kind in var:
            length = _U32.unpack_from(row, pos)[0]
            pos += 4
            end = pos + length
            if end > len(row):
                raise ValueError(f"a value of {length} bytes at byte {pos}")
            if not nulls >> i & 1:
                value = bytes(row[pos:end])
                out[i] = value.decode() if kind is _STR else value
            pos = end
        return out

    return decode


def body_rows(body: memoryview, count: int) -> list[memoryview]:
    """The ``count`` rows of a row-format log batch body (u32 lengths, then the rows; ``fluss.record.log_batch``)."""
    if len(body) < 4 * count:
        raise FlussError(f"a row body of {len(body)} bytes cannot hold {count} row lengths",
                         ErrorCode.CORRUPT_RECORD_EXCEPTION)
    lengths = struct.unpack_from(f"<{count}I", body)
    pos = 4 * count
    rows = []
    for length in lengths:
        rows.append(body[pos:pos + length])
        pos += length
    if pos > len(body):
        raise FlussError(f"rows of {pos - 4 * count} bytes do not fit a body of {len(body) - 4 * count}",
                         ErrorCode.CORRUPT_RECORD_EXCEPTION)
    return rows


__all__ = ["SCALAR_ROWS_MAX", "body_rows", "row_decoder"]
