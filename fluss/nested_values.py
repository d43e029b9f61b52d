"""Values of ARRAY, MAP and ROW columns: Python values to Arrow, user Arrow data to the table's Arrow type,
and the checks both share. :mod:`fluss.row_convert` hands every nested column here.

Python values accepted (``None`` is null at every level)::

    ARRAY<T>    list or tuple of T values
    MAP<K, V>   dict, or a list/tuple of (key, value) pairs (keys never null; duplicates are kept, as Arrow does)
    ROW<...>    dict by field name (a missing field is null; an unknown name is an error) or a list/tuple
                of the field values in field order

Read back (:func:`fluss.row_convert.batch_to_pylist`) an ARRAY is a list, a MAP a list of (key, value) tuples
(pyarrow's ``MapArray.to_pylist``, as the official client returns it) and a ROW a dict.

Building is columnar, so a nested column costs a few C loops per level, not a Python call per value: the
values of one level are checked for their container type with ``set(map(type, ...))``, their children are
gathered into one flat list per child (``itertools.chain``, ``operator.itemgetter``), the leaves are built by
the scalar column builder (every scalar check applies inside nested values too: ranges, Python types,
CHAR lengths, time zones, precision), and each level is assembled from offsets and validity with Arrow's
``from_arrays``/``from_buffers``. A rejected value is reported by the column, the row and its path inside
the value, e.g. ``column 'attrs' (MAP<STRING NOT NULL, ARRAY<INT NOT NULL>>) row 3, at attrs['k'][1]: null
value where NOT NULL is declared``. Paths use ``[i]`` for an array element, ``['key']`` for a map value,
``{key #i}`` for the i-th key of a map, and ``.name`` for a ROW field.

Arrow input (:func:`conform_nested`) is rebuilt level by level into the exact Arrow type of the column: list,
large_list and fixed_size_list become the list type, struct fields are matched by name (a nullable field may
be missing), leaves go through the scalar conformer (lossless casts only). :func:`nested_violation` finds the
first null where NOT NULL is declared at any depth - values under a null parent are not looked at - and is what
the tablet servers run on the nested columns of the rows they store.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from fluss.errors import ErrorCode, FlussError
from fluss.types import ARRAY, MAP, ROW, Column, DataType

_CHAIN = itertools.chain.from_iterable
_NoneType = type(None)


class NestedValueError(Exception):
    """A rejected nested value: ``index`` into the values of the level that raised, the path below it, why."""

    def __init__(self, index: int, path: str, what: str, code: int = ErrorCode.CLIENT_ERROR) -> None:
        super().__init__(what)
        self.index = index
        self.path = path
        self.what = what
        self.code = code

    def under(self, index: int, segment: str) -> NestedValueError:
        """The same error seen from the parent level: value ``index`` there, ``segment`` leading to it."""
        return NestedValueError(index, segment + self.path, self.what, self.code)


class Violation(NamedTuple):
    """Where a stored or conformed nested value breaks its type: row, path inside the value, what."""

    row: int
    path: str
    what: str


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _key_segment(key: object) -> str:
    return f"[{_short(key)}]"


# ================================================================================== python -> arrow


def build_nested_column(values: Sequence, col: Column) -> pa.Array:
    """The Arrow array of a nested column from Python values (see the module docstring).

    Raises:
        FlussError: naming the column, the row and the path inside the value of the first bad value.
    """
    from fluss.row_convert import _column_error

    try:
        return _build(values, col.data_type.with_nullable(True))
    except NestedValueError as e:
        raise _column_error(col, e.index, e.what, e.code, e.path) from None


def _build(values: Sequence, dtype: DataType) -> pa.Array:
    """Values of one level (nulls allowed; the caller checks NOT NULL) as an array of ``dtype.to_arrow()``."""
    if dtype.root == ARRAY:
        return _build_array(values, dtype)
    if dtype.root == MAP:
        return _build_map(values, dtype)
    if dtype.root == ROW:
        return _build_row(values, dtype)
    return _build_leaf(values, dtype)


def _build_leaf(values: Sequence, dtype: DataType) -> pa.Array:
    from fluss.row_convert import ColumnValueError, _build_scalar_column

    try:
        return _build_scalar_column(values, Column("value", dtype))
    except ColumnValueError as e:
        raise NestedValueError(e.row if e.row is not None else 0, "", e.what, e.error_code) from None


def _check_children_not_null(child_values: list, child: DataType, segment_of) -> None:
    """Refuse a null child where the child type is NOT NULL (``segment_of(j)`` -> (parent index, segment))."""
    if child.nullable or None not in child_values:
        return
    j = child_values.index(None)
    index, segment = segment_of(j)
    raise NestedValueError(index, segment, "null value where NOT NULL is declared")


def _containers(values: Sequence, accepted: tuple[type, ...], what: str) -> np.ndarray | None:
    """The validity of a level's values (None: no nulls), after checking each is an ``accepted`` type."""
    kinds = set(map(type, values))
    has_null = _NoneType in kinds
    kinds.discard(_NoneType)
    for kind in kinds:
        if not issubclass(kind, accepted) or issubclass(kind, str | bytes):
            i = next(i for i, v in enumerate(values) if type(v) is kind)
            raise NestedValueError(i, "", f"expected {what}, got {kind.__name__} {_short(values[i])}")
    if not has_null:
        return None
    return np.fromiter((v is not None for v in values), dtype=bool, count=len(values))


