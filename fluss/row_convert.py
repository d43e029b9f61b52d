"""Turning user rows and user Arrow data into Arrow record batches of a table's schema, and back.

This is the client's write hot path, so it is column-at-a-time: rows are transposed with ``zip`` /
``itemgetter`` (C loops), each column is built by one ``pa.array(values, type=...)`` call, and checks are
Arrow/numpy kernels. Per-value Python runs only to find the offending row once something has failed, and
for a few cheap checks Arrow cannot do (``set(map(type, values))`` to reject e.g. ``1.5`` for an INT column,
the ``tzinfo`` of datetimes for TIMESTAMP columns).

Python values accepted per type (``None`` is null everywhere)::

    BOOLEAN                 bool
    TINYINT..BIGINT         int (not bool); range-checked
    FLOAT, DOUBLE           float or int (ints must be exactly representable)
    CHAR(n), STRING         str (CHAR(n): at most n characters; not padded)
    BINARY(n), BYTES        bytes / bytearray / memoryview (BINARY(n): exactly n bytes)
    DECIMAL(p, s)           decimal.Decimal or int; must fit p and s without rounding
    DATE                    datetime.date (not datetime.datetime)
    TIME(p)                 datetime.time
    TIMESTAMP(p)            naive datetime.datetime (aware ones are rejected: ambiguous)
    TIMESTAMP_LTZ(p)        aware datetime.datetime (converted to UTC) or naive (taken as UTC)

TIME / TIMESTAMP / TIMESTAMP_LTZ values are floored to the column's precision (as Flink casts do).
:func:`batch_to_pylist` gives the values back: ``decimal.Decimal``, ``datetime.date/time/datetime``,
TIMESTAMP naive, TIMESTAMP_LTZ aware with ``datetime.timezone.utc`` (a ``pandas.Timestamp`` only when a
nanosecond-precision value has non-zero nanoseconds, which ``datetime`` cannot hold).

:func:`conform_batch` is the Arrow path: columns are matched by name, and an Arrow type other than the
column's own is cast only when no value changes (Arrow "safe" casts: integer narrowing when values fit,
large_string -> string, timestamp unit changes without truncation, int -> DECIMAL/FLOAT/DOUBLE when exact,
any time zone -> UTC for TIMESTAMP_LTZ, dictionary -> values). One deliberate exception: float64 data for a
FLOAT column is rounded to the nearest float32 (overflow to infinity is an error). TIMESTAMP and
TIMESTAMP_LTZ never convert into each other.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import math
from collections.abc import Mapping, Sequence
from operator import itemgetter, methodcaller

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fluss.errors import ErrorCode, FlussError
from fluss.types import (
    BINARY_ROOTS,
    BOOLEAN,
    CHAR,
    DATE,
    DECIMAL,
    FLOAT,
    FLOAT_ROOTS,
    INTEGER_ROOTS,
    STRING_ROOTS,
    TEMPORAL_PRECISION_ROOTS,
    TIME,
    TIMESTAMP,
    UNIT_DIGITS,
    Column,
    DataType,
    RowSchema,
    _family,
    from_arrow,
)

_NoneType = type(None)
_ARROW_ERRORS = (
    pa.ArrowInvalid,
    pa.ArrowTypeError,
    pa.ArrowNotImplementedError,
    OverflowError,
    TypeError,
    ValueError,
)


def _accepted_python_types(root: str) -> tuple[tuple[type, ...], tuple[type, ...], str]:
    """(accepted types, rejected subclasses, description) of Python values for a type root."""
    if root == BOOLEAN:
        return (bool, np.bool_), (), "bool"
    if root in INTEGER_ROOTS:
        return (int, np.integer), (bool,), "int"
    if root in FLOAT_ROOTS:
        return (float, int, np.floating, np.integer), (bool,), "float or int"
    if root in STRING_ROOTS:
        return (str,), (), "str"
    if root in BINARY_ROOTS:
        return (bytes, bytearray, memoryview), (), "bytes"
    if root == DECIMAL:
        return (decimal.Decimal, int, np.integer), (bool,), "decimal.Decimal or int"
    if root == DATE:
        return (_dt.date,), (_dt.datetime,), "datetime.date"
    if root == TIME:
        return (_dt.time,), (), "datetime.time"
    return (_dt.datetime,), (), "datetime.datetime"  # TIMESTAMP, TIMESTAMP_LTZ


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class ColumnValueError(FlussError):
    """A value of a column refused: the message names the column and row; ``row`` and ``what`` are kept for
    callers that report it from another place (a value nested in an ARRAY, MAP or ROW)."""

    def __init__(self, col: Column, row: int | None, what: str, code: int = ErrorCode.CLIENT_ERROR,
                 path: str = "") -> None:
        where = f"column '{col.name}' ({col.data_type})"
        if row is not None:
            where += f" row {row}"
        if path:
            where += f", at {col.name}{path}"
        super().__init__(f"{where}: {what}", code)
        self.column = col.name
        self.row = row
        self.what = what


def _column_error(col: Column, row: int | None, what: str, code: int = ErrorCode.CLIENT_ERROR,
                  path: str = "") -> FlussError:
    return ColumnValueError(col, row, what, code, path)


# ================================================================================== rows -> batch


def rows_to_batch(
    rows: Sequence[Mapping | list | tuple],
    schema: RowSchema,
    target_columns: Sequence[int] | None = None,
) -> pa.RecordBatch:
    """Build a record batch of the table schema from Python rows.

    Rows are dicts (by column name) or lists/tuples (by position). With ``target_columns`` (a partial
    update; must include every primary-key column) only those columns are read and every other column is
    null: dict rows need only the target names (other known names are ignored), positional rows hold either
    all columns (non-target positions ignored) or exactly the target columns in ``target_columns`` order.

    Raises:
        FlussError: naming the column and row index for a missing/unknown column, a wrong number of values,
            a value of the wrong type or out of range, or a null in a NOT NULL column;
            INVALID_TARGET_COLUMN for bad ``target_columns``.
    """
    if isinstance(rows, pa.RecordBatch | pa.Table):
        raise FlussError("rows_to_batch takes Python rows; use conform_batch for Arrow data")
    rows = rows if isinstance(rows, list | tuple) else list(rows)
    targets = _check_targets(schema, target_columns)
    n = len(rows)
    arrow_schema = schema.to_arrow()
    if n == 0:
        return pa.RecordBatch.from_arrays([pa.array([], f.type) for f in arrow_schema], schema=arrow_schema)
    values_by_column = _transpose(rows, schema, targets, target_columns is not None)
    arrays = []
    for i, col in enumerate(schema.columns):
        values = values_by_column[i]
        if values is None:
            arrays.append(pa.nulls(n, arrow_schema.field(i).type))
        else:
            arrays.append(_build_column(values, col))
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema)


def _check_targets(schema: RowSchema, target_columns: Sequence[int] | None) -> list[int]:
    ncols = len(schema.columns)
    if target_columns is None:
        return list(range(ncols))
    targets = list(target_columns)
    for t in targets:
        if not isinstance(t, int | np.integer) or isinstance(t, bool) or not 0 <= t < ncols:
            raise FlussError(
                f"target column index {t!r} is out of range (the table has {ncols} columns)",
                ErrorCode.INVALID_TARGET_COLUMN,
            )
    if len(set(targets)) != len(targets):
        raise FlussError(f"target columns {targets} contain duplicates", ErrorCode.INVALID_TARGET_COLUMN)
    missing_pk = [
        pk for pk, i in zip(schema.primary_keys, schema.primary_key_indices, strict=True) if i not in targets
    ]
    if missing_pk:
        raise FlussError(
            f"target columns must include the primary key; missing {', '.join(missing_pk)}",
            ErrorCode.INVALID_TARGET_COLUMN,
        )
    return [int(t) for t in targets]


def _transpose(rows: Sequence, schema: RowSchema, targets: list[int], partial: bool) -> list[list | None]:
    """Per schema column, the list of its values (None for columns not targeted)."""
    kinds = set(map(type, rows))
    if all(issubclass(k, Mapping) for k in kinds):
        return _dict_columns(rows, schema, targets)
    if all(issubclass(k, list | tuple) for k in kinds):
        return _positional_columns(rows, schema, targets, partial)
    # Mixed dict and positional rows (or invalid ones): normalise row by row.
    ncols = len(schema.columns)
    normalised = []
    for i, row in enumerate(rows):
        if isinstance(row, Mapping):
            cols = _dict_columns([row], schema, targets, first_row=i)
            normalised.append([c[0] if c is not None else None for c in cols])
        elif isinstance(row, list | tuple):
            normalised.append(row)
        else:
            raise FlussError(
                f"row {i} is a {type(row).__name__} ({_short(row)}); expected a dict, list or tuple"
            )
    return _positional_columns(
        normalised, schema, targets, partial and all(len(r) != ncols for r in normalised)
    )


def _positional_columns(
    rows: Sequence, schema: RowSchema, targets: list[int], partial: bool
) -> list[list | None]:
    ncols = len(schema.columns)
    allowed = {ncols, len(targets)} if partial else {ncols}
    lengths = set(map(len, rows))
    if not lengths <= allowed or len(lengths) > 1:
        expected = f"{ncols} values (columns: {', '.join(schema.column_names)})"
        if partial and len(targets) != ncols:
            expected += f" or {len(targets)} values (the target columns)"
        first = next(len(r) for r in rows)
        for i, row in enumerate(rows):
            if len(row) not in allowed or len(row) != first:
                raise FlussError(f"row {i} has {len(row)} values; expected {expected}")
    arity = lengths.pop()
    out: list[list | None] = [None] * ncols
    for k, t in enumerate(targets):
        out[t] = list(map(itemgetter(t if arity == ncols else k), rows))
    return out


def _dict_columns(
    rows: Sequence, schema: RowSchema, targets: list[int], first_row: int = 0
) -> list[list | None]:
    """Columns of dict rows. A nullable column may be left out of a row (it is null, as in the official client);
    a NOT NULL one must be there. Unknown keys are refused."""
    ncols = len(schema.columns)
    names = [schema.columns[t].name for t in targets]
    out: list[list | None] = [None] * ncols
    omitted = False
    for t, name in zip(targets, names, strict=True):
        try:
            out[t] = list(map(itemgetter(name), rows))
        except KeyError:
            if schema.columns[t].data_type.nullable:
                out[t] = list(map(methodcaller("get", name), rows))
                omitted = True
                continue
            row = next(i for i, r in enumerate(rows) if name not in r)
            unknown = [k for k in rows[row] if k not in schema._index]
            hint = f" (it has unknown key {unknown[0]!r})" if unknown else ""
            raise FlussError(f"row {first_row + row} is missing non-nullable field '{name}'{hint}") from None
    if omitted or max(map(len, rows)) > len(names):
        known = schema._index
        if set().union(*rows).difference(known):
            for i, row in enumerate(rows):
                for key in row:
                    if key not in known:
                        raise FlussError(
                            f"row {first_row + i} has unknown column {key!r} "
                            f"(columns: {', '.join(schema.column_names)})"
                        )
    return out


def _build_column(values: Sequence, col: Column) -> pa.Array:
    if not col.data_type.is_nested:
        return _build_scalar_column(values, col)
    arr = build_nested_column(values, col)
    if arr.null_count and not col.data_type.nullable:
        row = int(np.flatnonzero(arr.is_null().to_numpy(zero_copy_only=False))[0])
        raise _column_error(col, row, "null value in a NOT NULL column")
    return arr


def _build_scalar_column(values: Sequence, col: Column) -> pa.Array:
    dtype = col.data_type
    _check_python_types(values, col)
    arrow_type = dtype.to_arrow()
    try:
        arr = pa.array(values, type=arrow_type, from_pandas=False)
    except _ARROW_ERRORS as e:
        raise _locate_conversion_error(values, col, arrow_type, e) from None
    if arr.null_count and not dtype.nullable:
        row = int(np.flatnonzero(arr.is_null().to_numpy(zero_copy_only=False))[0])
        raise _column_error(col, row, "null value in a NOT NULL column")
    root = dtype.root
    if root == FLOAT:
        _check_float32_overflow(arr, values, col)
    elif root == CHAR:
        _check_char_length(arr, col)
    elif root == TIMESTAMP:
        _check_naive(values, col)
    if root in TEMPORAL_PRECISION_ROOTS:
        arr = _floor_to_precision(arr, dtype, col, strict=False)
    return arr


def _check_python_types(values: Sequence, col: Column) -> None:
    kinds = set(map(type, values))
    kinds.discard(_NoneType)
    if not kinds:
        return
    accepted, rejected, description = _accepted_python_types(col.data_type.root)
    for kind in kinds:
        if issubclass(kind, accepted) and not issubclass(kind, rejected):
            continue
        row = next(i for i, v in enumerate(values) if type(v) is kind)
        raise _column_error(col, row, f"expected {description}, got {kind.__name__} {_short(values[row])}")


def _locate_conversion_error(
    values: Sequence, col: Column, arrow_type: pa.DataType, error: Exception
) -> FlussError:
    """Find the first value Arrow refuses (bisecting on prefixes) and describe it."""
    lo, hi = 0, len(values)  # invariant: values[:lo] converts, values[:hi] fails
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            pa.array(values[:mid], type=arrow_type, from_pandas=False)
            lo = mid
        except _ARROW_ERRORS:
            hi = mid
    row = hi - 1
    try:
        pa.array([values[row]], type=arrow_type, from_pandas=False)
        detail = str(error)
    except _ARROW_ERRORS as e:
        detail = str(e)
    dtype = col.data_type
    value = values[row]
    if dtype.root in INTEGER_ROOTS:
        what = f"value {_short(value)} is out of range for {dtype.root}"
    elif dtype.root == DECIMAL:
        what = f"value {_short(value)} does not fit {dtype.type_text()} without rounding"
    else:
        what = f"cannot store {_short(value)}: {detail}"
    return _column_error(col, row, what)


def _check_float32_overflow(arr: pa.Array, values: Sequence, col: Column) -> None:
    data = arr.to_numpy(zero_copy_only=False)
    for i in np.flatnonzero(np.isinf(data)):
        v = values[int(i)]
        if v is not None and math.isfinite(v):
            raise _column_error(col, int(i), f"value {_short(v)} overflows FLOAT")


def _check_char_length(arr: pa.Array, col: Column) -> None:
    limit = col.data_type.length
    lengths = pc.utf8_length(arr)
    longest = pc.max(lengths).as_py()
    if longest is not None and longest > limit:
        row = int(
            np.flatnonzero(pc.fill_null(pc.greater(lengths, limit), False).to_numpy(zero_copy_only=False))[0]
        )
        raise _column_error(col, row, f"string of {longest} characters is longer than {limit}")


def _check_naive(values: Sequence, col: Column) -> None:
    zones = {v.tzinfo for v in values if v is not None}
    zones.discard(None)
    if zones:
        row = next(i for i, v in enumerate(values) if v is not None and v.tzinfo is not None)
        raise _column_error(
            col,
            row,
            f"time-zone-aware datetime {_short(values[row])} given for TIMESTAMP (without time zone); "
            "pass a naive datetime, or use a TIMESTAMP_LTZ column",
        )


def _floor_to_precision(arr: pa.Array, dtype: DataType, col: Column, strict: bool) -> pa.Array:
    """Floor TIME/TIMESTAMP values to the declared precision when it is finer than the Arrow unit allows."""
    unit_digits = UNIT_DIGITS[arr.type.unit]
    if dtype.precision >= unit_digits or len(arr) == 0:
        return arr
    factor = 10 ** (unit_digits - dtype.precision)
    int_type = pa.int32() if pa.types.is_time32(arr.type) else pa.int64()
    ints = arr.cast(int_type)
    raw = pc.fill_null(ints, 0).to_numpy(zero_copy_only=False)
    floored = (raw // factor) * factor
    changed = floored != raw
    if not changed.any():
        return arr
    if strict:
        row = int(np.flatnonzero(changed)[0])
        raise _column_error(
            col, row, f"value {arr[row]} has more fractional-second digits than precision {dtype.precision}"
        )
    mask = arr.is_null().to_numpy(zero_copy_only=False) if arr.null_count else None
    return pa.array(floored, type=int_type, mask=mask).cast(arr.type)


# ================================================================================== arrow -> batch


def conform_batch(
    data: pa.RecordBatch | pa.Table, schema: RowSchema
) -> pa.RecordBatch | list[pa.RecordBatch]:
    """Make user Arrow data exactly the table schema (a RecordBatch gives a RecordBatch, a Table gives a
    list of RecordBatches). Columns are matched by name, in any order.

    Raises:
        FlussError: naming the column for a missing, unknown or duplicate column, a type that cannot be
            converted without loss (naming both types), or a null in a NOT NULL column.
    """
    if isinstance(data, pa.Table):
        return [_conform_record_batch(b, schema) for b in data.to_batches()]
    if isinstance(data, pa.RecordBatch):
        return _conform_record_batch(data, schema)
    raise FlussError(f"expected a pyarrow RecordBatch or Table, got {type(data).__name__}")


def _conform_record_batch(batch: pa.RecordBatch, schema: RowSchema) -> pa.RecordBatch:
    target = schema.to_arrow()
    if _already_conformed(batch, schema, target):
        return batch
    names = batch.schema.names
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise FlussError(f"column '{dup}' appears more than once in the Arrow data")
    present = set(names)
    missing = [c for c in schema.column_names if c not in present]
    if missing:
        raise FlussError(f"the Arrow data is missing column(s) {', '.join(repr(m) for m in missing)}")
    extra = [n for n in names if n not in schema._index]
    if extra:
        raise FlussError(
            f"the Arrow data has unknown column(s) {', '.join(repr(e) for e in extra)} "
            f"(table columns: {', '.join(schema.column_names)})"
        )
    positions = {n: i for i, n in enumerate(names)}
    arrays = [
        _conform_array(batch.column(positions[col.name]), col, target.field(i).type)
        for i, col in enumerate(schema.columns)
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def _already_conformed(batch: pa.RecordBatch, schema: RowSchema, target: pa.Schema) -> bool:
    """Whether ``batch`` is already what the column-by-column pass would return: the table's Arrow schema
    exactly (names, order, types, nullability, metadata), no null in a NOT NULL column, and no column whose
    values that pass checks or changes (nested, CHAR, time and timestamp precisions). A writer handing batches
    built with the table's schema then pays a few microseconds instead of a pass per column."""
    if not batch.schema.equals(target, check_metadata=True):
        return False
    for i, col in enumerate(schema.columns):
        dtype = col.data_type
        if dtype.is_nested or dtype.root == CHAR or dtype.root in TEMPORAL_PRECISION_ROOTS:
            return False
        if not dtype.nullable and batch.column(i).null_count:
            return False
    return True


