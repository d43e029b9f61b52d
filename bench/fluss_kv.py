"""This project's primary-key tables through its Python client (they landed while this suite was written).

On the same ``LocalCluster`` as the log scenarios, a 3-bucket RF=1 table with primary key ``seq``:
- ``kv.upsert``: ``UpsertWriter.upsert(row)`` for each row of a round (new keys each round; the writer takes rows
  one by one, so this includes the per-row call) then ``flush()``; rows/s.
- ``kv.upsert.arrow``: the same rows as Arrow batches of ``ARROW_BATCH_ROWS`` through
  ``UpsertWriter.upsert_arrow_batch`` then ``flush()``, into a table of its own; rows/s.
- ``kv.lookup.batched``: ``Lookuper.lookup(pk)`` for ``LOOKUP_CONCURRENCY`` keys at a time (``asyncio.gather``:
  the client batches concurrent lookups into one request per leader); rows/s.
- ``kv.lookup.latency.p50/p99``: one lookup at a time with ``lookup.batch-timeout`` 1 ms (kept from before the
  lookup rework, when a lone key waited out the 100 ms default; a lone key is now sent at once); ms per lookup.
The raw limits are rocksdict's WriteBatch put and multi-get (``bench.raw``).
"""

from __future__ import annotations

import asyncio
import time

import numpy as np

import fluss
from bench.data import SCHEMA, make_batch
from bench.model import FAILED, Measurement, Profile
from bench.monitor import PeakRss

BUCKETS = 3
ARROW_BATCH_ROWS = 10_000
LOOKUP_CONCURRENCY = 1_000
LATENCY_LOOKUPS = 300
SINGLE_LOOKUP = {"lookup_batch_timeout_ms": 1}


def lookup_keys(profile: Profile) -> int:
    """Keys looked up per batched round (the same count for the Redis peer)."""
    return profile.kv_rows // 40


async def _connect(bootstrap: str, settings: dict[str, int] | None = None) -> fluss.FlussConnection:
    config = fluss.Config({"bootstrap.servers": bootstrap})
    for name, value in (settings or {}).items():
        setattr(config, name, value)
    return await fluss.FlussConnection.create(config)


async def _create_pk_table(conn: fluss.FlussConnection, name: str) -> fluss.TablePath:
    admin = conn.get_admin()
    await admin.create_database("bench", ignore_if_exists=True)
    path = fluss.TablePath("bench", name)
    await admin.drop_table(path, ignore_if_not_exists=True)
    descriptor = fluss.TableDescriptor(fluss.Schema(SCHEMA, primary_keys=["seq"]), bucket_count=BUCKETS,
                                       properties={"table.replication.factor": "1"})
    await admin.create_table(path, descriptor)
    return path


async def _timed_upserts(conn: fluss.FlussConnection, path: fluss.TablePath, m: Measurement, n: int,
                         rounds: list[list], write, pids: dict[str, int | None]) -> None:
    """Per round: ``write(writer, item)`` for each item, then ``flush()``; rows/s of every round after the first
    (the warm-up) into ``m``, with the peak memory."""
    writer = (await conn.get_table(path)).new_upsert().create_writer()
    try:
        with PeakRss(pids) as rss:
            for r, items in enumerate(rounds):
                t0 = time.perf_counter()
                for item in items:
                    write(writer, item)
                await writer.flush()
                if r:
                    m.rounds.append(n / (time.perf_counter() - t0))
    finally:
        await writer.aclose()
    m.rss_peak_mb = rss.peaks_mb()


async def measure_upsert(conn: fluss.FlussConnection, path: fluss.TablePath, profile: Profile,
                         pids: dict[str, int | None]) -> tuple[Measurement, int]:
    """rows/s of per-row ``upsert`` + ``flush``; returns the measurement and the number of keys written."""
    n = profile.kv_rows // 4
    rounds = [make_batch(n, seed=r, start_seq=r * n).to_pylist() for r in range(profile.rounds + 1)]
    m = Measurement("fluss", "kv.upsert", "rows/s", note=f"UpsertWriter.upsert per row, {n} rows per round")
    await _timed_upserts(conn, path, m, n, rounds, lambda w, row: w.upsert(row), pids)
    return m, n * len(rounds)


