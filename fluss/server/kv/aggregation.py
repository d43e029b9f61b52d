"""Field aggregate functions of the ``aggregation`` merge engine (``fields.<col>.agg``).

An aggregate function folds the value of one column of an incoming row into the stored value of that
column: ``agg(accumulator, value) -> new accumulator``. The first row of a key is stored as it is; every
later upsert of the key calls the function of each non-key column with the stored value and the new one.
Values are the *physical* Python values the merge engine works on (see :mod:`fluss.server.kv.merge`):
integers (also for DATE / TIME / TIMESTAMP / TIMESTAMP_LTZ, in the column's Arrow unit), floats,
``decimal.Decimal``, ``str``, ``bytes``, ``bool``, or ``None`` for null.

Functions (Fluss's names; null handling as in Fluss / Paimon: nulls are skipped unless stated)::

    sum, product          numeric columns (TINYINT..BIGINT wrap around like Java, FLOAT in float32,
                          DECIMAL rounded half-up to the scale, null if the precision overflows)
    max, min              numeric, DECIMAL, CHAR/STRING, DATE, TIME, TIMESTAMP, TIMESTAMP_LTZ
    last_value            the new value, even null
    last_value_ignore_nulls   the new value unless it is null (default for non-key columns)
    first_value           the stored value, even null
    first_value_ignore_nulls  the stored value unless it is null
    listagg, string_agg   CHAR/STRING: stored || delimiter || new (``fields.<col>.listagg.delimiter``,
                          default ","; string_agg reads the same option and ``fields.<col>.string_agg.delimiter``)
    bool_and, bool_or     BOOLEAN
"""

from __future__ import annotations

import decimal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from fluss.errors import ErrorCode, FlussError
from fluss.types import (
    BIGINT,
    BOOLEAN,
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
    DataType,
)

SUM = "sum"
PRODUCT = "product"
MAX = "max"
MIN = "min"
LAST_VALUE = "last_value"
LAST_VALUE_IGNORE_NULLS = "last_value_ignore_nulls"
FIRST_VALUE = "first_value"
FIRST_VALUE_IGNORE_NULLS = "first_value_ignore_nulls"
LISTAGG = "listagg"
STRING_AGG = "string_agg"
BOOL_AND = "bool_and"
BOOL_OR = "bool_or"

#: The function a non-key column gets when ``fields.<col>.agg`` is not set.
DEFAULT_FUNCTION = LAST_VALUE_IGNORE_NULLS
DEFAULT_LISTAGG_DELIMITER = ","

_INT_BITS = {TINYINT: 8, SMALLINT: 16, INT: 32, BIGINT: 64}
_NUMERIC = frozenset({TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DECIMAL})
_ORDERED = _NUMERIC | STRING_ROOTS | {DATE, TIME, TIMESTAMP, TIMESTAMP_LTZ}

Agg = Callable[[Any, Any], Any]


def _wrap(bits: int) -> Callable[[int], int]:
    half = 1 << (bits - 1)
    full = 1 << bits

    def wrap(v: int) -> int:
        return ((v + half) % full) - half

    return wrap


def _numeric_result(t: DataType) -> Callable[[Any], Any]:
    """Brings an exact arithmetic result back into the column's type."""
    if t.root in _INT_BITS:
        return _wrap(_INT_BITS[t.root])
    if t.root == FLOAT:
        return lambda v: float(np.float32(v))
    if t.root == DOUBLE:
        return float
    quantum = decimal.Decimal(1).scaleb(-t.scale)
    limit = decimal.Decimal(10) ** (t.precision - t.scale)
    ctx = decimal.Context(prec=200)

    def to_decimal(v: decimal.Decimal) -> decimal.Decimal | None:
        q = v.quantize(quantum, rounding=decimal.ROUND_HALF_UP, context=ctx)
        return None if abs(q) >= limit else q

    return to_decimal


def _skip_nulls(fn: Callable[[Any, Any], Any]) -> Agg:
    def agg(acc: Any, value: Any) -> Any:
        if value is None:
            return acc
        if acc is None:
            return value
        return fn(acc, value)

    return agg


