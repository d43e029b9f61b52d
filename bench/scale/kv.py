"""The primary-key curve: single-key lookup latency and restart->serving time as the keys of a bucket grow.

Own ``LocalCluster`` (1 coordinator, 1 tablet server, KV snapshots every second, ZooKeeper session 2 s), one table
with primary key ``seq``, 1 bucket, RF=1. The bucket is filled up to each size of ``kv_keys`` (benchmark rows,
``upsert_arrow_batch`` of 50,000 rows) and waited on until a KV snapshot covers it. At each size:
- lookup p50/p99: ``lookups`` single-key lookups of random existing keys, one at a time (``lookup.batch-timeout``
  1 ms, as the suite's ``kv.lookup.latency``);
- recovery: ``kill -9`` of the tablet server, a wait until its registration is gone, then the seconds from the
  spawn of the new process until lookups of keys spread over the bucket all answer (``bench.fluss_recovery``).
"""

from __future__ import annotations

import asyncio
import time

import numpy as np

import fluss
from bench.data import SCHEMA, make_batch
from bench.fluss_recovery import PROBE_KEYS, _serving, _snapshot_offset
from bench.monitor import PeakRss
from bench.scale.curve import Curve, percentile
from bench.scale.sizes import ScaleProfile
from fluss.server.cluster import LocalCluster

SERVER = 0
FILL_BATCH = 50_000
SNAPSHOT_TIMEOUT_S = 600.0


async def _fill(conn: fluss.FlussConnection, path: fluss.TablePath, start: int, end: int) -> None:
    writer = (await conn.get_table(path)).new_upsert().create_writer()
    for s in range(start, end, FILL_BATCH):
        writer.upsert_arrow_batch(make_batch(min(FILL_BATCH, end - s), seed=s, start_seq=s))
        if (s - start) % (20 * FILL_BATCH) == 0:
            await writer.flush()  # bounds the client's buffered rows
    await writer.flush()
    await writer.aclose()
    admin = conn.get_admin()
    latest = (await admin.list_offsets(path, [0], fluss.OffsetSpec.latest()))[0]
    deadline = time.monotonic() + SNAPSHOT_TIMEOUT_S
    while await _snapshot_offset(conn, path) < latest:
        if time.monotonic() > deadline:
            raise TimeoutError(f"no KV snapshot reached offset {latest} within {SNAPSHOT_TIMEOUT_S}s")
        await asyncio.sleep(0.3)


async def _lookup_latencies(bootstrap: str, path: fluss.TablePath, keys: int, count: int) -> list[float]:
    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": bootstrap,
                                                            "lookup.batch-timeout": "1ms"}))
    try:
        lookuper = (await conn.get_table(path)).new_lookup().create_lookuper()
        rng = np.random.default_rng(keys)
        probe = rng.integers(0, keys, count + 20).tolist()
        out = []
        for i, k in enumerate(probe):
            t0 = time.perf_counter()
            got = await lookuper.lookup({"seq": k})
            dt = (time.perf_counter() - t0) * 1000
            if got is None or got["seq"] != k:
                raise RuntimeError(f"lookup of key {k} of {keys} found {got}")
            if i >= 20:  # warm-up
                out.append(dt)
        await lookuper.aclose()
        return out
    finally:
        await conn.aclose()


async def _recovery_seconds(cluster: LocalCluster, path: fluss.TablePath, keys: int) -> tuple[float, float]:
    """(seconds from the new process's spawn until lookups answer, its peak RSS in MiB)."""
    probe = sorted({0, keys - 1, *range(0, keys, max(1, keys // PROBE_KEYS))})
    cluster.kill_tablet_server(SERVER)
    await asyncio.to_thread(cluster.wait_for_tablet_servers, set(), 30)
    t0 = time.perf_counter()
    cluster.start_tablet_server(SERVER, wait=False)
    with PeakRss({"tablet-server-0": cluster.tablet_server_pid(SERVER)}, include_self=False) as rss:
        await _serving(cluster.bootstrap_servers, path, probe)
    return time.perf_counter() - t0, rss.peaks_mb().get("tablet-server-0", 0.0)


async def _run(profile: ScaleProfile) -> Curve:
    curve = Curve("kv", "Primary-key bucket: lookup latency and restart->serving vs keys (1 bucket, 1 tablet server)",
                  "keys in the bucket")
    with LocalCluster(tablet_servers=1, server_config={"kv.snapshot.interval": "1s"},
                      zookeeper_session_timeout="2s") as cluster:
        conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": cluster.bootstrap_servers}))
        try:
            admin = conn.get_admin()
            await admin.create_database("scale", ignore_if_exists=True)
            path = fluss.TablePath("scale", "kv")
            await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(SCHEMA, primary_keys=["seq"]),
                                                                 bucket_count=1,
                                                                 properties={"table.replication.factor": "1"}))
            filled = 0
            for keys in profile.kv_keys:
                t0 = time.monotonic()
                await _fill(conn, path, filled, keys)
                filled = keys
                fill_s = time.monotonic() - t0
                lat = await _lookup_latencies(cluster.bootstrap_servers, path, keys, profile.lookups)
                recovery, peak = await _recovery_seconds(cluster, path, keys)
                lat_after = await _lookup_latencies(cluster.bootstrap_servers, path, keys, profile.lookups)
                curve.x.append(keys)
                curve.series_of("lookup p50", "ms").add([percentile(lat, 50)])
                curve.series_of("lookup p99", "ms").add([percentile(lat, 99)])
                curve.series_of("lookup p99 after the restart", "ms").add([percentile(lat_after, 99)])
                curve.series_of("restart -> serving", "s").add([recovery])
                curve.series_of("tablet server peak RSS during recovery", "MiB").add([peak])
                print(f"  kv {keys} keys (filled in {fill_s:.1f}s): lookup p50 {percentile(lat, 50):.2f} ms p99 "
                      f"{percentile(lat, 99):.2f} ms; restart->serving {recovery:.2f}s", flush=True)
        finally:
            await conn.aclose()
    curve.notes.append(f"{profile.lookups} single-key lookups per size (random existing keys, one at a time, "
                       "lookup.batch-timeout 1 ms); restart from the server's local RocksDB after a KV snapshot "
                       "covered every key; the clock starts at the spawn of the new process")
    return curve


def run(profile: ScaleProfile) -> Curve:
    return asyncio.run(_run(profile))
