"""Rows and Arrow data into batches of a table schema, and back (fluss/row_convert.py)."""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from fluss.errors import ErrorCode, FlussError
from fluss.row_convert import batch_to_pylist, conform_batch, rows_to_batch
from fluss.types import Column, RowSchema, parse_type

UTC = dt.UTC
PLUS2 = dt.timezone(dt.timedelta(hours=2))


def schema_of(*columns: tuple[str, str], pks: list[str] | None = None) -> RowSchema:
    return RowSchema([Column(n, parse_type(t)) for n, t in columns], pks or [])


ALL = schema_of(
    ("b", "BOOLEAN"),
    ("i8", "TINYINT"),
    ("i16", "SMALLINT"),
    ("i32", "INT"),
    ("i64", "BIGINT"),
    ("f32", "FLOAT"),
    ("f64", "DOUBLE"),
    ("c", "CHAR(3)"),
    ("s", "STRING"),
    ("d", "DECIMAL(38, 18)"),
    ("d2", "DECIMAL(5, 2)"),
    ("day", "DATE"),
    ("t0", "TIME(0)"),
    ("t6", "TIME(6)"),
    ("ts", "TIMESTAMP(6)"),
    ("ts3", "TIMESTAMP(3)"),
    ("ltz", "TIMESTAMP_LTZ(6)"),
    ("bin", "BINARY(2)"),
    ("by", "BYTES"),
)
ROW_A = {
    "b": True,
    "i8": -128,
    "i16": 32767,
    "i32": -(2**31),
    "i64": 2**63 - 1,
    "f32": 1.5,
    "f64": math.inf,
    "c": "abc",
    "s": "héllo \x00 中文 😀",
    "d": decimal.Decimal("12345678901234567890.123456789012345678"),
    "d2": decimal.Decimal("-999.99"),
    "day": dt.date(1969, 12, 31),
    "t0": dt.time(23, 59, 59),
    "t6": dt.time(0, 0, 0, 1),
    "ts": dt.datetime(2024, 2, 29, 12, 0, 0, 123456),
    "ts3": dt.datetime(1900, 1, 1, 0, 0, 0, 1000),
    "ltz": dt.datetime(2024, 1, 1, 0, 0, 0, 5, tzinfo=UTC),
    "bin": b"\x00\xff",
    "by": b"",
}
ROW_B = dict.fromkeys(ROW_A)  # all nulls
ROW_C = {
    **ROW_A,
    "f32": -math.inf,
    "f64": -0.0,
    "s": "",
    "d": decimal.Decimal("-0.000000000000000001"),
    "b": False,
}


def test_every_type_round_trips_exactly():
    rows = [ROW_A, ROW_B, ROW_C]
    batch = rows_to_batch(rows, ALL)
    assert batch.schema == ALL.to_arrow()
    assert batch_to_pylist(batch) == rows


def test_positional_rows_and_dict_rows_give_the_same_batch():
    positional = [tuple(ROW_A.values()), list(ROW_C.values())]
    assert rows_to_batch(positional, ALL).equals(rows_to_batch([ROW_A, ROW_C], ALL))
    mixed = [ROW_A, list(ROW_C.values())]
    assert rows_to_batch(mixed, ALL).equals(rows_to_batch([ROW_A, ROW_C], ALL))


def test_errors_in_mixed_rows_name_the_right_row():
    with pytest.raises(FlussError, match="row 2 is missing non-nullable field 'id'"):
        rows_to_batch([(1, "a", 1, None), [2, "b", 1, None], {"name": "x", "small": 1}], ERR)


def test_a_dict_row_may_leave_out_nullable_columns_but_no_unknown_ones():
    batch = rows_to_batch([{"id": 1, "small": 2}, {"id": 2, "name": "b", "small": 3, "c": "x"}], ERR)
    assert batch.to_pylist() == [{"id": 1, "name": None, "small": 2, "c": None},
                                 {"id": 2, "name": "b", "small": 3, "c": "x"}]
    with pytest.raises(FlussError, match="row 0 has unknown column 'nmae'"):
        rows_to_batch([{"id": 1, "nmae": "typo"}], ERR)


def test_nan_and_infinities_survive():
    schema = schema_of(("x", "DOUBLE"), ("y", "FLOAT"))
    back = batch_to_pylist(rows_to_batch([[math.nan, math.nan], [math.inf, -math.inf]], schema))
    assert math.isnan(back[0]["x"]) and math.isnan(back[0]["y"])
    assert back[1] == {"x": math.inf, "y": -math.inf}
    assert rows_to_batch([[math.nan, None]], schema).column(0).null_count == 0


