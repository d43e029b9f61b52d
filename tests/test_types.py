"""Fluss data types and row schemas (fluss/types.py): text form, Arrow mapping, JSON, validation."""

from __future__ import annotations

import pyarrow as pa
import pytest

from fluss.errors import ErrorCode, FlussError
from fluss.types import (
    FLUSS_TYPE_METADATA_KEY,
    Column,
    DataType,
    DataTypes,
    RowSchema,
    from_arrow,
    parse_type,
)

CANONICAL = [
    "BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "CHAR(5)", "STRING",
    "DECIMAL(10, 2)", "DECIMAL(38, 18)", "DATE", "TIME(0)", "TIME(3)", "TIME(9)", "TIMESTAMP(6)",
    "TIMESTAMP(0)", "TIMESTAMP_LTZ(3)", "TIMESTAMP_LTZ(9)", "BINARY(4)", "BYTES", "STRING NOT NULL",
    "DECIMAL(10, 2) NOT NULL",
]  # fmt: skip


@pytest.mark.parametrize("text", CANONICAL)
def test_canonical_text_round_trips(text):
    t = parse_type(text)
    assert str(t) == text
    assert parse_type(str(t)) == t


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("int", DataTypes.INT()),
        ("INTEGER", DataTypes.INT()),
        ("decimal(10,2)", DataTypes.DECIMAL(10, 2)),
        ("  Decimal ( 10 , 2 )  not   null ", DataType("DECIMAL", False, precision=10, scale=2)),
        ("DECIMAL", DataTypes.DECIMAL(10, 0)),
        ("NUMERIC(5)", DataTypes.DECIMAL(5, 0)),
        ("TIMESTAMP", DataTypes.TIMESTAMP(6)),
        ("TIMESTAMP(3) WITHOUT TIME ZONE", DataTypes.TIMESTAMP(3)),
        ("TIMESTAMP(3) WITH LOCAL TIME ZONE", DataTypes.TIMESTAMP_LTZ(3)),
        ("timestamp_ltz", DataTypes.TIMESTAMP_LTZ(6)),
        ("TIME", DataTypes.TIME(0)),
        ("CHAR", DataTypes.CHAR(1)),
        ("BINARY", DataTypes.BINARY(1)),
        ("STRING NULL", DataTypes.STRING()),
        ("DOUBLE PRECISION", DataTypes.DOUBLE()),
    ],
)
def test_parse_accepts_aliases_and_defaults(text, expected):
    assert parse_type(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("FOO", "invalid data type 'FOO'"),
        ("DECIMAL(39, 0)", "'DECIMAL\\(39, 0\\)'.*precision must be between 1 and 38"),
        ("DECIMAL(5, 6)", "scale must be between 0 and the precision 5"),
        ("TIME(10)", "'TIME\\(10\\)'.*precision must be between 0 and 9"),
        ("TIMESTAMP_LTZ(12)", "precision must be between 0 and 9"),
        ("CHAR(0)", "'CHAR\\(0\\)'.*length must be between"),
        ("INT(3)", "'INT\\(3\\)'.*INT takes no parameters"),
        ("CHAR(3, 2)", "takes at most one parameter"),
        ("INT WITH LOCAL TIME ZONE", "only follows TIMESTAMP"),
        ("VARCHAR(10)", "unknown type 'VARCHAR'"),
        ("", "cannot parse"),
    ],
)
def test_parse_rejects_bad_type_text_naming_it(text, message):
    with pytest.raises(FlussError, match=message) as info:
        parse_type(text)
    assert info.value.error_code == ErrorCode.INVALID_TABLE_EXCEPTION


@pytest.mark.parametrize("text", ["MULTISET<INT>", "INTERVAL DAY"])
def test_types_fluss_does_not_have_are_refused(text):
    with pytest.raises(FlussError, match="is not supported by Fluss"):
        parse_type(text)


def test_parse_rejects_non_strings():
    with pytest.raises(FlussError, match="expected a type name string"):
        parse_type(5)  # type: ignore[arg-type]


