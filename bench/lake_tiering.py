"""Lake tiering into Paimon: throughput of the tiering core, and the lake's freshness under a steady write load.

Own ``LocalCluster`` (1 coordinator, 1 tablet server) with ``datalake.format: paimon`` and a temporary
warehouse; lake-enabled log tables of the benchmark rows, ``BUCKETS`` buckets, RF=1.

- ``tiering`` (rows/s): per round a new table gets ``tiering_rows`` rows (Arrow batches of ``BATCH_ROWS``,
  ``write_arrow_batch`` + ``flush``), then one ``fluss.lake.tiering.tier_table`` round (the code the PyFlink
  job's ``TierTable`` operator runs: read the log range from the tablet server, write each bucket's batches to
  its Paimon bucket, commit with the offsets) moves them into Paimon; rows / seconds of that call.
  Raw limit (``raw`` / ``tiering``), right after it in the same round: the same Arrow batches written straight
  to a Paimon table of the same shape with pypaimon (batch write, ``bucket`` given, same bucket count) and
  committed once.
- ``tiering.freshness.p50`` / ``.max`` (s): the continuous tiering job (``python -m tiering_job``, PyFlink,
  a local mini cluster, ``--interval`` ``JOB_INTERVAL``) runs against a table with ``table.datalake.freshness``
  = ``FRESHNESS``. Once it has tiered a first seed batch (its start-up is not counted), a writer appends
  ``latency_rate`` rows/s (every ``TICK_S``, the send time in column ``ts``) for ``freshness_s`` seconds while
  the Paimon table's latest tiering snapshot is polled every ``POLL_S``. Afterwards the log is read back with
  offsets, and a row's lag is the first poll time at which the lake's offset of its bucket passed the row's
  offset, minus ``ts``. Rounds are consecutive windows of ``2 x FRESHNESS`` of send time.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import fluss
from bench.data import SCHEMA, make_batch, with_timestamp
from bench.fluss_log import server_pids
from bench.model import FAILED, Measurement, Profile
from bench.monitor import PeakRss
from fluss.lake.paimon import (
    PaimonLake,
    lake_of_table,
    paimon_arrow_schema,
    paimon_table_options,
    with_system_columns,
)
from fluss.lake.tiering import tier_table
from fluss.server.cluster import LocalCluster

BUCKETS = 3
BATCH_ROWS = 16_384
FRESHNESS = "5s"
FRESHNESS_S = 5.0
JOB_INTERVAL = "500ms"
TICK_S = 0.1
POLL_S = 0.1
JOB_START_TIMEOUT_S = 240.0
CATCH_UP_TIMEOUT_S = 60.0
REPO = Path(__file__).resolve().parents[1]


async def _create(conn: fluss.FlussConnection, name: str, **props: str) -> fluss.TableInfo:
    admin = conn.get_admin()
    await admin.create_database("bench", ignore_if_exists=True)
    path = fluss.TablePath("bench", name)
    await admin.drop_table(path, ignore_if_not_exists=True)
    await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(SCHEMA), bucket_count=BUCKETS, properties={
        "table.replication.factor": "1", "table.datalake.enabled": "true", **props}))
    return await admin.get_table_info(path)


def _raw_write(lake: PaimonLake, info: fluss.TableInfo, name: str, batches: list) -> float:
    """Creates a Paimon table shaped like ``info`` and writes + commits ``batches`` with pypaimon; seconds.

    The rows carry the lake's system columns (``__bucket``, ``__offset``, ``__timestamp``) as tiering writes them,
    so both sides write the same Paimon rows; adding them is inside the timed part, as it is for tiering. A
    bucket-unaware lake table takes the batches without a bucket, as the lake writer gives them."""
    from pypaimon import Schema

    ident = f"bench.{name}"
    lake.catalog.create_database("bench", True)
    lake.catalog.create_table(ident, Schema.from_pyarrow_schema(paimon_arrow_schema(info),
                                                               options=paimon_table_options(info)), False)
    table = lake.catalog.get_table(ident)
    t0 = time.perf_counter()
    builder = table.new_batch_write_builder()
    write = builder.new_write()
    bucketed = int(table.options.bucket()) > 0  # a log table without a bucket key is bucket-unaware in the lake
    next_offset = [0] * BUCKETS
    now_ms = int(time.time() * 1000)
    for i, b in enumerate(batches):
        bucket = i % BUCKETS
        offsets = np.arange(next_offset[bucket], next_offset[bucket] + b.num_rows, dtype=np.int64)
        next_offset[bucket] += b.num_rows
        rows = with_system_columns(b, bucket, offsets, now_ms)
        if bucketed:
            write.write_arrow(rows, bucket=bucket)
        else:
            write.write_arrow(rows)
    commit = builder.new_commit()
    commit.commit(write.prepare_commit())
    commit.close()
    write.close()
    return time.perf_counter() - t0


async def measure_throughput(conn: fluss.FlussConnection, profile: Profile,
                             pids: dict[str, int | None]) -> list[Measurement]:
    n = profile.tiering_rows
    fl = Measurement("fluss", "tiering", "rows/s",
                     note=f"tier_table round of {n} rows, {BUCKETS} buckets (read log + write Paimon + commit)")
    raw = Measurement("raw", "tiering", "rows/s",
                      note=f"pypaimon batch write of the same Arrow batches, {BUCKETS} buckets, one commit")
    with PeakRss(pids) as rss:
        for r in range(profile.heavy_rounds + 1):  # round 0 warms up
            batches = [make_batch(min(BATCH_ROWS, n - s), seed=r, start_seq=s) for s in range(0, n, BATCH_ROWS)]
            info = await _create(conn, f"tier_{r}")
            writer = (await conn.get_table(info.table_path)).new_append().create_writer()
            for b in batches:
                writer.write_arrow_batch(b)
            await writer.flush()
            await writer.aclose()
            lake = lake_of_table(info)
            t0 = time.perf_counter()
            result = await tier_table(conn, lake, info, None)
            dt = time.perf_counter() - t0
            if result.rows != n:
                raise RuntimeError(f"tiering moved {result.rows} of {n} rows")
            raw_dt = await asyncio.to_thread(_raw_write, lake, info, f"raw_{r}", batches)
            if r:
                fl.rounds.append(n / dt)
                raw.rounds.append(n / raw_dt)
    fl.rss_peak_mb = raw.rss_peak_mb = rss.peaks_mb()
    return [fl, raw]


def _stop_job(job: subprocess.Popen) -> None:
    """SIGTERM to the job's own process group (it was started as a session leader), SIGKILL if it lingers."""
    if job.poll() is not None:
        return
    os.killpg(job.pid, signal.SIGTERM)
    try:
        job.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)
        job.wait()


