"""Schema-aware JSON rows: decoding request rows into Arrow, with errors that name row, column and reason.

A row is a JSON object keyed by column name. Values per Fluss type (``null`` is null everywhere)::

    BOOLEAN                 true / false
    TINYINT..BIGINT         a JSON integer, or a base-10 string ("9007199254740993": exact beyond 2^53)
    FLOAT, DOUBLE           a JSON number, or "NaN", "Infinity", "-Infinity"
    CHAR(n), STRING         a string (CHAR(n): at most n characters)
    DECIMAL(p, s)           a base-10 string ("12.30", exact) or a JSON number; must fit p and s unrounded
    DATE                    "2026-01-31"
    TIME(p)                 "12:34:56.789"
    TIMESTAMP(p)            a zone-free ISO-8601 string "2026-01-31T12:34:56.789" (or with a space), or
                            epoch milliseconds
    TIMESTAMP_LTZ(p)        an ISO-8601 string with a zone ("...Z", "+02:00"), or epoch milliseconds
    BINARY(n), BYTES        a base64 string (BINARY(n): exactly n bytes)

Fractional seconds finer than the column's precision are refused, not rounded. A row may not name a column the
table does not have, and must give every NOT NULL column it writes (for an append or upsert: every NOT NULL
column; for a delete: the primary key; for a partial update: the primary key and the NOT NULL target columns).

The work is column-at-a-time where it can be: values are gathered per column, each column is built with one
``pa.array`` call after a type census; per-value Python runs for the types JSON cannot carry natively (decimal
text, temporal text, base64) and to locate an offending row once a column has failed.
"""

from __future__ import annotations

import base64
import binascii
import datetime as _dt
import decimal
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from operator import itemgetter

import pyarrow as pa
import pyarrow.compute as pc

from fluss.types import (
    BIGINT,
    BINARY,
    BOOLEAN,
    BYTES,
    CHAR,
    DATE,
    DECIMAL,
    DOUBLE,
    FLOAT,
    INT,
    SMALLINT,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMP_LTZ,
    TINYINT,
    Column,
    RowSchema,
)

_INT_RANGES = {TINYINT: (-(2**7), 2**7 - 1), SMALLINT: (-(2**15), 2**15 - 1), INT: (-(2**31), 2**31 - 1),
               BIGINT: (-(2**63), 2**63 - 1)}
_INT_TEXT = re.compile(r"^[+-]?\d{1,20}$")
_FLOAT_WORDS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_TIME = re.compile(r"^(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?$")
_TIMESTAMP = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?"
                        r"(Z|z|[+-]\d{2}(?::?\d{2})?)?$")
_UNIT_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
_EPOCH_ORDINAL = _dt.date(1970, 1, 1).toordinal()
_MISSING = object()
_SKIP = object()  # a value of a row that is not an object (already reported)


@dataclass(frozen=True)
class RowError:
    """One bad value: the row's index in the request, the column (None: the row as a whole) and why."""

    row: int
    column: str | None
    reason: str

    def to_json(self) -> dict:
        return {"row": self.row, "column": self.column, "reason": self.reason}

    def __str__(self) -> str:
        where = f"row {self.row}" + (f", column '{self.column}'" if self.column else "")
        return f"{where}: {self.reason}"


class RowsInvalid(Exception):
    """The rows of a request do not fit the table; ``errors`` lists the first few, in row order."""

    MAX_REPORTED = 20

    def __init__(self, errors: list[RowError]) -> None:
        self.errors = sorted(errors, key=lambda e: e.row)[: self.MAX_REPORTED]
        more = "" if len(errors) <= self.MAX_REPORTED else f" (and {len(errors) - self.MAX_REPORTED} more)"
        super().__init__("; ".join(str(e) for e in self.errors) + more)


class _ValueError(Exception):
    pass