def test_timestamp_and_timestamp_ltz_are_kept_apart():
    schema = schema_of(("ntz", "TIMESTAMP(6)"), ("ltz", "TIMESTAMP_LTZ(6)"))
    wall = dt.datetime(2024, 1, 1, 12, 0)
    batch = rows_to_batch([[wall, wall.replace(tzinfo=PLUS2)], [wall, wall]], schema)
    assert batch.schema.field("ntz").type == pa.timestamp("us")
    assert batch.schema.field("ltz").type == pa.timestamp("us", tz="UTC")
    rows = batch_to_pylist(batch)
    assert rows[0]["ntz"] == wall and rows[0]["ntz"].tzinfo is None
    # An aware value keeps its instant, returned in UTC; a naive one is taken as UTC.
    assert rows[0]["ltz"] == dt.datetime(2024, 1, 1, 10, 0, tzinfo=UTC)
    assert rows[0]["ltz"].tzinfo is UTC
    assert rows[1]["ltz"] == dt.datetime(2024, 1, 1, 12, 0, tzinfo=UTC)


def test_nanosecond_timestamps():
    schema = schema_of(("ts", "TIMESTAMP(9)"), ("ltz", "TIMESTAMP_LTZ(9)"))
    exact = pd.Timestamp("2024-01-01 00:00:00.000000001")
    plain = dt.datetime(2024, 1, 1, 0, 0, 0, 7)
    rows = batch_to_pylist(rows_to_batch([[exact, plain.replace(tzinfo=UTC)], [plain, None]], schema))
    assert rows[0]["ts"] == exact and rows[0]["ts"].nanosecond == 1
    assert type(rows[1]["ts"]) is dt.datetime and rows[1]["ts"] == plain
    assert rows[0]["ltz"] == plain.replace(tzinfo=UTC)


def test_values_are_floored_to_the_declared_precision():
    schema = schema_of(("ts", "TIMESTAMP(2)"), ("t", "TIME(1)"), ("neg", "TIMESTAMP(3)"))
    row = [
        dt.datetime(2024, 1, 1, 0, 0, 0, 129999),
        dt.time(1, 2, 3, 999999),
        dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
    ]
    back = batch_to_pylist(rows_to_batch([row], schema))[0]
    assert back == {
        "ts": dt.datetime(2024, 1, 1, 0, 0, 0, 120000),
        "t": dt.time(1, 2, 3, 900000),
        "neg": dt.datetime(1969, 12, 31, 23, 59, 59, 999000),
    }


def test_numpy_scalars_are_accepted():
    schema = schema_of(("i", "INT"), ("f", "DOUBLE"), ("b", "BOOLEAN"))
    back = batch_to_pylist(rows_to_batch([[np.int64(5), np.float32(0.5), np.bool_(True)]], schema))
    assert back == [{"i": 5, "f": 0.5, "b": True}]


def test_empty_rows_give_an_empty_batch_of_the_schema():
    batch = rows_to_batch([], ALL)
    assert batch.num_rows == 0 and batch.schema == ALL.to_arrow()


# ============================================================================ row errors

ERR = schema_of(("id", "BIGINT"), ("name", "STRING"), ("small", "TINYINT"), ("c", "CHAR(2)"), pks=["id"])


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{"name": "a", "small": 1}], "row 0 is missing non-nullable field 'id'"),
        ([{"id": 1, "name": "a", "small": 1, "c": None, "zz": 2}], "row 0 has unknown column 'zz'"),
        (
            [(1, "a", 1, None), (1, "a")],
            "row 1 has 2 values; expected 4 values \\(columns: id, name, small, c\\)",
        ),
        (
            [(1, "a", 1, None), (2, "abc", 1, None), ("x", "b", 1, None)],
            "column 'id' \\(BIGINT NOT NULL\\) row 2: expected int, got str 'x'",
        ),
        ([(1.5, "a", 1, None)], "column 'id' \\(BIGINT NOT NULL\\) row 0: expected int, got float 1.5"),
        ([(True, "a", 1, None)], "column 'id' .* row 0: expected int, got bool True"),
        (
            [(1, "a", 1, None), (2, "a", 300, None)],
            "column 'small' \\(TINYINT\\) row 1: value 300 is out of range for TINYINT",
        ),
        (
            [(1, "a", 1, None), (None, "a", 1, None)],
            "column 'id' \\(BIGINT NOT NULL\\) row 1: null value in a NOT NULL column",
        ),
        ([(1, b"bytes", 1, None)], "column 'name' \\(STRING\\) row 0: expected str, got bytes"),
        ([(1, "a", 1, "abc")], "column 'c' \\(CHAR\\(2\\)\\) row 0: string of 3 characters is longer than 2"),
        ([(1, "a", 1, None), "oops"], "row 1 is a str .*expected a dict, list or tuple"),
    ],
)
def test_row_errors_name_column_and_row(rows, message):
    with pytest.raises(FlussError, match=message):
        rows_to_batch(rows, ERR)