def _offsets(lengths: np.ndarray) -> np.ndarray:
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] > np.iinfo(np.int32).max:
        raise NestedValueError(0, "", f"{offsets[-1]} nested elements in one batch exceed 2^31")
    return offsets.astype(np.int32)


def _owner(offsets: np.ndarray):
    """Maps an index into the flattened children to (parent index, position within the parent)."""

    def locate(j: int) -> tuple[int, int]:
        parent = int(np.searchsorted(offsets, j, side="right")) - 1
        return parent, j - int(offsets[parent])

    return locate


def _validity_buffer(valid: np.ndarray | None) -> pa.Buffer | None:
    return None if valid is None else pa.py_buffer(np.packbits(valid, bitorder="little"))


def _build_array(values: Sequence, dtype: DataType) -> pa.Array:
    valid = _containers(values, (list, tuple), "a list or tuple")
    present = values if valid is None else [v for v in values if v is not None]
    lengths = np.zeros(len(values), dtype=np.int64)
    counts = np.fromiter(map(len, present), dtype=np.int64, count=len(present))
    if valid is None:
        lengths = counts
    else:
        lengths[valid] = counts
    offsets = _offsets(lengths)
    children = list(_CHAIN(present))
    element = dtype.element_type
    locate = _owner(offsets)

    def segment_of(j: int) -> tuple[int, str]:
        parent, pos = locate(j)
        return parent, f"[{pos}]"

    _check_children_not_null(children, element, segment_of)
    try:
        child = _build(children, element.with_nullable(True))
    except NestedValueError as e:
        parent, segment = segment_of(e.index)
        raise e.under(parent, segment) from None
    return pa.Array.from_buffers(dtype.to_arrow(), len(values), [_validity_buffer(valid), pa.py_buffer(offsets)],
                                 children=[child])


def _map_entries(value: object, index: int) -> tuple[list, list]:
    """(keys, values) of one map value given as a sequence of pairs."""
    keys, items = [], []
    for pos, entry in enumerate(value):  # type: ignore[attr-defined]
        if not isinstance(entry, list | tuple) or len(entry) != 2:
            raise NestedValueError(index, f"{{entry #{pos}}}", f"expected a (key, value) pair, got {_short(entry)}")
        keys.append(entry[0])
        items.append(entry[1])
    return keys, items


