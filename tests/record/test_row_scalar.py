"""The per-field row decoder (``fluss.record.row_scalar``) against the vectorised Arrow decode of the same rows, and
the row-format log batch of stored values (``build_row_batch``) that small lookup answers travel in."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from fluss.errors import ErrorCode, FlussError
from fluss.record import compacted_rows, indexed_rows
from fluss.record.log_batch import LogBatch, build_row_batch
from fluss.record.row_scalar import body_rows, row_decoder
from fluss.row_convert import batch_to_pylist

PLAIN = pa.schema([pa.field("id", pa.int64(), nullable=False), ("b", pa.bool_()), ("i8", pa.int8()),
                   ("i16", pa.int16()), ("i32", pa.int32()), ("i64", pa.int64()), ("f32", pa.float32()),
                   ("f64", pa.float64()), ("s", pa.string()), ("bin", pa.binary())])
CODECS = {"COMPACTED": compacted_rows, "INDEXED": indexed_rows}


def _batch(n: int, seed: int) -> pa.RecordBatch:
    rng = np.random.default_rng(seed)

    def maybe(values: list) -> list:  # every column but the key has nulls
        return [None if rng.random() < 0.2 else v for v in values]

    ints = lambda lo, hi: [int(v) for v in rng.integers(lo, hi, n, endpoint=True)]  # noqa: E731
    i64 = ints(-(1 << 63), (1 << 63) - 1)
    i64[:3] = [-(1 << 63), (1 << 63) - 1, 0][:n]
    return pa.RecordBatch.from_pydict({
        "id": list(range(n)),
        "b": maybe([bool(v) for v in rng.integers(0, 1, n, endpoint=True)]),
        "i8": maybe(ints(-128, 127)), "i16": maybe(ints(-(1 << 15), (1 << 15) - 1)),
        "i32": maybe(ints(-(1 << 31), (1 << 31) - 1)), "i64": maybe(i64),
        "f32": maybe([float(v) for v in rng.normal(size=n).astype(np.float32)]),
        "f64": maybe([float(v) for v in rng.normal(size=n) * 1e300]),
        "s": maybe(["", "é€😀", "x" * 300] * (n // 3) + ["a"] * (n % 3)),
        "bin": maybe([bytes(rng.integers(0, 255, int(k), dtype=np.uint8)) for k in rng.integers(0, 200, n)]),
    }, schema=PLAIN)


@pytest.mark.parametrize("fmt", ["COMPACTED", "INDEXED"])
def test_rows_decode_to_the_values_of_the_arrow_path(fmt):
    batch = _batch(300, seed=len(fmt))
    values = CODECS[fmt].encode_rows(batch, 7)
    decode = row_decoder(PLAIN, fmt)
    got = [dict(zip(PLAIN.names, decode(v), strict=True)) for v in values]
    expected = batch_to_pylist(CODECS[fmt].decode_rows(values, PLAIN))
    assert got == expected
    assert got == batch.to_pylist()  # and the values written
    assert all(type(got[i][c]) is type(expected[i][c]) for i in range(len(got)) for c in PLAIN.names)
    nan = pa.RecordBatch.from_pydict({"x": [float("nan"), -0.0]}, schema=pa.schema([("x", pa.float64())]))
    decoded = [row_decoder(nan.schema, fmt)(v)[0] for v in CODECS[fmt].encode_rows(nan, 1)]
    assert np.isnan(decoded[0]) and str(decoded[1]) == "-0.0"


@pytest.mark.parametrize("column", [pa.timestamp("us"), pa.date32(), pa.decimal128(10, 2), pa.list_(pa.int32()),
                                    pa.binary(4)])
def test_columns_without_a_per_field_reader_take_the_arrow_path(column):
    assert row_decoder(pa.schema([("k", pa.int32()), ("v", column)]), "COMPACTED") is None
    assert row_decoder(PLAIN, "ARROW") is None


@pytest.mark.parametrize("fmt", ["COMPACTED", "INDEXED"])
def test_a_row_cut_short_is_refused_naming_its_size(fmt):
    value = CODECS[fmt].encode_rows(_batch(3, seed=1).slice(2, 1), 1)[0]
    decode = row_decoder(PLAIN, fmt)
    for cut in (1, len(value) // 2, len(value) - 1):
        with pytest.raises(FlussError) as e:
            decode(value[:cut])
        assert e.value.error_code == ErrorCode.CORRUPT_RECORD_EXCEPTION
        assert f"a {fmt} row of {cut} bytes" in e.value.message


@pytest.mark.parametrize("fmt", ["COMPACTED", "INDEXED"])
def test_stored_values_in_a_row_batch_read_back_both_ways(fmt):
    batch = _batch(5, seed=3)
    values = CODECS[fmt].encode_rows(batch, 2)
    parsed = LogBatch(build_row_batch(values, fmt, 2))
    parsed.ensure_valid()  # header and CRC
    assert (parsed.body_format, parsed.schema_id, parsed.record_count, parsed.append_only) == (fmt, 2, 5, True)
    assert parsed.to_arrow(PLAIN).equals(CODECS[fmt].decode_rows(values, PLAIN))  # the vectorised reader
    rows = body_rows(parsed.body(), parsed.record_count)
    assert [bytes(r) for r in rows] == values
    decode = row_decoder(PLAIN, fmt)
    assert [dict(zip(PLAIN.names, decode(r), strict=True)) for r in rows] == batch.to_pylist()
    with pytest.raises(FlussError, match="do not fit"):
        body_rows(parsed.body()[:-16], 5)
    with pytest.raises(FlussError, match="not a row format"):
        build_row_batch(values, "ARROW", 2)
