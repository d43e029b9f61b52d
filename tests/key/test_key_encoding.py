"""The key encoding (fluss/key/encoding.py): shared test vectors, order and prefix properties, and the
vectorised encoder against the scalar reference.

Regenerate docs/key-test-vectors.json after changing its inputs (types/values) with:

    .venv/bin/python tests/key/test_key_encoding.py --regenerate
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import random
import struct
import sys
import zlib
from pathlib import Path

import pyarrow as pa
import pytest

from fluss.errors import FlussError
from fluss.key.bucketing import bucket_of, murmur3_32
from fluss.key.encoding import encode_key, encode_key_buffers, encode_keys, encode_keys_array, encode_value
from fluss.row_convert import rows_to_batch
from fluss.types import Column, DataType, RowSchema, parse_type

VECTORS_PATH = Path(__file__).resolve().parents[2] / "docs" / "key-test-vectors.json"
VECTOR_BUCKET_COUNTS = (1, 3, 16, 128)


# ============================================================================ test-vector plumbing


def vector_value(raw: object, t: DataType) -> object:
    """The Python value of a JSON test-vector value (see docs/keys-and-buckets.md, "Test vectors")."""
    if raw is None:
        return None
    root = t.root
    if root in ("FLOAT", "DOUBLE"):
        value = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}.get(raw, raw)  # type: ignore[call-overload]
        value = float(value)
        return struct.unpack("<f", struct.pack("<f", value))[0] if root == "FLOAT" else value
    if root in ("BYTES", "BINARY"):
        return bytes.fromhex(raw)  # type: ignore[arg-type]
    if root == "DECIMAL":
        return decimal.Decimal(raw)  # type: ignore[arg-type]
    if root == "DATE":
        return dt.date.fromisoformat(raw)  # type: ignore[arg-type]
    if root == "TIME":
        return dt.time.fromisoformat(raw)  # type: ignore[arg-type]
    if root == "TIMESTAMP":
        return dt.datetime.fromisoformat(raw)  # type: ignore[arg-type]
    if root == "TIMESTAMP_LTZ":
        return dt.datetime.fromisoformat(raw.replace("Z", "+00:00")).astimezone(dt.UTC)  # type: ignore[union-attr]
    return raw


def compute_vector(case: dict) -> dict:
    """A case with its derived fields (key_hex, hash, buckets) computed from types and values."""
    types = [parse_type(t) for t in case["types"]]
    values = [vector_value(v, t) for v, t in zip(case["values"], types, strict=True)]
    key = encode_key(values, types)
    out = {"name": case["name"], "types": case["types"], "values": case["values"], "key_hex": key.hex()}
    out["hash"] = murmur3_32(key)
    out["buckets"] = {str(n): bucket_of(key, n) for n in VECTOR_BUCKET_COUNTS}
    return out


def regenerate_vectors(path: Path = VECTORS_PATH) -> dict:
    """Recompute every derived field of the vector file from its inputs and return the document."""
    doc = json.loads(path.read_text())
    doc["cases"] = [compute_vector(c) for c in doc["cases"]]
    doc["murmur3_32"] = [
        {
            "data_hex": m["data_hex"],
            "seed": m["seed"],
            "hash": murmur3_32(bytes.fromhex(m["data_hex"]), m["seed"]),
        }
        for m in doc["murmur3_32"]
    ]
    return doc


def write_vectors(doc: dict, path: Path = VECTORS_PATH) -> None:
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")


def load_vectors() -> dict:
    return json.loads(VECTORS_PATH.read_text())


# ============================================================================ shared vectors


def test_vector_file_matches_the_code():
    assert load_vectors() == regenerate_vectors(), (
        "docs/key-test-vectors.json is stale: run .venv/bin/python tests/key/test_key_encoding.py --regenerate"
    )


def test_vectors_cover_every_type_nulls_and_multi_column_keys():
    cases = load_vectors()["cases"]
    roots = {parse_type(t).root for c in cases for t in c["types"]}
    assert roots == {
        "BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "CHAR", "STRING",
        "DECIMAL", "DATE", "TIME", "TIMESTAMP", "TIMESTAMP_LTZ", "BINARY", "BYTES",
    }  # fmt: skip
    assert any(None in c["values"] for c in cases)
    assert any(len(c["types"]) > 1 for c in cases)
    assert len(cases) >= 40


@pytest.mark.parametrize("case", load_vectors()["cases"], ids=lambda c: c["name"])
def test_vectorised_encoder_reproduces_vector(case):
    types = [parse_type(t) for t in case["types"]]
    values = [vector_value(v, t) for v, t in zip(case["values"], types, strict=True)]
    schema = RowSchema([Column(f"k{i}", t) for i, t in enumerate(types)])
    batch = rows_to_batch([values, values], schema)
    keys = encode_keys(batch, list(range(len(types))))
    assert [k.hex() for k in keys] == [case["key_hex"]] * 2


# ============================================================================ layout


def test_field_layout_examples():
    assert encode_key([None], [parse_type("INT")]) == b"\x00"
    assert encode_key([1], [parse_type("INT")]) == b"\x01\x80\x00\x00\x01"
    assert encode_key([-1], [parse_type("BIGINT")]) == b"\x01" + b"\x7f" + b"\xff" * 7
    assert encode_key([True], [parse_type("BOOLEAN")]) == b"\x01\x01"
    assert encode_key(["a\x00"], [parse_type("STRING")]) == b"\x01a\x00\xff\x00\x01"
    assert encode_key([""], [parse_type("STRING")]) == b"\x01\x00\x01"
    assert encode_key([b"\xab\xcd"], [parse_type("BINARY(2)")]) == b"\x01\xab\xcd"
    assert (
        encode_key([decimal.Decimal("1.5")], [parse_type("DECIMAL(5, 1)")])
        == b"\x01\x80" + b"\x00" * 6 + b"\x0f"
    )
    assert len(encode_key([decimal.Decimal("1.5")], [parse_type("DECIMAL(19, 1)")])) == 17
    assert encode_key([1.0], [parse_type("DOUBLE")]) == b"\x01" + bytes.fromhex("bff0000000000000")
    assert encode_key([dt.date(1970, 1, 2)], [parse_type("DATE")]) == b"\x01\x80\x00\x00\x01"
    # TIME is nanoseconds of the day; TIMESTAMP the value in the precision's unit.
    assert encode_key([dt.time(0, 0, 1)], [parse_type("TIME(0)")]) == b"\x01" + (2**63 + 10**9).to_bytes(
        8, "big"
    )
    ts = dt.datetime(1970, 1, 1, 0, 0, 1)
    assert encode_key([ts], [parse_type("TIMESTAMP(3)")]) == b"\x01" + (2**63 + 1000).to_bytes(8, "big")
    assert encode_key([ts], [parse_type("TIMESTAMP(0)")]) == b"\x01" + (2**63 + 1).to_bytes(8, "big")


def test_equal_sql_values_have_equal_keys():
    double = [parse_type("DOUBLE")]
    assert encode_key([-0.0], double) == encode_key([0.0], double)
    nan_other = struct.unpack("<d", bytes.fromhex("0100000000f8ff7f"))[0]
    assert math.isnan(nan_other)
    assert encode_key([nan_other], double) == encode_key([math.nan], double)
    ltz = [parse_type("TIMESTAMP_LTZ(3)")]
    paris = dt.timezone(dt.timedelta(hours=1))
    assert encode_key([dt.datetime(2024, 1, 1, 1, tzinfo=paris)], ltz) == encode_key(
        [dt.datetime(2024, 1, 1)], ltz
    )


def test_nullability_does_not_change_the_key():
    assert encode_key([5], [parse_type("INT NOT NULL")]) == encode_key([5], [parse_type("INT")])


def test_encode_key_rejects_bad_values():
    with pytest.raises(FlussError, match="2 values for 1 key columns"):
        encode_key([1, 2], [parse_type("INT")])
    with pytest.raises(FlussError, match="out of range"):
        encode_key([2**31], [parse_type("INT")])
    with pytest.raises(FlussError, match="expected int"):
        encode_key(["1"], [parse_type("BIGINT")])
    with pytest.raises(FlussError, match="fractional digits"):
        encode_key([decimal.Decimal("1.234")], [parse_type("DECIMAL(5, 2)")])
    with pytest.raises(FlussError, match="more than 5 digits"):
        encode_key([decimal.Decimal("1234.5")], [parse_type("DECIMAL(5, 2)")])
    with pytest.raises(FlussError, match="naive"):
        encode_key([dt.datetime(2024, 1, 1, tzinfo=dt.UTC)], [parse_type("TIMESTAMP(3)")])
    with pytest.raises(FlussError, match="exactly 2 bytes"):
        encode_key([b"abc"], [parse_type("BINARY(2)")])


# ============================================================================ order and prefix


def _assert_order_preserved(values, type_text):
    t = parse_type(type_text)
    by_value = sorted(values)
    by_key = sorted(values, key=lambda v: encode_value(v, t))
    assert by_key == by_value


def test_int_order_is_byte_order():
    rng = random.Random(7)
    for text, bits in (("TINYINT", 8), ("SMALLINT", 16), ("INT", 32), ("BIGINT", 64)):
        lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        values = [lo, hi, 0, -1, 1] + [rng.randint(lo, hi) for _ in range(300)]
        _assert_order_preserved(values, text)


def test_float_order_is_byte_order():
    rng = random.Random(8)
    values = [-math.inf, math.inf, 0.0, 5e-324, -5e-324, 1.0, -1.0, 1e308, -1e308]
    values += [rng.uniform(-1e6, 1e6) for _ in range(300)] + [rng.gauss(0, 1e-200) for _ in range(50)]
    _assert_order_preserved(values, "DOUBLE")
    singles = [struct.unpack("<f", struct.pack("<f", v))[0] for v in values if abs(v) < 3e38]
    _assert_order_preserved(singles, "FLOAT")
    # NaN sorts after +inf, consistently.
    t = parse_type("DOUBLE")
    assert encode_value(math.nan, t) > encode_value(math.inf, t)


def test_string_and_bytes_order_is_byte_order():
    rng = random.Random(9)
    alphabet = ["\x00", "\x01", "a", "b", "z", "\xff", "é", "中", "\U0001f600", "\x7f"]
    strings = ["", "a", "a\x00", "a\x00\x00", "ab", "a\x01", "\x00"]
    strings += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6))) for _ in range(400)]
    # Code-point order equals UTF-8 byte order.
    _assert_order_preserved(strings, "STRING")
    blobs = [s.encode("utf-8") for s in strings]
    _assert_order_preserved(blobs, "BYTES")


def test_decimal_date_time_timestamp_order_is_byte_order():
    rng = random.Random(10)
    decimals = [decimal.Decimal(rng.randint(-(10**12), 10**12)).scaleb(-4) for _ in range(200)]
    _assert_order_preserved(decimals, "DECIMAL(16, 4)")
    wide = [decimal.Decimal(rng.randint(-(10**37), 10**37)).scaleb(-18) for _ in range(200)]
    _assert_order_preserved(wide, "DECIMAL(38, 18)")
    dates = [dt.date(1970, 1, 1) + dt.timedelta(days=rng.randint(-40000, 40000)) for _ in range(200)]
    _assert_order_preserved(dates, "DATE")
    times = [
        dt.time(rng.randrange(24), rng.randrange(60), rng.randrange(60), rng.randrange(10**6))
        for _ in range(200)
    ]
    _assert_order_preserved(times, "TIME(6)")
    stamps = [
        dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=rng.randint(-(10**16), 10**16))
        for _ in range(200)
    ]
    _assert_order_preserved(stamps, "TIMESTAMP(6)")


def test_null_sorts_first():
    for text, value in (("INT", -(2**31)), ("STRING", ""), ("DOUBLE", -math.inf), ("BOOLEAN", False)):
        t = parse_type(text)
        assert encode_value(None, t) < encode_value(value, t)


def test_composite_keys_sort_column_by_column():
    rng = random.Random(11)
    types = [parse_type("STRING"), parse_type("INT")]
    rows = [(rng.choice(["", "a", "a\x00", "ab", "b"]), rng.randint(-5, 5)) for _ in range(300)]
    assert sorted(rows, key=lambda r: encode_key(r, types)) == sorted(rows)


def test_key_prefix_is_byte_prefix():
    rng = random.Random(12)
    types = [parse_type(t) for t in ("STRING", "BIGINT", "BYTES", "DOUBLE", "DATE", "DECIMAL(20, 3)")]
    for _ in range(200):
        values = [
            rng.choice([None, "", "x\x00y", "héllo"]),
            rng.choice([None, -1, 2**40]),
            rng.choice([None, b"", b"\x00\x01"]),
            rng.choice([None, -0.5, math.inf]),
            rng.choice([None, dt.date(2000, 2, 29)]),
            rng.choice([None, decimal.Decimal("-1.5")]),
        ]
        full = encode_key(values, types)
        for m in range(len(types)):
            assert full.startswith(encode_key(values[:m], types[:m]))


# ============================================================================ vectorised == scalar

ALL_TYPES = [
    "BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "CHAR(4)", "STRING",
    "DECIMAL(9, 3)", "DECIMAL(38, 10)", "DATE", "TIME(0)", "TIME(2)", "TIME(6)", "TIME(9)",
    "TIMESTAMP(0)", "TIMESTAMP(3)", "TIMESTAMP(5)", "TIMESTAMP(9)", "TIMESTAMP_LTZ(3)", "TIMESTAMP_LTZ(6)",
    "BINARY(3)", "BYTES",
]  # fmt: skip


def random_value(rng: random.Random, t: DataType):
    root = t.root
    if root == "BOOLEAN":
        return rng.random() < 0.5
    if root in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
        bits = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}[root]
        return rng.randint(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if root in ("FLOAT", "DOUBLE"):
        v = rng.choice([0.0, -0.0, math.nan, math.inf, -math.inf, rng.uniform(-1e9, 1e9)])
        return struct.unpack("<f", struct.pack("<f", v))[0] if root == "FLOAT" else v
    if root == "CHAR":
        return "".join(rng.choice("a\x00é中") for _ in range(rng.randint(0, t.length)))
    if root == "STRING":
        return "".join(rng.choice("ab\x00é中\U0001f600") for _ in range(rng.randint(0, 12)))
    if root == "BYTES":
        return bytes(rng.choice([0, 1, 255]) for _ in range(rng.randint(0, 9)))
    if root == "BINARY":
        return bytes(rng.randrange(256) for _ in range(t.length))
    if root == "DECIMAL":
        return decimal.Decimal(rng.randint(-(10**t.precision) + 1, 10**t.precision - 1)).scaleb(-t.scale)
    if root == "DATE":
        return dt.date(1970, 1, 1) + dt.timedelta(days=rng.randint(-50000, 50000))
    if root == "TIME":
        return dt.time(rng.randrange(24), rng.randrange(60), rng.randrange(60), rng.randrange(10**6))
    moment = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=rng.randint(-(10**15), 9 * 10**15))
    if root == "TIMESTAMP_LTZ" and rng.random() < 0.5:
        return moment.replace(tzinfo=dt.UTC)
    return moment


def _random_batch(rng: random.Random, type_texts: list[str], n: int, null_rate: float):
    types = [parse_type(t) for t in type_texts]
    schema = RowSchema([Column(f"c{i}", t) for i, t in enumerate(types)])
    rows = [[None if rng.random() < null_rate else random_value(rng, t) for t in types] for _ in range(n)]
    return rows, types, rows_to_batch(rows, schema)


@pytest.mark.parametrize("null_rate", [0.0, 0.2])
@pytest.mark.parametrize("type_text", ALL_TYPES)
def test_vectorised_single_column_matches_scalar(type_text, null_rate):
    rng = random.Random(zlib.crc32(f"{type_text}/{null_rate}".encode()))
    rows, types, batch = _random_batch(rng, [type_text], 300, null_rate)
    assert encode_keys(batch, [0]) == [encode_key(r, types) for r in rows]


def test_vectorised_multi_column_matches_scalar_and_slices():
    rng = random.Random(13)
    rows, types, batch = _random_batch(rng, ALL_TYPES, 400, 0.15)
    for cols in ([8, 4], [0, 1, 2, 3], list(range(len(ALL_TYPES))), [23, 22, 8, 7]):
        expected = [encode_key([r[c] for c in cols], [types[c] for c in cols]) for r in rows]
        assert encode_keys(batch, cols) == expected
        # Sliced batches (non-zero array offsets) encode the same rows the same way.
        assert encode_keys(batch.slice(37, 101), cols) == expected[37:138]


def test_encoded_keys_as_arrow_and_buffers():
    rng = random.Random(14)
    rows, types, batch = _random_batch(rng, ["STRING", "INT"], 50, 0.1)
    expected = [encode_key(r, types) for r in rows]
    assert encode_keys_array(batch, [0, 1]).to_pylist() == expected
    fixed = encode_key_buffers(
        rows_to_batch(
            [[1, "a"]],
            RowSchema([Column("a", parse_type("BIGINT NOT NULL")), Column("b", parse_type("STRING"))]),
        ),
        [0],
    )
    assert fixed.matrix is not None and fixed.matrix.shape == (1, 9)
    table = pa.Table.from_batches([batch, batch])
    assert encode_keys(table, [0, 1]) == expected + expected


if __name__ == "__main__":
    if "--regenerate" in sys.argv:
        write_vectors(regenerate_vectors())
        print(f"wrote {VECTORS_PATH}")
    else:
        print(__doc__)