def _build_map(values: Sequence, dtype: DataType) -> pa.Array:
    valid = _containers(values, (Mapping, list, tuple), "a dict or a list of (key, value) pairs")
    present = values if valid is None else [v for v in values if v is not None]
    if all(type(v) is dict for v in present):
        keys = list(_CHAIN(map(dict.keys, present)))
        items = list(_CHAIN(map(dict.values, present)))
        counts = np.fromiter(map(len, present), dtype=np.int64, count=len(present))
    else:
        keys, items, count_list = [], [], []
        positions = np.flatnonzero(valid) if valid is not None else np.arange(len(values))
        for i, v in zip(positions.tolist(), present, strict=True):
            if isinstance(v, Mapping):
                k, it = list(v.keys()), list(v.values())
            else:
                k, it = _map_entries(v, i)
            keys += k
            items += it
            count_list.append(len(k))
        counts = np.asarray(count_list, dtype=np.int64)
    lengths = np.zeros(len(values), dtype=np.int64)
    if valid is None:
        lengths = counts
    else:
        lengths[valid] = counts
    offsets = _offsets(lengths)
    locate = _owner(offsets)

    def key_segment(j: int) -> tuple[int, str]:
        parent, pos = locate(j)
        return parent, f"{{key #{pos}}}"

    def value_segment(j: int) -> tuple[int, str]:
        parent, _ = locate(j)
        return parent, _key_segment(keys[j])

    if None in keys:
        parent, segment = key_segment(keys.index(None))
        raise NestedValueError(parent, segment, "null map key (map keys are NOT NULL)")
    _check_children_not_null(items, dtype.value_type, value_segment)
    try:
        key_array = _build(keys, dtype.key_type.with_nullable(True))
    except NestedValueError as e:
        parent, segment = key_segment(e.index)
        raise e.under(parent, segment) from None
    try:
        item_array = _build(items, dtype.value_type.with_nullable(True))
    except NestedValueError as e:
        parent, segment = value_segment(e.index)
        raise e.under(parent, segment) from None
    arrow_type = dtype.to_arrow()
    entries = pa.StructArray.from_arrays([key_array, item_array], fields=[arrow_type.key_field, arrow_type.item_field])
    return pa.Array.from_buffers(arrow_type, len(values), [_validity_buffer(valid), pa.py_buffer(offsets)],
                                 children=[entries])


def _build_row(values: Sequence, dtype: DataType) -> pa.Array:
    valid = _containers(values, (Mapping, list, tuple), "a dict or a list/tuple of field values")
    fields = dtype.fields
    names = [f.name for f in fields]
    n = len(values)
    filler = dict.fromkeys(names)
    rows = [filler if v is None else v for v in values]  # a null row reads as all-null fields
    if set(map(type, rows)) == {dict}:
        columns = [_dict_field(rows, name) for name in names]
        _check_row_keys(rows, names)
    else:
        columns = [[None] * n for _ in names]
        for i, r in enumerate(rows):
            if isinstance(r, Mapping):
                _check_row_keys([dict(r)], names, first=i)
                for k, name in enumerate(names):
                    columns[k][i] = r.get(name)
            else:
                if len(r) != len(names):
                    raise NestedValueError(i, "", f"a ROW of {len(names)} fields ({', '.join(names)}) got "
                                                  f"{len(r)} values")
                for k in range(len(names)):
                    columns[k][i] = r[k]
    arrays = []
    for f, column in zip(fields, columns, strict=True):
        segment = f".{f.name}"
        if not f.data_type.nullable and None in column:
            bad = [i for i, v in enumerate(column) if v is None and (valid is None or valid[i])]
            if bad:
                i = bad[0]
                missing = isinstance(rows[i], Mapping) and f.name not in rows[i]
                raise NestedValueError(i, segment, f"missing non-nullable row field '{f.name}'" if missing
                                       else "null value where NOT NULL is declared")
        try:
            arrays.append(_build(column, f.data_type.with_nullable(True)))
        except NestedValueError as e:
            raise e.under(e.index, segment) from None
    arrow_type = dtype.to_arrow()
    mask = None if valid is None else pa.array(~valid)
    return pa.StructArray.from_arrays(arrays, fields=list(arrow_type), mask=mask)


def _dict_field(rows: Sequence[dict], name: str) -> list:
    try:
        return list(map(operator.itemgetter(name), rows))
    except KeyError:
        return list(map(dict.get, rows, itertools.repeat(name)))


def _check_row_keys(rows: Sequence[dict], names: list[str], first: int = 0) -> None:
    unknown = set(_CHAIN(rows)).difference(names)
    if unknown:
        key = next(iter(unknown))
        i = next(i for i, r in enumerate(rows) if key in r)
        raise NestedValueError(first + i, "", f"unknown ROW field {key!r} (fields: {', '.join(names)})")


# ================================================================================== arrow -> arrow