def test_data_type_validates_direct_construction():
    with pytest.raises(FlussError, match="unknown type root"):
        DataType("UUID")
    with pytest.raises(FlussError, match="takes no length"):
        DataType("INT", length=3)


ARROW_OF = [
    ("BOOLEAN", pa.bool_()),
    ("TINYINT", pa.int8()),
    ("SMALLINT", pa.int16()),
    ("INT", pa.int32()),
    ("BIGINT", pa.int64()),
    ("FLOAT", pa.float32()),
    ("DOUBLE", pa.float64()),
    ("CHAR(5)", pa.string()),
    ("STRING", pa.string()),
    ("DECIMAL(10, 2)", pa.decimal128(10, 2)),
    ("DATE", pa.date32()),
    ("TIME(0)", pa.time32("s")),
    ("TIME(2)", pa.time32("ms")),
    ("TIME(3)", pa.time32("ms")),
    ("TIME(6)", pa.time64("us")),
    ("TIME(9)", pa.time64("ns")),
    ("TIMESTAMP(0)", pa.timestamp("s")),
    ("TIMESTAMP(3)", pa.timestamp("ms")),
    ("TIMESTAMP(5)", pa.timestamp("us")),
    ("TIMESTAMP(9)", pa.timestamp("ns")),
    ("TIMESTAMP_LTZ(3)", pa.timestamp("ms", tz="UTC")),
    ("TIMESTAMP_LTZ(6)", pa.timestamp("us", tz="UTC")),
    ("BINARY(4)", pa.binary(4)),
    ("BYTES", pa.binary()),
]


@pytest.mark.parametrize(("text", "arrow"), ARROW_OF)
def test_arrow_representation(text, arrow):
    t = parse_type(text)
    assert t.to_arrow() == arrow
    if t.arrow_type_is_exact:
        assert from_arrow(arrow) == t
        assert from_arrow(arrow, nullable=False) == t.with_nullable(False)


@pytest.mark.parametrize(
    ("arrow", "text"),
    [
        (pa.large_string(), "STRING"),
        (pa.large_binary(), "BYTES"),
        (pa.uint8(), "SMALLINT"),
        (pa.uint32(), "BIGINT"),
        (pa.date64(), "DATE"),
        (pa.time32("s"), "TIME(0)"),
        (pa.timestamp("us", tz="Europe/Paris"), "TIMESTAMP_LTZ(6)"),
        (pa.dictionary(pa.int32(), pa.string()), "STRING"),
    ],
)
def test_from_arrow_maps_related_types(arrow, text):
    assert from_arrow(arrow) == parse_type(text)


@pytest.mark.parametrize(
    ("arrow", "message"),
    [
        (pa.float16(), "Arrow type 'halffloat' is not supported"),
        (pa.uint64(), "Arrow type 'uint64' is not supported"),
        (pa.list_(pa.float16()), "element: Arrow type 'halffloat' is not supported"),
        (pa.struct([]), "a ROW needs at least one field"),
        (pa.null(), "'null' has no Fluss type"),
    ],
)
def test_from_arrow_rejects_unsupported_types_naming_them(arrow, message):
    with pytest.raises(FlussError, match=message):
        from_arrow(arrow)


# ============================================================================ RowSchema


def _orders_schema() -> RowSchema:
    return RowSchema(
        [
            Column("id", parse_type("BIGINT"), "order id"),
            Column("code", parse_type("CHAR(5)")),
            Column("amount", parse_type("DECIMAL(10, 2) NOT NULL")),
            Column("at", parse_type("TIMESTAMP_LTZ(3)")),
            Column("t", parse_type("TIME(2)")),
        ],
        ["id"],
    )


def test_primary_key_columns_become_not_null():
    schema = _orders_schema()
    assert str(schema.columns[0].data_type) == "BIGINT NOT NULL"
    arrow = schema.to_arrow()
    assert [f.nullable for f in arrow] == [False, True, False, True, True]
    assert arrow.field("id").type == pa.int64()