async def _progress(lake: PaimonLake, info: fluss.TableInfo) -> dict[int, int]:
    p = await asyncio.to_thread(lake.tiered_progress, info.table_path, info.table_id)
    return {b: off for (_, b), off in p.offsets.items()} if p else {}


async def _log_with_offsets(conn: fluss.FlussConnection, info: fluss.TableInfo,
                            ends: dict[int, int]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per bucket: (offsets, ts) of every row in ``[0, end)``."""
    scanner = await (await conn.get_table(info.table_path)).new_scan().project_by_name(["ts"]) \
        .create_record_batch_log_scanner()
    parts: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {b: [] for b in ends}
    pos = dict.fromkeys(ends, 0)
    scanner.subscribe_buckets(dict(pos))
    deadline = time.monotonic() + CATCH_UP_TIMEOUT_S
    try:
        while any(pos[b] < e for b, e in ends.items()):
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading the log back stopped at {pos} of {ends}")
            for rb in await scanner.poll_record_batch(500):
                b = rb.bucket.bucket_id
                n = max(0, min(rb.batch.num_rows, ends[b] - rb.base_offset))
                parts[b].append((np.arange(rb.base_offset, rb.base_offset + n),
                                 rb.batch.column("ts").to_numpy()[:n]))
                pos[b] = max(pos[b], rb.last_offset + 1)
    finally:
        await scanner.aclose()
    return {b: (np.concatenate([o for o, _ in p]), np.concatenate([t for _, t in p])) for b, p in parts.items() if p}


async def measure_freshness(conn: fluss.FlussConnection, bootstrap: str, profile: Profile,
                            pids: dict[str, int | None], work: Path) -> list[Measurement]:
    info = await _create(conn, "fresh", **{"table.datalake.freshness": FRESHNESS})
    lake = lake_of_table(info)
    table = await conn.get_table(info.table_path)
    writer = table.new_append().create_writer()
    writer.write_arrow_batch(make_batch(1000, seed=9))  # the seed: ts = 0, not counted
    await writer.flush()
    job_log = work / "tiering-job.log"
    with open(job_log, "wb") as out:
        job = subprocess.Popen([sys.executable, "-m", "tiering_job", "--bootstrap-servers", bootstrap,
                                "--interval", JOB_INTERVAL], cwd=REPO, stdout=out, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, start_new_session=True)
    p50 = Measurement("fluss", "tiering.freshness.p50", "s", better="lower")
    pmax = Measurement("fluss", "tiering.freshness.max", "s", better="lower")
    try:
        t0 = time.monotonic()
        while not await _progress(lake, info):
            if job.poll() is not None:
                raise RuntimeError(f"the tiering job exited {job.returncode}: {job_log.read_text()[-400:]}")
            if time.monotonic() - t0 > JOB_START_TIMEOUT_S:
                raise TimeoutError(f"the tiering job tiered nothing within {JOB_START_TIMEOUT_S}s")
            await asyncio.sleep(0.5)
        startup = time.monotonic() - t0
        seen: list[tuple[int, dict[int, int]]] = []  # (poll time us, offsets) whenever the lake moved
        stop = asyncio.Event()

        async def poll() -> None:
            last: dict[int, int] = {}
            while True:
                now_us = time.time_ns() // 1000
                cur = await _progress(lake, info)
                if cur != last:
                    seen.append((now_us, cur))
                    last = cur
                if stop.is_set() and all(cur.get(b, 0) >= e for b, e in ends.items()):
                    return
                await asyncio.sleep(POLL_S)

        per_tick = max(1, round(profile.latency_rate * TICK_S))
        template = make_batch(per_tick, seed=10)
        ends: dict[int, int] = {}
        pids = {**pids, "tiering-job": job.pid}
        with PeakRss(pids) as rss:
            rss.add_descendants("tiering-job", job.pid)  # Flink's JVM and its Python workers
            poller = asyncio.create_task(poll())
            start_us = time.time_ns() // 1000
            t_next = time.monotonic()
            for _ in range(round(profile.freshness_s / TICK_S)):
                await asyncio.sleep(max(0.0, t_next - time.monotonic()))
                writer.write_arrow_batch(with_timestamp(template, time.time_ns() // 1000))
                t_next += TICK_S
            await writer.flush()
            ends.update(await conn.get_admin().list_offsets(info.table_path, list(range(BUCKETS)),
                                                            fluss.OffsetSpec.latest()))
            stop.set()
            await asyncio.wait_for(poller, CATCH_UP_TIMEOUT_S)
        await writer.aclose()
    finally:
        _stop_job(job)
    rows = await _log_with_offsets(conn, info, ends)
    lags: list[np.ndarray] = []
    sent: list[np.ndarray] = []
    for b, (offs, ts) in rows.items():
        times = np.array([t for t, _ in seen], dtype=np.int64)
        lake_offs = np.array([o.get(b, 0) for _, o in seen], dtype=np.int64)  # non-decreasing
        idx = np.searchsorted(lake_offs, offs, side="right")  # first poll whose lake offset is above the row's
        keep = ts > 0
        lags.append((times[idx[keep]] - ts[keep]) / 1e6)
        sent.append(ts[keep])
    lag, at = np.concatenate(lags), np.concatenate(sent)
    window_us = int(2 * FRESHNESS_S * 1e6)
    for k in range(max(1, int(profile.freshness_s * 1e6) // window_us)):
        sel = lag[(at >= start_us + k * window_us) & (at < start_us + (k + 1) * window_us)]
        if sel.size:
            p50.rounds.append(float(np.percentile(sel, 50)))
            pmax.rounds.append(float(sel.max()))
    rate = at.size / profile.freshness_s
    for m in (p50, pmax):
        m.note = (f"continuous PyFlink tiering job, table.datalake.freshness={FRESHNESS}, --interval {JOB_INTERVAL}; "
                  f"steady writer {rate:,.0f} rows/s for {profile.freshness_s:.0f}s; {len(seen) - 1} lake commits "
                  f"seen (polled every {POLL_S * 1000:.0f} ms); job start-up {startup:.0f}s not counted")
        m.rss_peak_mb = rss.peaks_mb()
    return [p50, pmax]


async def _run(profile: Profile, work: Path) -> list[Measurement]:
    config = {"datalake.format": "paimon", "datalake.paimon.warehouse": str(work / "warehouse")}
    out: list[Measurement] = []
    with LocalCluster(tablet_servers=1, server_config=config) as cluster:
        pids = server_pids(cluster)
        conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": cluster.bootstrap_servers}))
        try:
            for name, step in (("tiering", lambda: measure_throughput(conn, profile, pids)),
                               ("tiering.freshness", lambda: measure_freshness(conn, cluster.bootstrap_servers,
                                                                               profile, pids, work))):
                t0 = time.monotonic()
                try:
                    out += await step()
                except Exception as e:  # one broken scenario must not hide the other
                    out.append(Measurement("fluss", name, "", status=FAILED, note=f"{type(e).__name__}: {e}"))
                print(f"  fluss {name}: {time.monotonic() - t0:.1f}s", flush=True)
        finally:
            await conn.aclose()
    return out


def run(profile: Profile) -> list[Measurement]:
    """Throughput (with its raw limit) and freshness on a lake-enabled cluster in a temporary directory."""
    work = Path(tempfile.mkdtemp(prefix="bench-lake-"))
    try:
        return asyncio.run(_run(profile, work))
    finally:
        shutil.rmtree(work, ignore_errors=True)
