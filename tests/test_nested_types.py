"""ARRAY, MAP and ROW types (fluss/types.py, fluss/type_parser.py): text forms, Arrow mapping, schemas.

The expected strings of ``Schema.get_column_types()`` are the official Python client's (its
``test_schema.py`` and data-types page); ``str(DataType)`` is Fluss's canonical display form."""

from __future__ import annotations

import pyarrow as pa
import pytest

import fluss
from fluss.errors import ErrorCode, FlussError
from fluss.types import (
    FLUSS_TYPE_METADATA_KEY,
    DataField,
    DataType,
    DataTypes,
    RowSchema,
    display_type_text,
    from_arrow,
    parse_type,
)

NESTED_CANONICAL = [
    "ARRAY<INT>",
    "ARRAY<INT NOT NULL> NOT NULL",
    "ARRAY<ARRAY<STRING>>",
    "MAP<STRING NOT NULL, INT>",
    "MAP<INT NOT NULL, ARRAY<DECIMAL(10, 2)>> NOT NULL",
    "ROW<a INT, b STRING NOT NULL>",
    "ROW<a ROW<x TIMESTAMP_LTZ(3), y MAP<STRING NOT NULL, BYTES>>> NOT NULL",
    "ARRAY<ROW<id BIGINT NOT NULL, tags ARRAY<CHAR(3)>>>",
    "ROW<`a b` INT, `we``ird` DATE 'the day'>",
]


@pytest.mark.parametrize("text", NESTED_CANONICAL)
def test_nested_canonical_text_round_trips(text):
    t = parse_type(text)
    assert str(t) == text
    assert parse_type(str(t)) == t


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("array<int>", "ARRAY<INT>"),
        ("ARRAY(INT NOT NULL)", "ARRAY<INT NOT NULL>"),
        ("map<string NOT NULL,int>", "MAP<STRING NOT NULL, INT>"),
        ("MAP<STRING, INT>", "MAP<STRING NOT NULL, INT>"),  # map keys are NOT NULL
        ("row<seq: int, label: string>", "ROW<seq INT, label STRING>"),
        ("ROW(a INT, b VARCHAR_IS_NOT)".replace(", b VARCHAR_IS_NOT", ""), "ROW<a INT>"),
        ("row<ts timestamp(3) with local time zone not null> not null", "ROW<ts TIMESTAMP_LTZ(3) NOT NULL> NOT NULL"),
    ],
)
def test_parse_accepts_flink_and_official_client_spellings(text, canonical):
    assert str(parse_type(text)) == canonical


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ARRAY<INT", "expected '>'"),
        ("ARRAY<>", "expected a type name"),
        ("MAP<INT>", "expected ','"),
        ("ROW<>", "expected a ROW field name"),
        ("ROW<a INT, a STRING>", "duplicate field name 'a'"),
        ("ARRAY<INT> extra", "unexpected 'extra'"),
        ("ARRAY<DECIMAL(50, 1)>", "precision must be between 1 and 38"),
        ("ROW<a FOO>", "unknown type 'FOO'"),
    ],
)
def test_parse_rejects_bad_nested_text_naming_it(text, message):
    with pytest.raises(FlussError, match=message) as info:
        parse_type(text)
    assert info.value.error_code == ErrorCode.INVALID_TABLE_EXCEPTION


def test_factories_and_equality():
    t = DataTypes.MAP(DataTypes.STRING(), DataTypes.ARRAY(DataTypes.INT()))
    assert t == parse_type("MAP<STRING NOT NULL, ARRAY<INT>>")
    assert t.key_type.nullable is False
    row = DataTypes.ROW(DataTypes.FIELD("a", DataTypes.INT()), DataTypes.FIELD("b", DataTypes.STRING(), "note"))
    assert str(row) == "ROW<a INT, b STRING 'note'>"
    assert row.field_names() == ["a", "b"]
    assert row != DataTypes.ROW(DataTypes.FIELD("a", DataTypes.INT()), DataTypes.FIELD("b", DataTypes.STRING()))
    assert hash(t) == hash(parse_type(str(t)))
    assert row.with_nullable(False).nullable is False and row.nullable


def test_direct_construction_is_validated():
    with pytest.raises(FlussError, match="needs a element type"):
        DataType("ARRAY")
    with pytest.raises(FlussError, match="takes no key type"):
        DataType("ARRAY", element_type=DataTypes.INT(), key_type=DataTypes.INT())
    with pytest.raises(FlussError, match="a scalar type has no element"):
        DataType("INT", element_type=DataTypes.INT())
    with pytest.raises(FlussError, match="ROW field name must not be empty"):
        DataField("", DataTypes.INT())


