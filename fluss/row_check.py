"""Checking one user row at the call that writes it (``append``, ``upsert``, ``delete``).

The official client turns each row into its binary form inside ``append``/``upsert``, so a row that cannot be
written raises right there. This client converts rows column-at-a-time later (``fluss.row_convert``), which is
much faster, so a :class:`RowChecker` does the same checks up front, per row, and cheaply:

- shape: a dict, list or tuple; a dict names only the expected columns (an unknown one is named) and may leave
  out a nullable column, which is then null, as in the official client (a missing NOT NULL column is named); a
  list/tuple has one of the accepted lengths;
- Python types per column, with ``None`` only in nullable columns (the values accepted per type are those of
  ``fluss.row_convert``). The tuple of value types of a row is its *signature*; signatures already seen to be
  valid are remembered, so a stream of well-typed rows costs one ``tuple(map(type, ...))`` and a set lookup;
- values that a type alone does not settle: integer ranges, CHAR(n) length, BINARY(n) length, DECIMAL(p, s)
  without rounding, ints exactly representable as FLOAT/DOUBLE, FLOAT overflow, time-zone-aware datetimes for
  TIMESTAMP.

A failure raises ``FlussError`` naming the table, the call, the row, the column (with its type) and the reason.
Values of ARRAY, MAP and ROW columns are walked to every depth with the rules of ``fluss.nested_values``
(container types, ``NOT NULL`` at any level, map keys never null, ROW fields by name or position, every scalar
check above on the leaves), and a failure names the path inside the value, e.g. ``column 'attrs'
(MAP<STRING NOT NULL, ARRAY<INT>>): at attrs['k'][1]: expected int, got str 'two'``. Anything a row still fails on
when its chunk is converted makes the writer's ``flush()`` raise (see ``fluss.client.writer``).
"""

from __future__ import annotations

import datetime as _dt
import decimal
import math
from collections.abc import Callable, Mapping, Sequence
from operator import itemgetter

import numpy as np

from fluss.errors import ErrorCode, FlussError
from fluss.types import (
    ARRAY,
    BINARY,
    BOOLEAN,
    CHAR,
    DATE,
    DECIMAL,
    FLOAT,
    FLOAT_ROOTS,
    INTEGER_ROOTS,
    MAP,
    ROW,
    TIMESTAMP,
    Column,
    DataType,
    RowSchema,
)

_KNOWN_ROOTS = frozenset({BOOLEAN, *INTEGER_ROOTS, *FLOAT_ROOTS, CHAR, "STRING", BINARY, "BYTES", DECIMAL, DATE,
                          "TIME", TIMESTAMP, "TIMESTAMP_LTZ", ARRAY, MAP, ROW})
_INT_RANGE = {"TINYINT": 7, "SMALLINT": 15, "INT": 31, "BIGINT": 63}
_FLOAT32_MAX = 3.4028234663852886e38
#: Valid signatures remembered per checker (a bound, so rows of ever-changing types cannot grow it forever).
_MAX_SIGNATURES = 4096
_NoneType = type(None)