def decode_rows(rows: Sequence[object], schema: RowSchema, columns: Sequence[str], required: set[str],
                row_numbers: Sequence[int] | None = None, ignored: Sequence[str] = ()) -> pa.RecordBatch:
    """Arrow data of ``columns`` (in that order, with the table's Arrow types) from JSON row objects.

    ``required`` are the columns every row must give with a non-null value; ``ignored`` are columns a row may
    name that are not decoded (a delete's non-key columns). ``row_numbers`` are the rows' indices in the
    request (for error messages); by default their position in ``rows``.

    Raises:
        RowsInvalid: naming each bad row, column and reason (nothing is returned for a partly bad request).
    """
    numbers = list(row_numbers) if row_numbers is not None else list(range(len(rows)))
    known = set(schema.column_names)
    wanted = set(columns) | set(ignored)
    errors: list[RowError] = []
    objects = all(type(row) is dict for row in rows)
    fine = objects and set(chain.from_iterable(rows)) <= wanted  # every row names only columns it may
    for i, row in enumerate(() if fine else rows):
        if not isinstance(row, dict):
            errors.append(RowError(numbers[i], None, f"a row must be a JSON object, got {_kind(row)}"))
            continue
        extra = row.keys() - known
        if extra:
            name = sorted(extra)[0]
            errors.append(RowError(numbers[i], name, f"the table has no column '{name}' "
                                   f"(columns: {', '.join(schema.column_names)})"))
        unexpected = (row.keys() & known) - wanted
        if unexpected:
            name = sorted(unexpected)[0]
            errors.append(RowError(numbers[i], name, "this operation does not write the column (it is not among "
                                   f"the columns written: {', '.join(columns)})"))
    arrays = []
    for name, values in zip(columns, _transpose(rows, columns), strict=True):
        try:
            arrays.append(_column(values, schema.column(name), name in required, numbers))
        except RowsInvalid as e:
            errors.extend(e.errors)
    if errors:
        raise RowsInvalid(errors)
    fields = [schema.to_arrow().field(name) for name in columns]
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))


def _transpose(rows: Sequence[object], columns: Sequence[str]) -> list[list]:
    """The values of each column: by ``itemgetter`` (C loops) when every row is an object with every column,
    else row by row with missing values marked."""
    if columns and all(type(row) is dict for row in rows):
        getter = itemgetter(*columns)
        try:
            if len(columns) == 1:
                return [list(map(getter, rows))]
            return [list(col) for col in zip(*map(getter, rows), strict=True)] if rows else [[] for _ in columns]
        except KeyError:
            pass
    return [[row.get(name, _MISSING) if isinstance(row, dict) else _SKIP for row in rows] for name in columns]


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _column(values: list, col: Column, required: bool, numbers: list[int]) -> pa.Array:
    t = col.data_type
    converter = _CONVERTERS[t.root]
    if None not in values and _MISSING not in values and _SKIP not in values:
        return converter(values, col, numbers)
    if not (required or not t.nullable) and _MISSING not in values and _SKIP not in values:
        return converter(values, col, numbers)  # nulls of a nullable column: nothing to check
    errors: list[RowError] = []
    out: list = []
    for i, v in enumerate(values):
        if v is _SKIP:
            out.append(None)
        elif v is _MISSING or v is None:
            if required or not t.nullable:
                errors.append(RowError(numbers[i], col.name, "is missing" if v is _MISSING else
                                       f"is null but the column is {t}"))
            out.append(None)
        else:
            out.append(v)
    if errors:
        raise RowsInvalid(errors)
    return converter(out, col, numbers)


def _fail(values: list, col: Column, numbers: list[int], check) -> RowsInvalid:
    """The error of a failed column build: runs ``check`` on every value to name the bad rows."""
    errors = []
    for i, v in enumerate(values):
        if v is None:
            continue
        try:
            check(v)
        except _ValueError as e:
            errors.append(RowError(numbers[i], col.name, str(e)))
            if len(errors) >= RowsInvalid.MAX_REPORTED:
                break
    if not errors:  # the column failed as a whole
        errors.append(RowError(numbers[0] if numbers else 0, col.name, f"cannot be written as {col.data_type}"))
    return RowsInvalid(errors)


def _per_value(values: list, col: Column, numbers: list[int], convert) -> list:
    out = []
    errors = []
    for i, v in enumerate(values):
        if v is None:
            out.append(None)
            continue
        try:
            out.append(convert(v))
        except _ValueError as e:
            errors.append(RowError(numbers[i], col.name, str(e)))
            out.append(None)
    if errors:
        raise RowsInvalid(errors)
    return out


# ------------------------------------------------------------------------------------------ per type

def _boolean(values: list, col: Column, numbers: list[int]) -> pa.Array:
    if not set(map(type, values)) <= {bool, type(None)}:
        def check(v):
            if not isinstance(v, bool):
                raise _ValueError(f"expects BOOLEAN (true or false), got {_kind(v)}")
        raise _fail(values, col, numbers, check)
    return pa.array(values, pa.bool_())


def _integer(values: list, col: Column, numbers: list[int]) -> pa.Array:
    root = col.data_type.root
    lo, hi = _INT_RANGES[root]

    def convert(v):
        if isinstance(v, bool) or not isinstance(v, int | str):
            raise _ValueError(f"expects {root} (an integer or a base-10 string), got {_kind(v)}")
        if isinstance(v, str):
            if not _INT_TEXT.match(v):
                raise _ValueError(f"expects {root}, the string {_short(v)} is not a base-10 integer")
            v = int(v)
        if not lo <= v <= hi:
            raise _ValueError(f"value {v} is out of range for {root} [{lo}, {hi}]")
        return v

    types = set(map(type, values))
    if types <= {int, type(None)}:
        try:
            return pa.array(values, col.data_type.to_arrow())
        except (pa.ArrowInvalid, OverflowError):
            raise _fail(values, col, numbers, convert) from None
    return pa.array(_per_value(values, col, numbers, convert), col.data_type.to_arrow())


