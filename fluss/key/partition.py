"""Partition names: how the values of a row's partition-key columns name the partition it belongs to.

Fluss style: the name is the partition-key values as strings, in partition-key order, joined by ``$``
(one key: just the value, e.g. ``2024-01-01`` or ``US``; two keys: ``US$2024-01-01``). A partition spec is
the mapping ``{key: value string}``.

Each value becomes a string the way Fluss's Java ``PartitionUtils.convertValueOfType`` does it, so a
partition created by Flink/Java and one created by this client have the same name::

    CHAR, STRING          the string itself
    BOOLEAN               true / false
    TINYINT..BIGINT       decimal digits (with '-' if negative)
    FLOAT, DOUBLE         Java Float/Double.toString with '.' replaced by '_' (1.5 -> 1_5, 1.0E10 -> 1_0E10),
                          NaN / Inf / -Inf
    BINARY, BYTES         lower-case hex
    DATE                  yyyy-MM-dd
    TIME                  HH-mm-ss_SSS (milliseconds of the day)
    TIMESTAMP(_LTZ)       yyyy-MM-dd-HH-mm-ss_ followed by the fraction of the second without trailing zeros
                          (e.g. 2024-01-01-12-30-00_ or 2024-01-01-12-30-00_123); LTZ in UTC

A value must be non-empty, at most 200 characters, not ``.`` or ``..``, and use only ``A-Z a-z 0-9 _ . -``
(it is part of directory names); otherwise FlussError(PARTITION_SPEC_INVALID_EXCEPTION) names the key. A null
partition value is rejected the same way.

:func:`partition_names_of` is vectorised: it formats each *distinct* value of each partition column once
(partition columns have few distinct values) and joins the columns with an Arrow kernel.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fluss.errors import ErrorCode, FlussError
from fluss.types import (
    BINARY_ROOTS,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INTEGER_ROOTS,
    STRING_ROOTS,
    TIME,
    TIMESTAMP,
    TIMESTAMP_LTZ,
    UNIT_DIGITS,
    DataType,
    type_of_field,
)

PARTITION_NAME_SEPARATOR = "$"
MAX_PARTITION_VALUE_LENGTH = 200
_VALID_VALUE = re.compile(r"^[A-Za-z0-9_.\-]+$")


def _invalid(message: str) -> FlussError:
    return FlussError(message, ErrorCode.PARTITION_SPEC_INVALID_EXCEPTION)


def validate_partition_value(key: str, value: object) -> str:
    """Check one partition value string; returns it."""
    if value is None:
        raise _invalid(f"partition key '{key}' has a null value")
    if not isinstance(value, str):
        raise _invalid(f"partition key '{key}' value {value!r} is not a string")
    if not value:
        raise _invalid(f"partition key '{key}' has an empty value")
    if value in (".", ".."):
        raise _invalid(f"partition key '{key}' value '{value}' is not allowed")
    if len(value) > MAX_PARTITION_VALUE_LENGTH:
        raise _invalid(
            f"partition key '{key}' value '{value[:40]}...' is longer than {MAX_PARTITION_VALUE_LENGTH} characters"
        )
    if not _VALID_VALUE.match(value):
        raise _invalid(
            f"partition key '{key}' value '{value}' may only contain ASCII letters, digits, '_', '.' and '-'"
        )
    return value


def partition_spec_to_name(spec: Mapping[str, str], partition_keys: Sequence[str]) -> str:
    """The partition name of a spec (all keys present, no other key, valid values)."""
    if not partition_keys:
        raise _invalid("the table is not partitioned (no partition keys)")
    extra = [k for k in spec if k not in partition_keys]
    if extra:
        raise _invalid(
            f"partition spec has unknown key(s) {', '.join(repr(k) for k in extra)} "
            f"(partition keys: {', '.join(partition_keys)})"
        )
    values = []
    for key in partition_keys:
        if key not in spec:
            raise _invalid(f"partition spec is missing partition key '{key}'")
        values.append(validate_partition_value(key, spec[key]))
    return PARTITION_NAME_SEPARATOR.join(values)


def name_to_spec(name: str, partition_keys: Sequence[str]) -> dict[str, str]:
    """The spec of a partition name (inverse of :func:`partition_spec_to_name`)."""
    if not partition_keys:
        raise _invalid("the table is not partitioned (no partition keys)")
    values = name.split(PARTITION_NAME_SEPARATOR)
    if len(values) != len(partition_keys):
        raise _invalid(
            f"partition name '{name}' has {len(values)} value(s) but the table has "
            f"{len(partition_keys)} partition key(s) ({', '.join(partition_keys)})"
        )
    return {key: validate_partition_value(key, v) for key, v in zip(partition_keys, values, strict=True)}


# ===================================================================================== value formatting


def _java_float_string(value: float, single: bool) -> str:
    """Java's Float/Double.toString for a finite non-NaN value (shortest round-trip digits)."""
    if value == 0.0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sci = np.format_float_scientific(
        np.float32(value) if single else np.float64(value), unique=True, trim="-"
    )
    mantissa, exponent = sci.split("e")
    negative = mantissa.startswith("-")
    digits = mantissa.lstrip("-").replace(".", "")
    exp = int(exponent)
    sign = "-" if negative else ""
    if 1e-3 <= abs(value) < 1e7:
        if exp >= 0:
            whole = digits[: exp + 1].ljust(exp + 1, "0")
            frac = digits[exp + 1 :] or "0"
        else:
            whole = "0"
            frac = "0" * (-exp - 1) + digits
        return f"{sign}{whole}.{frac}"
    frac = digits[1:] or "0"
    return f"{sign}{digits[0]}.{frac}E{exp}"