def short_repr(value: object, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _accepted(root: str) -> tuple[tuple[type, ...], tuple[type, ...], str]:
    """(accepted Python types, rejected subclasses, description) for a type root (as ``fluss.row_convert``)."""
    if root == BOOLEAN:
        return (bool, np.bool_), (), "bool"
    if root in INTEGER_ROOTS:
        return (int, np.integer), (bool, np.bool_), "int"
    if root in FLOAT_ROOTS:
        return (float, int, np.floating, np.integer), (bool, np.bool_), "float or int"
    if root in (CHAR, "STRING"):
        return (str,), (), "str"
    if root in (BINARY, "BYTES"):
        return (bytes, bytearray, memoryview), (), "bytes"
    if root == DECIMAL:
        return (decimal.Decimal, int, np.integer), (bool, np.bool_), "decimal.Decimal or int"
    if root == DATE:
        return (_dt.date,), (_dt.datetime,), "datetime.date"
    if root == "TIME":
        return (_dt.time,), (), "datetime.time"
    if root == ARRAY:
        return (list, tuple), (), "a list or tuple"
    if root == MAP:
        return (Mapping, list, tuple), (), "a dict or a list of (key, value) pairs"
    if root == ROW:
        return (Mapping, list, tuple), (), "a dict or a list/tuple of field values"
    return (_dt.datetime,), (), "datetime.datetime"


class _ColumnRule:
    """What one column accepts: Python types (and null), plus the checks a value of a given type still needs."""

    def __init__(self, col: Column) -> None:
        self.col = col
        dtype = col.data_type
        self.root = dtype.root
        self.known = dtype.root in _KNOWN_ROOTS
        self.accepted, self.rejected, self.description = _accepted(dtype.root) if self.known else ((), (), "")
        self.nullable = dtype.nullable

    def type_problem(self, kind: type) -> str | None:
        if kind is _NoneType:
            return None if self.nullable else "null value in a NOT NULL column"
        if not self.known or (issubclass(kind, self.accepted) and not issubclass(kind, self.rejected)):
            return None
        return f"expected {self.description}, got {kind.__name__}"

    def int_range(self, kind: type) -> tuple[int, int] | None:
        """(low, high) that a value of Python type ``kind`` must be checked against, if any."""
        if self.root not in INTEGER_ROOTS or kind is _NoneType:
            return None
        bits = _INT_RANGE[self.root]
        if issubclass(kind, np.integer) and np.iinfo(kind).bits <= bits + (not np.iinfo(kind).min):
            return None  # every value of this numpy type fits
        return -(1 << bits), (1 << bits) - 1

    def value_check(self, kind: type):
        """A function giving what is wrong with a value of type ``kind`` (None: nothing), if one is needed."""
        if kind is _NoneType or not self.known:
            return None
        dtype = self.col.data_type
        root = self.root
        if root in FLOAT_ROOTS:
            if issubclass(kind, int | np.integer):
                return lambda v: None if float(v) == v else f"int {short_repr(v)} cannot be stored exactly as {root}"
            if root == FLOAT:
                return lambda v: None if abs(v) <= _FLOAT32_MAX or not math.isfinite(v) else \
                    f"value {short_repr(v)} overflows FLOAT"
            return None
        if root == CHAR:
            n = dtype.length
            return lambda v: None if len(v) <= n else f"string of {len(v)} characters is longer than {n}"
        if root == BINARY:
            n = dtype.length
            return lambda v: None if len(v) == n else f"BINARY({n}) needs exactly {n} bytes, got {len(v)}"
        if root == DECIMAL:
            p, s, text = dtype.precision, dtype.scale, dtype.type_text()
            return lambda v: _decimal_problem(v, p, s, text)
        if root == TIMESTAMP:
            return lambda v: None if v.tzinfo is None else (
                "time-zone-aware datetime given for TIMESTAMP (without time zone); pass a naive datetime, "
                "or use a TIMESTAMP_LTZ column")
        if dtype.is_nested:
            walk = _nested_walker(dtype)
            name = self.col.name

            def nested(v, walk=walk, name=name) -> str | None:
                problem = walk(v)
                return None if problem is None else f"at {name}{problem[0]}: {problem[1]}"

            return nested
        return None


# ------------------------------------------------------------------------------ values of nested columns

#: A walker gives (path inside the value, what is wrong) for a non-null value of its type, or None.
_Walker = Callable[[object], "tuple[str, str] | None"]
_NOT_NULL = "null value where NOT NULL is declared"


def _child(dtype: DataType) -> _Walker:
    """A walker for a child value, which may be null (refused where the child type is NOT NULL)."""
    walk = _nested_walker(dtype)
    if dtype.nullable:
        return lambda v: None if v is None else walk(v)
    return lambda v: ("", _NOT_NULL) if v is None else walk(v)


def _nested_walker(dtype: DataType) -> _Walker:
    """The walker of a type: a leaf gets the scalar column rules, a nested type checks its container, then its
    children (paths as ``fluss.nested_values``: ``[i]``, ``['key']``, ``{key #i}``, ``.field``)."""
    if dtype.root == ARRAY:
        return _array_walker(dtype)
    if dtype.root == MAP:
        return _map_walker(dtype)
    if dtype.root == ROW:
        return _row_walker(dtype)
    return _leaf_walker(dtype)


def _container_problem(v: object, accepted: tuple[type, ...], what: str) -> tuple[str, str] | None:
    if isinstance(v, accepted) and not isinstance(v, str | bytes):
        return None
    return "", f"expected {what}, got {type(v).__name__} {short_repr(v, 60)}"


def _leaf_walker(dtype: DataType) -> _Walker:
    rule = _ColumnRule(Column("value", dtype.with_nullable(True)))

    def walk(v: object) -> tuple[str, str] | None:
        kind = type(v)
        problem = rule.type_problem(kind)
        if problem is not None:
            return "", f"{problem} {short_repr(v, 40)}"
        bounds = rule.int_range(kind)
        if bounds is not None and not bounds[0] <= v <= bounds[1]:
            return "", f"value {short_repr(v)} is out of range for {rule.root}"
        check = rule.value_check(kind)
        problem = None if check is None else check(v)
        return None if problem is None else ("", problem)

    return walk


def _array_walker(dtype: DataType) -> _Walker:
    element = _child(dtype.element_type)

    def walk(v: object) -> tuple[str, str] | None:
        problem = _container_problem(v, (list, tuple), "a list or tuple")
        if problem is not None:
            return problem
        for i, e in enumerate(v):
            problem = element(e)
            if problem is not None:
                return f"[{i}]{problem[0]}", problem[1]
        return None

    return walk


def _map_walker(dtype: DataType) -> _Walker:
    key, value = _nested_walker(dtype.key_type), _child(dtype.value_type)

    def walk(v: object) -> tuple[str, str] | None:
        problem = _container_problem(v, (Mapping, list, tuple), "a dict or a list of (key, value) pairs")
        if problem is not None:
            return problem
        if isinstance(v, Mapping):
            entries = v.items()
        else:
            for pos, entry in enumerate(v):
                if not isinstance(entry, list | tuple) or len(entry) != 2:
                    return f"{{entry #{pos}}}", f"expected a (key, value) pair, got {short_repr(entry, 60)}"
            entries = v
        for pos, (k, item) in enumerate(entries):
            if k is None:
                return f"{{key #{pos}}}", "null map key (map keys are NOT NULL)"
            problem = key(k)
            if problem is not None:
                return f"{{key #{pos}}}{problem[0]}", problem[1]
            problem = value(item)
            if problem is not None:
                return f"[{short_repr(k, 60)}]{problem[0]}", problem[1]
        return None

    return walk


def _row_walker(dtype: DataType) -> _Walker:
    fields = [(f.name, f.data_type.nullable, _child(f.data_type)) for f in dtype.fields]
    names = [f.name for f in dtype.fields]
    name_set = frozenset(names)

    def walk(v: object) -> tuple[str, str] | None:
        problem = _container_problem(v, (Mapping, list, tuple), "a dict or a list/tuple of field values")
        if problem is not None:
            return problem
        if isinstance(v, Mapping):
            unknown = [k for k in v if k not in name_set]
            if unknown:
                return "", f"unknown ROW field {unknown[0]!r} (fields: {', '.join(names)})"
            for name, nullable, child in fields:
                if name not in v:
                    if not nullable:
                        return f".{name}", f"missing non-nullable row field '{name}'"
                    continue
                problem = child(v[name])
                if problem is not None:
                    return f".{name}{problem[0]}", problem[1]
            return None
        if len(v) != len(fields):
            return "", f"a ROW of {len(fields)} fields ({', '.join(names)}) got {len(v)} values"
        for (name, _, child), item in zip(fields, v, strict=True):
            problem = child(item)
            if problem is not None:
                return f".{name}{problem[0]}", problem[1]
        return None

    return walk


def _decimal_problem(v, precision: int, scale: int, text: str) -> str | None:
    if isinstance(v, int | np.integer):
        v = decimal.Decimal(int(v))
    if not v.is_finite():
        return f"value {v} is not a finite number"
    try:
        with decimal.localcontext(prec=max(precision, 28) + 2):
            exact = v.quantize(decimal.Decimal(1).scaleb(-scale))
    except decimal.InvalidOperation:
        return f"value {v} does not fit {text} without rounding"
    if exact != v or (exact and exact.adjusted() >= precision - scale):
        return f"value {v} does not fit {text} without rounding"
    return None


class RowChecker:
    """Checks user rows for some columns of a table (see the module doc).

    Args:
        schema: the table's columns.
        columns: indices of the columns a row gives (default: all, in table order).
        positional: accepted lengths of a list/tuple row -> where each of ``columns`` sits in it
            (default: a row of all columns).
        extra_keys: what a dict row may hold besides ``columns``: ``"none"``, ``"known"`` (other columns of
            the table, ignored) or ``"any"`` (anything, ignored).
        where: how errors start, e.g. ``"append to table 'db.t'"``.
    """

    def __init__(self, schema: RowSchema, where: str, columns: Sequence[int] | None = None,
                 positional: dict[int, Sequence[int]] | None = None, extra_keys: str = "none") -> None:
        self._schema = schema
        self._where = where
        ncols = len(schema.columns)
        self._columns = list(range(ncols)) if columns is None else [int(c) for c in columns]
        self._names = [schema.columns[i].name for i in self._columns]
        self._name_set = frozenset(self._names)
        self._all_names = frozenset(schema.column_names)
        self._extra = extra_keys
        self._dict_values = _getter(self._names)
        positional = {ncols: self._columns} if positional is None else positional
        self._positional = {n: (None if list(at) == list(range(n)) else _getter(list(at)))
                            for n, at in positional.items()}
        self._rules = [_ColumnRule(schema.columns[i]) for i in self._columns]
        # signature (value types of a row) already checked -> (integer range checks, other value checks)
        self._signatures: dict[tuple, tuple[tuple, tuple]] = {}

    def check(self, row: object) -> None:
        """Raises FlussError if ``row`` cannot be written."""
        kind = type(row)
        if kind is dict or (kind is not tuple and kind is not list and isinstance(row, Mapping)):
            try:
                values = self._dict_values(row)
            except KeyError:
                values = None
            if values is None or (self._extra != "any" and len(row) != len(self._names)):
                self._check_keys(row)  # raises for an unknown column or a missing NOT NULL one
                values = tuple(map(row.get, self._names))  # an omitted nullable column is null
        elif kind is tuple or kind is list or isinstance(row, list | tuple):
            try:
                get = self._positional[len(row)]
            except KeyError:
                raise self._error(row, None, f"has {len(row)} values; expected {self._lengths_text()}") from None
            values = row if get is None else get(row)
        else:
            raise FlussError(f"{self._where}: a row must be a dict, list or tuple, got {type(row).__name__} "
                             f"{short_repr(row)}", ErrorCode.CLIENT_ERROR)
        signature = tuple(map(type, values))
        checks = self._signatures.get(signature)
        if checks is None:
            checks = self._learn(row, values, signature)
        ranges, others = checks
        for k, lo, hi in ranges:
            if not lo <= values[k] <= hi:
                raise self._error(row, self._rules[k].col,
                                  f"value {short_repr(values[k])} is out of range for {self._rules[k].root}")
        for k, check in others:
            problem = check(values[k])
            if problem is not None:
                raise self._error(row, self._rules[k].col, problem)

    def _learn(self, row: object, values: Sequence, signature: tuple) -> tuple[tuple, tuple]:
        """Checks the types of a signature not seen before; returns (and remembers) the value checks it needs."""
        for k, kind in enumerate(signature):
            problem = self._rules[k].type_problem(kind)
            if problem is not None:
                raise self._error(row, self._rules[k].col,
                                  problem if kind is _NoneType else f"{problem} {short_repr(values[k], 40)}")
        ranges = tuple((k, *r) for k, kind in enumerate(signature) if (r := self._rules[k].int_range(kind)))
        others = tuple((k, c) for k, kind in enumerate(signature) if (c := self._rules[k].value_check(kind)))
        if len(self._signatures) < _MAX_SIGNATURES:
            self._signatures[signature] = (ranges, others)
        return ranges, others

    def _check_keys(self, row: Mapping) -> None:
        keys = row.keys()
        bad = [k for k in keys if not isinstance(k, str)]
        if bad:
            raise self._error(row, None, f"has a key that is not a column name: {short_repr(bad[0], 40)}")
        if self._extra == "none":
            unknown = [k for k in keys if k not in self._name_set]
        elif self._extra == "known":
            unknown = [k for k in keys if k not in self._all_names]
        else:
            unknown = []
        if unknown:
            raise self._error(row, None, f"has unknown column '{unknown[0]}' (columns: {', '.join(self._names)})")
        missing = [rule.col for rule in self._rules if rule.col.name not in keys and not rule.nullable]
        if missing:
            raise self._error(row, None, f"is missing non-nullable field '{missing[0].name}' "
                                         f"({missing[0].data_type}; columns: {', '.join(self._names)})")

    def _lengths_text(self) -> str:
        return " or ".join(str(n) for n in sorted(self._positional, reverse=True)) + \
            f" values (columns: {', '.join(self._schema.column_names)})"

    def _error(self, row: object, col: Column | None, what: str) -> FlussError:
        column = f" column '{col.name}' ({col.data_type}):" if col is not None else ""
        return FlussError(f"{self._where}: row {short_repr(row)}{column} {what}", ErrorCode.CLIENT_ERROR)


def _getter(names: list):
    """A function giving a tuple of ``row[name]`` for each name (``itemgetter`` returns a bare value for one)."""
    if len(names) == 1:
        name = names[0]
        return lambda row: (row[name],)
    return itemgetter(*names)


__all__ = ["RowChecker", "short_repr"]