def _conform_array(arr: pa.Array, col: Column, target: pa.DataType) -> pa.Array:
    if not col.data_type.is_nested:
        return _conform_scalar_array(arr, col, target)
    if pa.types.is_null(arr.type):
        arr = pa.nulls(len(arr), target)
    else:
        arr = conform_nested(arr, col)
    if arr.null_count and not col.data_type.nullable:
        row = int(np.flatnonzero(arr.is_null().to_numpy(zero_copy_only=False))[0])
        raise _column_error(col, row, "null value in a NOT NULL column")
    return arr


def _conform_scalar_array(arr: pa.Array, col: Column, target: pa.DataType) -> pa.Array:
    dtype = col.data_type
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if not arr.type.equals(target):
        arr = _cast_lossless(arr, col, target)
    if arr.null_count and not dtype.nullable:
        row = int(np.flatnonzero(arr.is_null().to_numpy(zero_copy_only=False))[0])
        raise _column_error(col, row, "null value in a NOT NULL column")
    if dtype.root == CHAR:
        _check_char_length(arr, col)
    elif dtype.root in TEMPORAL_PRECISION_ROOTS:
        arr = _floor_to_precision(arr, dtype, col, strict=True)
    return arr


def _cast_lossless(arr: pa.Array, col: Column, target: pa.DataType) -> pa.Array:
    dtype = col.data_type
    src = arr.type
    if pa.types.is_null(src):
        return pa.nulls(len(arr), target)
    try:
        src_type = from_arrow(src)
    except FlussError:
        raise _column_error(
            col, None, f"Arrow type {src} cannot be written to a {dtype.type_text()} column"
        ) from None
    src_family, dst_family = _family(src_type), _family(dtype)
    if not (src_family == dst_family or (src_family == "integer" and dst_family in ("float", DECIMAL))):
        raise _column_error(col, None, f"Arrow type {src} cannot be written to a {dtype.type_text()} column")
    try:
        if dtype.root == FLOAT and pa.types.is_float64(src):
            return _float64_to_float32(arr, col)
        if dst_family == DECIMAL and src_family == "integer":
            wide = pc.cast(arr, pa.decimal128(38, min(dtype.scale, 18)), safe=True)
            return pc.cast(wide, target, safe=True)
        return pc.cast(arr, target, safe=True)
    except _ARROW_ERRORS as e:
        raise _column_error(
            col, None, f"cannot convert Arrow type {src} to {dtype.type_text()} ({target}) without loss: {e}"
        ) from None


