"""``python -m bench.bucketing [--rows N] [--rounds R]``: the cost of Paimon bucketing next to the project's own.

Tables of a cluster with ``datalake.format: paimon`` route rows with Paimon's bucket function (the bucket key
as a Paimon BinaryRow, MurmurHash3 seed 42); other clusters' tables with the project's own (order-preserving
key bytes, seed 0). This measures both on the same machine at the same time:

* ``bucket_ids`` alone (the client's vectorised hot path): rows/s over 1M rows of a BIGINT key, a STRING key of
  ~14 characters and a (BIGINT, STRING) key;
* end to end through the Python client, against two clusters running side by side (1 tablet server each, one
  with a Paimon lake configured, its tables not lake-enabled): ``write_arrow_batch`` + ``flush`` into a log table
  bucketed by ``seq`` (BIGINT), and ``upsert_arrow_batch`` + ``flush`` into a primary-key table on ``seq``. The
  rounds alternate between the clusters so both see the same load; the medians and their ratio are printed.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time

import numpy as np
import pyarrow as pa

import fluss
from bench.data import SCHEMA, make_batch
from fluss.key.bucket_function import DefaultBucketing, PaimonBucketing

BUCKETS = 3
ARROW_BATCH_ROWS = 8192


def micro(rows: int = 1_000_000, repeats: int = 3) -> dict[str, dict[str, float]]:
    """rows/s of ``bucket_ids`` per key kind and function (best of ``repeats``)."""
    rng = np.random.default_rng(22)
    ids = pa.array(rng.integers(-2**62, 2**62, rows), pa.int64())
    words = pa.array([f"user-{i:09d}" for i in rng.integers(0, 10**9, rows)], pa.string())
    cases = {"BIGINT": (pa.table({"k": ids}), [0]), "STRING": (pa.table({"s": words}), [0]),
             "BIGINT+STRING": (pa.table({"k": ids, "s": words}), [0, 1])}
    out: dict[str, dict[str, float]] = {}
    for name, (table, cols) in cases.items():
        batch = table.combine_chunks().to_batches()[0]
        for fn in (DefaultBucketing(), PaimonBucketing()):
            best = float("inf")
            for _ in range(repeats):
                t0 = time.perf_counter()
                fn.bucket_ids(batch, cols, 16)
                best = min(best, time.perf_counter() - t0)
            out.setdefault(name, {})[fn.name] = rows / best
    return out


async def _tables(bootstrap: str) -> tuple[fluss.FlussConnection, fluss.TablePath, fluss.TablePath, str]:
    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": bootstrap}))
    admin = conn.get_admin()
    await admin.create_database("bench", ignore_if_exists=True)
    log_path, pk_path = fluss.TablePath("bench", "by_seq"), fluss.TablePath("bench", "pk_seq")
    await admin.create_table(log_path, fluss.TableDescriptor(fluss.Schema(SCHEMA), bucket_count=BUCKETS,
                                                             properties={"bucket.key": "seq"}))
    await admin.create_table(pk_path, fluss.TableDescriptor(fluss.Schema(SCHEMA, primary_keys=["seq"]),
                                                            bucket_count=BUCKETS))
    function = (await admin.get_table_info(log_path)).get_properties()["table.bucket.function"]
    return conn, log_path, pk_path, function


async def _append_round(conn, path, batch) -> float:
    writer = (await conn.get_table(path)).new_append().create_writer()
    t0 = time.perf_counter()
    writer.write_arrow_batch(batch)
    await writer.flush()
    rate = batch.num_rows / (time.perf_counter() - t0)
    await writer.aclose()
    return rate


async def _upsert_round(conn, path, batch) -> float:
    writer = (await conn.get_table(path)).new_upsert().create_writer()
    t0 = time.perf_counter()
    for start in range(0, batch.num_rows, ARROW_BATCH_ROWS):
        writer.upsert_arrow_batch(batch.slice(start, ARROW_BATCH_ROWS))
    await writer.flush()
    rate = batch.num_rows / (time.perf_counter() - t0)
    await writer.aclose()
    return rate


async def end_to_end(default_bootstrap: str, paimon_bootstrap: str, rows: int, rounds: int) -> dict:
    sides = {}
    for bootstrap in (default_bootstrap, paimon_bootstrap):
        conn, log_path, pk_path, function = await _tables(bootstrap)
        sides[function] = (conn, log_path, pk_path)
    assert set(sides) == {"default", "paimon"}, sides
    rates: dict[str, dict[str, list[float]]] = {f: {"append": [], "upsert": []} for f in sides}
    for r in range(rounds + 1):  # round 0 warms up
        batch = make_batch(rows, seed=r, start_seq=r * rows)
        for function in (("default", "paimon") if r % 2 else ("paimon", "default")):
            conn, log_path, pk_path = sides[function]
            append = await _append_round(conn, log_path, batch)
            upsert = await _upsert_round(conn, pk_path, batch)
            if r:
                rates[function]["append"].append(append)
                rates[function]["upsert"].append(upsert)
    for conn, _, _ in sides.values():
        await conn.aclose()
    return {f: {k: statistics.median(v) for k, v in kinds.items()} for f, kinds in rates.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bucketing", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000, help="rows per round [200000]")
    parser.add_argument("--rounds", type=int, default=4, help="counted rounds per function [4]")
    args = parser.parse_args(argv)
    print("bucket_ids, rows/s (best of 3, 1M rows):")
    for kind, by_fn in micro().items():
        print(f"  {kind:14s} default {by_fn['default']:12,.0f}  paimon {by_fn['paimon']:12,.0f}  "
              f"paimon/default {by_fn['paimon'] / by_fn['default']:.2f}")
    from fluss.server.cluster import LocalCluster

    with tempfile.TemporaryDirectory(prefix="bench-bucketing-") as warehouse, \
            LocalCluster(tablet_servers=1) as plain, \
            LocalCluster(tablet_servers=1, server_config={"datalake.format": "paimon",
                                                          "datalake.paimon.warehouse": warehouse}) as lake:
        result = asyncio.run(end_to_end(plain.bootstrap_servers, lake.bootstrap_servers, args.rows, args.rounds))
    print(f"client end to end, rows/s (median of {args.rounds} alternating rounds of {args.rows:,} rows):")
    for kind in ("append", "upsert"):
        d, p = result["default"][kind], result["paimon"][kind]
        print(f"  {kind:14s} default {d:12,.0f}  paimon {p:12,.0f}  paimon/default {p / d:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
