"""Hypothesis strategies for random nested Fluss types and values of them (the property tests of ARRAY, MAP and
ROW through every path: codec, append+scan, upsert+lookup, Flink SQL, tiering+union read).

``nested_types(leaves)`` draws ARRAY / MAP / ROW types up to ``max_depth`` levels deep, with random nullability
at every level (map keys excepted), over the given leaf types; ``values_of(t)`` draws a Python value of a type in
the shape the client accepts and reads back (lists, dicts for maps and rows), so ``expected(t, v)`` - the value
as it reads back (maps become lists of (key, value) tuples) - can be compared with what a read returns.
"""

from __future__ import annotations

import datetime as dt
import decimal

from hypothesis import strategies as st

from fluss.types import ARRAY, MAP, ROW, DataField, DataType, parse_type

#: Leaf types every path handles exactly (Python, KV codec, Flink, Paimon).
PORTABLE_LEAVES = ("INT", "BIGINT", "STRING", "DOUBLE", "BOOLEAN", "DECIMAL(10, 2)", "DATE", "TIMESTAMP(6)")
#: Leaves for the Python-only paths: every scalar type.
ALL_LEAVES = PORTABLE_LEAVES + ("TINYINT", "SMALLINT", "FLOAT", "CHAR(3)", "BYTES", "BINARY(2)", "TIME(3)",
                                "TIMESTAMP(3)", "TIMESTAMP_LTZ(6)", "DECIMAL(30, 5)")
#: Map keys: scalar types with hashable Python values.
KEY_LEAVES = ("INT", "BIGINT", "STRING")

_NAMES = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=6)


def nested_types(leaves: tuple[str, ...] = PORTABLE_LEAVES, max_depth: int = 3,
                 key_leaves: tuple[str, ...] = KEY_LEAVES) -> st.SearchStrategy[DataType]:
    leaf = st.sampled_from(leaves).flatmap(
        lambda text: st.booleans().map(lambda nullable: parse_type(text).with_nullable(nullable)))
    keys = st.sampled_from(key_leaves).map(lambda text: parse_type(text).with_nullable(False))

    def extend(children: st.SearchStrategy[DataType]) -> st.SearchStrategy[DataType]:
        nullable = st.booleans()
        array = st.tuples(children, nullable).map(lambda a: DataType(ARRAY, a[1], element_type=a[0]))
        mapping = st.tuples(keys, children, nullable).map(
            lambda a: DataType(MAP, a[2], key_type=a[0], value_type=a[1]))
        row = st.tuples(st.lists(st.tuples(_NAMES, children), min_size=1, max_size=4,
                                 unique_by=lambda f: f[0]), nullable).map(
            lambda a: DataType(ROW, a[1], fields=tuple(DataField(n, t) for n, t in a[0])))
        return st.one_of(array, mapping, row)

    nested = st.recursive(leaf, extend, max_leaves=6).filter(lambda t: t.is_nested)
    return nested.filter(lambda t: _depth(t) <= max_depth)


def _depth(t: DataType) -> int:
    return 0 if not t.is_nested else 1 + max(_depth(c) for c in t.children)


def _leaf_values(t: DataType) -> st.SearchStrategy:
    root = t.root
    if root == "BOOLEAN":
        return st.booleans()
    if root in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
        bits = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}[root]
        return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if root == "FLOAT":
        return st.integers(-1000, 1000).map(lambda i: i / 4)
    if root == "DOUBLE":
        return st.floats(allow_nan=False, allow_infinity=False, width=64)
    if root == "STRING":
        return st.text(max_size=8)
    if root == "CHAR":
        return st.text(max_size=t.length)
    if root == "BYTES":
        return st.binary(max_size=8)
    if root == "BINARY":
        return st.binary(min_size=t.length, max_size=t.length)
    if root == "DECIMAL":
        limit = 10 ** t.precision - 1
        return st.integers(-limit, limit).map(lambda i: decimal.Decimal(f"{i}E-{t.scale}"))
    if root == "DATE":
        return st.dates(dt.date(1900, 1, 1), dt.date(2200, 12, 31))
    if root == "TIME":
        return st.times().map(lambda v: v.replace(microsecond=v.microsecond // 1000 * 1000))
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        step = 10 ** (6 - min(t.precision, 6))
        values = st.datetimes(dt.datetime(1970, 1, 1), dt.datetime(2200, 1, 1)).map(
            lambda v: v.replace(microsecond=v.microsecond // step * step))
        if root == "TIMESTAMP_LTZ":
            values = values.map(lambda v: v.replace(tzinfo=dt.UTC))
        return values
    raise AssertionError(f"no value strategy for {t}")


def values_of(t: DataType, max_size: int = 3) -> st.SearchStrategy:
    """A Python value of ``t`` (None only where ``t`` is nullable)."""
    if t.root == ARRAY:
        inner = st.lists(values_of(t.element_type, max_size), max_size=max_size)
    elif t.root == MAP:
        inner = st.dictionaries(values_of(t.key_type, max_size), values_of(t.value_type, max_size), max_size=max_size)
    elif t.root == ROW:
        inner = st.fixed_dictionaries({f.name: values_of(f.data_type, max_size) for f in t.fields})
    else:
        inner = _leaf_values(t)
    return st.one_of(st.none(), inner) if t.nullable else inner


def expected(t: DataType, value):
    """``value`` as a read gives it back: maps as lists of (key, value) tuples, at every depth."""
    if value is None:
        return None
    if t.root == ARRAY:
        return [expected(t.element_type, v) for v in value]
    if t.root == MAP:
        return [(k, expected(t.value_type, v)) for k, v in value.items()]
    if t.root == ROW:
        return {f.name: expected(f.data_type, value.get(f.name)) for f in t.fields}
    return value
