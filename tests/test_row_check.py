"""Every kind of bad row is refused by ``RowChecker`` at the call, naming the row, the column and the reason;
good rows of every accepted Python type pass."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

import fluss
from fluss import FlussError
from fluss.row_check import RowChecker

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


@pytest.mark.parametrize("row, needles", [
    (_with(id="not-a-number"), ["column 'id' (INT NOT NULL)", "expected int, got str", "'not-a-number'"]),
    (_with(id=True), ["column 'id'", "expected int, got bool"]),
    (_with(id=None), ["column 'id'", "null value in a NOT NULL column"]),
    (_with(id=2**31), ["column 'id'", "2147483648 is out of range for INT"]),
    ({k: v for k, v in GOOD.items() if k != "name"}, ["is missing column 'name'"]),
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