def _floating(values: list, col: Column, numbers: list[int]) -> pa.Array:
    root = col.data_type.root

    def convert(v):
        if isinstance(v, str) and v in _FLOAT_WORDS:
            return _FLOAT_WORDS[v]
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise _ValueError(f"expects {root} (a number, or \"NaN\", \"Infinity\", \"-Infinity\"), got {_kind(v)}")
        f = float(v)
        if isinstance(v, int) and int(f) != v:
            raise _ValueError(f"integer {v} is not exactly representable as {root}")
        if root == FLOAT and math.isfinite(f) and abs(f) > 3.4028234663852886e38:
            raise _ValueError(f"value {v} overflows FLOAT")
        return f

    if set(map(type, values)) <= {float, type(None)}:
        arr = pa.array(values, pa.float64())
        if root == FLOAT:
            if any(v is not None and math.isfinite(v) and abs(v) > 3.4028234663852886e38 for v in values):
                raise _fail(values, col, numbers, convert)
            arr = arr.cast(pa.float32(), safe=False)
        return arr
    return pa.array(_per_value(values, col, numbers, convert), pa.float64()).cast(col.data_type.to_arrow(),
                                                                                   safe=False)


def _string(values: list, col: Column, numbers: list[int]) -> pa.Array:
    t = col.data_type

    def check(v):
        if not isinstance(v, str):
            raise _ValueError(f"expects {t.type_text()} (a string), got {_kind(v)}")
        if t.root == CHAR and len(v) > t.length:
            raise _ValueError(f"has {len(v)} characters, more than {t.type_text()} allows")

    if not set(map(type, values)) <= {str, type(None)}:
        raise _fail(values, col, numbers, check)
    arr = pa.array(values, pa.string())
    if t.root == CHAR:
        longest = pc.max(pc.utf8_length(arr)).as_py()
        if longest is not None and longest > t.length:
            raise _fail(values, col, numbers, check)
    return arr


def _decimal(values: list, col: Column, numbers: list[int]) -> pa.Array:
    t = col.data_type
    quantum = decimal.Decimal(1).scaleb(-t.scale)
    limit = decimal.Decimal(10) ** (t.precision - t.scale)
    text = f"DECIMAL({t.precision}, {t.scale})"

    def convert(v):
        if isinstance(v, bool) or not isinstance(v, int | float | str):
            raise _ValueError(f"expects {text} (a base-10 string or a number), got {_kind(v)}")
        try:
            d = decimal.Decimal(v if isinstance(v, str | int) else repr(v))
        except decimal.InvalidOperation:
            raise _ValueError(f"expects {text}, {_short(v)} is not a decimal number") from None
        if not d.is_finite():
            raise _ValueError(f"expects {text}, got {_short(v)}")
        try:
            q = d.quantize(quantum, context=decimal.Context(prec=80, traps=[decimal.Inexact]))
        except decimal.Inexact:
            raise _ValueError(f"value {_short(v)} has more than {t.scale} fractional digits ({text})") from None
        if abs(q) >= limit:
            raise _ValueError(f"value {_short(v)} needs more than {t.precision} digits of precision ({text})")
        return q

    return pa.array(_per_value(values, col, numbers, convert), t.to_arrow())


def _date(values: list, col: Column, numbers: list[int]) -> pa.Array:
    def convert(v):
        if not isinstance(v, str):
            raise _ValueError(f"expects DATE (an ISO-8601 string like \"2026-01-31\"), got {_kind(v)}")
        try:
            if len(v) != 10:
                raise ValueError
            return _dt.date.fromisoformat(v).toordinal() - _EPOCH_ORDINAL
        except ValueError:
            raise _ValueError(f"expects DATE like \"2026-01-31\", got {_short(v)}") from None

    return pa.array(_per_value(values, col, numbers, convert), pa.int32()).cast(pa.date32())


def _fraction(digits: str | None, precision: int, what: str, unit: str) -> int:
    """Fractional seconds in ``unit``; digits beyond ``precision`` must be zeros."""
    if not digits:
        return 0
    if any(c != "0" for c in digits[precision:]):
        raise _ValueError(f"{what} carries fractional seconds finer than its precision {precision}")
    nanos = int(digits.ljust(9, "0")[:9])
    return nanos // (1_000_000_000 // _UNIT_PER_SECOND[unit])