@pytest.mark.parametrize(
    ("type_text", "value", "message"),
    [
        (
            "DECIMAL(5, 2)",
            decimal.Decimal("1.234"),
            "value Decimal\\('1.234'\\) does not fit DECIMAL\\(5, 2\\)",
        ),
        ("DECIMAL(5, 2)", decimal.Decimal("1234.5"), "does not fit DECIMAL\\(5, 2\\)"),
        ("DECIMAL(5, 2)", 1.5, "expected decimal.Decimal or int, got float"),
        ("DECIMAL(5, 2)", decimal.Decimal("NaN"), "Decimal\\('NaN'\\)"),
        ("DATE", dt.datetime(2024, 1, 1), "expected datetime.date, got datetime"),
        ("DATE", "2024-01-01", "expected datetime.date, got str"),
        ("TIMESTAMP(3)", dt.datetime(2024, 1, 1, tzinfo=UTC), "time-zone-aware datetime"),
        ("TIMESTAMP(3)", dt.date(2024, 1, 1), "expected datetime.datetime, got date"),
        ("TIME(3)", 5, "expected datetime.time, got int"),
        ("BINARY(2)", b"abc", "cannot store b'abc'"),
        ("BYTES", "text", "expected bytes, got str"),
        ("FLOAT", 1e40, "value 1e\\+40 overflows FLOAT"),
        ("INT", 2**31, "out of range for INT"),
        ("BIGINT", 2**64, "out of range for BIGINT"),
        ("BOOLEAN", 1, "expected bool, got int"),
    ],
)
def test_value_errors_name_column_and_row(type_text, value, message):
    schema = schema_of(("v", type_text))
    prefix = re.escape(f"column 'v' ({type_text}) row 1: ")
    with pytest.raises(FlussError, match=prefix + ".*" + message):
        rows_to_batch([[None], [value]], schema)


def test_the_offending_row_is_found_in_a_large_batch():
    schema = schema_of(("v", "SMALLINT"))
    rows = [[i % 1000] for i in range(100_000)]
    rows[76_543] = [40_000]
    with pytest.raises(FlussError, match="row 76543: value 40000 is out of range"):
        rows_to_batch(rows, schema)


# ============================================================================ partial update

PK = schema_of(("id", "INT"), ("a", "STRING"), ("b", "DOUBLE NOT NULL"), pks=["id"])


def test_target_columns_leave_other_columns_null():
    batch = rows_to_batch([{"id": 1, "a": "x"}, {"id": 2, "a": "y", "b": 9.0}], PK, target_columns=[0, 1])
    assert batch_to_pylist(batch) == [{"id": 1, "a": "x", "b": None}, {"id": 2, "a": "y", "b": None}]
    full_width = rows_to_batch([(1, "x", 5.0)], PK, target_columns=[0, 1])
    target_width = rows_to_batch([(1, "x")], PK, target_columns=[0, 1])
    assert full_width.equals(target_width)


def test_target_columns_must_include_the_primary_key():
    with pytest.raises(FlussError, match="must include the primary key; missing id") as info:
        rows_to_batch([{"a": "x"}], PK, target_columns=[1])
    assert info.value.error_code == ErrorCode.INVALID_TARGET_COLUMN
    with pytest.raises(FlussError, match="target column index 7 is out of range") as info:
        rows_to_batch([{"id": 1}], PK, target_columns=[0, 7])
    assert info.value.error_code == ErrorCode.INVALID_TARGET_COLUMN


def test_target_columns_still_check_unknown_names_and_targeted_values():
    with pytest.raises(FlussError, match="row 0 has unknown column 'zz'"):
        rows_to_batch([{"id": 1, "a": "x", "zz": 1}], PK, target_columns=[0, 1])
    with pytest.raises(FlussError, match="row 0 is missing non-nullable field 'b'"):
        rows_to_batch([{"id": 1}], PK, target_columns=[0, 2])


# ============================================================================ conform_batch

