"""Tiering benchmark: ``python -m tiering_job.bench [--rows N] [--buckets B] [--load-seconds S]``.

1. Throughput: N rows are written to a lake-enabled log table through the client; one tiering round (the core
   the PyFlink job runs) moves them into Paimon. Next to it, the same Arrow batches are written straight to
   a Paimon table of the same shape with pypaimon (bucket given, one commit), so the difference is the cost of
   reading the Fluss log and of the bookkeeping.
2. Freshness under load: a writer appends at a steady rate while tiering rounds run back to back; the lake's
   lag behind the log (records not tiered, and age of the latest lake snapshot) is sampled.

Prints one JSON object. Runs its own local cluster; PyFlink start-up is not part of the numbers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time

import pyarrow as pa

import fluss
from fluss import OffsetSpec, Schema, TableDescriptor, TableInfo, TablePath
from fluss.lake.paimon import lake_of_table
from fluss.lake.snapshot import get_latest_lake_snapshot
from fluss.lake.tiering import tier_table
from fluss.server.cluster import LocalCluster

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("v", pa.float64()),
                    ("ts", pa.timestamp("ms"))])


def batch(start: int, n: int) -> pa.RecordBatch:
    ids = pa.array(range(start, start + n), pa.int64())
    return pa.RecordBatch.from_arrays(
        [ids, pa.array([f"name-{i % 1000}" for i in range(start, start + n)]),
         pa.array([i * 0.5 for i in range(start, start + n)]),
         pa.array([1_700_000_000_000 + i for i in range(start, start + n)], pa.timestamp("ms"))], schema=SCHEMA)


async def throughput(conn, db: str, rows: int, buckets: int, batch_rows: int) -> dict:
    admin = conn.get_admin()
    path = TablePath(db, "bench_tier")
    await admin.create_table(path, TableDescriptor(Schema(SCHEMA), bucket_count=buckets, bucket_keys=["id"],
                                                   properties={"table.datalake.enabled": "true"}))
    info = await admin.get_table_info(path)
    writer = (await conn.get_table(path)).new_append().create_writer()
    batches = [batch(i, min(batch_rows, rows - i)) for i in range(0, rows, batch_rows)]
    t0 = time.perf_counter()
    for b in batches:
        writer.write_arrow_batch(b)
    await writer.flush()
    write_s = time.perf_counter() - t0

    lake = lake_of_table(info)
    t0 = time.perf_counter()
    result = await tier_table(conn, lake, info, None)
    tier_s = time.perf_counter() - t0
    assert result.rows == rows, result

    # the same batches, straight to Paimon (same shape, buckets assigned round-robin by batch)
    raw_info = TableInfo(TablePath(db, "bench_raw"), info.table_id + 10_000, 1, info.descriptor,
                              info.created_time, info.modified_time)
    lake.create_table(raw_info)
    table = lake.get_table(raw_info.table_path)
    t0 = time.perf_counter()
    builder = table.new_batch_write_builder()
    write = builder.new_write()
    for i, b in enumerate(batches):
        write.write_arrow(b, bucket=i % buckets)
    builder.new_commit().commit(write.prepare_commit())
    write.close()
    raw_s = time.perf_counter() - t0
    return {"rows": rows, "buckets": buckets, "client_write_rows_per_s": round(rows / write_s),
            "tiering_rows_per_s": round(rows / tier_s), "tiering_seconds": round(tier_s, 2),
            "raw_pypaimon_rows_per_s": round(rows / raw_s), "raw_pypaimon_seconds": round(raw_s, 2)}


async def freshness(conn, db: str, seconds: float, rate: int, buckets: int) -> dict:
    admin = conn.get_admin()
    path = TablePath(db, "bench_fresh")
    await admin.create_table(path, TableDescriptor(Schema(SCHEMA), bucket_count=buckets, bucket_keys=["id"],
                                                   properties={"table.datalake.enabled": "true"}))
    info = await admin.get_table_info(path)
    lake = lake_of_table(info)
    stop = asyncio.Event()
    lag_samples: list[int] = []
    age_samples: list[float] = []

    async def load():
        writer = (await conn.get_table(path)).new_append().create_writer()
        n, step = 0, max(1, rate // 10)
        while not stop.is_set():
            writer.write_arrow_batch(batch(n, step))
            n += step
            await writer.flush()
            await asyncio.sleep(0.1)

    async def tiering():
        while not stop.is_set():
            try:
                snapshot = await get_latest_lake_snapshot(conn, path)
            except fluss.FlussError:
                snapshot = None
            await tier_table(conn, lake, info, snapshot)

    async def sample():
        while not stop.is_set():
            await asyncio.sleep(0.5)
            try:
                snapshot = await get_latest_lake_snapshot(conn, path)
            except fluss.FlussError:
                continue
            ends = await admin.list_offsets(path, list(range(buckets)), OffsetSpec.latest())
            lag_samples.append(sum(ends.values()) - sum(snapshot.table_buckets_offset.values()))
            age_samples.append(time.time() - snapshot.commit_time / 1000)

    tasks = [asyncio.create_task(c()) for c in (load, tiering, sample)]
    await asyncio.sleep(seconds)
    stop.set()
    await asyncio.gather(*tasks)
    return {"load_rows_per_s": rate, "seconds": seconds, "samples": len(lag_samples),
            "tier_lag_records_median": statistics.median(lag_samples) if lag_samples else None,
            "tier_lag_records_max": max(lag_samples, default=None),
            "snapshot_age_s_median": round(statistics.median(age_samples), 2) if age_samples else None,
            "snapshot_age_s_max": round(max(age_samples), 2) if age_samples else None}


async def run(args) -> dict:
    warehouse = tempfile.mkdtemp(prefix="bench-lake-")
    with LocalCluster(tablet_servers=1, server_config={"datalake.format": "paimon",
                                                       "datalake.paimon.warehouse": warehouse}) as cluster:
        conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": cluster.bootstrap_servers}))
        try:
            await conn.get_admin().create_database("bench", ignore_if_exists=True)
            out = {"throughput": await throughput(conn, "bench", args.rows, args.buckets, args.batch_rows)}
            if args.load_seconds > 0:
                out["freshness"] = await freshness(conn, "bench", args.load_seconds, args.load_rate, args.buckets)
            return out
        finally:
            await conn.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tiering_job.bench")
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--buckets", type=int, default=4)
    parser.add_argument("--batch-rows", type=int, default=10_000)
    parser.add_argument("--load-seconds", type=float, default=20)
    parser.add_argument("--load-rate", type=int, default=20_000, help="rows/s written during the freshness run")
    print(json.dumps(asyncio.run(run(parser.parse_args())), indent=2))


if __name__ == "__main__":
    main()

