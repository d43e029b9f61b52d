"""Every kind of bad row is refused by ``RowChecker`` at the call, naming the row, the column and the reason;
good rows of every accepted Python type pass."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fluss
from fluss import FlussError
from fluss.row_check import RowChecker
from tests.nested_strategies import nested_types, values_of

SCHEMA = fluss.Schema(pa.schema([
    pa.field("id", pa.int32(), nullable=False), ("name", pa.string()), ("price", pa.decimal128(5, 2)),
    ("f32", pa.float32()), ("f64", pa.float64()), ("code", pa.binary(2)), ("ts", pa.timestamp("us")),
    ("day", pa.date32()), ("flag", pa.bool_()),
])).row_schema
GOOD = {"id": 1, "name": "a", "price": Decimal("123.45"), "f32": 1.5, "f64": 2, "code": b"ab",
        "ts": dt.datetime(2026, 1, 1), "day": dt.date(2026, 1, 1), "flag": True}


def _checker() -> RowChecker:
    return RowChecker(SCHEMA, "append to table 'db.t'")


def _with(**changes):
    return {**GOOD, **changes}


def test_good_rows_of_every_accepted_python_type_pass():
    checker = _checker()
    checker.check(GOOD)
    checker.check(tuple(GOOD.values()))
    checker.check(list(GOOD.values()))
    checker.check(_with(id=np.int32(7), price=5, f32=np.float32(2.5), f64=np.int64(3), name=None))
    checker.check(_with(id=-2**31, price=Decimal("-999.99"), code=bytearray(b"xy")))
    checker.check({"id": 3})  # nullable columns left out of a dict row are null (as in the official client)


@pytest.mark.parametrize("row, needles", [
    (_with(id="not-a-number"), ["column 'id' (INT NOT NULL)", "expected int, got str", "'not-a-number'"]),
    (_with(id=True), ["column 'id'", "expected int, got bool"]),
    (_with(id=None), ["column 'id'", "null value in a NOT NULL column"]),
    (_with(id=2**31), ["column 'id'", "2147483648 is out of range for INT"]),
    ({k: v for k, v in GOOD.items() if k != "id"}, ["is missing non-nullable field 'id' (INT NOT NULL"]),
    (_with(nmae="typo"), ["unknown column 'nmae'"]),
    ({**{k: v for k, v in GOOD.items() if k != "name"}, "nmae": "x"}, ["unknown column 'nmae'"]),
    ({**GOOD, 1: "x"}, ["key that is not a column name: 1"]),
    (tuple(GOOD.values())[:-1], ["has 8 values; expected 9 values"]),
    ("id=1", ["a row must be a dict, list or tuple, got str"]),
    (_with(price=Decimal("1234.5")), ["column 'price' (DECIMAL(5, 2))", "does not fit DECIMAL(5, 2)"]),
    (_with(price=Decimal("1.234")), ["column 'price'", "without rounding"]),
    (_with(price=Decimal("NaN")), ["column 'price'", "not a finite number"]),
    (_with(price=1.5), ["column 'price'", "expected decimal.Decimal or int, got float"]),
    (_with(f32=1e39), ["column 'f32'", "overflows FLOAT"]),
    (_with(f64=2**60 + 1), ["column 'f64'", "cannot be stored exactly as DOUBLE"]),
    (_with(code=b"abc"), ["column 'code' (BINARY(2))", "needs exactly 2 bytes, got 3"]),
    (_with(code="ab"), ["column 'code'", "expected bytes, got str"]),
    (_with(ts=dt.datetime(2026, 1, 1, tzinfo=dt.UTC)), ["column 'ts'", "time-zone-aware"]),
    (_with(ts=dt.date(2026, 1, 1)), ["column 'ts'", "expected datetime.datetime, got date"]),
    (_with(day=dt.datetime(2026, 1, 1)), ["column 'day'", "expected datetime.date, got datetime"]),
    (_with(flag="yes"), ["column 'flag'", "expected bool, got str"]),
])
def test_each_kind_of_bad_row_is_refused_naming_row_column_and_reason(row, needles):
    checker = _checker()
    checker.check(GOOD)  # a valid signature is remembered; the bad rows must still be caught
    with pytest.raises(FlussError) as e:
        checker.check(row)
    message = e.value.message
    assert message.startswith("append to table 'db.t': "), message
    for needle in needles:
        assert needle in message, message


def test_a_value_check_applies_to_every_row_of_a_remembered_signature():
    checker = _checker()
    checker.check(_with(id=5))
    with pytest.raises(FlussError, match="out of range for INT"):
        checker.check(_with(id=-2**31 - 1))
    with pytest.raises(FlussError, match="overflows FLOAT"):
        checker.check(_with(f32=-1e39))


def test_partial_update_and_delete_shapes():
    schema = fluss.Schema(pa.schema([("id", pa.int64()), ("a", pa.string()), ("b", pa.int16())]),
                          primary_keys=["id"]).row_schema
    partial = RowChecker(schema, "upsert", columns=[0, 2], positional={3: [0, 2], 2: [0, 1]}, extra_keys="known")
    partial.check({"id": 1, "b": 2})
    partial.check({"id": 1, "b": 2, "a": "ignored"})
    partial.check((1, 2))
    partial.check((1, "ignored", 2))
    with pytest.raises(FlussError, match="unknown column 'zz'"):
        partial.check({"id": 1, "b": 2, "zz": 0})
    with pytest.raises(FlussError, match="out of range for SMALLINT"):
        partial.check((1, 40000))
    delete = RowChecker(schema, "delete", columns=[0], positional={3: [0], 1: [0]}, extra_keys="any")
    delete.check({"id": 1, "whatever": object()})
    delete.check([1])
    with pytest.raises(FlussError, match="column 'id' \\(BIGINT NOT NULL\\): expected int, got str"):
        delete.check({"id": "1"})
    with pytest.raises(FlussError, match="null value"):
        delete.check((None, "a", 1))


# ------------------------------------------------------------------------------ nested columns

NESTED = fluss.Schema(pa.schema([
    pa.field("id", pa.int32(), nullable=False),
    ("tags", pa.list_(pa.field("item", pa.string(), nullable=False))),
    ("attrs", pa.map_(pa.string(), pa.list_(pa.int8()))),
    ("profile", pa.struct([pa.field("age", pa.int32(), nullable=False), ("price", pa.decimal128(5, 2))])),
    ("grid", pa.list_(pa.list_(pa.float64()))),
])).row_schema
NESTED_GOOD = {"id": 1, "tags": ["a", "b"], "attrs": {"k": [1, None], "e": []},
               "profile": {"age": 3, "price": Decimal("1.50")}, "grid": [[1.0, 2], [], None]}


def test_good_nested_values_of_every_accepted_shape_pass():
    checker = RowChecker(NESTED, "append to table 'db.n'")
    checker.check(NESTED_GOOD)
    checker.check({"id": 2, "tags": ("x",), "attrs": [("k", (1, 2))], "profile": (4, None), "grid": None})
    checker.check({"id": 3, "tags": None, "attrs": {}, "profile": {"age": 5}, "grid": [[]]})  # a nullable field left out


@pytest.mark.parametrize("changes, needles", [
    ({"tags": ["a", None]}, ["column 'tags' (ARRAY<STRING NOT NULL>)", "at tags[1]: null value where NOT NULL"]),
    ({"tags": "ab"}, ["column 'tags' (ARRAY<STRING NOT NULL>): expected a list or tuple, got str 'ab'"]),
    ({"attrs": {None: [1]}}, ["at attrs{key #0}: null map key (map keys are NOT NULL)"]),
    ({"attrs": {"k": [1, "two"]}}, ["at attrs['k'][1]: expected int, got str 'two'"]),
    ({"attrs": {"k": [1, 300]}}, ["at attrs['k'][1]: value 300 is out of range for TINYINT"]),
    ({"attrs": {5: []}}, ["at attrs{key #0}: expected str, got int 5"]),
    ({"attrs": [("k", [1]), ("bad",)]}, ["at attrs{entry #1}: expected a (key, value) pair"]),
    ({"profile": {"age": "old"}}, ["at profile.age: expected int, got str 'old'"]),
    ({"profile": {"price": 1}}, ["at profile.age: missing non-nullable row field 'age'"]),
    ({"profile": {"age": None}}, ["at profile.age: null value where NOT NULL is declared"]),
    ({"profile": {"age": 1, "agee": 2}}, ["at profile: unknown ROW field 'agee'"]),
    ({"profile": (1,)}, ["at profile: a ROW of 2 fields (age, price) got 1 values"]),
    ({"profile": {"age": 1, "price": Decimal("1.234")}}, ["at profile.price: value 1.234 does not fit"]),
    ({"grid": [[1.0], "row"]}, ["at grid[1]: expected a list or tuple, got str 'row'"]),
    ({"grid": [[1.0, 2**60 + 1]]}, ["at grid[0][1]: int", "cannot be stored exactly as DOUBLE"]),
])
def test_bad_nested_values_are_refused_naming_the_column_and_the_path(changes, needles):
    checker = RowChecker(NESTED, "append to table 'db.n'")
    checker.check(NESTED_GOOD)  # the signature is remembered: nested values are still walked on every row
    with pytest.raises(FlussError) as e:
        checker.check({**NESTED_GOOD, **changes})
    for needle in needles:
        assert needle in e.value.message, e.value.message


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_random_nested_values_accepted_by_the_checker_are_the_ones_the_conversion_accepts(data):
    """The checker and the column conversion (``fluss.nested_values``) agree on valid values of random types."""
    from fluss.row_convert import rows_to_batch
    from fluss.types import Column, RowSchema

    dtype = data.draw(nested_types())
    schema = RowSchema([Column("c", dtype)])
    values = data.draw(st.lists(values_of(dtype), min_size=1, max_size=4))
    checker = RowChecker(schema, "append to table 'db.r'")
    for v in values:
        checker.check({"c": v})
    assert rows_to_batch([{"c": v} for v in values], schema).num_rows == len(values)
