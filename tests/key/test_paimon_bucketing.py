"""Paimon bucketing (fluss/key/paimon_row.py, fluss/key/bucket_function.py): the shared vector file, checked
against pypaimon's own row-key extractor (the Java side checks it against Paimon's Java classes), the
vectorised encoder against the scalar one, and the registry of bucket functions.

Regenerate docs/paimon-bucket-test-vectors.json after changing its inputs (name, types, values) with:

    .venv/bin/python tests/key/test_paimon_bucketing.py --regenerate
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import random
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from test_key_encoding import vector_value

from fluss.errors import FlussError
from fluss.key.bucket_function import (
    TABLE_BUCKET_FUNCTION,
    DefaultBucketing,
    PaimonBucketing,
    bucketing_for_lake_format,
    bucketing_of_properties,
    paimon_bucket_of_row,
    paimon_buckets_of_hashes,
)
from fluss.key.bucketing import bucket_ids as default_bucket_ids
from fluss.key.bucketing import murmur3_32
from fluss.key.paimon_row import encode_binary_row, encode_binary_rows, paimon_type_text
from fluss.row_convert import rows_to_batch
from fluss.types import Column, RowSchema, parse_type

VECTORS_PATH = Path(__file__).resolve().parents[2] / "docs" / "paimon-bucket-test-vectors.json"
BUCKET_COUNTS = (1, 3, 16, 128)
#: Cases where pypaimon 2.1's extractor disagrees with Java Paimon (see fluss/key/paimon_row.py); the vectors
#: follow Java, which the connector's JUnit test checks them against.
PYPAIMON_DIFFERS = {"decimal_38_2_unscaled_minus_128", "decimal_38_2_null", "timestamp_6_null",
                    "multi_nulls_with_var_parts"}


def _signed(h: int) -> int:
    return h - (1 << 32) if h >= 1 << 31 else h


def case_batch(case: dict) -> tuple[pa.RecordBatch, list]:
    types = [parse_type(t) for t in case["types"]]
    values = [vector_value(v, t) for v, t in zip(case["values"], types, strict=True)]
    schema = RowSchema([Column(f"k{i}", t) for i, t in enumerate(types)])
    return rows_to_batch([values], schema), types


def compute_vector(case: dict) -> dict:
    batch, types = case_batch(case)
    row = encode_binary_rows(batch, list(range(len(types)))).to_list()[0]
    return {"name": case["name"], "types": case["types"], "values": case["values"],
            "paimon_types": [paimon_type_text(t) for t in types], "row_hex": row.hex(),
            "hash": _signed(murmur3_32(row, 42)),
            "buckets": {str(n): paimon_bucket_of_row(row, n) for n in BUCKET_COUNTS}}


def regenerate(path: Path = VECTORS_PATH) -> dict:
    doc = json.loads(path.read_text())
    doc["cases"] = [compute_vector(c) for c in doc["cases"]]
    return doc


def load_vectors() -> dict:
    return json.loads(VECTORS_PATH.read_text())


def test_vector_file_matches_the_code():
    assert load_vectors() == regenerate(), (
        "docs/paimon-bucket-test-vectors.json is stale: run .venv/bin/python tests/key/test_paimon_bucketing.py "
        "--regenerate")


def test_vectors_cover_every_key_type_nulls_and_multi_column_keys():
    cases = load_vectors()["cases"]
    roots = {parse_type(t).root for c in cases for t in c["types"]}
    assert roots == {
        "BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "CHAR", "STRING",
        "DECIMAL", "DATE", "TIME", "TIMESTAMP", "TIMESTAMP_LTZ", "BINARY", "BYTES",
    }  # fmt: skip
    nulls = {parse_type(t).root for c in cases for t, v in zip(c["types"], c["values"], strict=True) if v is None}
    assert {"INT", "STRING", "DECIMAL", "TIMESTAMP", "DOUBLE"} <= nulls
    assert any(len(c["types"]) > 2 for c in cases)
    assert {c["name"] for c in cases} >= PYPAIMON_DIFFERS


def _pypaimon_buckets(case: dict, batch: pa.RecordBatch, num_buckets: int) -> list[int]:
    """Buckets by pypaimon's FixedBucketRowKeyExtractor for a table of these Paimon types."""
    from pypaimon.schema.data_types import AtomicType, DataField
    from pypaimon.schema.table_schema import TableSchema
    from pypaimon.write.row_key_extractor import FixedBucketRowKeyExtractor

    fields = [DataField(i, f"k{i}", AtomicType(t)) for i, t in enumerate(case["paimon_types"])]
    schema = TableSchema(TableSchema.CURRENT_VERSION, 0, fields, len(fields) - 1, [], [],
                         {"bucket": str(num_buckets), "bucket-key": ",".join(f.name for f in fields)}, None)
    return FixedBucketRowKeyExtractor(schema)._extract_buckets_batch(batch)


@pytest.mark.parametrize("case", load_vectors()["cases"], ids=lambda c: c["name"])
def test_pypaimon_extractor_agrees_with_the_vectors(case):
    batch, _ = case_batch(case)
    for n in (3, 16, 128):
        theirs = _pypaimon_buckets(case, batch, n)[0]
        if case["name"] in PYPAIMON_DIFFERS:
            continue  # checked below: these differ for every bucket count only by chance
        assert theirs == case["buckets"][str(n)], f"pypaimon puts {case['name']} in bucket {theirs} of {n}"


def test_pypaimon_differs_exactly_where_documented():
    """If pypaimon is fixed to match Java, this fails: drop the case from PYPAIMON_DIFFERS and the docstrings."""
    for case in load_vectors()["cases"]:
        batch, _ = case_batch(case)
        theirs = [_pypaimon_buckets(case, batch, n)[0] for n in (16, 128)]
        ours = [case["buckets"][str(n)] for n in (16, 128)]
        assert (theirs != ours) == (case["name"] in PYPAIMON_DIFFERS), case["name"]


