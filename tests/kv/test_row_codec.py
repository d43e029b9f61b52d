"""Round trips of both row layouts (INDEXED: fluss/record/indexed_rows.py, COMPACTED: fluss/record/compacted_rows.py;
the KV value encodings and the row log formats) for every scalar type, nulls, NaN, wide decimals and timestamps."""

from __future__ import annotations

import datetime as dt
import decimal
import math
import struct

import numpy as np
import pyarrow as pa
import pytest

from fluss.errors import FlussError
from fluss.record import compacted_rows, indexed_rows
from fluss.record.indexed_rows import schema_ids_of
from fluss.types import Column, DataTypes, RowSchema

UTC = dt.UTC
D = decimal.Decimal


@pytest.fixture(params=[indexed_rows, compacted_rows], ids=["INDEXED", "COMPACTED"])
def codec(request):
    return request.param

ALL_TYPES = RowSchema(
    [
        Column("id", DataTypes.INT()),
        Column("b", DataTypes.BOOLEAN()),
        Column("i8", DataTypes.TINYINT()),
        Column("i16", DataTypes.SMALLINT()),
        Column("i64", DataTypes.BIGINT()),
        Column("f32", DataTypes.FLOAT()),
        Column("f64", DataTypes.DOUBLE()),
        Column("c", DataTypes.CHAR(3)),
        Column("s", DataTypes.STRING()),
        Column("d_small", DataTypes.DECIMAL(10, 2)),
        Column("d_wide", DataTypes.DECIMAL(38, 18)),
        Column("day", DataTypes.DATE()),
        Column("t0", DataTypes.TIME(0)),
        Column("t3", DataTypes.TIME(3)),
        Column("t9", DataTypes.TIME(9)),
        Column("ts3", DataTypes.TIMESTAMP(3)),
        Column("ts6", DataTypes.TIMESTAMP(6)),
        Column("ts9", DataTypes.TIMESTAMP(9)),
        Column("ltz3", DataTypes.TIMESTAMP_LTZ(3)),
        Column("ltz6", DataTypes.TIMESTAMP_LTZ(6)),
        Column("bin", DataTypes.BINARY(4)),
        Column("bytes", DataTypes.BYTES()),
    ],
    ["id"],
)

ROWS = [
    {
        "id": 1, "b": True, "i8": -128, "i16": 32767, "i64": -(2**63), "f32": 1.5, "f64": -0.0, "c": "abc",
        "s": "héllo\x00world", "d_small": D("-12345678.99"),
        "d_wide": D("-99999999999999999999.999999999999999999"), "day": dt.date(1969, 12, 31),
        "t0": dt.time(23, 59, 59), "t3": dt.time(1, 2, 3, 4000), "t9": dt.time(12, 0, 0, 123456),
        "ts3": dt.datetime(1960, 1, 1, 0, 0, 0, 1000), "ts6": dt.datetime(2024, 2, 29, 12, 30, 0, 999999),
        "ts9": dt.datetime(2262, 4, 11), "ltz3": dt.datetime(2024, 1, 1, tzinfo=UTC),
        "ltz6": dt.datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=UTC), "bin": b"\x00\x01\x02\xff", "bytes": b"",
    },
    {name: None for name in ALL_TYPES.column_names} | {"id": 2},
    {
        "id": 3, "b": False, "i8": 127, "i16": -32768, "i64": 2**63 - 1, "f32": float("inf"),
        "f64": float("nan"), "c": "", "s": "", "d_small": D("0.01"),
        "d_wide": D("12345678901234567890.123456789012345678"), "day": dt.date(9999, 12, 31),
        "t0": dt.time(0), "t3": None, "t9": dt.time(0, 0, 0, 1), "ts3": None, "ts6": dt.datetime(1, 1, 1),
        "ts9": None, "ltz3": None, "ltz6": dt.datetime(2000, 6, 15, 8, tzinfo=UTC), "bin": b"abcd",
        "bytes": bytes(range(256)) * 40,
    },
]  # fmt: skip


def _batch() -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist(ROWS, schema=ALL_TYPES.to_arrow())