def _time(values: list, col: Column, numbers: list[int]) -> pa.Array:
    t = col.data_type
    unit = t.time_unit
    per_second = _UNIT_PER_SECOND[unit]

    def convert(v):
        m = _TIME.match(v) if isinstance(v, str) else None
        if m is None:
            raise _ValueError(f"expects {t.type_text()} (a string like \"12:34:56.789\"), got {_short(v)}")
        h, mi, s = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
        if h > 23 or mi > 59 or s > 59:
            raise _ValueError(f"{_short(v)} is not a time of day")
        return (h * 3600 + mi * 60 + s) * per_second + _fraction(m.group(4), t.precision, _short(v), unit)

    ints = _per_value(values, col, numbers, convert)
    base = pa.int32() if unit in ("s", "ms") else pa.int64()
    return pa.array(ints, base).cast(t.to_arrow())


def _timestamp(values: list, col: Column, numbers: list[int]) -> pa.Array:
    t = col.data_type
    unit = t.time_unit
    per_second = _UNIT_PER_SECOND[unit]
    ltz = t.root == TIMESTAMP_LTZ
    expected = ("TIMESTAMP_LTZ (an ISO-8601 string with a zone, or epoch milliseconds)" if ltz
                else "TIMESTAMP (a zone-free ISO-8601 string, or epoch milliseconds)")

    def convert(v):
        if isinstance(v, int) and not isinstance(v, bool):
            if unit == "s" and v % 1000:
                raise _ValueError(f"{v} ms carries fractional seconds finer than precision {t.precision}")
            scaled = v * per_second // 1000 if per_second >= 1000 else v // 1000
            if t.precision < 3 and v % (10 ** (3 - t.precision)):
                raise _ValueError(f"{v} ms carries fractional seconds finer than precision {t.precision}")
            return scaled
        m = _TIMESTAMP.match(v) if isinstance(v, str) else None
        if m is None:
            raise _ValueError(f"expects {expected}, got {_short(v) if isinstance(v, str) else _kind(v)}")
        zone = m.group(8)
        if ltz and zone is None:
            raise _ValueError(f"expects {expected}: {_short(v)} has no zone")
        if not ltz and zone is not None:
            raise _ValueError(f"expects {expected}: {_short(v)} carries a zone")
        try:
            day = _dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3))).toordinal() - _EPOCH_ORDINAL
        except ValueError:
            raise _ValueError(f"{_short(v)} is not a valid date") from None
        h, mi, s = int(m.group(4)), int(m.group(5)), int(m.group(6) or 0)
        if h > 23 or mi > 59 or s > 59:
            raise _ValueError(f"{_short(v)} is not a valid time of day")
        seconds = day * 86400 + h * 3600 + mi * 60 + s - _zone_seconds(zone)
        return seconds * per_second + _fraction(m.group(7), t.precision, _short(v), unit)

    ints = _per_value(values, col, numbers, convert)
    try:
        return pa.array(ints, pa.int64()).cast(t.to_arrow())
    except (pa.ArrowInvalid, OverflowError):
        raise _fail(values, col, numbers, convert) from None


def _zone_seconds(zone: str | None) -> int:
    if zone is None or zone in ("Z", "z"):
        return 0
    sign = -1 if zone[0] == "-" else 1
    digits = zone[1:].replace(":", "")
    return sign * (int(digits[:2]) * 3600 + int(digits[2:4] or 0) * 60)


def _binary(values: list, col: Column, numbers: list[int]) -> pa.Array:
    t = col.data_type

    def convert(v):
        if not isinstance(v, str):
            raise _ValueError(f"expects {t.type_text()} (a base64 string), got {_kind(v)}")
        try:
            data = base64.b64decode(v, validate=True)
        except (binascii.Error, ValueError):
            raise _ValueError(f"expects {t.type_text()}, the string is not valid base64") from None
        if t.root == BINARY and len(data) != t.length:
            raise _ValueError(f"expects {t.type_text()}, got {len(data)} bytes")
        return data

    return pa.array(_per_value(values, col, numbers, convert), t.to_arrow())


def _short(value: object) -> str:
    text = repr(value) if not isinstance(value, str) else f'"{value}"'
    return text if len(text) <= 60 else text[:57] + "..."


_CONVERTERS = {
    BOOLEAN: _boolean, TINYINT: _integer, SMALLINT: _integer, INT: _integer, BIGINT: _integer,
    FLOAT: _floating, DOUBLE: _floating, CHAR: _string, STRING: _string, DECIMAL: _decimal, DATE: _date,
    TIME: _time, TIMESTAMP: _timestamp, TIMESTAMP_LTZ: _timestamp, BINARY: _binary, BYTES: _binary,
}
