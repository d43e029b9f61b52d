"""The bucket function (fluss/key/bucketing.py): MurmurHash3 x86_32 pinned to published values, the
vectorised hash and bucket ids against the scalar path."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from fluss.errors import FlussError
from fluss.key.bucketing import (
    bucket_ids,
    bucket_of,
    murmur3_32,
    murmur3_32_batch,
    murmur3_32_matrix,
)
from fluss.key.encoding import encode_key, encode_key_buffers
from fluss.row_convert import rows_to_batch
from fluss.types import Column, RowSchema, parse_type

VECTORS_PATH = Path(__file__).resolve().parents[2] / "docs" / "key-test-vectors.json"

# Published MurmurHash3_x86_32 results (Appleby's reference implementation).
KNOWN = [
    (b"", 0, 0),
    (b"", 1, 0x514E28B7),
    (b"", 0xFFFFFFFF, 0x81F16F39),
    (b"\x00\x00\x00\x00", 0, 0x2362F9DE),
    (b"\xff\xff\xff\xff", 0, 0x76293B50),
    (b"\x21\x43\x65\x87", 0, 0xF55B516B),
    (b"\x21\x43\x65\x87", 0x5082EDEE, 0x2362F9DE),
    (b"\x21\x43\x65", 0, 0x7E4A8634),
    (b"\x21\x43", 0, 0xA0F7B07A),
    (b"\x21", 0, 0x72661CF4),
    (b"hello", 0, 0x248BFA47),
    (b"The quick brown fox jumps over the lazy dog", 0, 0x2E4FF723),
]


@pytest.mark.parametrize(("data", "seed", "expected"), KNOWN)
def test_murmur3_matches_published_values(data, seed, expected):
    assert murmur3_32(data, seed) == expected
    assert int(murmur3_32_batch([data], seed)[0]) == expected


def test_murmur3_vectors_in_the_shared_file():
    doc = json.loads(VECTORS_PATH.read_text())
    for m in doc["murmur3_32"]:
        assert murmur3_32(bytes.fromhex(m["data_hex"]), m["seed"]) == m["hash"]


def test_shared_vector_buckets_follow_the_formula():
    for case in json.loads(VECTORS_PATH.read_text())["cases"]:
        key = bytes.fromhex(case["key_hex"])
        assert case["hash"] == murmur3_32(key)
        for n, bucket in case["buckets"].items():
            assert bucket == (case["hash"] & 0x7FFFFFFF) % int(n) == bucket_of(key, int(n))


def test_vectorised_hash_matches_scalar_for_every_length():
    rng = random.Random(1)
    # Lengths 0..80 exercise the tail cases, the masked path and the sorted path (spread > 8 blocks).
    keys = [bytes(rng.randrange(256) for _ in range(rng.randrange(0, 81))) for _ in range(3000)]
    assert murmur3_32_batch(keys).tolist() == [murmur3_32(k) for k in keys]
    narrow = [k for k in keys if 5 <= len(k) <= 12]  # small spread of block counts
    assert murmur3_32_batch(narrow, seed=7).tolist() == [murmur3_32(k, 7) for k in narrow]
    same = [k[:13].ljust(13, b"\x00") for k in keys[:500]]
    matrix = np.frombuffer(b"".join(same), dtype=np.uint8).reshape(len(same), 13)
    assert murmur3_32_matrix(matrix).tolist() == [murmur3_32(k) for k in same]
    assert murmur3_32_batch([]).tolist() == []


def test_matrix_hash_does_not_modify_its_input():
    matrix = np.arange(32, dtype=np.uint8).reshape(4, 8)
    before = matrix.copy()
    murmur3_32_matrix(matrix)
    assert (matrix == before).all()


def _schema(*type_texts):
    return RowSchema([Column(f"c{i}", parse_type(t)) for i, t in enumerate(type_texts)])


def _scalar_buckets(rows, schema, cols, num_buckets):
    types = [schema.columns[c].data_type for c in cols]
    return [bucket_of(encode_key([r[c] for c in cols], types), num_buckets) for r in rows]


@pytest.mark.parametrize("num_buckets", [1, 2, 7, 16, 1000])
def test_bucket_ids_match_scalar_path_on_random_data(num_buckets):
    rng = random.Random(num_buckets)
    schema = _schema("BIGINT", "STRING", "INT", "DOUBLE", "DATE")
    rows = [
        [
            rng.randint(-(2**63), 2**63 - 1),
            None
            if rng.random() < 0.1
            else "".join(rng.choice("ab\x00中") for _ in range(rng.randint(0, 40))),
            rng.randint(-5, 5),
            None if rng.random() < 0.3 else rng.uniform(-1, 1),
            None,
        ]
        for _ in range(2000)
    ]
    batch = rows_to_batch(rows, schema)
    for cols in ([0], [1], [2, 1], [3], [0, 1, 2, 3, 4]):
        ids = bucket_ids(batch, cols, num_buckets)
        assert ids.dtype == np.int32
        assert ids.tolist() == _scalar_buckets(rows, schema, cols, num_buckets)
        assert bucket_ids(batch.slice(100, 50), cols, num_buckets).tolist() == ids[100:150].tolist()


def test_bucket_ids_spread_evenly():
    batch = pa.record_batch([pa.array(np.arange(100_000, dtype=np.int64))], names=["id"])
    counts = np.bincount(bucket_ids(batch, [0], 16), minlength=16)
    assert counts.min() > 0.9 * 100_000 / 16 and counts.max() < 1.1 * 100_000 / 16


def test_bucket_ids_of_a_table_and_of_empty_batches():
    schema = _schema("STRING")
    batch = rows_to_batch([["a"], ["b"], ["c"]], schema)
    table = pa.Table.from_batches([batch, batch])
    assert bucket_ids(table, [0], 8).tolist() == bucket_ids(batch, [0], 8).tolist() * 2
    empty = rows_to_batch([], schema)
    assert bucket_ids(empty, [0], 8).tolist() == []
    assert encode_key_buffers(empty, [0]).to_list() == []


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, None])
def test_bucket_count_must_be_positive(bad):
    batch = rows_to_batch([[1]], _schema("INT"))
    with pytest.raises(FlussError, match="bucket count"):
        bucket_ids(batch, [0], bad)
    with pytest.raises(FlussError, match="bucket count"):
        bucket_of(b"k", bad)
