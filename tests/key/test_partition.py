"""Partition names (fluss/key/partition.py): specs, names, Fluss-style value formatting, vectorised form."""

from __future__ import annotations

import datetime as dt
import math

import pyarrow as pa
import pytest

from fluss.errors import ErrorCode, FlussError
from fluss.key.partition import (
    name_to_spec,
    partition_name_array,
    partition_names_of,
    partition_spec_to_name,
    partition_value_to_string,
)
from fluss.row_convert import rows_to_batch
from fluss.types import Column, RowSchema, parse_type


def test_single_key_name_is_the_value():
    assert partition_spec_to_name({"dt": "2024-01-01"}, ["dt"]) == "2024-01-01"


def test_several_keys_are_joined_by_dollar_in_key_order():
    assert partition_spec_to_name({"dt": "2024-01-01", "region": "US"}, ["region", "dt"]) == "US$2024-01-01"
    assert name_to_spec("US$2024-01-01", ["region", "dt"]) == {"region": "US", "dt": "2024-01-01"}


@pytest.mark.parametrize(
    ("spec", "keys", "message"),
    [
        ({"dt": "2024"}, ["dt", "region"], "missing partition key 'region'"),
        ({"dt": "2024", "zone": "x"}, ["dt"], "unknown key\\(s\\) 'zone'"),
        ({"dt": ""}, ["dt"], "'dt' has an empty value"),
        ({"dt": "a/b"}, ["dt"], "'dt' value 'a/b' may only contain"),
        ({"dt": "a b"}, ["dt"], "'dt' value 'a b'"),
        ({"dt": ".."}, ["dt"], "'dt' value '..' is not allowed"),
        ({"dt": "x" * 201}, ["dt"], "'dt' value .* longer than 200"),
        ({"dt": None}, ["dt"], "'dt' has a null value"),
        ({"dt": "1"}, [], "not partitioned"),
    ],
)
def test_invalid_specs_name_the_key(spec, keys, message):
    with pytest.raises(FlussError, match=message) as info:
        partition_spec_to_name(spec, keys)
    assert info.value.error_code == ErrorCode.PARTITION_SPEC_INVALID_EXCEPTION


def test_name_to_spec_checks_the_value_count():
    with pytest.raises(FlussError, match="has 1 value\\(s\\) but the table has 2 partition key"):
        name_to_spec("US", ["region", "dt"])


@pytest.mark.parametrize(
    ("type_text", "value", "expected"),
    [
        ("STRING", "US", "US"),
        ("CHAR(2)", "EU", "EU"),
        ("BOOLEAN", True, "true"),
        ("TINYINT", -5, "-5"),
        ("BIGINT", 9223372036854775807, "9223372036854775807"),
        ("DOUBLE", 1.5, "1_5"),
        ("DOUBLE", 100.0, "100_0"),
        ("DOUBLE", 1e10, "1_0E10"),
        ("DOUBLE", 1.25e-5, "1_25E-5"),
        ("DOUBLE", 0.001, "0_001"),
        ("DOUBLE", -0.0, "-0_0"),
        ("DOUBLE", math.nan, "NaN"),
        ("DOUBLE", -math.inf, "-Inf"),
        ("FLOAT", 0.1, "0_1"),
        ("FLOAT", 1234567.0, "1234567_0"),
        ("FLOAT", 12345678.0, "1_2345678E7"),
        ("BYTES", b"\x00\xab", "00ab"),
        ("BINARY(2)", b"\x01\x02", "0102"),
        ("DATE", dt.date(2024, 1, 5), "2024-01-05"),
        ("TIME(3)", dt.time(9, 5, 7, 123456), "09-05-07_123"),
        ("TIMESTAMP(3)", dt.datetime(2024, 1, 1, 12, 30), "2024-01-01-12-30-00_"),
        ("TIMESTAMP(6)", dt.datetime(2024, 1, 1, 12, 30, 0, 120000), "2024-01-01-12-30-00_12"),
        ("TIMESTAMP(6)", dt.datetime(1969, 12, 31, 23, 59, 59, 999999), "1969-12-31-23-59-59_999999"),
        (
            "TIMESTAMP_LTZ(3)",
            dt.datetime(2024, 1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1))),
            "2024-01-01-00-00-00_",
        ),
    ],
)
def test_values_format_like_fluss(type_text, value, expected):
    t = parse_type(type_text)
    assert partition_value_to_string(value, t) == expected
    batch = rows_to_batch([[value], [value]], RowSchema([Column("p", t)]))
    assert partition_names_of(batch, [0]) == [expected, expected]


def test_names_of_a_batch_with_two_keys():
    schema = RowSchema(
        [
            Column("id", parse_type("INT")),
            Column("region", parse_type("STRING")),
            Column("dt", parse_type("DATE")),
        ]
    )
    rows = [[i, ["US", "EU"][i % 2], dt.date(2024, 1, 1 + i % 3)] for i in range(6)]
    batch = rows_to_batch(rows, schema)
    expected = [f"{r[1]}${r[2].isoformat()}" for r in rows]
    assert partition_names_of(batch, [1, 2]) == expected
    assert partition_name_array(pa.Table.from_batches([batch]), [1, 2]).to_pylist() == expected


def test_dictionary_encoded_partition_column():
    batch = pa.record_batch([pa.array(["a", "b", "a"]).dictionary_encode()], names=["p"])
    assert partition_names_of(batch, [0]) == ["a", "b", "a"]


def test_null_partition_value_names_key_and_row():
    batch = rows_to_batch([["US"], [None]], RowSchema([Column("region", parse_type("STRING"))]))
    with pytest.raises(FlussError, match="partition key 'region' is null in row 1") as info:
        partition_names_of(batch, [0])
    assert info.value.error_code == ErrorCode.PARTITION_SPEC_INVALID_EXCEPTION


def test_invalid_partition_value_in_a_batch_names_key():
    batch = rows_to_batch([["US"], ["a/b"]], RowSchema([Column("region", parse_type("STRING"))]))
    with pytest.raises(FlussError, match="'region' value 'a/b'"):
        partition_names_of(batch, [0])


def test_batch_without_partition_keys_is_rejected():
    batch = rows_to_batch([["US"]], RowSchema([Column("region", parse_type("STRING"))]))
    with pytest.raises(FlussError, match="not partitioned"):
        partition_names_of(batch, [])