def _float64_to_float32(arr: pa.Array, col: Column) -> pa.Array:
    narrowed = pc.cast(arr, pa.float32(), safe=False)
    wide = arr.to_numpy(zero_copy_only=False)
    narrow = narrowed.to_numpy(zero_copy_only=False)
    overflow = np.isinf(narrow) & np.isfinite(wide)
    if overflow.any():
        row = int(np.flatnonzero(overflow)[0])
        raise _column_error(col, row, f"value {float(wide[row])!r} overflows FLOAT")
    return narrowed


def dataframe_to_arrow(df, schema: RowSchema) -> pa.Table:
    """A pandas DataFrame as Arrow for :func:`conform_batch`: a column of a nested table column holds Python
    lists / dicts, built with the table's type (pandas' own inference would read a dict as a struct, never a
    map); the other columns convert as pandas converts them."""
    nested = {c.name: c for c in schema.columns if c.data_type.is_nested and c.name in df.columns}
    if not nested:
        return pa.Table.from_pandas(df, preserve_index=False)
    arrays, names = [], []
    for name in df.columns:
        series = df[name]
        col = nested.get(name)
        if col is None:
            arrays.append(pa.Array.from_pandas(series))
        else:
            values = [None if _is_missing(v) else v for v in series.tolist()]
            arrays.append(build_nested_column(values, col))
        names.append(name)
    return pa.Table.from_arrays(arrays, names=names)