def _same(a: pa.RecordBatch, b: pa.RecordBatch) -> None:
    """Equal values, with float bit patterns compared (NaN == NaN, -0.0 != 0.0)."""
    assert a.schema.equals(b.schema, check_metadata=True)
    for i, f in enumerate(a.schema):
        x, y = a.column(i), b.column(i)
        if pa.types.is_floating(f.type):
            fmt = "f" if f.type == pa.float32() else "d"
            bits = [None if v is None else struct.pack(fmt, v) for v in x.to_pylist()]
            assert bits == [None if v is None else struct.pack(fmt, v) for v in y.to_pylist()], f.name
        else:
            assert x.equals(y), f.name


def test_every_scalar_type_round_trips_with_nulls(codec):
    batch = _batch()
    values = codec.encode_rows(batch, 5)
    assert len(values) == 3 and all(isinstance(v, bytes) for v in values)
    _same(codec.decode_rows(values, batch.schema, 5), batch)


def test_nan_and_negative_zero_keep_their_bits(codec):
    schema = pa.schema([("f", pa.float64()), ("g", pa.float32())])
    nan_payload = struct.unpack("d", struct.pack("Q", 0x7FF8_0000_0000_0001))[0]
    batch = pa.RecordBatch.from_arrays(
        [pa.array([nan_payload, -0.0, math.inf]), pa.array([math.nan, -0.0, -math.inf], pa.float32())],
        schema=schema,
    )
    out = codec.decode_rows(codec.encode_rows(batch, 0), schema)
    raw_in = np.frombuffer(batch.column(0).buffers()[1], dtype=np.uint64)[:3]
    raw_out = np.frombuffer(out.column(0).buffers()[1], dtype=np.uint64)[:3]
    assert (raw_in == raw_out).all()
    _same(out, batch)


def test_wide_decimal_extremes(codec):
    schema = pa.schema([("d", pa.decimal128(38, 18)), ("e", pa.decimal128(18, 0))])
    big = D("99999999999999999999.999999999999999999")
    neg = D("-99999999999999999999.999999999999999999")  # (-big would round to 28 digits)
    batch = pa.RecordBatch.from_arrays(
        [pa.array([big, neg, D(0), None], schema.field(0).type),
         pa.array([D(10**18 - 1), D(-(10**18) + 1), D(-1), None], schema.field(1).type)],
        schema=schema,
    )  # fmt: skip
    assert codec.decode_rows(codec.encode_rows(batch, 1), schema).equals(batch)


def test_timestamp_and_ltz_stay_distinct(codec):
    ts = pa.array([0, 1_700_000_000_000_000], pa.timestamp("us"))
    ltz = pa.array([0, 1_700_000_000_000_000], pa.timestamp("us", tz="UTC"))
    schema = pa.schema([("ts", ts.type), ("ltz", ltz.type)])
    batch = pa.RecordBatch.from_arrays([ts, ltz], schema=schema)
    values = codec.encode_rows(batch, 1)
    out = codec.decode_rows(values, schema)
    assert out.equals(batch)
    assert out.schema.field("ts").type.tz is None and out.schema.field("ltz").type.tz == "UTC"
    assert out.column(1).to_pylist()[1].tzinfo is not None
    assert out.column(0).to_pylist()[1].tzinfo is None


def test_sliced_batches_and_missing_values(codec):
    batch = _batch()
    sliced = batch.slice(1, 2)
    _same(codec.decode_rows(codec.encode_rows(sliced, 2), batch.schema), sliced)
    values = codec.encode_rows(batch, 2)
    out = codec.decode_rows([None, values[2], None], batch.schema)
    assert out.num_rows == 3
    assert out.column(0).to_pylist() == [None, 3, None]
    assert codec.decode_rows([], batch.schema).num_rows == 0
    assert codec.decode_rows([None, None], batch.schema).column(0).null_count == 2


