"""The key encoding: how the values of key columns become the bytes that are hashed into a bucket, stored as
RocksDB keys, and looked up. This docstring is the specification; ``docs/keys-and-buckets.md`` explains it
and ``docs/key-test-vectors.json`` pins it (the Java connector checks the same vectors).

A key of columns (k1, ..., kn) encodes as the concatenation of one *field* per column, in key order::

    key = field(k1) || field(k2) || ... || field(kn)

so the encoding of a prefix (k1..km) is a byte prefix of the encoding of (k1..kn): prefix lookups and
RocksDB prefix scans on a bucket-key prefix work on raw bytes. Each field is self-delimiting and starts with
a marker byte::

    null      -> 0x00                      (nothing follows)
    not null  -> 0x01 || value bytes       (layout by type below)

The marker is written for every column, nullable or not, so a key's bytes never depend on nullability.
Within one column type, unsigned lexicographic order of the field bytes equals the order of the values
(null first), so the order of whole keys is the column-by-column order of their values.

Value bytes by type (all multi-byte integers big-endian; "flip" = XOR the top bit of the first byte, which
turns two's complement into an order-preserving unsigned form)::

    BOOLEAN           1 byte: 0x00 false, 0x01 true
    TINYINT           1 byte  two's complement, flip
    SMALLINT          2 bytes two's complement, flip
    INT, DATE         4 bytes two's complement, flip          (DATE = days since 1970-01-01)
    BIGINT            8 bytes two's complement, flip
    FLOAT             4 bytes: IEEE-754 bits b; if the sign bit is set, b = ~b, else b |= 0x80000000
    DOUBLE            8 bytes, same transform on the 64-bit pattern
                      (-0.0 is written as +0.0; every NaN as the canonical NaN 0x7fc00000 /
                      0x7ff8000000000000 first, i.e. Java's floatToIntBits / doubleToLongBits)
    DECIMAL(p, s)     the unscaled integer (value * 10^s) in two's complement, flip;
                      8 bytes if p <= 18, else 16 bytes
    TIME(p)           8 bytes: nanoseconds of the day as a signed 64-bit integer, flip
                      (the value floored to precision p first)
    TIMESTAMP(p)      8 bytes: the value in the Arrow unit of precision p (p = 0: seconds, 1-3:
    TIMESTAMP_LTZ(p)  milliseconds, 4-6: microseconds, 7-9: nanoseconds) since 1970-01-01T00:00:00
                      (UTC for LTZ; floored to precision p), signed 64-bit, flip
    BINARY(n)         the n bytes as they are
    CHAR(n), STRING   UTF-8 bytes, escaped, then terminated: every 0x00 byte becomes 0x00 0xFF and the
    BYTES             field ends with 0x00 0x01 (so "a" < "a\\0" < "ab" bytewise, like the values)

Keys are built from values of the table schema's types (see :mod:`fluss.types`): :func:`encode_key` is the
scalar reference over Python values; :func:`encode_keys` / :func:`encode_keys_array` /
:func:`encode_key_buffers` are the vectorised forms over an Arrow batch already conformed to the table
schema (numpy over the Arrow buffers, no per-row Python).
"""

from __future__ import annotations

import datetime as _dt
import decimal
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fluss.errors import ErrorCode, FlussError
from fluss.types import (
    BIGINT,
    BINARY,
    BOOLEAN,
    BYTES,
    DATE,
    DECIMAL,
    DOUBLE,
    FLOAT,
    INT,
    SMALLINT,
    STRING_ROOTS,
    TIME,
    TIMESTAMP,
    TIMESTAMP_LTZ,
    TINYINT,
    UNIT_DIGITS,
    DataType,
    type_of_field,
)

NULL_MARKER = 0x00
VALUE_MARKER = 0x01
ESCAPED_ZERO = b"\x00\xff"
TERMINATOR = b"\x00\x01"
#: Decimals up to this precision use 8 value bytes, wider ones 16.
COMPACT_DECIMAL_PRECISION = 18

