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
    data: np.ndarray | None = None  # strings/bytes: the array's value bytes (a view of its Arrow data buffer)
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
        # only the bytes of this (possibly sliced) array: a view, rebased so the first row starts at 0
        data = (np.frombuffer(buf, dtype=np.uint8)[offsets[0]:offsets[-1]] if buf is not None
                else np.zeros(0, np.uint8))
        starts = offsets[:-1] - offsets[0]
        lengths = np.diff(offsets)
    if valid is not None:
        lengths = np.where(valid, lengths, 0)
    return _Field(valid, data=data, starts=starts, lengths=lengths)


@dataclass
class RowGroup:
    """Rows of one BinaryRow layout (the same variable-part sizes, so the same length): their positions in the
    batch (None: every row, in order) and their rows as an (k, length) uint8 matrix."""

    rows: np.ndarray | None
    matrix: np.ndarray


def _as_le_bytes(values: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(values.astype("<u8")).view(np.uint8).reshape(-1, 8)


def _pad_strings(f: _Field, pad: int) -> None:
    """Appends ``pad`` zero bytes to a string field's bytes, so every ``pad``-byte window from a row start exists."""
    padded = np.zeros(len(f.data) + pad, dtype=np.uint8)
    padded[: len(f.data)] = f.data
    f.data = padded


def _string_bytes(f: _Field, rows: np.ndarray | slice, width: int) -> np.ndarray:
    """(k, width): each selected row's value bytes from its start, zeros after its length (``f.data`` padded)."""
    starts, lengths = f.starts[rows], f.lengths[rows]
    gathered = np.lib.stride_tricks.sliding_window_view(f.data, width)[starts]
    return np.where(np.arange(width)[None, :] < lengths[:, None], gathered, 0).astype(np.uint8, copy=False)


def _group_matrix(fields: list[_Field], rows: np.ndarray | None, var_sizes: list[int], n: int, header: int,
                  fixed_width: int) -> np.ndarray:
    """The BinaryRows of rows that share one layout (``var_sizes``: var-part bytes of each field)."""
    select = slice(None) if rows is None else rows
    k = n if rows is None else len(rows)
    out = np.zeros((k, fixed_width + sum(var_sizes)), dtype=np.uint8)
    cursor = fixed_width
    for i, (f, size) in enumerate(zip(fields, var_sizes, strict=True)):
        col = header + 8 * i
        if f.valid is not None:
            out[:, (i + HEADER_BITS) // 8] |= np.where(f.valid[select], 0, 1 << ((i + HEADER_BITS) % 8)).astype(
                np.uint8)
        if f.slot is not None:
            out[:, col:col + 8] = f.slot[select]
        elif f.var is not None:  # non-compact decimal / timestamp: offset << 32 | length or nanos
            out[:, col:col + 8] = _as_le_bytes((np.uint64(cursor) << np.uint64(32)) | f.slot_low[select])
            out[:, cursor:cursor + size] = f.var[select]
        elif size == 0:  # strings of at most 7 bytes (or nulls) in this group: inline, last byte 0x80 | length
            lengths = f.lengths[select]
            out[:, col:col + MAX_INLINE_BYTES] = _string_bytes(f, select, MAX_INLINE_BYTES)
            valid = np.ones(k, dtype=bool) if f.valid is None else f.valid[select]
            out[:, col + 7] = np.where(valid, 0x80 | lengths, 0).astype(np.uint8)
        else:  # longer strings of one padded size: var part, offset << 32 | length in the slot
            lengths = f.lengths[select]
            out[:, cursor:cursor + size] = _string_bytes(f, select, size)
            out[:, col:col + 8] = _as_le_bytes((np.uint64(cursor) << np.uint64(32)) | lengths.astype(np.uint64))
        cursor += size
    return out


def _layouts(var: np.ndarray) -> tuple[np.ndarray, np.ndarray | None, list[int]]:
    """The distinct rows of ``var`` ((n, k) var-part sizes, multiples of 8), the row order that groups equal
    layouts (None: a single layout) and each group's bounds in that order. A layout is one integer (mixed radix
    over the fields' sizes), so grouping is a 1-D sort, and none at all when every row shares one layout."""
    n = len(var)
    units = var // 8
    code = np.zeros(n, dtype=np.int64)
    for j in range(units.shape[1]):
        code = code * (int(units[:, j].max()) + 1) + units[:, j]
    if n == 0 or (code == code[0]).all():
        return var[:1], None, [0, n]
    order = np.argsort(code, kind="stable")
    ordered = code[order]
    starts = np.concatenate(([0], np.flatnonzero(ordered[1:] != ordered[:-1]) + 1))
    return var[order[starts]], order, [*starts.tolist(), n]


def binary_row_groups(batch: pa.RecordBatch | pa.Table, column_indices: Sequence[int],
                      types: Sequence[DataType] | None = None) -> list[RowGroup]:
    """The BinaryRow of every row of ``batch`` over the given bucket-key columns (vectorised), as groups of
    equal-length rows (one group when no string field decides the length; else one per distinct layout, which
    is a handful for real keys). ``batch`` must hold the table schema's Arrow types; ``types`` defaults to the
    Fluss types of its fields."""
    n = batch.num_rows
    if types is None:
        types = [type_of_field(batch.schema.field(i)) for i in column_indices]
    fields = [_field_of(batch.column(i), t) for i, t in zip(column_indices, types, strict=True)]
    header = null_bits_width(len(fields))
    fixed_width = header + 8 * len(fields)
    strings = [i for i, f in enumerate(fields) if f.data is not None]
    sizes = [f.var_width for f in fields]
    if n == 0:
        return [RowGroup(None, np.zeros((0, fixed_width + sum(sizes)), dtype=np.uint8))]
    if not strings:
        return [RowGroup(None, _group_matrix(fields, None, sizes, n, header, fixed_width))]
    var = np.stack([np.where(fields[i].lengths > MAX_INLINE_BYTES, (fields[i].lengths + 7) & ~7, 0)
                    for i in strings], axis=1)
    for i in strings:
        _pad_strings(fields[i], max(int(var[:, strings.index(i)].max()), MAX_INLINE_BYTES))
    layouts, order, bounds = _layouts(var)
    groups = []
    for g, layout in enumerate(layouts):
        rows = None if order is None else order[bounds[g]:bounds[g + 1]]
        group_sizes = list(sizes)
        for j, i in enumerate(strings):
            group_sizes[i] = int(layout[j])
        groups.append(RowGroup(rows, _group_matrix(fields, rows, group_sizes, n, header, fixed_width)))
    return groups


def encode_binary_rows(batch: pa.RecordBatch | pa.Table, column_indices: Sequence[int],
                       types: Sequence[DataType] | None = None) -> EncodedKeys:
    """:func:`binary_row_groups` as the rows of ``batch`` in order (a matrix when they all have one length)."""
    groups = binary_row_groups(batch, column_indices, types)
    n = batch.num_rows
    if len(groups) == 1:
        return EncodedKeys(n, matrix=groups[0].matrix)
    lengths = np.zeros(n, dtype=np.int64)
    for g in groups:
        lengths[g.rows] = g.matrix.shape[1]
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = np.zeros(int(offsets[-1]), dtype=np.uint8)
    for g in groups:
        width = g.matrix.shape[1]
        data[(offsets[g.rows][:, None] + np.arange(width)).reshape(-1)] = g.matrix.reshape(-1)
    return EncodedKeys(n, data=data, offsets=offsets)


def encode_binary_rows_list(batch: pa.RecordBatch | pa.Table, column_indices: Sequence[int]) -> list[bytes]:
    """:func:`encode_binary_rows` as a list of bytes (for tests and small batches)."""
    return encode_binary_rows(batch, column_indices).to_list()


__all__ = [
    "PAIMON_HASH_SEED",
    "encode_binary_row",
    "RowGroup",
    "binary_row_groups",
    "encode_binary_rows",
    "encode_binary_rows_list",
    "fixed_part_width",
    "is_compact",
    "java_big_integer_bytes",
    "null_bits_width",
    "paimon_type_text",
]