def _is_missing(value: object) -> bool:
    """pandas' missing markers (None, NaN, NaT, pd.NA) in an object column."""
    return value is None or (isinstance(value, float) and math.isnan(value)) or \
        type(value).__name__ in ("NAType", "NaTType")


# ================================================================================== batch -> rows


def batch_to_pylist(batch: pa.RecordBatch | pa.Table) -> list[dict]:
    """The rows of a batch as dicts of Python values (see the module docstring for the value types)."""
    names = batch.schema.names
    if not names:
        return [{} for _ in range(batch.num_rows)]
    columns = [_column_to_python(batch.column(i)) for i in range(len(names))]
    return [dict(zip(names, row, strict=True)) for row in zip(*columns, strict=True)]


def _column_to_python(arr: pa.Array | pa.ChunkedArray) -> list:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    t = arr.type
    if pa.types.is_timestamp(t):
        return _timestamps_to_python(arr)
    if _NUMPY_CONVERTIBLE(t):
        return _via_numpy(arr)
    return arr.to_pylist()


def _NUMPY_CONVERTIBLE(t: pa.DataType) -> bool:  # noqa: N802
    """Types whose numpy conversion yields exactly the Python values ``to_pylist`` would (but in C)."""
    types = pa.types
    return (
        types.is_integer(t)
        or types.is_floating(t)
        or types.is_boolean(t)
        or types.is_string(t)
        or types.is_large_string(t)
        or types.is_binary(t)
        or types.is_large_binary(t)
        or types.is_date32(t)
        or types.is_decimal(t)
    )


