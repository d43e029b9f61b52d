"""Union Read of primary-key buckets in a TTL gap: the lake rows of exactly those (partition, bucket) pairs are
left out (the bucket is then read from its KV store). The bucket of each lake row is computed from its bucket
key; checked here against the scalar bucket function, row by row."""

from __future__ import annotations

import pyarrow as pa

from fluss.key.bucketing import bucket_of
from fluss.key.encoding import encode_key
from fluss.lake.union_read import without_buckets
from fluss.metadata import Schema, TableDescriptor, TableInfo, TablePath
from fluss.types import DataTypes

ROWS = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("region", pa.string(), nullable=False),
                  ("v", pa.int64())])


def _info(partitioned: bool) -> TableInfo:
    descriptor = TableDescriptor(Schema(ROWS, primary_keys=["id", "region"] if partitioned else ["id"]),
                                 partition_keys=["region"] if partitioned else None, bucket_count=4,
                                 bucket_keys=["id"])
    return TableInfo(TablePath("db", "t"), 7, 1, descriptor, 0, 0)


def _rows() -> pa.Table:
    ids = [i for i in range(100) for _ in ("US", "EU")]
    regions = [r for _ in range(100) for r in ("US", "EU")]
    return pa.Table.from_pydict({"id": ids, "region": regions, "v": list(range(200))}, schema=ROWS)


def _bucket(i: int) -> int:
    return bucket_of(encode_key([i], [DataTypes.BIGINT()]), 4)


def test_rows_of_the_gapped_buckets_of_each_partition_are_left_out():
    rows = _rows()
    kept = without_buckets(rows, _info(partitioned=True), {(11, 1): "US", (12, 3): "EU"})
    expected = [r for r in rows.to_pylist()
                if not ((r["region"] == "US" and _bucket(r["id"]) == 1)
                        or (r["region"] == "EU" and _bucket(r["id"]) == 3))]
    assert kept.to_pylist() == expected
    assert 0 < kept.num_rows < rows.num_rows


def test_an_unpartitioned_table_drops_the_bucket_everywhere_and_no_gap_keeps_everything():
    rows = _rows()
    info = _info(partitioned=False)
    kept = without_buckets(rows, info, {(-1, 2): None})
    assert kept.to_pylist() == [r for r in rows.to_pylist() if _bucket(r["id"]) != 2]
    assert without_buckets(rows, info, {}) is rows