@dataclass(frozen=True)
class FieldAggregator:
    """The aggregate function of one column."""

    name: str
    column: str
    agg: Agg


def _check(column: str, t: DataType, name: str, allowed: frozenset[str] | set[str], what: str) -> None:
    if t.root not in allowed:
        raise FlussError(
            f"aggregate function '{name}' of column '{column}' needs {what}, but the column is {t}",
            ErrorCode.INVALID_CONFIG_EXCEPTION,
        )


def create_aggregator(
    name: str, column: str, t: DataType, delimiter: str = DEFAULT_LISTAGG_DELIMITER
) -> FieldAggregator:
    """The aggregator ``name`` for a column of type ``t``.

    Raises:
        FlussError: INVALID_CONFIG_EXCEPTION naming the column for an unknown function or a column type
            the function does not accept.
    """
    fn = name.strip().lower()
    agg: Agg
    if fn in (SUM, PRODUCT):
        _check(
            column, t, fn, _NUMERIC, "a numeric type (TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DECIMAL)"
        )
        fix = _numeric_result(t)
        if fn == SUM:
            agg = _skip_nulls(lambda a, b: fix(a + b))
        else:
            agg = _skip_nulls(lambda a, b: fix(a * b))
    elif fn in (MAX, MIN):
        _check(
            column,
            t,
            fn,
            _ORDERED,
            "a comparable type (numeric, DECIMAL, CHAR, STRING, DATE, TIME, TIMESTAMP)",
        )
        agg = _skip_nulls(max if fn == MAX else min)
        if t.root in (FLOAT, DOUBLE):
            agg = _skip_nulls(_float_max if fn == MAX else _float_min)
    elif fn == LAST_VALUE:
        agg = _last_value
    elif fn == LAST_VALUE_IGNORE_NULLS:
        agg = _last_value_ignore_nulls
    elif fn == FIRST_VALUE:
        agg = _first_value
    elif fn == FIRST_VALUE_IGNORE_NULLS:
        agg = _first_value_ignore_nulls
    elif fn in (LISTAGG, STRING_AGG):
        _check(column, t, fn, STRING_ROOTS, "CHAR or STRING")
        agg = _skip_nulls(lambda a, b: a + delimiter + b)
    elif fn in (BOOL_AND, BOOL_OR):
        _check(column, t, fn, {BOOLEAN}, "BOOLEAN")
        agg = _skip_nulls((lambda a, b: a and b) if fn == BOOL_AND else (lambda a, b: a or b))
    else:
        raise FlussError(
            f"unknown aggregate function '{name}' for column '{column}' (supported: {', '.join(FUNCTIONS)})",
            ErrorCode.INVALID_CONFIG_EXCEPTION,
        )
    return FieldAggregator(fn, column, agg)


def _float_max(a: float, b: float) -> float:
    # NaN is larger than every number (Java's Double.compare order).
    if a != a:
        return a
    if b != b:
        return b
    return b if b > a else a


def _float_min(a: float, b: float) -> float:
    if a != a:
        return b
    if b != b:
        return a
    return b if b < a else a


def _last_value(acc: Any, value: Any) -> Any:
    return value


def _last_value_ignore_nulls(acc: Any, value: Any) -> Any:
    return acc if value is None else value


def _first_value(acc: Any, value: Any) -> Any:
    return acc


def _first_value_ignore_nulls(acc: Any, value: Any) -> Any:
    return value if acc is None else acc


FUNCTIONS = (
    SUM, PRODUCT, MAX, MIN, LAST_VALUE, LAST_VALUE_IGNORE_NULLS, FIRST_VALUE, FIRST_VALUE_IGNORE_NULLS,
    LISTAGG, STRING_AGG, BOOL_AND, BOOL_OR,
)  # fmt: skip

__all__ = [
    "DEFAULT_FUNCTION",
    "DEFAULT_LISTAGG_DELIMITER",
    "FUNCTIONS",
    "FieldAggregator",
    "create_aggregator",
]