ARROW_OF = [
    ("ARRAY<INT>", pa.list_(pa.int32())),
    ("ARRAY<INT NOT NULL>", pa.list_(pa.field("item", pa.int32(), nullable=False))),
    ("MAP<STRING NOT NULL, INT>", pa.map_(pa.string(), pa.int32())),
    ("MAP<STRING NOT NULL, INT NOT NULL>", pa.map_(pa.string(), pa.field("value", pa.int32(), nullable=False))),
    ("ROW<a INT, b STRING NOT NULL>",
     pa.struct([pa.field("a", pa.int32()), pa.field("b", pa.string(), nullable=False)])),
    ("ARRAY<ROW<t TIMESTAMP_LTZ(6)>>", pa.list_(pa.struct([("t", pa.timestamp("us", tz="UTC"))]))),
]


@pytest.mark.parametrize(("text", "arrow"), ARROW_OF)
def test_nested_arrow_representation_round_trips(text, arrow):
    t = parse_type(text)
    assert t.to_arrow() == arrow
    assert from_arrow(arrow) == t


def test_large_list_and_nested_metadata_map_back():
    assert str(from_arrow(pa.large_list(pa.string()))) == "ARRAY<STRING>"
    inner = pa.field("code", pa.string(), metadata={FLUSS_TYPE_METADATA_KEY: b"CHAR(3)"})
    assert str(from_arrow(pa.struct([inner]))) == "ROW<code CHAR(3)>"


def test_inexact_nested_types_carry_their_whole_text_in_field_metadata():
    schema = RowSchema.from_json({"columns": [
        {"name": "codes", "type": "ARRAY<CHAR(3)>"},
        {"name": "m", "type": "MAP<STRING, TIME(2)>"},
        {"name": "ok", "type": "ARRAY<INT>"},
    ]})
    arrow = schema.to_arrow()
    assert arrow.field("codes").metadata == {FLUSS_TYPE_METADATA_KEY: b"ARRAY<CHAR(3)>"}
    assert arrow.field("m").metadata == {FLUSS_TYPE_METADATA_KEY: b"MAP<STRING NOT NULL, TIME(2)>"}
    assert arrow.field("ok").metadata is None
    assert RowSchema.from_arrow(arrow).column_types == schema.column_types


def test_metadata_of_another_shape_is_refused():
    arrow = pa.schema([pa.field("x", pa.list_(pa.string()), metadata={FLUSS_TYPE_METADATA_KEY: b"MAP<INT, INT>"})])
    with pytest.raises(FlussError, match="column 'x': fluss.type metadata .* does not fit"):
        RowSchema.from_arrow(arrow)


def test_nested_primary_key_columns_are_refused():
    arrow = pa.schema([("id", pa.list_(pa.int32())), ("v", pa.string())])
    with pytest.raises(FlussError, match="primary key column 'id' has type ARRAY<INT>: ARRAY, MAP and ROW columns "
                                         "cannot be primary key columns") as info:
        fluss.Schema(arrow, primary_keys=["id"])
    assert info.value.error_code == ErrorCode.INVALID_TABLE_EXCEPTION


# ------------------------------------------------ the official client's get_column_types() strings


def test_column_type_strings_match_the_official_client():
    s = fluss.Schema(pa.schema([
        pa.field("id", pa.int32(), nullable=False),
        pa.field("tags", pa.list_(pa.field("item", pa.string(), nullable=False))),
        pa.field("ids", pa.list_(pa.int32()), nullable=False),
        pa.field("strict", pa.list_(pa.field("item", pa.int32(), nullable=False)), nullable=False),
        pa.field("attrs", pa.map_(pa.string(), pa.int32())),
        pa.field("nested", pa.struct([("seq", pa.int32()), ("label", pa.string())])),
        pa.field("m_of_row", pa.map_(pa.string(), pa.struct([("seq", pa.int32()), ("label", pa.string())]))),
        pa.field("arr_of_map", pa.list_(pa.map_(pa.string(), pa.int32()))),
        pa.field("row_with_arr", pa.struct([("ids", pa.list_(pa.int32()))])),
    ]))
    assert s.get_column_types() == [
        "int NOT NULL", "array<string NOT NULL>", "array<int> NOT NULL", "array<int NOT NULL> NOT NULL",
        "map<string NOT NULL,int>", "row<seq: int, label: string>",
        "map<string NOT NULL,row<seq: int, label: string>>", "array<map<string NOT NULL,int>>",
        "row<ids: array<int>>",
    ]
    assert s.get_columns()[0] == ("id", "int NOT NULL")


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("TIME(0)", "time"), ("TIME(3)", "time(3)"), ("TIMESTAMP(6)", "timestamp"), ("TIMESTAMP(3)", "timestamp(3)"),
        ("TIMESTAMP_LTZ(6)", "timestamp_ltz"), ("TIMESTAMP_LTZ(9)", "timestamp_ltz(9)"),
        ("DECIMAL(10, 2)", "decimal(10,2)"), ("CHAR(3)", "char(3)"), ("BINARY(4)", "binary(4)"),
        ("BYTES NOT NULL", "bytes NOT NULL"), ("BOOLEAN", "boolean"),
    ],
)
def test_scalar_type_strings_match_the_official_client(text, shown):
    assert display_type_text(parse_type(text)) == shown
    assert parse_type(shown) == parse_type(text)
