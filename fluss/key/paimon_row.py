"""Paimon's bucket key: the bucket-key values as a Paimon ``BinaryRow``, hashed and bucketed as Paimon does.

This is the bucket function of tables whose lake format is Paimon (``fluss.key.bucket_function``), so that a
Fluss bucket and the Paimon bucket of the lake table are the same thing for every engine (Paimon's writers,
its bucket pruning on key filters, its compaction). It mirrors Paimon's ``FixedBucketRowKeyExtractor``
(Java) with the default bucket function; ``docs/paimon-bucket-test-vectors.json`` pins it, checked against
pypaimon in ``tests/key/test_paimon_bucketing.py`` and against Paimon's Java classes in the connector's JUnit
tests. Specification::

    row    = BinaryRow(bucket-key values)      (layout below; row kind INSERT)
    hash   = MurmurHash3_x86_32(row, seed 42)  (Paimon's hashByWords: the row is a multiple of 8 bytes,
                                                so there is never a tail; as a signed 32-bit int)
    bucket = abs(hash % num_buckets)           (Java's remainder: the sign of the hash)

``BinaryRow`` of arity ``k`` (all integers little-endian)::

    header     W = ((k + 63 + 8) // 64) * 8 bytes: byte 0 = row kind (0 = INSERT); bit (i + 8) set when
               field i is null (byte (i + 8) // 8, bit (i + 8) % 8)
    fixed part one 8-byte slot per field, in key order (a null field's slot is zero, except below)
    var part   the variable-length data of the fields, in field order, each piece padded to 8 bytes;
               offsets stored in slots are from the start of the row

    BOOLEAN, TINYINT         1 byte  (rest of the slot zero)
    SMALLINT                 2 bytes
    INT, DATE, TIME          4 bytes (DATE: days since 1970-01-01; TIME: milliseconds of the day)
    FLOAT                    4 bytes: the raw IEEE bits (-0.0 and NaN payloads are kept as they are)
    BIGINT                   8 bytes
    DOUBLE                   8 bytes: the raw IEEE bits
    DECIMAL(p <= 18)         8 bytes: the unscaled value
    DECIMAL(p > 18)          var part: 16 bytes holding the unscaled value's minimal big-endian two's
                             complement (Java's BigInteger.toByteArray) then zeros; slot = offset << 32 | length.
                             A NULL reserves the 16 zero bytes too (slot = offset << 32)
    TIMESTAMP(p <= 3)[_LTZ]  8 bytes: milliseconds since the epoch (UTC for LTZ)
    TIMESTAMP(p > 3)[_LTZ]   var part: 8 bytes of milliseconds since the epoch (floored); slot = offset << 32 |
                             nanoseconds of the millisecond. A NULL reserves the 8 zero bytes (slot = offset << 32)
    STRING, CHAR, BYTES,     UTF-8 / raw bytes. At most 7 bytes: inline in the slot, byte 7 of the slot =
    BINARY(n)                0x80 | length. Longer: var part (padded to 8), slot = offset << 32 | length

Fluss types map to the Paimon types of the lake table (``fluss.lake.paimon``): CHAR(n) is a Paimon STRING,
TIMESTAMP(p) keeps the precision of its Arrow unit (so it is compact exactly when p <= 3) and TIME(p) is
Paimon's TIME(min(p, 3)) in milliseconds; values are those the Arrow batch holds (already floored to their
precision). A key field's bytes never depend on its nullability.

pypaimon 2.1's own extractor differs from Java Paimon in two corners, and this module follows Java (the
engines' writers and ``BucketSelector``): a NULL of a DECIMAL(p > 18) or TIMESTAMP(p > 3) bucket key (pypaimon
reserves no var-part bytes) and a DECIMAL(p > 18) unscaled value of exactly -2^(8j-1), e.g. -128 (pypaimon
writes one sign byte more than ``BigInteger.toByteArray``).

:func:`encode_binary_rows` is the vectorised encoder over an Arrow batch in the table schema's types (numpy
over the Arrow buffers, no per-row Python); :func:`encode_binary_row` is the scalar one over Python values.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fluss.errors import ErrorCode, FlussError
from fluss.key.encoding import EncodedKeys
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

#: MurmurHash3 seed of Paimon's ``MurmurHashUtils.hashBytesByWords``.
PAIMON_HASH_SEED = 42
#: Bits at the start of a BinaryRow before the null bits (the row kind byte).
HEADER_BITS = 8
#: Longest variable-length value stored inline in its 8-byte slot.
MAX_INLINE_BYTES = 7
#: Decimals up to this precision are "compact" (an 8-byte unscaled long in the slot).
MAX_COMPACT_DECIMAL_PRECISION = 18
#: Timestamps up to this precision are "compact" (epoch milliseconds in the slot).
MAX_COMPACT_TIMESTAMP_PRECISION = 3
#: Bytes a non-compact decimal / timestamp reserves in the variable part (also when NULL).
DECIMAL_VAR_BYTES = 16
TIMESTAMP_VAR_BYTES = 8

_FIXED_WIDTH = {BOOLEAN: 1, TINYINT: 1, SMALLINT: 2, INT: 4, DATE: 4, TIME: 4, FLOAT: 4, BIGINT: 8, DOUBLE: 8}
_EPOCH_DATE = _dt.date(1970, 1, 1)
_EPOCH = _dt.datetime(1970, 1, 1)
_NANOS_PER_UNIT = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}
_EXACT = decimal.Context(prec=200, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)


def null_bits_width(arity: int) -> int:
    """Bytes of a BinaryRow's header (row kind + null bits), a multiple of 8."""
    return ((arity + 63 + HEADER_BITS) // 64) * 8


def fixed_part_width(arity: int) -> int:
    return null_bits_width(arity) + 8 * arity


def is_compact(t: DataType) -> bool:
    """Whether a value of this type lives entirely in its slot (no variable part)."""
    if t.root == DECIMAL:
        return t.precision <= MAX_COMPACT_DECIMAL_PRECISION
    if t.root in (TIMESTAMP, TIMESTAMP_LTZ):
        return t.precision <= MAX_COMPACT_TIMESTAMP_PRECISION
    return True


def paimon_type_text(t: DataType) -> str:
    """The Paimon type (SQL text, nullable) a Fluss column has in the lake table (see ``fluss.lake.paimon``)."""
    root = t.root
    if root in STRING_ROOTS:
        return "STRING"
    if root == TIME:
        return f"TIME({min(t.precision, 3)})"
    if root in (TIMESTAMP, TIMESTAMP_LTZ):
        text = f"TIMESTAMP({UNIT_DIGITS[t.time_unit]})"
        return text + " WITH LOCAL TIME ZONE" if root == TIMESTAMP_LTZ else text
    return t.with_nullable(True).type_text()


def _check_key_type(t: DataType) -> None:
    if t.root not in _FIXED_WIDTH and t.root not in STRING_ROOTS and t.root not in (
            BYTES, BINARY, DECIMAL, TIMESTAMP, TIMESTAMP_LTZ):
        raise FlussError(f"type {t} cannot be a Paimon bucket-key column", ErrorCode.CLIENT_ERROR)


def _round8(n: int) -> int:
    return (n + 7) & ~7


# ===================================================================================== scalar


def _scalar_error(t: DataType, value: object, why: str) -> FlussError:
    return FlussError(f"cannot encode {value!r} as a {t} bucket-key value: {why}", ErrorCode.CLIENT_ERROR)


def _unscaled(value: object, t: DataType) -> int:
    if isinstance(value, bool) or not isinstance(value, decimal.Decimal | int):
        raise _scalar_error(t, value, "expected decimal.Decimal or int")
    d = decimal.Decimal(value)
    if not d.is_finite():
        raise _scalar_error(t, value, "not a finite number")
    scaled = d.scaleb(t.scale, context=_EXACT)
    unscaled = int(scaled)
    if scaled != unscaled or abs(unscaled) >= 10**t.precision:
        raise _scalar_error(t, value, f"does not fit DECIMAL({t.precision}, {t.scale})")
    return unscaled


def java_big_integer_bytes(v: int) -> bytes:
    """``BigInteger.valueOf(v).toByteArray()``: the minimal big-endian two's complement (at least one byte)."""
    bits = v.bit_length() if v >= 0 else (-v - 1).bit_length()
    return v.to_bytes(bits // 8 + 1, "big", signed=True)


def _timestamp_in_unit(value: object, t: DataType) -> int:
    """A datetime as an integer in the Arrow unit of ``t``, floored to its precision (as the Arrow data holds it)."""
    if not isinstance(value, _dt.datetime):
        raise _scalar_error(t, value, "expected datetime.datetime")
    if value.tzinfo is not None:
        if t.root != TIMESTAMP_LTZ:
            raise _scalar_error(t, value, "TIMESTAMP values must be naive datetimes")
        value = value.astimezone(_dt.UTC).replace(tzinfo=None)
    delta = value - _EPOCH
    nanos = ((delta.days * 86400 + delta.seconds) * 10**6 + delta.microseconds) * 1000 + int(
        getattr(value, "nanosecond", 0))
    unit = t.time_unit
    in_unit = nanos // _NANOS_PER_UNIT[unit]
    step = 10 ** max(UNIT_DIGITS[unit] - t.precision, 0)
    return (in_unit // step) * step


def _millis_and_nanos(in_unit: int, unit: str) -> tuple[int, int]:
    """(epoch milliseconds, nanoseconds of the millisecond) of a value in an Arrow unit (floored)."""
    nanos_per_unit = _NANOS_PER_UNIT[unit]
    if nanos_per_unit >= 10**6:
        return in_unit * (nanos_per_unit // 10**6), 0
    per_ms = 10**6 // nanos_per_unit
    return in_unit // per_ms, (in_unit % per_ms) * nanos_per_unit


def _slot_value(value: object, t: DataType) -> bytes:
    """The 8 slot bytes of a compact non-null value."""
    root = t.root
    if root == BOOLEAN:
        if not isinstance(value, bool | np.bool_):
            raise _scalar_error(t, value, "expected bool")
        return (b"\x01" if value else b"\x00").ljust(8, b"\x00")
    if root in (TINYINT, SMALLINT, INT, BIGINT):
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise _scalar_error(t, value, "expected int")
        width = _FIXED_WIDTH[root]
        try:
            return int(value).to_bytes(width, "little", signed=True).ljust(8, b"\x00")
        except OverflowError:
            raise _scalar_error(t, value, f"out of range for {8 * width}-bit integer") from None
    if root in (FLOAT, DOUBLE):
        if isinstance(value, bool) or not isinstance(value, float | int | np.floating | np.integer):
            raise _scalar_error(t, value, "expected float")
        return struct.pack("<f", float(value)).ljust(8, b"\x00") if root == FLOAT else struct.pack("<d", float(value))
    if root == DATE:
        if isinstance(value, _dt.datetime) or not isinstance(value, _dt.date):
            raise _scalar_error(t, value, "expected datetime.date")
        return (value - _EPOCH_DATE).days.to_bytes(4, "little", signed=True).ljust(8, b"\x00")
    if root == TIME:
        if not isinstance(value, _dt.time):
            raise _scalar_error(t, value, "expected datetime.time")
        micros = ((value.hour * 60 + value.minute) * 60 + value.second) * 10**6 + value.microsecond
        step = 10 ** max(6 - t.precision, 0)  # floored to the precision first, as the Arrow data is
        millis = (micros // step * step) // 1000
        return millis.to_bytes(4, "little", signed=True).ljust(8, b"\x00")
    if root == DECIMAL:
        return _unscaled(value, t).to_bytes(8, "little", signed=True)
    if root in (TIMESTAMP, TIMESTAMP_LTZ):
        millis, _ = _millis_and_nanos(_timestamp_in_unit(value, t), t.time_unit)
        return millis.to_bytes(8, "little", signed=True)
    raise _scalar_error(t, value, "unsupported bucket-key type")


def _var_bytes(value: object, t: DataType) -> bytes:
    root = t.root
    if root in STRING_ROOTS:
        if not isinstance(value, str):
            raise _scalar_error(t, value, "expected str")
        return value.encode("utf-8")
    if not isinstance(value, bytes | bytearray | memoryview):
        raise _scalar_error(t, value, "expected bytes")
    data = bytes(value)
    if root == BINARY and len(data) != t.length:
        raise _scalar_error(t, value, f"expected exactly {t.length} bytes")
    return data


def encode_binary_row(values: Sequence[object], types: Sequence[DataType]) -> bytes:
    """The BinaryRow bytes of one row of bucket-key values (Python values, as :func:`fluss.key.encoding.encode_key`
    takes them)."""
    if len(values) != len(types):
        raise FlussError(f"bucket key has {len(values)} values for {len(types)} columns", ErrorCode.CLIENT_ERROR)
    arity = len(types)
    width = null_bits_width(arity)
    fixed = bytearray(fixed_part_width(arity))
    var = bytearray()
    for i, (value, t) in enumerate(zip(values, types, strict=True)):
        _check_key_type(t)
        slot = width + 8 * i
        offset = len(fixed) + len(var)
        if value is None:
            fixed[(i + HEADER_BITS) // 8] |= 1 << ((i + HEADER_BITS) % 8)
            if not is_compact(t):  # Java's writers reserve the var-part bytes of a NULL too
                var += bytes(DECIMAL_VAR_BYTES if t.root == DECIMAL else TIMESTAMP_VAR_BYTES)
                fixed[slot:slot + 8] = (offset << 32).to_bytes(8, "little")
            continue
        root = t.root
        if root in STRING_ROOTS or root in (BYTES, BINARY):
            data = _var_bytes(value, t)
            if len(data) <= MAX_INLINE_BYTES:
                fixed[slot:slot + len(data)] = data
                fixed[slot + 7] = 0x80 | len(data)
            else:
                var += data.ljust(_round8(len(data)), b"\x00")
                fixed[slot:slot + 8] = ((offset << 32) | len(data)).to_bytes(8, "little")
        elif root == DECIMAL and not is_compact(t):
            data = java_big_integer_bytes(_unscaled(value, t))
            var += data.ljust(DECIMAL_VAR_BYTES, b"\x00")
            fixed[slot:slot + 8] = ((offset << 32) | len(data)).to_bytes(8, "little")
        elif root in (TIMESTAMP, TIMESTAMP_LTZ) and not is_compact(t):
            millis, nanos = _millis_and_nanos(_timestamp_in_unit(value, t), t.time_unit)
            var += millis.to_bytes(8, "little", signed=True)
            fixed[slot:slot + 8] = ((offset << 32) | nanos).to_bytes(8, "little")
        else:
            fixed[slot:slot + 8] = _slot_value(value, t)
    return bytes(fixed + var)


# ===================================================================================== vectorised


@dataclass
class _Field:
    """One key column of a batch: its slot bytes and variable-part pieces."""

    valid: np.ndarray | None  # bool per row; None = no nulls
    slot: np.ndarray | None = None  # (n, 8) uint8 slot bytes of a field without var part (zeros for nulls)
    var_width: int = 0  # non-compact decimal/timestamp: bytes every row reserves in the var part
    var: np.ndarray | None = None  # (n, var_width) uint8 of a non-compact decimal/timestamp
    slot_low: np.ndarray | None = None  # uint64 low 32 bits of the slot of such a field (length / nanos)
    data: np.ndarray | None = None  # strings/bytes: the value bytes of every row, row after row (nulls empty)
    starts: np.ndarray | None = None  # strings/bytes: start of each row's bytes in ``data``
    lengths: np.ndarray | None = None  # strings/bytes: byte length per row (0 for nulls)


def _values(arr: pa.Array, dtype: str) -> np.ndarray:
    itemsize = np.dtype(dtype).itemsize
    return np.frombuffer(arr.buffers()[1], dtype=dtype, count=len(arr), offset=arr.offset * itemsize)


def _le_slots(values: np.ndarray, width: int, valid: np.ndarray | None) -> np.ndarray:
    """(n, 8) slot bytes holding ``width`` little-endian bytes of each value, zeros elsewhere and for nulls."""
    n = len(values)
    out = np.zeros((n, 8), dtype=np.uint8)
    raw = np.ascontiguousarray(values).view(np.uint8).reshape(n, values.dtype.itemsize)
    out[:, :width] = raw[:, :width]
    if valid is not None:
        out[~valid] = 0
    return out


def _millis_nanos_arrays(raw: np.ndarray, unit: str) -> tuple[np.ndarray, np.ndarray]:
    nanos_per_unit = _NANOS_PER_UNIT[unit]
    if nanos_per_unit >= 10**6:
        return raw * np.int64(nanos_per_unit // 10**6), np.zeros(len(raw), np.int64)
    per_ms = np.int64(10**6 // nanos_per_unit)
    return np.floor_divide(raw, per_ms), np.mod(raw, per_ms) * np.int64(nanos_per_unit)


def _minimal_twos_complement(raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of (n, 16) big-endian two's complement bytes: the 16-byte chunk holding the minimal form
    (``BigInteger.toByteArray``) left-aligned then zeros, and its length."""
    n = len(raw)
    negative = raw[:, 0] >= 0x80
    fill = np.where(negative, 0xFF, 0x00).astype(np.uint8)
    # a leading byte is redundant when it is the sign fill and the next byte has the same sign bit
    redundant = np.zeros(n, dtype=np.int64)
    still = np.ones(n, dtype=bool)
    for j in range(15):
        still &= (raw[:, j] == fill) & ((raw[:, j + 1] >= 0x80) == negative)
        redundant += still
    lengths = 16 - redundant
    cols = np.arange(16)[None, :] + redundant[:, None]
    chunk = np.where(cols < 16, np.take_along_axis(raw, np.minimum(cols, 15), axis=1), 0).astype(np.uint8)
    return chunk, lengths


def _field_of(arr: pa.Array | pa.ChunkedArray, t: DataType) -> _Field:
    _check_key_type(t)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    n = len(arr)
    valid = None if arr.null_count == 0 else arr.is_valid().to_numpy(zero_copy_only=False)
    root = t.root
    if root == BOOLEAN:
        values = pc.fill_null(arr, False).to_numpy(zero_copy_only=False).astype(np.uint8)
        return _Field(valid, slot=_le_slots(values, 1, valid))
    if root in (TINYINT, SMALLINT, INT, BIGINT, DATE, FLOAT, DOUBLE):
        width = _FIXED_WIDTH[root]
        kind = {FLOAT: "f", DOUBLE: "f"}.get(root, "i")
        return _Field(valid, slot=_le_slots(_values(arr, f"<{kind}{width}"), width, valid))
    if root == TIME:
        unit = arr.type.unit
        raw = _values(arr, "<i4" if pa.types.is_time32(arr.type) else "<i8").astype(np.int64)
        millis = np.floor_divide(raw * np.int64(_NANOS_PER_UNIT[unit]), np.int64(10**6)).astype("<i4")
        return _Field(valid, slot=_le_slots(millis, 4, valid))
    if root == DECIMAL:
        raw = np.frombuffer(arr.buffers()[1], dtype=np.uint8, count=16 * n, offset=16 * arr.offset).reshape(n, 16)
        if is_compact(t):
            return _Field(valid, slot=_le_slots(np.ascontiguousarray(raw[:, :8]).view("<i8").reshape(n), 8, valid))
        chunk, lengths = _minimal_twos_complement(raw[:, ::-1])  # Arrow holds little-endian 128-bit ints
        if valid is not None:
            chunk[~valid] = 0
            lengths[~valid] = 0
        return _Field(valid, var_width=DECIMAL_VAR_BYTES, var=chunk, slot_low=lengths.astype(np.uint64))
    if root in (TIMESTAMP, TIMESTAMP_LTZ):
        millis, nanos = _millis_nanos_arrays(_values(arr, "<i8").astype(np.int64), arr.type.unit)
        if is_compact(t):
            return _Field(valid, slot=_le_slots(millis.astype("<i8"), 8, valid))
        if valid is not None:
            millis[~valid] = 0
            nanos[~valid] = 0
        var = np.ascontiguousarray(millis.astype("<i8")).view(np.uint8).reshape(n, 8)
        return _Field(valid, var_width=TIMESTAMP_VAR_BYTES, var=var, slot_low=nanos.astype(np.uint64))
    # strings and bytes
    if pa.types.is_fixed_size_binary(arr.type):
        width = arr.type.byte_width
        data = np.frombuffer(arr.buffers()[1], dtype=np.uint8, count=width * n, offset=width * arr.offset)
        starts = np.arange(n, dtype=np.int64) * width
        lengths = np.full(n, width, dtype=np.int64)
    else:
        large = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
        offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64 if large else np.int32, count=n + 1,
                                offset=arr.offset * (8 if large else 4)).astype(np.int64)
        buf = arr.buffers()[2]
        data = np.frombuffer(buf, dtype=np.uint8) if buf is not None else np.zeros(0, np.uint8)
        starts = offsets[:-1]
        lengths = np.diff(offsets)
    if valid is not None:
        lengths = np.where(valid, lengths, 0)
    return _Field(valid, data=data, starts=starts, lengths=lengths)


def _range_mask(starts: np.ndarray, lengths: np.ndarray, size: int) -> np.ndarray:
    """Boolean mask of the union of the ascending, disjoint ranges [starts[i], starts[i] + lengths[i])."""
    k = len(starts)
    if k == 0:
        return np.zeros(size, dtype=np.bool_)
    ends = starts + lengths
    counts = np.empty(2 * k + 1, dtype=np.int64)
    counts[0] = starts[0]
    counts[1::2] = lengths
    counts[2:-1:2] = starts[1:] - ends[:-1]
    counts[-1] = size - ends[-1]
    pattern = np.zeros(2 * k + 1, dtype=np.bool_)
    pattern[1::2] = True
    return np.repeat(pattern, counts)


def _gather_ranges(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The bytes of every range ``data[starts[i]:starts[i] + lengths[i]]``, concatenated."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.uint8)
    if len(starts) and (starts[1:] == starts[:-1] + lengths[:-1]).all():
        return data[starts[0]:starts[0] + total]  # contiguous (the usual Arrow layout)
    firsts = np.repeat(starts - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
    return data[firsts + np.arange(total, dtype=np.int64)]


def encode_binary_rows(batch: pa.RecordBatch | pa.Table, column_indices: Sequence[int],
                       types: Sequence[DataType] | None = None) -> EncodedKeys:
    """The BinaryRow of every row of ``batch`` over the given bucket-key columns (vectorised).

    ``batch`` must hold the table schema's Arrow types; ``types`` defaults to the Fluss types of its fields.
    """
    n = batch.num_rows
    if types is None:
        types = [type_of_field(batch.schema.field(i)) for i in column_indices]
    fields = [_field_of(batch.column(i), t) for i, t in zip(column_indices, types, strict=True)]
    arity = len(fields)
    header = null_bits_width(arity)
    fixed_width = header + 8 * arity
    strings = [f for f in fields if f.data is not None]
    # var-part bytes of every field per row (strings only when longer than the inline limit)
    var_sizes = []
    for f in fields:
        if f.data is not None:
            var_sizes.append(np.where(f.lengths > MAX_INLINE_BYTES, (f.lengths + 7) & ~7, 0))
        else:
            var_sizes.append(f.var_width)
    if not strings:
        length = fixed_width + sum(var_sizes)
        return EncodedKeys(n, matrix=_assemble_matrix(fields, n, header, fixed_width, length))
    row_lengths = np.full(n, fixed_width, dtype=np.int64)
    for size in var_sizes:
        row_lengths += size
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(row_lengths, out=offsets[1:])
    out = np.zeros(int(offsets[-1]), dtype=np.uint8)
    row_starts = offsets[:-1]
    var_cursor = np.full(n, fixed_width, dtype=np.int64)  # next var offset within the row
    for i, (f, size) in enumerate(zip(fields, var_sizes, strict=True)):
        slot_at = row_starts + header + 8 * i
        if f.valid is not None:
            null_rows = ~f.valid
            out[row_starts[null_rows] + (i + HEADER_BITS) // 8] |= np.uint8(1 << ((i + HEADER_BITS) % 8))
        if f.slot is not None:
            out[slot_at[:, None] + np.arange(8)] = f.slot
        elif f.var is not None:
            slot = (var_cursor.astype(np.uint64) << np.uint64(32)) | f.slot_low
            out[slot_at[:, None] + np.arange(8)] = slot.astype("<u8").view(np.uint8).reshape(n, 8)
            out[(row_starts + var_cursor)[:, None] + np.arange(f.var_width)] = f.var
        else:
            _scatter_strings(out, f, slot_at, row_starts, var_cursor)
        var_cursor += size
    return EncodedKeys(n, data=out, offsets=offsets)


def _scatter_strings(out: np.ndarray, f: _Field, slot_at: np.ndarray, row_starts: np.ndarray,
                     var_cursor: np.ndarray) -> None:
    """Writes a string/bytes field: short values inline in their slot (last slot byte 0x80 | length), long
    ones in the var part (at ``var_cursor`` within the row) with offset << 32 | length in the slot."""
    lengths = f.lengths
    long = lengths > MAX_INLINE_BYTES
    destinations = np.where(long, row_starts + var_cursor, slot_at)
    content = _gather_ranges(f.data, f.starts, lengths)
    if len(content):
        out[_range_mask(destinations, lengths, len(out))] = content
    short = ~long if f.valid is None else (~long & f.valid)
    out[slot_at[short] + 7] = (0x80 | lengths[short]).astype(np.uint8)
    if long.any():
        slot = (var_cursor[long].astype(np.uint64) << np.uint64(32)) | lengths[long].astype(np.uint64)
        out[slot_at[long][:, None] + np.arange(8)] = slot.astype("<u8").view(np.uint8).reshape(-1, 8)


def _assemble_matrix(fields: list[_Field], n: int, header: int, fixed_width: int, length: int) -> np.ndarray:
    """Rows of one length (no string fields): an (n, length) matrix filled column block by column block."""
    out = np.zeros((n, length), dtype=np.uint8)
    var_cursor = fixed_width
    for i, f in enumerate(fields):
        if f.valid is not None:
            out[~f.valid, (i + HEADER_BITS) // 8] |= np.uint8(1 << ((i + HEADER_BITS) % 8))
        col = header + 8 * i
        if f.slot is not None:
            out[:, col:col + 8] = f.slot
        else:
            slot = (np.uint64(var_cursor) << np.uint64(32)) | f.slot_low
            out[:, col:col + 8] = slot.astype("<u8").view(np.uint8).reshape(n, 8)
            out[:, var_cursor:var_cursor + f.var_width] = f.var
            var_cursor += f.var_width
    return out


def encode_binary_rows_list(batch: pa.RecordBatch | pa.Table, column_indices: Sequence[int]) -> list[bytes]:
    """:func:`encode_binary_rows` as a list of bytes (for tests and small batches)."""
    return encode_binary_rows(batch, column_indices).to_list()


__all__ = [
    "PAIMON_HASH_SEED",
    "encode_binary_row",
    "encode_binary_rows",
    "encode_binary_rows_list",
    "fixed_part_width",
    "is_compact",
    "java_big_integer_bytes",
    "null_bits_width",
    "paimon_type_text",
]