TARGET = schema_of(
    ("id", "INT"), ("name", "STRING"), ("ts", "TIMESTAMP(6)"), ("amount", "DECIMAL(10, 2)"), pks=["id"]
)


def _user_batch(**columns) -> pa.RecordBatch:
    return pa.record_batch(list(columns.values()), names=list(columns))


def _replaced(batch: pa.RecordBatch, **columns) -> pa.RecordBatch:
    current = dict(zip(batch.schema.names, batch.columns, strict=True))
    return _user_batch(**{**current, **columns})


def test_conform_reorders_and_casts_losslessly():
    batch = _user_batch(
        amount=pa.array([5, None], pa.int64()),
        ts=pa.array([1_000, 2_000], pa.timestamp("ns")),
        name=pa.array(["a", None], pa.large_string()),
        id=pa.array([1, 2], pa.int64()),
    )
    out = conform_batch(batch, TARGET)
    assert out.schema == TARGET.to_arrow()
    assert batch_to_pylist(out) == [
        {"id": 1, "name": "a", "ts": dt.datetime(1970, 1, 1, 0, 0, 0, 1), "amount": decimal.Decimal("5.00")},
        {"id": 2, "name": None, "ts": dt.datetime(1970, 1, 1, 0, 0, 0, 2), "amount": None},
    ]


def test_conform_passes_exact_batches_through():
    batch = rows_to_batch([ROW_A, ROW_B], ALL)
    assert conform_batch(batch, ALL).equals(batch)


def test_a_batch_already_in_the_table_schema_is_handed_back_as_is_but_still_checked():
    """The fast path: a batch in exactly the table's Arrow schema is returned unchanged (no pass per column), yet
    a null in a NOT NULL column, a CHAR too long and a timestamp finer than its precision are still refused."""
    plain = schema_of(("id", "BIGINT"), ("name", "STRING"), ("x", "DOUBLE"), pks=["id"])
    exact = pa.RecordBatch.from_arrays([pa.array([1, 2]), pa.array(["a", None]), pa.array([0.5, None])],
                                       schema=plain.to_arrow())
    assert conform_batch(exact, plain) is exact
    null_key = pa.RecordBatch.from_arrays([pa.array([1, None]), pa.array(["a", "b"]), pa.array([0.5, 1.0])],
                                          schema=plain.to_arrow())
    with pytest.raises(FlussError, match="column 'id' .*row 1: null value in a NOT NULL column"):
        conform_batch(null_key, plain)
    special = schema_of(("c", "CHAR(2)"), ("t2", "TIMESTAMP(2)"))
    too_long = pa.RecordBatch.from_arrays([pa.array(["abc"]), pa.array([10], special.to_arrow().field("t2").type)],
                                          schema=special.to_arrow())
    with pytest.raises(FlussError, match="column 'c' \\(CHAR\\(2\\)\\) row 0: string of 3 characters"):
        conform_batch(too_long, special)
    fine = pa.RecordBatch.from_arrays([pa.array(["ab"]), pa.array([11], special.to_arrow().field("t2").type)],
                                      schema=special.to_arrow())
    with pytest.raises(FlussError, match="column 't2' .* more fractional-second digits"):
        conform_batch(fine, special)


