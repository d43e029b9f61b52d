"""Values of ARRAY, MAP and ROW columns (fluss/nested_values.py through fluss/row_convert.py): Python rows and
Arrow data in, Python values out, and every bad value refused naming the column, the row and the path."""

from __future__ import annotations

import datetime as dt
import decimal

import numpy as np
import pyarrow as pa
import pytest

from fluss.errors import FlussError
from fluss.nested_values import nested_violation
from fluss.row_convert import batch_to_pylist, conform_batch, rows_to_batch
from fluss.types import Column, RowSchema, parse_type


def schema_of(*columns: tuple[str, str], pks: list[str] | None = None) -> RowSchema:
    return RowSchema([Column(n, parse_type(t)) for n, t in columns], pks or [])


NESTED = schema_of(
    ("id", "INT"),
    ("tags", "ARRAY<STRING NOT NULL>"),
    ("attrs", "MAP<STRING, ARRAY<INT NOT NULL>>"),
    ("profile", "ROW<age INT, city CHAR(3), seen TIMESTAMP_LTZ(3), score DECIMAL(5, 2) NOT NULL>"),
    ("grid", "ARRAY<ARRAY<DOUBLE>>"),
)
UTC = dt.UTC


def test_python_values_round_trip_through_arrow():
    rows = [
        {"id": 1, "tags": ["a", "b"], "attrs": {"k": [1, 2], "e": []},
         "profile": {"age": 30, "city": "NYC", "seen": dt.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC),
                     "score": decimal.Decimal("1.50")},
         "grid": [[1.0, None], None, []]},
        {"id": 2, "tags": [], "attrs": [("x", [3])], "profile": [None, None, None, decimal.Decimal("0")],
         "grid": None},
        {"id": 3, "tags": None, "attrs": None, "profile": None, "grid": [[]]},
        [4, ("t",), {}, {"score": 2}, [[2.5]]],  # positional row, tuple array, omitted nullable ROW fields
    ]
    out = batch_to_pylist(rows_to_batch(rows, NESTED))
    assert out[0] == {"id": 1, "tags": ["a", "b"], "attrs": [("k", [1, 2]), ("e", [])],
                      "profile": {"age": 30, "city": "NYC", "seen": dt.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC),
                                  "score": decimal.Decimal("1.50")},
                      "grid": [[1.0, None], None, []]}
    assert out[1]["attrs"] == [("x", [3])] and out[1]["profile"] == {"age": None, "city": None, "seen": None,
                                                                     "score": decimal.Decimal("0.00")}
    assert out[2] == {"id": 3, "tags": None, "attrs": None, "profile": None, "grid": [[]]}
    assert out[3]["tags"] == ["t"] and out[3]["attrs"] == [] and out[3]["profile"]["score"] == decimal.Decimal("2.00")


def test_leaf_values_get_the_scalar_rules_inside_nested_values():
    schema = schema_of(("t", "ARRAY<TIMESTAMP(2)>"), ("c", "MAP<CHAR(2), TIME(0)>"))
    batch = rows_to_batch([{"t": [dt.datetime(2024, 1, 1, 0, 0, 0, 123456)], "c": {"ab": dt.time(1, 2, 3, 999)}}],
                          schema)
    assert batch_to_pylist(batch)[0] == {"t": [dt.datetime(2024, 1, 1, 0, 0, 0, 120000)],
                                         "c": [("ab", dt.time(1, 2, 3))]}


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"id": 1, "tags": ["a", None]},
         r"column 'tags' \(ARRAY<STRING NOT NULL>\) row 0, at tags\[1\]: null value where NOT NULL is declared"),
        ({"id": 1, "tags": ["a", 1]}, r"column 'tags' .* row 0, at tags\[1\]: expected str, got int 1"),
        ({"id": 1, "tags": "ab"}, r"column 'tags' .* row 0: expected a list or tuple, got str 'ab'"),
        ({"id": 1, "attrs": {"k": [1, None]}},
         r"column 'attrs' .* row 0, at attrs\['k'\]\[1\]: null value where NOT NULL is declared"),
        ({"id": 1, "attrs": {"k": [1, 1.5]}}, r"at attrs\['k'\]\[1\]: expected int, got float 1.5"),
        ({"id": 1, "attrs": {"k": [1, 2**40]}}, r"at attrs\['k'\]\[1\]: value 1099511627776 is out of range for INT"),
        ({"id": 1, "attrs": {None: [1]}}, r"at attrs\{key #0\}: null map key"),
        ({"id": 1, "attrs": [("a",)]}, r"at attrs\{entry #0\}: expected a \(key, value\) pair"),
        ({"id": 1, "profile": {"age": 1.5, "score": 1}}, r"at profile.age: expected int, got float 1.5"),
        ({"id": 1, "profile": {"agee": 1, "score": 1}}, r"row 0: unknown ROW field 'agee'"),
        ({"id": 1, "profile": {"city": "ABCD", "score": 1}},
         r"at profile.city: string of 4 characters is longer than 3"),
        ({"id": 1, "profile": {"age": 1}}, r"at profile.score: missing non-nullable row field 'score'"),
        ({"id": 1, "profile": [1, 2]}, r"a ROW of 4 fields \(age, city, seen, score\) got 2 values"),
        ({"id": 1, "profile": {"score": decimal.Decimal("1.234")}},
         r"at profile.score: value Decimal\('1.234'\) does not fit DECIMAL\(5, 2\)"),
        ({"id": 1, "grid": [[1.0], ["x"]]}, r"at grid\[1\]\[0\]: expected float or int, got str"),
    ],
)
def test_bad_nested_values_name_column_row_and_path(row, message):
    good = {"id": 0, "tags": ["ok"]}
    with pytest.raises(FlussError, match=message.replace("row 0", "row 1")):
        rows_to_batch([good, row], NESTED)


