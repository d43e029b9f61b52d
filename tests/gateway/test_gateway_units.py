"""Pieces of the gateway that need no cluster: the error map, JSON row decoding and rendering, paging."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

from fluss.errors import ErrorCode, FlussError
from fluss.gateway.errors import CODE_STATUS, FLUSS_ERROR_MAP, from_fluss
from fluss.gateway.json_rows import RowsInvalid, decode_rows
from fluss.gateway.render import rows_to_json
from fluss.gateway.routes.common import page
from fluss.types import Column, DataType, RowSchema


def test_every_fluss_error_code_maps_to_one_status_and_stable_code():
    codes = {v for k, v in vars(ErrorCode).items() if k.isupper() and k != "NONE"}
    assert codes == set(FLUSS_ERROR_MAP), f"unmapped: {sorted(codes - set(FLUSS_ERROR_MAP))}"
    for stable in FLUSS_ERROR_MAP.values():
        assert stable in CODE_STATUS and stable == stable.lower() and " " not in stable
    err = from_fluss(FlussError("t gone", ErrorCode.TABLE_NOT_EXIST))
    assert (err.status, err.code) == (404, "table_not_found") and "TABLE_NOT_EXIST" in err.message
    assert from_fluss(FlussError("x", ErrorCode.NOT_LEADER_OR_FOLLOWER)).status == 503


SCHEMA = RowSchema([
    Column("id", DataType("BIGINT")), Column("f", DataType("FLOAT")), Column("c", DataType("CHAR", length=3)),
    Column("d", DataType("DECIMAL", precision=5, scale=2)), Column("day", DataType("DATE")),
    Column("t", DataType("TIME", precision=3)), Column("ts", DataType("TIMESTAMP", precision=9)),
    Column("ltz", DataType("TIMESTAMP_LTZ", precision=3)), Column("b", DataType("BINARY", length=2)),
    Column("ok", DataType("BOOLEAN")),
], ["id"])
ALL = SCHEMA.column_names


def test_values_of_every_type_round_trip():
    row = {"id": "9223372036854775807", "f": 1.5, "c": "abc", "d": "-123.45", "day": "2026-01-31",
           "t": "12:34:56.789", "ts": "2026-01-31T12:34:56.123456789", "ltz": "2026-01-31T14:34:56.5+02:00",
           "b": "AAE=", "ok": True}
    batch = decode_rows([row], SCHEMA, ALL, {"id"})
    values = batch.to_pylist()[0]
    assert values["id"] == 2**63 - 1 and values["d"] == decimal.Decimal("-123.45")
    assert values["day"] == dt.date(2026, 1, 31) and values["b"] == b"\x00\x01"
    assert batch.column("ts").cast(pa.int64())[0].as_py() % 1_000_000_000 == 123456789
    out = rows_to_json(batch)[0]
    assert out["ltz"] == "2026-01-31T12:34:56.500Z" and out["d"] == "-123.45" and out["id"] == 2**63 - 1
    assert out["ts"] == "2026-01-31T12:34:56.123456789" and out["t"] == "12:34:56.789" and out["b"] == "AAE="


@pytest.mark.parametrize("column,value,reason", [
    ("id", 1.5, "BIGINT"), ("id", True, "BIGINT"), ("id", "99999999999999999999", "out of range"),
    ("f", "fast", "FLOAT"), ("f", 1e39, "overflows"), ("c", "abcd", "more than CHAR(3)"),
    ("d", "1000.00", "precision"), ("d", "1.001", "fractional digits"), ("d", "abc", "not a decimal"),
    ("day", "2026-02-30", "DATE"), ("t", "25:00:00", "time of day"), ("t", "12:00:00.0001", "finer"),
    ("ts", "2026-01-01T00:00:00Z", "carries a zone"), ("ltz", "2026-01-01T00:00:00", "no zone"),
    ("b", "AAAA", "BINARY(2)"), ("b", "@@", "base64"), ("ok", 1, "BOOLEAN"),
])
def test_bad_values_name_row_column_and_reason(column, value, reason):
    rows = [{"id": 1}, {"id": 2, column: value}] if column != "id" else [{"id": 1}, {"id": value}]
    with pytest.raises(RowsInvalid) as e:
        decode_rows(rows, SCHEMA, ALL, {"id"})
    [error] = e.value.errors
    assert (error.row, error.column) == (1, column)
    assert reason in error.reason, error.reason


def test_missing_required_and_row_numbers():
    with pytest.raises(RowsInvalid) as e:
        decode_rows([{"id": 1}, {"f": 1.0}, "x"], SCHEMA, ALL, {"id"}, row_numbers=[10, 11, 12])
    assert [(x.row, x.column) for x in e.value.errors] == [(11, "id"), (12, None)]


def test_keyset_paging():
    names = [f"t{i:02d}" for i in range(7)]
    first, token = page(names, 3, None)
    second, token2 = page(names, 3, token)
    third, token3 = page(names, 3, token2)
    assert first + second + third == sorted(names) and token3 is None