def conform_nested(arr: pa.Array, col: Column) -> pa.Array:
    """User Arrow data of a nested column rebuilt in the column's exact Arrow type (see the module docstring).

    Raises:
        FlussError: naming the column, row and path for a type that does not fit, a lossy leaf conversion or a
            null where NOT NULL is declared.
    """
    from fluss.row_convert import _column_error

    try:
        out = _conform(arr, col.data_type)
    except NestedValueError as e:
        raise _column_error(col, e.index, e.what, e.code, e.path) from None
    violation = nested_violation(out, col.data_type)
    if violation is not None:
        raise _column_error(col, violation.row, violation.what, path=violation.path)
    return out


def _list_parts(arr: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """(offsets from 0 as int32, the child values they index) of a list-like array, honouring slices."""
    types = pa.types
    if len(arr) == 0:  # (Arrow Java writes no offsets buffer for an empty list array)
        return np.zeros(1, dtype=np.int32), arr.values.slice(0, 0)
    if types.is_fixed_size_list(arr.type):
        size = arr.type.list_size
        offsets = np.arange(len(arr) + 1, dtype=np.int64) * size
        return offsets.astype(np.int32), arr.values.slice(arr.offset * size, len(arr) * size)
    raw = arr.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
    start = int(raw[0]) if len(raw) else 0
    values = arr.values.slice(start, int(raw[-1]) - start) if len(raw) else arr.values.slice(0, 0)
    offsets = raw - start
    if arr.null_count:  # elements under a null slot are dropped, so every child belongs to a valid parent
        lengths = np.diff(offsets)
        null = arr.is_null().to_numpy(zero_copy_only=False)
        if lengths[null].any():
            keep = np.repeat(~null, lengths)
            values = values.filter(pa.array(keep))
            lengths[null] = 0
            offsets = np.zeros(len(arr) + 1, dtype=np.int64)
            np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] > np.iinfo(np.int32).max:
        raise NestedValueError(0, "", "more than 2^31 nested elements in one batch")
    return offsets.astype(np.int32), values


def _validity(arr: pa.Array) -> pa.Buffer | None:
    if not arr.null_count:
        return None
    return _validity_buffer(arr.is_valid().to_numpy(zero_copy_only=False))


def _conform(arr: pa.Array, dtype: DataType) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    types = pa.types
    if types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    target = dtype.to_arrow()
    root = dtype.root
    if root == ARRAY:
        if not (types.is_list(arr.type) or types.is_large_list(arr.type) or types.is_fixed_size_list(arr.type)):
            raise NestedValueError(0, "", f"Arrow type {arr.type} cannot be written to an {dtype.type_text()} column")
        offsets, values = _list_parts(arr)
        child = _conform_child(values, dtype.element_type, offsets, lambda pos: f"[{pos}]")
        return pa.Array.from_buffers(target, len(arr), [_validity(arr), pa.py_buffer(offsets)], children=[child])
    if root == MAP:
        if not types.is_map(arr.type):
            raise NestedValueError(0, "", f"Arrow type {arr.type} cannot be written to a {dtype.type_text()} column")
        offsets, entries = _list_parts(arr)
        keys = _conform_child(entries.field(0), dtype.key_type, offsets, lambda pos: f"{{key #{pos}}}")
        items = _conform_child(entries.field(1), dtype.value_type, offsets, lambda pos: f"{{value #{pos}}}")
        struct = pa.StructArray.from_arrays([keys, items], fields=[target.key_field, target.item_field])
        return pa.Array.from_buffers(target, len(arr), [_validity(arr), pa.py_buffer(offsets)], children=[struct])
    if root == ROW:
        if not types.is_struct(arr.type):
            raise NestedValueError(0, "", f"Arrow type {arr.type} cannot be written to a {dtype.type_text()} column")
        present = {arr.type.field(i).name: i for i in range(arr.type.num_fields)}
        unknown = [name for name in present if name not in {f.name for f in dtype.fields}]
        if unknown:
            raise NestedValueError(0, "", f"the Arrow struct has unknown field(s) {', '.join(map(repr, unknown))} "
                                          f"(fields: {', '.join(dtype.field_names())})")
        children = []
        for f in dtype.fields:
            if f.name not in present:
                if not f.data_type.nullable:
                    raise NestedValueError(0, f".{f.name}", "the Arrow struct lacks this NOT NULL field")
                children.append(pa.nulls(len(arr), f.data_type.to_arrow()))
                continue
            try:
                children.append(_conform(arr.field(present[f.name]), f.data_type))
            except NestedValueError as e:
                raise e.under(e.index, f".{f.name}") from None
        mask = arr.is_null() if arr.null_count else None
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    return _conform_leaf(arr, dtype)


