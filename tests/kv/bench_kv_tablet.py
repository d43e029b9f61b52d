"""Benchmark (not a test): KvTablet write path and lookups next to raw rocksdict on the same data.

Run: ``.venv/bin/python tests/kv/bench_kv_tablet.py [rows]``. Rows have 10 columns (INT key, 3 BIGINT,
2 DOUBLE, 2 STRING, BOOLEAN, TIMESTAMP). Reports rows/s of prepare_batch + flush_up_to (inserts, then
updates of the same keys), batched lookup keys/s, single-key lookup p50/p99, and the same work done
with raw rocksdict (WriteBatch put of pre-encoded keys/values; multi-get).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
from rocksdict import Options, Rdict, WriteBatch, WriteOptions

from fluss.key.encoding import encode_keys
from fluss.record.indexed_rows import encode_rows
from fluss.server.kv.tablet import KvTablet
from fluss.types import Column, DataTypes, RowSchema

SCHEMA = RowSchema(
    [Column("id", DataTypes.INT())]
    + [Column(f"l{i}", DataTypes.BIGINT()) for i in range(3)]
    + [Column(f"d{i}", DataTypes.DOUBLE()) for i in range(2)]
    + [Column(f"s{i}", DataTypes.STRING()) for i in range(2)]
    + [Column("b", DataTypes.BOOLEAN()), Column("ts", DataTypes.TIMESTAMP(6))],
    ["id"],
)


def make_batch(n: int, seed: int) -> pa.RecordBatch:
    rng = np.random.default_rng(seed)
    arrow = SCHEMA.to_arrow()
    cols = [pa.array(np.arange(n, dtype=np.int32))]
    cols += [pa.array(rng.integers(0, 1 << 40, n)) for _ in range(3)]
    cols += [pa.array(rng.random(n)) for _ in range(2)]
    cols += [pa.array([f"user-{x}" for x in rng.integers(0, 10**6, n)]) for _ in range(2)]
    cols += [pa.array(rng.random(n) < 0.5), pa.array(rng.integers(0, 10**15, n)).cast(pa.timestamp("us"))]
    return pa.RecordBatch.from_arrays(cols, schema=arrow)


def main(n: int = 100_000, chunk: int = 10_000) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="kvbench-"))
    inserts, updates = make_batch(n, 1), make_batch(n, 2)
    tablet = KvTablet.open(tmp / "tablet", SCHEMA, 1, {})
    offset = 0
    results = {}
    for label, data in (("insert", inserts), ("update", updates)):
        t0 = time.perf_counter()
        for start in range(0, n, chunk):
            part = data.slice(start, chunk)
            cl = tablet.prepare_batch(part, np.zeros(part.num_rows, np.uint8), None, offset)
            offset += cl.num_records
            tablet.flush_up_to(offset)
        results[f"tablet {label} rows/s"] = n / (time.perf_counter() - t0)

    keys = encode_keys(inserts, [0])
    t0 = time.perf_counter()
    for start in range(0, n, 1000):
        tablet.lookup(keys[start : start + 1000])
    results["tablet lookup keys/s (batches of 1000)"] = n / (time.perf_counter() - t0)
    lat = []
    for k in keys[:5000]:
        t1 = time.perf_counter()
        tablet.lookup([k])
        lat.append(time.perf_counter() - t1)
    results["tablet single lookup p50 us"] = np.percentile(lat, 50) * 1e6
    results["tablet single lookup p99 us"] = np.percentile(lat, 99) * 1e6
    t0 = time.perf_counter()
    tablet.lookup_rows(keys[:10000])
    results["tablet lookup_rows keys/s (10000)"] = 10000 / (time.perf_counter() - t0)
    tablet.close()

    opts = Options(raw_mode=True)
    opts.create_if_missing(True)
    db = Rdict(str(tmp / "raw"), opts)
    wo = WriteOptions()
    wo.disable_wal = True
    for label, data in (("insert", inserts), ("update", updates)):
        values = encode_rows(data, 1)  # pre-encoded: raw cost of the RocksDB writes only
        t0 = time.perf_counter()
        for start in range(0, n, chunk):
            wb = WriteBatch(raw_mode=True)
            for k, v in zip(keys[start : start + chunk], values[start : start + chunk], strict=True):
                wb.put(k, v)
            db.write(wb, wo)
        results[f"raw WriteBatch {label} rows/s"] = n / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    for start in range(0, n, 1000):
        db.get(keys[start : start + 1000])
    results["raw multi-get keys/s (batches of 1000)"] = n / (time.perf_counter() - t0)
    lat = []
    for k in keys[:5000]:
        t1 = time.perf_counter()
        db.get(k)
        lat.append(time.perf_counter() - t1)
    results["raw single get p50 us"] = np.percentile(lat, 50) * 1e6
    results["raw single get p99 us"] = np.percentile(lat, 99) * 1e6
    db.close()

    # Recovery: replay the whole changelog of n inserts into an empty tablet.
    replica = KvTablet.open(tmp / "replica", SCHEMA, 1, {})
    t0 = time.perf_counter()
    replica.apply_changelog(inserts, np.ones(n, np.uint8), n)
    results["replay rows/s (apply_changelog)"] = n / (time.perf_counter() - t0)
    replica.close()
    for name, value in results.items():
        print(f"{name:45s} {value:12,.0f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