_INT_WIDTH = {TINYINT: 1, SMALLINT: 2, INT: 4, DATE: 4, BIGINT: 8}
_NANOS_PER_UNIT = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}
_EPOCH_DATE = _dt.date(1970, 1, 1)
_EPOCH = _dt.datetime(1970, 1, 1)
_EXACT = decimal.Context(prec=200, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)
_CANONICAL_NAN32 = 0x7FC00000
_CANONICAL_NAN64 = 0x7FF8000000000000


def value_width(t: DataType) -> int | None:
    """Bytes of a non-null value of this type (None for the variable-length string/bytes types)."""
    root = t.root
    if root == BOOLEAN:
        return 1
    if root in _INT_WIDTH:
        return _INT_WIDTH[root]
    if root == FLOAT:
        return 4
    if root == DOUBLE:
        return 8
    if root == DECIMAL:
        return 8 if t.precision <= COMPACT_DECIMAL_PRECISION else 16
    if root in (TIME, TIMESTAMP, TIMESTAMP_LTZ):
        return 8
    if root == BINARY:
        return t.length
    return None


# ===================================================================================== scalar reference


def _key_error(t: DataType, value: object, why: str) -> FlussError:
    return FlussError(f"cannot encode {value!r} as a {t} key value: {why}", ErrorCode.CLIENT_ERROR)


def _flip_signed(v: int, width: int, t: DataType) -> bytes:
    lo = -(1 << (8 * width - 1))
    if not lo <= v < -lo:
        raise _key_error(t, v, f"out of range for {8 * width}-bit integer")
    return (v - lo).to_bytes(width, "big")  # v + 2^(bits-1) == two's complement with the top bit flipped


def _escape(data: bytes) -> bytes:
    return data.replace(b"\x00", ESCAPED_ZERO) + TERMINATOR