def _conform_child(values: pa.Array, dtype: DataType, offsets: np.ndarray, segment) -> pa.Array:
    try:
        return _conform(values, dtype)
    except NestedValueError as e:
        parent, pos = _owner(offsets)(e.index)
        raise e.under(parent, segment(pos)) from None


def _conform_leaf(arr: pa.Array, dtype: DataType) -> pa.Array:
    from fluss.row_convert import ColumnValueError, _conform_scalar_array

    try:
        return _conform_scalar_array(arr, Column("value", dtype.with_nullable(True)), dtype.to_arrow())
    except ColumnValueError as e:
        raise NestedValueError(e.row if e.row is not None else 0, "", e.what, e.error_code) from None


# ================================================================================== checks


def nested_violation(arr: pa.Array, dtype: DataType, parent_valid: np.ndarray | None = None) -> Violation | None:
    """The first null where ``dtype`` declares NOT NULL below the top level of ``arr`` (the column's own
    nullability is its caller's concern), or None. Values under a null parent are not looked at."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    root = dtype.root
    if root in (ARRAY, MAP):
        offsets, values = _list_parts(arr)
        if root == ARRAY:
            children = [(values, dtype.element_type, lambda pos, j: f"[{pos}]")]
        else:
            children = [(values.field(0), dtype.key_type, lambda pos, j: f"{{key #{pos}}}"),
                        (values.field(1), dtype.value_type, lambda pos, j: f"{{value #{pos}}}")]
        for child, child_type, segment in children:
            found = _first_null(child, child_type, None)
            if found is None:
                found_nested = nested_violation(child, child_type) if child_type.is_nested else None
                if found_nested is None:
                    continue
                j, path, what = found_nested
            else:
                j, path, what = found, "", "null value where NOT NULL is declared"
            parent, pos = _owner(offsets)(j)
            return Violation(parent, segment(pos, j) + path, what)
        return None
    if root == ROW:
        valid = arr.is_valid().to_numpy(zero_copy_only=False) if arr.null_count else None
        if parent_valid is not None:
            valid = parent_valid if valid is None else (valid & parent_valid)
        for i, f in enumerate(dtype.fields):
            child = arr.field(i)
            found = _first_null(child, f.data_type, valid)
            if found is not None:
                return Violation(found, f".{f.name}", "null value where NOT NULL is declared")
            if f.data_type.is_nested:
                found_nested = nested_violation(child, f.data_type, valid)
                if found_nested is not None:
                    return Violation(found_nested.row, f".{f.name}{found_nested.path}", found_nested.what)
        return None
    return None


def _first_null(arr: pa.Array, dtype: DataType, parent_valid: np.ndarray | None) -> int | None:
    if dtype.nullable or not arr.null_count:
        return None
    null = arr.is_null().to_numpy(zero_copy_only=False)
    if parent_valid is not None:
        null = null & parent_valid
    hits = np.flatnonzero(null)
    return int(hits[0]) if len(hits) else None


def check_stored_nested(batch: pa.RecordBatch, columns: Sequence[Column], what: str) -> None:
    """Refuse a batch whose nested columns hold a null where NOT NULL is declared (servers run this on what
    they are asked to store). A column the batch lacks (written with an older schema id) holds nothing."""
    names = set(batch.schema.names)
    for col in columns:
        if not col.data_type.is_nested or col.name not in names:
            continue
        violation = nested_violation(batch.column(col.name), col.data_type)
        if violation is not None:
            raise FlussError(f"{what}: column '{col.name}' row {violation.row}, at {col.name}{violation.path}: "
                             f"{violation.what}", ErrorCode.INVALID_TABLE_EXCEPTION)


__all__ = ["NestedValueError", "Violation", "build_nested_column", "check_stored_nested", "conform_nested",
           "nested_violation"]