def _format_float(value: float, single: bool) -> str:
    if math.isnan(value):
        return "NaN"
    if single:
        value = float(np.float32(value))
    if math.isinf(value):
        return "Inf" if value > 0 else "-Inf"
    return _java_float_string(value, single).replace(".", "_")


def _format_timestamp(value_in_unit: int, unit: str) -> str:
    digits = UNIT_DIGITS[unit]
    seconds, fraction = divmod(value_in_unit, 10**digits)
    moment = _dt.datetime(1970, 1, 1) + _dt.timedelta(seconds=seconds)
    nanos = fraction * 10 ** (9 - digits)
    frac = f"{nanos:09d}".rstrip("0") if nanos else ""
    return f"{moment.year:04d}-{moment:%m-%d-%H-%M-%S}_{frac}"


def _timestamp_units(value: _dt.datetime, t: DataType) -> int:
    if value.tzinfo is not None:
        value = value.astimezone(_dt.UTC).replace(tzinfo=None)
    delta = value - _dt.datetime(1970, 1, 1)
    nanos = ((delta.days * 86400 + delta.seconds) * 10**6 + delta.microseconds) * 1000
    nanos += int(getattr(value, "nanosecond", 0))
    return nanos // 10 ** (9 - UNIT_DIGITS[t.time_unit])


def partition_value_to_string(value: object, t: DataType) -> str:
    """The partition-name form of one Python value of type ``t`` (unvalidated)."""
    root = t.root
    if root in STRING_ROOTS:
        return str(value)
    if root == BOOLEAN:
        return "true" if value else "false"
    if root in INTEGER_ROOTS:
        return str(int(value))  # type: ignore[call-overload]
    if root in (FLOAT, DOUBLE):
        return _format_float(float(value), single=root == FLOAT)  # type: ignore[arg-type]
    if root in BINARY_ROOTS:
        return bytes(value).hex()  # type: ignore[arg-type]
    if root == DATE:
        return f"{value.year:04d}-{value.month:02d}-{value.day:02d}"  # type: ignore[union-attr]
    if root == TIME:
        v: _dt.time = value  # type: ignore[assignment]
        return f"{v.hour:02d}-{v.minute:02d}-{v.second:02d}_{v.microsecond // 1000:03d}"
    if root in (TIMESTAMP, TIMESTAMP_LTZ):
        return _format_timestamp(_timestamp_units(value, t), t.time_unit)  # type: ignore[arg-type]
    raise _invalid(f"type {t} cannot be a partition key")


def _format_distinct(values: pa.Array, t: DataType) -> list[str | None]:
    """Partition-name strings of an array of distinct values (nulls stay None)."""
    if t.root in (TIMESTAMP, TIMESTAMP_LTZ):
        unit = values.type.unit
        return [
            None if v is None else _format_timestamp(v, unit) for v in values.cast(pa.int64()).to_pylist()
        ]
    return [None if v is None else partition_value_to_string(v, t) for v in values.to_pylist()]


def partition_name_array(batch: pa.RecordBatch | pa.Table, partition_key_indices: Sequence[int]) -> pa.Array:
    """The partition name of every row as an Arrow string array (see :func:`partition_names_of`)."""
    if not partition_key_indices:
        raise _invalid("the table is not partitioned (no partition keys)")
    parts = []
    for i in partition_key_indices:
        field = batch.schema.field(i)
        t = type_of_field(field)
        column = batch.column(i)
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        encoded = column if pa.types.is_dictionary(column.type) else pc.dictionary_encode(column)
        names = _format_distinct(encoded.dictionary, t)
        indices = encoded.indices
        if column.null_count:
            row = int(np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))[0])
            raise _invalid(f"partition key '{field.name}' is null in row {row}")
        for name in names:
            if name is not None:
                validate_partition_value(field.name, name)
        parts.append(pc.take(pa.array(names, pa.string()), indices))
    if len(parts) == 1:
        return parts[0]
    return pc.binary_join_element_wise(*parts, PARTITION_NAME_SEPARATOR)


def partition_names_of(batch: pa.RecordBatch | pa.Table, partition_key_indices: Sequence[int]) -> list[str]:
    """The partition name of every row of ``batch`` from its partition-key columns (vectorised).

    Raises:
        FlussError: PARTITION_SPEC_INVALID_EXCEPTION naming the key for a null or invalid value.
    """
    return partition_name_array(batch, partition_key_indices).to_pylist()


__all__ = [
    "PARTITION_NAME_SEPARATOR",
    "name_to_spec",
    "partition_name_array",
    "partition_names_of",
    "partition_spec_to_name",
    "partition_value_to_string",
    "validate_partition_value",
]