def test_to_arrow_records_types_arrow_cannot_express():
    arrow = _orders_schema().to_arrow()
    assert arrow.field("code").metadata == {FLUSS_TYPE_METADATA_KEY: b"CHAR(5)"}
    assert arrow.field("t").metadata == {FLUSS_TYPE_METADATA_KEY: b"TIME(2)"}
    assert arrow.field("amount").metadata is None


def test_arrow_schema_round_trip_keeps_every_type():
    schema = _orders_schema()
    back = RowSchema.from_arrow(schema.to_arrow(), ["id"])
    assert [c.data_type for c in back.columns] == [c.data_type for c in schema.columns]


def test_from_arrow_metadata_wins_over_the_arrow_type():
    arrow = pa.schema(
        [
            pa.field("code", pa.string(), metadata={b"fluss.type": b"CHAR(5)"}),
            pa.field("c", pa.large_string(), nullable=False),
            pa.field("note", pa.string(), metadata={b"comment": b"free text"}),
        ]
    )
    schema = RowSchema.from_arrow(arrow)
    assert [str(c.data_type) for c in schema.columns] == ["CHAR(5)", "STRING NOT NULL", "STRING"]
    assert schema.columns[2].comment == "free text"


def test_from_arrow_rejects_metadata_that_does_not_fit():
    arrow = pa.schema([pa.field("x", pa.string(), metadata={b"fluss.type": b"INT"})])
    with pytest.raises(
        FlussError, match="column 'x': fluss.type metadata 'INT' does not fit Arrow type 'string'"
    ):
        RowSchema.from_arrow(arrow)


def test_from_arrow_names_the_column_of_an_unsupported_type():
    with pytest.raises(FlussError, match="column 'f': Arrow type 'halffloat'"):
        RowSchema.from_arrow(pa.schema([("f", pa.float16())]))


@pytest.mark.parametrize(
    ("names", "pks", "message"),
    [
        (["a", "a"], [], "duplicate column name 'a'"),
        (["", "b"], [], "column name must not be empty"),
        (["a\nb"], [], "contains control characters"),
        (["x" * 201], [], "201 characters long \\(max 200\\)"),
        (["a", "b"], ["c"], "primary key column 'c' does not exist"),
        (["a", "b"], ["a", "a"], "primary key column 'a' is listed twice"),
        ([], [], "at least one column"),
    ],
)
def test_schema_validation_errors(names, pks, message):
    arrow = pa.schema([(n, pa.int32()) for n in names])
    with pytest.raises(FlussError, match=message) as info:
        RowSchema.from_arrow(arrow, pks)
    assert info.value.error_code == ErrorCode.INVALID_TABLE_EXCEPTION


def test_json_form_is_stable_and_round_trips():
    schema = _orders_schema()
    doc = schema.to_json()
    assert doc == {
        "columns": [
            {"name": "id", "type": "BIGINT NOT NULL", "comment": "order id"},
            {"name": "code", "type": "CHAR(5)", "comment": None},
            {"name": "amount", "type": "DECIMAL(10, 2) NOT NULL", "comment": None},
            {"name": "at", "type": "TIMESTAMP_LTZ(3)", "comment": None},
            {"name": "t", "type": "TIME(2)", "comment": None},
        ],
        "primary_keys": ["id"],
    }
    assert RowSchema.from_json(doc) == schema


def test_from_json_rejects_malformed_documents():
    with pytest.raises(FlussError, match="malformed schema JSON"):
        RowSchema.from_json({"columns": [{"name": "a"}]})
    with pytest.raises(FlussError, match="invalid data type 'NOPE'"):
        RowSchema.from_json({"columns": [{"name": "a", "type": "NOPE"}]})


def test_lookups_by_name():
    schema = _orders_schema()
    assert schema.column_names == ["id", "code", "amount", "at", "t"]
    assert schema.index_of("amount") == 2
    assert schema.primary_key_indices == [0]
    assert schema.column("code").data_type == parse_type("CHAR(5)")
    with pytest.raises(FlussError, match="column 'nope' does not exist"):
        schema.index_of("nope")


def test_column_accepts_type_text():
    assert Column("a", "INT NOT NULL").data_type == DataTypes.INT().with_nullable(False)  # type: ignore[arg-type]