def _float_bits(v: float, double: bool) -> bytes:
    if math.isnan(v):
        bits = _CANONICAL_NAN64 if double else _CANONICAL_NAN32
    else:
        if v == 0.0:
            v = 0.0
        bits = (
            struct.unpack(">Q", struct.pack(">d", v))[0]
            if double
            else struct.unpack(">I", struct.pack(">f", v))[0]
        )
    nbits = 64 if double else 32
    sign = 1 << (nbits - 1)
    bits = (~bits & ((1 << nbits) - 1)) if bits & sign else bits | sign
    return bits.to_bytes(nbits // 8, "big")


def _decimal_unscaled(v: object, t: DataType) -> int:
    if isinstance(v, bool) or not isinstance(v, decimal.Decimal | int):
        raise _key_error(t, v, "expected decimal.Decimal or int")
    d = decimal.Decimal(v)
    if not d.is_finite():
        raise _key_error(t, v, "not a finite number")
    scaled = d.scaleb(t.scale, context=_EXACT)
    unscaled = int(scaled)
    if scaled != unscaled:
        raise _key_error(t, v, f"has more than {t.scale} fractional digits")
    if abs(unscaled) >= 10**t.precision:
        raise _key_error(t, v, f"has more than {t.precision} digits")
    return unscaled


def _nanos_of_datetime(v: _dt.datetime, t: DataType) -> int:
    if t.root == TIMESTAMP_LTZ:
        if v.tzinfo is not None:
            v = v.astimezone(_dt.UTC).replace(tzinfo=None)
    elif v.tzinfo is not None:
        raise _key_error(t, v, "TIMESTAMP values must be naive datetimes")
    delta = v - _EPOCH
    micros = (delta.days * 86400 + delta.seconds) * 10**6 + delta.microseconds
    return micros * 1000 + int(getattr(v, "nanosecond", 0))


def _floor_precision(value_in_unit: int, unit: str, precision: int) -> int:
    step = 10 ** max(UNIT_DIGITS[unit] - precision, 0)
    return (value_in_unit // step) * step


def encode_value(value: object, t: DataType) -> bytes:
    """One field: the marker byte and the value bytes of ``value`` as type ``t``."""
    if value is None:
        return b"\x00"
    root = t.root
    if root == BOOLEAN:
        if not isinstance(value, bool | np.bool_):
            raise _key_error(t, value, "expected bool")
        return b"\x01\x01" if value else b"\x01\x00"
    if root in (TINYINT, SMALLINT, INT, BIGINT):
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise _key_error(t, value, "expected int")
        return b"\x01" + _flip_signed(int(value), _INT_WIDTH[root], t)
    if root in (FLOAT, DOUBLE):
        if isinstance(value, bool) or not isinstance(value, float | int | np.floating | np.integer):
            raise _key_error(t, value, "expected float")
        return b"\x01" + _float_bits(float(value), root == DOUBLE)
    if root in STRING_ROOTS:
        if not isinstance(value, str):
            raise _key_error(t, value, "expected str")
        return b"\x01" + _escape(value.encode("utf-8"))
    if root == BYTES:
        if not isinstance(value, bytes | bytearray | memoryview):
            raise _key_error(t, value, "expected bytes")
        return b"\x01" + _escape(bytes(value))
    if root == BINARY:
        if not isinstance(value, bytes | bytearray | memoryview) or len(value) != t.length:
            raise _key_error(t, value, f"expected exactly {t.length} bytes")
        return b"\x01" + bytes(value)
    if root == DECIMAL:
        return b"\x01" + _flip_signed(_decimal_unscaled(value, t), value_width(t), t)  # type: ignore[arg-type]
    if root == DATE:
        if isinstance(value, _dt.datetime) or not isinstance(value, _dt.date):
            raise _key_error(t, value, "expected datetime.date")
        return b"\x01" + _flip_signed((value - _EPOCH_DATE).days, 4, t)
    if root == TIME:
        if not isinstance(value, _dt.time):
            raise _key_error(t, value, "expected datetime.time")
        nanos = (((value.hour * 60 + value.minute) * 60 + value.second) * 10**6 + value.microsecond) * 1000
        nanos = _floor_precision(nanos, "ns", t.precision)
        return b"\x01" + _flip_signed(nanos, 8, t)
    if root in (TIMESTAMP, TIMESTAMP_LTZ):
        if not isinstance(value, _dt.datetime):
            raise _key_error(t, value, "expected datetime.datetime")
        unit = t.time_unit
        in_unit = _nanos_of_datetime(value, t) // _NANOS_PER_UNIT[unit]
        return b"\x01" + _flip_signed(_floor_precision(in_unit, unit, t.precision), 8, t)
    raise _key_error(t, value, "unsupported key type")


def encode_key(values: Sequence[object], types: Sequence[DataType]) -> bytes:
    """The key bytes of one row's key values (scalar reference implementation)."""
    if len(values) != len(types):
        raise FlussError(f"key has {len(values)} values for {len(types)} key columns", ErrorCode.CLIENT_ERROR)
    return b"".join(encode_value(v, t) for v, t in zip(values, types, strict=True))


# ===================================================================================== vectorised


@dataclass
class EncodedKeys:
    """The keys of a batch. Either ``matrix`` (n, L) uint8 when every key has the same length L, or the
    flat ``data`` bytes with ``offsets`` (n + 1, int64) delimiting key i as data[offsets[i]:offsets[i+1]]."""

    num_rows: int
    matrix: np.ndarray | None = None
    data: np.ndarray | None = None
    offsets: np.ndarray | None = None

    def lengths(self) -> np.ndarray:
        if self.matrix is not None:
            return np.full(self.num_rows, self.matrix.shape[1], dtype=np.int64)
        return np.diff(self.offsets)

    def flat(self) -> tuple[np.ndarray, np.ndarray]:
        """(data, offsets) whichever form the keys are in."""
        if self.matrix is not None:
            n, width = self.matrix.shape
            return self.matrix.reshape(-1), np.arange(n + 1, dtype=np.int64) * width
        return self.data, self.offsets  # type: ignore[return-value]

    def to_arrow(self) -> pa.Array:
        data, offsets = self.flat()
        if len(data) < 2**31:
            return pa.Array.from_buffers(
                pa.binary(), self.num_rows, [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)]
            )
        return pa.Array.from_buffers(
            pa.large_binary(), self.num_rows, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
        )

    def to_list(self) -> list[bytes]:
        if self.matrix is not None:
            n, width = self.matrix.shape
            blob = self.matrix.tobytes()
            return [blob[i : i + width] for i in range(0, n * width, width)]
        return self.to_arrow().to_pylist()


@dataclass
class _Field:
    valid: np.ndarray | None  # bool per row, None = no nulls
    fixed: np.ndarray | None = None  # (n, w) uint8 value bytes
    content: np.ndarray | None = None  # escaped bytes of the valid rows, row after row (terminator excluded)
    content_lengths: np.ndarray | None = None  # int64 per row, 0 for null rows


def _values(arr: pa.Array, dtype: np.dtype) -> np.ndarray:
    """The data buffer of a fixed-width Arrow array as numpy (null slots hold arbitrary values)."""
    itemsize = np.dtype(dtype).itemsize
    buf = arr.buffers()[1]
    return np.frombuffer(buf, dtype=dtype, count=len(arr), offset=arr.offset * itemsize)


def _flip_be(values: np.ndarray, width: int) -> np.ndarray:
    """Signed ints -> (n, width) big-endian bytes with the sign bit flipped."""
    signed = np.dtype(f"i{width}")
    unsigned = np.dtype(f"u{width}")
    flipped = values.astype(signed, copy=False).view(unsigned) ^ unsigned.type(1 << (8 * width - 1))
    return flipped.astype(unsigned.newbyteorder(">")).view(np.uint8).reshape(-1, width)


def _float_be(values: np.ndarray, double: bool) -> np.ndarray:
    ftype, utype, nan_bits, width = (
        (np.float64, np.uint64, _CANONICAL_NAN64, 8)
        if double
        else (np.float32, np.uint32, _CANONICAL_NAN32, 4)
    )
    v = values.astype(ftype, copy=True)
    v[v == 0] = 0.0  # -0.0 -> +0.0
    bits = v.view(utype)
    bits[np.isnan(v)] = utype(nan_bits)
    sign = utype(1 << (8 * width - 1))
    negative = (bits & sign) != 0
    out = np.where(negative, ~bits, bits | sign).astype(utype)
    return out.astype(np.dtype(utype).newbyteorder(">")).view(np.uint8).reshape(-1, width)


def _fixed_field_bytes(arr: pa.Array, t: DataType) -> np.ndarray:
    root = t.root
    n = len(arr)
    if root == BOOLEAN:
        return pc.fill_null(arr, False).to_numpy(zero_copy_only=False).astype(np.uint8).reshape(n, 1)
    if root in _INT_WIDTH:
        width = _INT_WIDTH[root]
        return _flip_be(_values(arr, np.dtype(f"<i{width}")), width)
    if root == FLOAT:
        return _float_be(_values(arr, np.dtype("<f4")), double=False)
    if root == DOUBLE:
        return _float_be(_values(arr, np.dtype("<f8")), double=True)
    if root == DECIMAL:
        raw = np.frombuffer(arr.buffers()[1], dtype=np.uint8, count=16 * n, offset=16 * arr.offset).reshape(
            n, 16
        )
        if t.precision <= COMPACT_DECIMAL_PRECISION:
            low = np.ascontiguousarray(raw[:, :8]).view("<i8").reshape(n)
            return _flip_be(low, 8)
        be = raw[:, ::-1].copy()
        be[:, 0] ^= 0x80
        return be
    if root == TIME:
        unit = arr.type.unit
        raw = _values(arr, np.dtype("<i4") if pa.types.is_time32(arr.type) else np.dtype("<i8")).astype(
            np.int64
        )
        nanos = raw * _NANOS_PER_UNIT[unit]
        step = 10 ** (9 - t.precision)
        if step > _NANOS_PER_UNIT[unit]:
            nanos = (nanos // step) * step
        return _flip_be(nanos, 8)
    if root in (TIMESTAMP, TIMESTAMP_LTZ):
        raw = _values(arr, np.dtype("<i8"))
        unit = arr.type.unit
        step = 10 ** max(UNIT_DIGITS[unit] - t.precision, 0)
        if step > 1:
            raw = (raw // step) * step
        return _flip_be(raw, 8)
    if root == BINARY:
        width = t.length
        return np.frombuffer(
            arr.buffers()[1], dtype=np.uint8, count=width * n, offset=width * arr.offset
        ).reshape(n, width)
    raise FlussError(f"type {t} cannot be a key column", ErrorCode.CLIENT_ERROR)


def _var_field(arr: pa.Array, valid: np.ndarray | None) -> _Field:
    n = len(arr)
    large = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    offsets = np.frombuffer(
        arr.buffers()[1],
        dtype=np.int64 if large else np.int32,
        count=n + 1,
        offset=arr.offset * (8 if large else 4),
    ).astype(np.int64)
    data_buf = arr.buffers()[2]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    raw_lengths = np.diff(offsets)
    lengths = raw_lengths if valid is None else np.where(valid, raw_lengths, 0)
    if valid is None or not raw_lengths[~valid].any():
        content = data[offsets[0] : offsets[-1]]  # contiguous: null slots are empty
    else:
        starts = np.repeat(offsets[:-1] - _exclusive_cumsum(lengths), lengths)
        content = data[starts + np.arange(int(lengths.sum()), dtype=np.int64)]
    zeros = content == 0
    if not zeros.any():
        return _Field(valid, content=content, content_lengths=lengths)
    # Escape: each 0x00 becomes 0x00 0xFF. Positions shift by the zeros before them.
    shift = np.cumsum(zeros) - zeros  # zeros strictly before each byte
    out = np.zeros(len(content) + int(zeros.sum()), dtype=np.uint8)
    pos = np.arange(len(content), dtype=np.int64) + shift
    out[pos] = content
    out[pos[zeros] + 1] = 0xFF
    row_ends = np.cumsum(lengths)
    zero_cum = np.concatenate(([0], np.cumsum(zeros)))
    zeros_per_row = zero_cum[row_ends] - zero_cum[row_ends - lengths]
    return _Field(valid, content=out, content_lengths=lengths + zeros_per_row)


def _exclusive_cumsum(a: np.ndarray) -> np.ndarray:
    out = np.empty(len(a), dtype=np.int64)
    if len(a):
        out[0] = 0
        np.cumsum(a[:-1], out=out[1:])
    return out


def _range_mask(starts: np.ndarray, ends: np.ndarray, size: int) -> np.ndarray:
    """Boolean mask of the union of the ascending, disjoint ranges [starts[i], ends[i])."""
    k = len(starts)
    counts = np.empty(2 * k + 1, dtype=np.int64)
    if k == 0:
        return np.zeros(size, dtype=np.bool_)
    counts[0] = starts[0]
    counts[1::2] = ends - starts
    counts[2:-1:2] = starts[1:] - ends[:-1]
    counts[-1] = size - ends[-1]
    pattern = np.zeros(2 * k + 1, dtype=np.bool_)
    pattern[1::2] = True
    return np.repeat(pattern, counts)


def _field_of(arr: pa.Array | pa.ChunkedArray, t: DataType) -> _Field:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    valid = None if arr.null_count == 0 else arr.is_valid().to_numpy(zero_copy_only=False)
    if t.root in STRING_ROOTS or t.root == BYTES:
        return _var_field(arr, valid)
    return _Field(valid, fixed=_fixed_field_bytes(arr, t))


def encode_key_buffers(
    batch: pa.RecordBatch | pa.Table, column_indices: Sequence[int], types: Sequence[DataType] | None = None
) -> EncodedKeys:
    """The keys of every row of ``batch`` over the given key columns, as numpy buffers.

    ``batch`` must hold the table schema's Arrow types (see :func:`fluss.row_convert.conform_batch`);
    ``types`` defaults to the Fluss types of the batch fields (``fluss.type`` metadata honoured).
    """
    n = batch.num_rows
    if types is None:
        types = [type_of_field(batch.schema.field(i)) for i in column_indices]
    fields = [_field_of(batch.column(i), t) for i, t in zip(column_indices, types, strict=True)]
    if not fields:
        return EncodedKeys(n, matrix=np.zeros((n, 0), dtype=np.uint8))
    if all(f.fixed is not None and f.valid is None for f in fields):
        parts = []
        for f in fields:
            parts.append(np.ones((n, 1), dtype=np.uint8))
            parts.append(f.fixed)
        return EncodedKeys(n, matrix=np.hstack(parts) if len(parts) > 1 else parts[0])
    if len(fields) == 1:
        return _single_field_keys(fields[0], n)
    # General form: per-row lengths, then scatter each field into the flat buffer.
    field_lengths = []
    for f in fields:
        if f.fixed is not None:
            width = f.fixed.shape[1]
            length = (
                np.full(n, 1 + width, dtype=np.int64)
                if f.valid is None
                else 1 + width * f.valid.astype(np.int64)
            )
        else:
            length = 1 + f.content_lengths + (2 if f.valid is None else 2 * f.valid.astype(np.int64))
        field_lengths.append(length)
    row_lengths = np.sum(field_lengths, axis=0)
    offsets = np.concatenate(([0], np.cumsum(row_lengths))).astype(np.int64)
    out = np.zeros(int(offsets[-1]), dtype=np.uint8)
    cursor = offsets[:-1].copy()
    for f in fields:
        out[cursor] = 1 if f.valid is None else f.valid.astype(np.uint8)
        cursor += 1
        if f.fixed is not None:
            width = f.fixed.shape[1]
            if width:
                starts = cursor if f.valid is None else cursor[f.valid]
                out[_range_mask(starts, starts + width, len(out))] = (
                    f.fixed if f.valid is None else f.fixed[f.valid]
                ).reshape(-1)
                cursor += width if f.valid is None else width * f.valid.astype(np.int64)
        else:
            lengths = f.content_lengths
            if len(f.content):
                out[_range_mask(cursor, cursor + lengths, len(out))] = f.content
            cursor += lengths
            ends = cursor if f.valid is None else cursor[f.valid]
            out[ends + 1] = 0x01  # terminator 0x00 0x01 (the 0x00 is already there)
            cursor += 2 if f.valid is None else 2 * f.valid.astype(np.int64)
    return EncodedKeys(n, data=out, offsets=offsets)


def _single_field_keys(f: _Field, n: int) -> EncodedKeys:
    """Keys of a one-column key with nulls or of variable length (the common bucket key).

    Same bytes as the general form, cheaper: the value bytes go everywhere except the marker (and
    terminator) bytes, which are only 1-3 per row."""
    valid = f.valid
    valid_count = 1 if valid is None else valid.astype(np.int64)
    if f.fixed is not None:
        width = f.fixed.shape[1]
        lengths = 1 + width * valid_count
        content = f.fixed if valid is None else f.fixed[valid]
    else:
        lengths = f.content_lengths + 1 + 2 * valid_count
        content = f.content
    offsets = np.empty(n + 1, dtype=np.int64)
    offsets[0] = 0
    np.cumsum(lengths, out=offsets[1:])
    out = np.zeros(int(offsets[-1]), dtype=np.uint8)
    starts = offsets[:-1]
    content_mask = np.ones(len(out), dtype=np.bool_)
    content_mask[starts] = False
    if f.fixed is None:
        term_ends = offsets[1:] if valid is None else offsets[1:][valid]
        content_mask[term_ends - 1] = False
        content_mask[term_ends - 2] = False
    out[content_mask] = content.reshape(-1)
    out[starts] = 1 if valid is None else valid.astype(np.uint8)
    if f.fixed is None:
        out[term_ends - 1] = 0x01  # terminator 0x00 0x01
    return EncodedKeys(n, data=out, offsets=offsets)


def encode_keys_array(batch: pa.RecordBatch | pa.Table, column_indices: Sequence[int]) -> pa.Array:
    """The keys of every row as an Arrow binary array."""
    return encode_key_buffers(batch, column_indices).to_arrow()


def encode_keys(batch: pa.RecordBatch | pa.Table, column_indices: Sequence[int]) -> list[bytes]:
    """The keys of every row of ``batch`` (vectorised; equal to :func:`encode_key` row by row)."""
    return encode_key_buffers(batch, column_indices).to_list()


__all__ = [
    "EncodedKeys",
    "encode_key",
    "encode_key_buffers",
    "encode_keys",
    "encode_keys_array",
    "encode_value",
    "value_width",
]