def _via_numpy(arr: pa.Array) -> list:
    """``arr.to_pylist()``, computed through numpy (several times faster for primitive types)."""
    if arr.null_count == 0:
        return arr.to_numpy(zero_copy_only=False).tolist()
    if arr.null_count == len(arr):
        return [None] * len(arr)
    out = np.empty(len(arr), dtype=object)
    out[arr.is_valid().to_numpy(zero_copy_only=False)] = arr.drop_null().to_numpy(zero_copy_only=False)
    return out.tolist()


def _timestamps_to_python(arr: pa.Array) -> list:
    t = arr.type
    if t.unit == "ns":
        nanos = pc.fill_null(arr.cast(pa.int64()), 0).to_numpy(zero_copy_only=False)
        if (nanos % 1000).any():
            # pandas.Timestamp keeps non-zero nanoseconds; every other value becomes a datetime.
            return [
                v
                if v is None or v.nanosecond
                else v.to_pydatetime().replace(tzinfo=_dt.UTC if t.tz else None)
                for v in arr.to_pylist()
            ]
        arr = arr.cast(pa.timestamp("us", tz=t.tz))
    naive = arr.cast(pa.timestamp(arr.type.unit))  # same instants, no zone: numpy gives naive datetimes
    values = _via_numpy_datetimes(naive)
    if t.tz is None:
        return values
    utc = _dt.UTC
    return [None if v is None else v.replace(tzinfo=utc) for v in values]


def _via_numpy_datetimes(arr: pa.Array) -> list:
    """Naive datetimes of a s/ms/us timestamp array (datetime64 -> datetime happens in numpy)."""
    values = _via_numpy(arr)
    if not set(map(type, values)) <= {_dt.datetime, _NoneType}:
        return arr.to_pylist()  # outside datetime's range numpy gives ints; let Arrow raise or convert
    return values


from fluss.nested_values import build_nested_column, conform_nested  # noqa: E402  (they use the scalar builders)

__all__ = ["ColumnValueError", "batch_to_pylist", "conform_batch", "dataframe_to_arrow", "rows_to_batch"]