@pytest.mark.parametrize("case", load_vectors()["cases"], ids=lambda c: c["name"])
def test_scalar_encoder_reproduces_vector(case):
    types = [parse_type(t) for t in case["types"]]
    values = [vector_value(v, t) for v, t in zip(case["values"], types, strict=True)]
    assert encode_binary_row(values, types).hex() == case["row_hex"]
    assert PaimonBucketing().bucket_of(values, types, 16) == case["buckets"]["16"]


# ============================================================================ vectorised vs scalar


def _random_value(t, rng: random.Random):
    root = t.root
    if rng.random() < 0.15:
        return None
    if root == "BIGINT":
        return rng.randint(-2**63, 2**63 - 1)
    if root == "INT":
        return rng.randint(-2**31, 2**31 - 1)
    if root == "STRING":
        return "".join(rng.choice("ab\u00e9\u4e2d\x00z") for _ in range(rng.randint(0, 20)))
    if root == "BYTES":
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 20)))
    if root == "DECIMAL":
        digits = rng.randint(-10**(t.precision - 1), 10**(t.precision - 1))
        return decimal.Decimal(digits).scaleb(-t.scale)
    if root == "TIMESTAMP":
        return dt.datetime(1960, 1, 1) + dt.timedelta(microseconds=rng.randint(0, 10**15))
    if root == "DOUBLE":
        return rng.uniform(-1e6, 1e6)
    if root == "DATE":
        return dt.date(1950, 1, 1) + dt.timedelta(days=rng.randint(0, 40000))
    if root == "BOOLEAN":
        return rng.random() < 0.5
    raise AssertionError(root)


@pytest.mark.parametrize("types", [
    ["BIGINT"], ["STRING"], ["BYTES"], ["DECIMAL(38, 6)"], ["TIMESTAMP(6)"],
    ["STRING", "BIGINT", "DECIMAL(30, 2)", "TIMESTAMP(9)", "BYTES"],
    ["INT", "DOUBLE", "DATE", "BOOLEAN", "DECIMAL(12, 3)", "TIMESTAMP(3)"],
])
def test_vectorised_encoder_equals_scalar_on_random_rows(types):
    rng = random.Random(22)
    parsed = [parse_type(t) for t in types]
    rows = [[_random_value(t, rng) for t in parsed] for _ in range(400)]
    batch = rows_to_batch(rows, RowSchema([Column(f"c{i}", t) for i, t in enumerate(parsed)]))
    cols = list(range(len(types)))
    conformed = [[row[f"c{i}"] for i in cols] for row in batch.to_pylist()]  # the values the batch holds
    expected = [encode_binary_row(r, parsed) for r in conformed]
    assert encode_binary_rows(batch, cols).to_list() == expected
    assert encode_binary_rows(batch.slice(33, 100), cols).to_list() == expected[33:133]
    buckets = PaimonBucketing().bucket_ids(batch, cols, 7).tolist()
    assert buckets == [paimon_bucket_of_row(r, 7) for r in expected]
    assert PaimonBucketing().bucket_ids(batch.slice(33, 100), cols, 7).tolist() == buckets[33:133]
    table = pa.Table.from_batches([batch, batch])
    assert PaimonBucketing().bucket_ids(table, cols, 7).tolist() == buckets * 2


def test_java_remainder_of_negative_hashes():
    hashes = np.array([-7, 7, -(2**31), 2**31 - 1, 0], dtype=np.int32)
    assert paimon_buckets_of_hashes(hashes, 3).tolist() == [1, 1, 2, 1, 0]


def test_paimon_buckets_spread_evenly():
    batch = pa.RecordBatch.from_pydict({"k": pa.array(np.arange(160_000), pa.int64())})
    counts = np.bincount(PaimonBucketing().bucket_ids(batch, [0], 16), minlength=16)
    assert counts.min() > 0.9 * 10_000 and counts.max() < 1.1 * 10_000


# ============================================================================ the registry


def test_bucket_function_follows_the_lake_format_and_the_recorded_property():
    assert bucketing_for_lake_format(None).name == "default"
    assert bucketing_for_lake_format("paimon").name == "paimon"
    assert bucketing_for_lake_format(" Paimon ").name == "paimon"
    with pytest.raises(FlussError, match="iceberg"):
        bucketing_for_lake_format("iceberg")
    assert bucketing_of_properties({}).name == "default"  # a table from before the property existed
    assert bucketing_of_properties({"table.datalake.format": "paimon"}).name == "default"
    assert bucketing_of_properties({TABLE_BUCKET_FUNCTION: "paimon"}).name == "paimon"
    with pytest.raises(FlussError, match=r"table\.bucket\.function"):
        bucketing_of_properties({TABLE_BUCKET_FUNCTION: "crc32"})


def test_default_function_is_the_projects_own():
    batch = pa.RecordBatch.from_pydict({"k": pa.array(np.arange(1000), pa.int64())})
    assert DefaultBucketing().bucket_ids(batch, [0], 8).tolist() == default_bucket_ids(batch, [0], 8).tolist()
    assert PaimonBucketing().bucket_ids(batch, [0], 8).tolist() != default_bucket_ids(batch, [0], 8).tolist()


if __name__ == "__main__":
    if "--regenerate" in sys.argv:
        VECTORS_PATH.write_text(json.dumps(regenerate(), indent=2, ensure_ascii=False) + "\n")
        print(f"wrote {VECTORS_PATH}")