def test_time_zone_rules_apply_inside_a_row():
    schema = schema_of(("r", "ROW<t TIMESTAMP(6)>"))
    with pytest.raises(FlussError, match=r"row 0, at r.t: time-zone-aware datetime"):
        rows_to_batch([{"r": {"t": dt.datetime(2024, 1, 1, tzinfo=UTC)}}], schema)


# ================================================================================== Arrow in


def test_arrow_data_is_rebuilt_in_the_column_type():
    table = pa.table({
        "id": pa.array([1, 2, 3], pa.int32()),
        "tags": pa.array([["a"], None, []], pa.large_list(pa.string())),
        "attrs": pa.array([{"a": [1]}, None, {}], pa.map_(pa.string(), pa.list_(pa.int64()))),
        "profile": pa.array([{"score": 1, "age": 2}, None, {"score": 3, "age": None}],
                            pa.struct([("score", pa.int64()), ("age", pa.int64())])),
        "grid": pa.array([[[1.0]], None, [[]]], pa.list_(pa.list_(pa.float32()))),
    })
    (batch,) = conform_batch(table, NESTED)
    assert batch.schema == NESTED.to_arrow()
    assert batch_to_pylist(batch)[0] == {"id": 1, "tags": ["a"], "attrs": [("a", [1])],
                                         "profile": {"age": 2, "city": None, "seen": None,
                                                     "score": decimal.Decimal("1.00")},
                                         "grid": [[1.0]]}


def test_sliced_arrow_data_keeps_the_right_values():
    tags = pa.array([["x"], ["a", "b"], None, ["c"]], pa.list_(pa.string()))
    attrs = pa.array([{"z": [9]}, {"a": [1]}, {"b": [2, 3]}, None], pa.map_(pa.string(), pa.list_(pa.int32())))
    table = pa.table({"id": pa.array([0, 1, 2, 3], pa.int32()), "tags": tags, "attrs": attrs,
                      "profile": pa.nulls(4, pa.struct([("score", pa.int32())])),
                      "grid": pa.nulls(4, pa.list_(pa.list_(pa.float64())))}).slice(1, 2)
    out = batch_to_pylist(conform_batch(table, NESTED)[0])
    assert [r["tags"] for r in out] == [["a", "b"], None]
    assert [r["attrs"] for r in out] == [[("a", [1])], [("b", [2, 3])]]


@pytest.mark.parametrize(
    ("column", "message"),
    [
        (pa.array([["a", None]], pa.list_(pa.string())), r"row 0, at tags\[1\]: null value where NOT NULL"),
        (pa.array([[1]], pa.list_(pa.int32())), r"column 'tags' .* row 0, at tags\[0\]: Arrow type int32 cannot"),
        (pa.array([{"a": 1}], pa.struct([("a", pa.int32())])), r"Arrow type struct<a: int32> cannot be written"),
    ],
)
def test_bad_arrow_data_names_column_row_and_path(column, message):
    schema = schema_of(("tags", "ARRAY<STRING NOT NULL>"))
    with pytest.raises(FlussError, match=message):
        conform_batch(pa.table({"tags": column}), schema)


def test_struct_fields_are_matched_by_name_and_unknown_ones_refused():
    schema = schema_of(("p", "ROW<a INT, b INT NOT NULL>"))
    with pytest.raises(FlussError, match=r"unknown field\(s\) 'c'"):
        conform_batch(pa.table({"p": pa.array([{"a": 1, "b": 2, "c": 3}])}), schema)
    with pytest.raises(FlussError, match=r"at p.b: the Arrow struct lacks this NOT NULL field"):
        conform_batch(pa.table({"p": pa.array([{"a": 1}], pa.struct([("a", pa.int32())]))}), schema)
    (batch,) = conform_batch(pa.table({"p": pa.array([{"b": 2, "a": 1}])}), schema)
    assert batch.column(0).to_pylist() == [{"a": 1, "b": 2}]


def test_not_null_children_under_a_null_parent_are_fine():
    dtype = parse_type("ROW<a INT NOT NULL>")
    child = pa.array([1, None], pa.int32())
    arr = pa.StructArray.from_arrays([child], fields=[pa.field("a", pa.int32(), nullable=False)],
                                     mask=pa.array([False, True]))
    assert nested_violation(arr, dtype) is None
    arr2 = pa.StructArray.from_arrays([child], fields=[pa.field("a", pa.int32(), nullable=False)])
    assert nested_violation(arr2, dtype) == (1, ".a", "null value where NOT NULL is declared")
    # a null list slot pointing at elements: they are not looked at
    lists = pa.ListArray.from_arrays(pa.array([0, 1, 2], pa.int32()), pa.array([5, None], pa.int32()),
                                     mask=pa.array([False, True]))
    assert nested_violation(lists, parse_type("ARRAY<INT NOT NULL>")) is None


def test_a_whole_batch_converts_column_wise():
    n = 20_000
    rows = [{"id": i, "tags": ["a", "b"], "attrs": {"k": [i]},
             "profile": {"age": i, "score": 1}, "grid": [[float(i)]]} for i in range(n)]
    batch = rows_to_batch(rows, NESTED)
    assert batch.num_rows == n
    assert np.array_equal(batch.column("attrs").items.flatten().to_numpy(), np.arange(n))