def test_equally_and_unequally_long_values_decode_alike(codec):
    """Values of one length decode through a view of their bytes, strings of one length through one
    (rows, length) gather, rows without any null skip the null bitmaps: all give the rows encoded."""
    schema = pa.schema([("id", pa.int64()), ("s", pa.string()), ("b", pa.binary()), ("f", pa.bool_()),
                        ("d", pa.decimal128(10, 2))])
    same = pa.RecordBatch.from_pylist(
        [{"id": i, "s": f"s{i % 10}", "b": b"xy", "f": i % 2 == 0, "d": D(i) / 4} for i in range(50)], schema=schema)
    mixed = pa.RecordBatch.from_pylist(
        [{"id": i, "s": "\x00s" * (i % 4), "b": None if i % 3 else b"z", "f": None if i % 5 == 0 else True,
          "d": None if i % 7 == 0 else D(-i)} for i in range(50)], schema=schema)
    same_with_nulls = pa.RecordBatch.from_pylist(
        [{"id": i, "s": None, "b": b"q", "f": None, "d": D(1)} for i in range(5)], schema=schema)
    for batch in (same, mixed, same_with_nulls):
        values = codec.encode_rows(batch, 3)
        _same(codec.decode_rows(values, schema, 3), batch)
        _same(codec.decode_rows(tuple(values), schema), batch)
    values = codec.encode_rows(same, 3)
    assert codec is compacted_rows or len(set(map(len, values))) == 1
    out = codec.decode_rows([values[0], None, values[2]], schema)
    assert out.column(0).to_pylist() == [0, None, 2] and out.column(1).to_pylist() == ["s0", None, "s2"]


def test_layout_header_carries_schema_id_and_null_bitmap():
    schema = pa.schema([("a", pa.int32()), ("s", pa.string())])
    batch = pa.RecordBatch.from_pylist([{"a": 7, "s": None}], schema=schema)
    (value,) = indexed_rows.encode_rows(batch, 300)
    assert value[:2] == (300).to_bytes(2, "little")
    assert value[2] == 0b10  # column 1 is null
    assert value[3:7] == (7).to_bytes(4, "little")
    assert value[7:] == b"\x00\x00\x00\x00"  # length-prefixed empty var field
    assert schema_ids_of([value]).tolist() == [300]


def test_decoding_with_another_schema_id_is_rejected(codec):
    batch = _batch()
    values = codec.encode_rows(batch, 1)
    with pytest.raises(FlussError, match="schema id 1"):
        codec.decode_rows(values, batch.schema, 2)


def test_compacted_layout_has_varints_and_no_bytes_for_nulls():
    schema = pa.schema([("a", pa.int32()), ("s", pa.string()), ("l", pa.int64())])
    batch = pa.RecordBatch.from_pylist([{"a": -1, "s": None, "l": 300}], schema=schema)
    (value,) = compacted_rows.encode_rows(batch, 300)
    assert value[:2] == (300).to_bytes(2, "little")
    assert value[2] == 0b10  # column 1 is null and takes no bytes
    assert value[3:] == bytes([0x01, 0xD8, 0x04])  # zig-zag(-1) = 1; zig-zag(300) = 600 = 0b100_1011000
    assert len(value) < len(indexed_rows.encode_rows(batch, 300)[0])


@pytest.mark.parametrize("value", [0, -1, 1, 63, -64, 64, 2**31 - 1, -(2**31), 2**62, 2**63 - 1, -(2**63)])
def test_varints_of_extreme_integers_round_trip(value):
    schema = pa.schema([("x", pa.int64()), ("y", pa.int32())])
    small = max(-(2**31), min(2**31 - 1, value))
    batch = pa.RecordBatch.from_pylist([{"x": value, "y": small}] * 3, schema=schema)
    assert compacted_rows.decode_rows(compacted_rows.encode_rows(batch, 1), schema, 1).equals(batch)


def test_a_compacted_row_that_does_not_match_its_schema_is_refused():
    schema = pa.schema([("x", pa.int64()), ("s", pa.string())])
    (value,) = compacted_rows.encode_rows(pa.RecordBatch.from_pylist([{"x": 5, "s": "abc"}], schema=schema), 1)
    with pytest.raises(FlussError, match="does not match its schema"):
        compacted_rows.decode_rows([value + b"\x00"], schema)