async def measure_upsert_arrow(conn: fluss.FlussConnection, path: fluss.TablePath, profile: Profile,
                               pids: dict[str, int | None]) -> Measurement:
    """rows/s of ``upsert_arrow_batch`` over batches of ``ARROW_BATCH_ROWS`` rows + ``flush``."""
    n = profile.kv_rows // 4
    rounds = [[make_batch(min(ARROW_BATCH_ROWS, n - s), seed=r, start_seq=r * n + s)
               for s in range(0, n, ARROW_BATCH_ROWS)] for r in range(profile.rounds + 1)]
    m = Measurement("fluss", "kv.upsert.arrow", "rows/s",
                    note=f"UpsertWriter.upsert_arrow_batch, {ARROW_BATCH_ROWS}-row batches, {n} rows per round")
    await _timed_upserts(conn, path, m, n, rounds, lambda w, batch: w.upsert_arrow_batch(batch), pids)
    return m


async def measure_lookups(bootstrap: str, conn: fluss.FlussConnection, path: fluss.TablePath, keys: int,
                          profile: Profile, pids: dict[str, int | None]) -> list[Measurement]:
    """Batched lookup throughput and single-lookup latency over keys that exist."""
    rng = np.random.default_rng(3)
    table = await conn.get_table(path)
    lookuper = table.new_lookup().create_lookuper()
    n = min(keys, lookup_keys(profile))
    batched = Measurement("fluss", "kv.lookup.batched", "rows/s",
                          note=f"{LOOKUP_CONCURRENCY} concurrent Lookuper.lookup calls at a time, {n} keys per round")
    with PeakRss(pids) as rss:
        for r in range(profile.rounds + 1):
            sample = rng.integers(0, keys, n).tolist()
            t0 = time.perf_counter()
            found = 0
            for start in range(0, n, LOOKUP_CONCURRENCY):
                chunk = sample[start:start + LOOKUP_CONCURRENCY]
                got = await asyncio.gather(*(lookuper.lookup({"seq": k}) for k in chunk))
                found += sum(g is not None for g in got)
            dt = time.perf_counter() - t0
            if found != n:
                raise RuntimeError(f"batched lookups found {found} of {n} keys")
            if r:
                batched.rounds.append(n / dt)
    batched.rss_peak_mb = rss.peaks_mb()
    await lookuper.aclose()

    single_conn = await _connect(bootstrap, SINGLE_LOOKUP)
    p50 = Measurement("fluss", "kv.lookup.latency.p50", "ms", better="lower",
                      note=f"one lookup at a time, lookup.batch-timeout 1 ms, {LATENCY_LOOKUPS} per round")
    p99 = Measurement("fluss", "kv.lookup.latency.p99", "ms", better="lower", note=p50.note)
    try:
        single = (await single_conn.get_table(path)).new_lookup().create_lookuper()
        with PeakRss(pids) as rss:
            for r in range(profile.rounds + 1):
                lat = np.empty(LATENCY_LOOKUPS)
                for i, k in enumerate(rng.integers(0, keys, LATENCY_LOOKUPS).tolist()):
                    t0 = time.perf_counter()
                    if await single.lookup({"seq": k}) is None:
                        raise RuntimeError(f"lookup of existing key {k} found nothing")
                    lat[i] = (time.perf_counter() - t0) * 1000
                if r:
                    p50.rounds.append(float(np.percentile(lat, 50)))
                    p99.rounds.append(float(np.percentile(lat, 99)))
        await single.aclose()
    finally:
        await single_conn.aclose()
    p50.rss_peak_mb = p99.rss_peak_mb = rss.peaks_mb()
    return [batched, p50, p99]


async def run_scenarios(bootstrap: str, pids: dict[str, int | None], profile: Profile) -> list[Measurement]:
    """Every primary-key scenario against this project's cluster at ``bootstrap``."""
    out: list[Measurement] = []
    conn = await _connect(bootstrap)
    try:
        path = await _create_pk_table(conn, "kv")
        t0 = time.monotonic()
        try:
            upsert, keys = await measure_upsert(conn, path, profile, pids)
            out.append(upsert)
            print(f"  fluss kv.upsert: {time.monotonic() - t0:.1f}s", flush=True)
            t0 = time.monotonic()
            out += await measure_lookups(bootstrap, conn, path, keys, profile, pids)
            print(f"  fluss kv.lookup: {time.monotonic() - t0:.1f}s", flush=True)
            t0 = time.monotonic()
            out.append(await measure_upsert_arrow(conn, await _create_pk_table(conn, "kv_arrow"), profile, pids))
            print(f"  fluss kv.upsert.arrow: {time.monotonic() - t0:.1f}s", flush=True)
        except Exception as e:  # reported as failed; the log scenarios stand on their own
            out.append(Measurement("fluss", "kv", "", status=FAILED, note=f"{type(e).__name__}: {e}"))
    finally:
        await conn.aclose()
    return out