def test_conform_a_table_gives_batches():
    batch = rows_to_batch([ROW_A], ALL)
    out = conform_batch(pa.Table.from_batches([batch, batch]), ALL)
    assert isinstance(out, list) and len(out) == 2 and all(b.equals(batch) for b in out)


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        (
            {"id": pa.array([1]), "name": pa.array(["a"]), "ts": pa.array([1], pa.timestamp("us"))},
            "missing column\\(s\\) 'amount'",
        ),
        (
            {
                "id": pa.array([1]),
                "name": pa.array(["a"]),
                "ts": pa.array([1], pa.timestamp("us")),
                "amount": pa.array([1]),
                "x": pa.array([1]),
            },
            "unknown column\\(s\\) 'x'",
        ),
        (
            {
                "id": pa.array([2**40]),
                "name": pa.array(["a"]),
                "ts": pa.array([1], pa.timestamp("us")),
                "amount": pa.array([1]),
            },
            "column 'id' \\(INT NOT NULL\\): cannot convert Arrow type int64 to INT \\(int32\\) without loss",
        ),
        (
            {
                "id": pa.array([1]),
                "name": pa.array([1]),
                "ts": pa.array([1], pa.timestamp("us")),
                "amount": pa.array([1]),
            },
            "column 'name' \\(STRING\\): Arrow type int64 cannot be written to a STRING column",
        ),
        (
            {
                "id": pa.array([1]),
                "name": pa.array(["a"]),
                "ts": pa.array([1001], pa.timestamp("ns")),
                "amount": pa.array([1]),
            },
            "column 'ts' \\(TIMESTAMP\\(6\\)\\): cannot convert Arrow type timestamp\\[ns\\] to TIMESTAMP\\(6\\)",
        ),
        (
            {
                "id": pa.array([1]),
                "name": pa.array(["a"]),
                "ts": pa.array([1], pa.timestamp("us", tz="UTC")),
                "amount": pa.array([1]),
            },
            "column 'ts' \\(TIMESTAMP\\(6\\)\\): Arrow type timestamp\\[us, tz=UTC\\] cannot be written",
        ),
        (
            {
                "id": pa.array([1]),
                "name": pa.array(["a"]),
                "ts": pa.array([1], pa.timestamp("us")),
                "amount": pa.array([decimal.Decimal("1.234")]),
            },
            "column 'amount' \\(DECIMAL\\(10, 2\\)\\): cannot convert Arrow type decimal128\\(4, 3\\)",
        ),
        (
            {
                "id": pa.array([1, None]),
                "name": pa.array(["a", "b"]),
                "ts": pa.array([1, 2], pa.timestamp("us")),
                "amount": pa.array([1, 2]),
            },
            "column 'id' \\(INT NOT NULL\\) row 1: null value in a NOT NULL column",
        ),
        (
            {
                "id": pa.array([1]),
                "name": pa.array([b"a"]),
                "ts": pa.array([1], pa.timestamp("us")),
                "amount": pa.array([1]),
            },
            "Arrow type binary cannot be written to a STRING column",
        ),
    ],
)
def test_conform_errors_name_the_column(columns, message):
    with pytest.raises(FlussError, match=message):
        conform_batch(_user_batch(**columns), TARGET)


def test_conform_rejects_duplicate_columns():
    batch = pa.RecordBatch.from_arrays([pa.array([1]), pa.array([2])], names=["id", "id"])
    with pytest.raises(FlussError, match="column 'id' appears more than once"):
        conform_batch(batch, TARGET)


def test_conform_time_zones_precision_and_special_types():
    schema = schema_of(
        ("ltz", "TIMESTAMP_LTZ(3)"),
        ("f", "FLOAT"),
        ("c", "CHAR(2)"),
        ("t2", "TIMESTAMP(2)"),
        ("tag", "STRING"),
    )
    paris = pa.array([0], pa.timestamp("ms", tz="Europe/Paris"))
    good = _user_batch(
        ltz=paris, f=pa.array([0.1]), c=pa.array(["ab"]), t2=pa.array([10], pa.timestamp("ms")),
        tag=pa.array(["x"]).dictionary_encode(),
    )  # fmt: skip
    out = conform_batch(good, schema)
    assert out.schema == schema.to_arrow()
    assert batch_to_pylist(out) == [
        {
            "ltz": dt.datetime(1970, 1, 1, tzinfo=UTC),
            "f": pytest.approx(0.1),
            "c": "ab",
            "t2": dt.datetime(1970, 1, 1, 0, 0, 0, 10000),
            "tag": "x",
        }
    ]
    with pytest.raises(FlussError, match="column 'f' \\(FLOAT\\) row 0: value 1e\\+40 overflows FLOAT"):
        conform_batch(_replaced(good, f=pa.array([1e40])), schema)
    with pytest.raises(FlussError, match="column 'c' \\(CHAR\\(2\\)\\) row 0: string of 3 characters"):
        conform_batch(_replaced(good, c=pa.array(["abc"])), schema)
    with pytest.raises(
        FlussError, match="column 't2' \\(TIMESTAMP\\(2\\)\\) row 0: .* more fractional-second digits"
    ):
        conform_batch(_replaced(good, t2=pa.array([11], pa.timestamp("ms"))), schema)


def test_conform_accepts_all_null_columns_of_arrow_null_type():
    batch = _user_batch(id=pa.array([1]), name=pa.nulls(1), ts=pa.nulls(1), amount=pa.nulls(1))
    assert batch_to_pylist(conform_batch(batch, TARGET)) == [
        {"id": 1, "name": None, "ts": None, "amount": None}
    ]


def test_conform_rejects_non_arrow_input():
    with pytest.raises(FlussError, match="expected a pyarrow RecordBatch or Table, got list"):
        conform_batch([1, 2], TARGET)  # type: ignore[arg-type]
