"""This project's log tables through its Python client, against a real ``LocalCluster`` of 3 tablet servers.

- ``log.append.rf1`` / ``log.append.rf3``: one ``write_arrow_batch`` of the round's rows then ``flush()`` (which
  returns when every batch is acknowledged), ``writer.acks=all``; with RF=3 that waits for the high watermark,
  i.e. both followers have fetched the batch. ZSTD Arrow compression (the table default). rows/s and MB/s.
- ``log.scan.full`` / ``log.scan.projected``: a record-batch log scanner subscribed to every bucket from the
  earliest offset, ``to_arrow()`` to the latest offset, over the whole RF=1 table; projected reads 2 of 10 columns
  (the tablet server cuts the columns out of the Arrow batches). rows/s.
- ``log.scan.*.tuned``: the same scans with ``TUNED_SCAN`` client settings.
- ``log.append.nested`` / ``log.scan.nested``: the same append and full scan (RF=1, same rows per round, same
  run) of a table with nested columns (``bench.data.NESTED_SCHEMA``: ``ts``, ``seq``, an array of 5 ints, a map
  of 3 entries and a row of 3 fields), next to the flat 10-column table's ``log.append.rf1`` / ``log.scan.full``.
- ``log.latency.p50`` / ``log.latency.p99``: a producer task writes ``latency_rate`` rows/s as one small batch
  every ``TICK_S`` (``writer.batch-timeout`` 2 ms, fetch wait-max-time ``POLL_TIMEOUT_MS``) with the send time in
  column ``ts``; a consumer task polls (``poll_arrow``) and takes ``poll return time - ts`` per row. Each round is
  a window of send times after a warm-up second.

``run_scenarios`` only uses the public client API, so ``bench.upstream_client`` runs the same code with the
official client (pyfluss) against Apache Fluss.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

import fluss
from bench import fluss_kv
from bench.data import (
    NESTED_SCHEMA,
    PROJECTED,
    SCHEMA,
    arrow_bytes_per_row,
    make_batch,
    make_nested_batch,
    with_timestamp,
)
from bench.model import FAILED, Measurement, Profile
from bench.monitor import CpuSteal, PeakRss, steal_and_total
from bench.raw import write_ipc

if TYPE_CHECKING:
    from fluss.server.cluster import LocalCluster

BUCKETS = 3
APPEND_WARMUP = 2  # rounds not counted: connections, JIT of the JVM servers (Apache Fluss), first segments
TICK_S = 0.01
LATENCY_WARMUP_S = 1.0
DRAIN_TIMEOUT_S = 15.0
POLL_TIMEOUT_MS = 100
# A variant of the scans with a short long-poll and larger per-bucket fetches: with the defaults (500ms, 1mb)
# ``to_arrow()`` waits out the long-poll of caught-up buckets on every fetch round (see docs/benchmarks.md).
# Settings are given as ``Config`` attributes, which both clients have (their key strings differ: pyfluss wants
# ``scanner.log.fetch.wait-max-time-ms``, this project Fluss's ``scanner.log.fetch.wait-max-time``).
TUNED_SCAN = {"scanner_log_fetch_wait_max_time_ms": 5, "scanner_log_fetch_max_bytes_for_bucket": 16 * 2**20}
LATENCY_CLIENT = {"writer_batch_timeout_ms": 2, "scanner_log_fetch_wait_max_time_ms": POLL_TIMEOUT_MS}


async def _value(x: Any) -> Any:
    """The official client (pyfluss 1.0) makes ``to_arrow``/``poll_arrow``/``close`` coroutines; this project's
    are plain calls. The same scenario code drives both, so results are awaited when they are awaitables."""
    return await x if inspect.isawaitable(x) else x


async def _close(obj: Any) -> None:
    """Closes a writer, scanner or connection of either client (``aclose()`` here, ``close()`` upstream)."""
    for name in ("aclose", "close"):
        if hasattr(obj, name):
            await _value(getattr(obj, name)())
            return


def server_pids(cluster: LocalCluster) -> dict[str, int | None]:
    """Every server process of the cluster by name, for the memory monitor."""
    pids: dict[str, int | None] = {"coordinator": cluster._coordinators[0].process.pid}  # noqa: SLF001
    for sid in cluster.live_tablet_servers():
        pids[f"tablet-server-{sid}"] = cluster.tablet_server_pid(sid)
    zk = cluster.zookeeper
    pids["zookeeper"] = zk.process.pid if zk is not None and zk.process is not None else None
    return pids


async def _connect(bootstrap: str, settings: dict[str, int] | None = None) -> fluss.FlussConnection:
    """A connection with ``settings`` applied as ``Config`` attributes (e.g. ``writer_batch_timeout_ms``)."""
    config = fluss.Config({"bootstrap.servers": bootstrap})
    for name, value in (settings or {}).items():
        setattr(config, name, value)
    return await fluss.FlussConnection.create(config)


async def _create_table(conn: fluss.FlussConnection, name: str, replication: int,
                        schema: pa.Schema = SCHEMA) -> fluss.TablePath:
    admin = conn.get_admin()
    await admin.create_database("bench", ignore_if_exists=True)
    path = fluss.TablePath("bench", name)
    await admin.drop_table(path, ignore_if_not_exists=True)  # a cluster reused by hand starts clean
    props = {"table.replication.factor": str(replication), "table.log.arrow.compression.type": "ZSTD"}
    await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(schema), bucket_count=BUCKETS,
                                                         properties=props))
    return path


async def measure_append(conn: fluss.FlussConnection, path: fluss.TablePath, key: str, profile: Profile,
                         pids: dict[str, int | None], system: str = "fluss",
                         make: Callable[..., pa.RecordBatch] = make_batch) -> list[Measurement]:
    """rows/s and MB/s of ``write_arrow_batch`` + ``flush`` over ``rounds`` rounds after ``APPEND_WARMUP`` rounds.

    Right after each counted round the same batch is also appended raw (``bench.raw.write_ipc``), so the ratio to
    the raw limit is also known per round, under the same load (``<key>.paired_raw``): the machine is shared.
    """
    n = profile.rows_per_round
    batches = [make(n, seed=r, start_seq=r * n) for r in range(profile.rounds + APPEND_WARMUP)]
    mb_per_row = arrow_bytes_per_row(batches[0]) / 1e6
    rows = Measurement(system, key, "rows/s")
    paired = Measurement(system, key + ".paired_raw", "ratio",
                         note="each round's rate / a raw IPC append (+fsync) of the same batch right after it")
    table = await conn.get_table(path)
    writer = table.new_append().create_writer()
    try:
        with PeakRss(pids) as rss, tempfile.TemporaryDirectory(prefix="bench-paired-") as tmp:
            for r, batch in enumerate(batches):
                t0 = time.perf_counter()
                writer.write_arrow_batch(batch)
                await writer.flush()
                dt = time.perf_counter() - t0
                if r >= APPEND_WARMUP:
                    t0 = time.perf_counter()
                    write_ipc(Path(tmp) / "paired.arrow", batch)
                    raw_dt = time.perf_counter() - t0
                    rows.rounds.append(n / dt)
                    paired.rounds.append(raw_dt / dt)
    finally:
        await _close(writer)
    rows.rss_peak_mb = paired.rss_peak_mb = rss.peaks_mb()
    mb = Measurement(system, key + ".mb", "MB/s", [v * mb_per_row for v in rows.rounds],
                     note="MB of Arrow data (uncompressed) per second", rss_peak_mb=rows.rss_peak_mb)
    return [rows, mb, paired]


async def measure_scans(bootstrap: str, path: fluss.TablePath, profile: Profile, pids: dict[str, int | None],
                        suffix: str = "", extra: dict[str, int] | None = None,
                        system: str = "fluss", full_key: str = "log.scan.full",
                        projected: bool = True) -> list[Measurement]:
    """Full and projected ``to_arrow()`` of the whole table, alternating, after one warm-up of each.

    ``extra`` client settings give a tuned variant (keys get ``suffix``); without it the defaults apply.
    ``full_key`` names the full scan; ``projected=False`` measures it alone.
    """
    conn = await _connect(bootstrap, extra)
    out = {None: Measurement(system, full_key + suffix, "rows/s")}
    if projected:
        out["projected"] = Measurement(system, "log.scan.projected" + suffix, "rows/s")
    rss_by: dict[str | None, dict[str, float]] = {}
    try:
        table = await conn.get_table(path)
        for r in range(profile.rounds + 1):
            for kind, m in out.items():
                scan = table.new_scan()
                if kind:
                    scan = scan.project_by_name(PROJECTED)
                scanner = await scan.create_record_batch_log_scanner()
                scanner.subscribe_buckets(dict.fromkeys(range(BUCKETS), fluss.EARLIEST_OFFSET))
                with PeakRss(pids) as rss:
                    t0 = time.perf_counter()
                    result: pa.Table = await _value(scanner.to_arrow())
                    dt = time.perf_counter() - t0
                await _close(scanner)
                if kind:
                    assert result.column_names == PROJECTED, result.column_names
                if r:
                    m.rounds.append(result.num_rows / dt)
                    old = rss_by.get(kind, {})
                    rss_by[kind] = {k: max(v, old.get(k, 0.0)) for k, v in rss.peaks_mb().items()}
                settings = ", ".join(f"{k}={v}" for k, v in (extra or {}).items()) or "client defaults"
                m.note = f"{result.num_rows} rows per scan; {settings}"
    finally:
        await _close(conn)
    for kind, m in out.items():
        m.rss_peak_mb = rss_by.get(kind, {})
    return list(out.values())


async def measure_latency(bootstrap: str, path: fluss.TablePath, profile: Profile,
                          pids: dict[str, int | None], system: str = "fluss") -> list[Measurement]:
    """Append→poll latency at a steady ``latency_rate`` rows/s: p50 and p99 per round (ms)."""
    conn = await _connect(bootstrap, LATENCY_CLIENT)
    p50 = Measurement(system, "log.latency.p50", "ms", better="lower")
    p99 = Measurement(system, "log.latency.p99", "ms", better="lower")
    try:
        table = await conn.get_table(path)
        writer = table.new_append().create_writer()
        scanner = await table.new_scan().create_record_batch_log_scanner()
        scanner.subscribe_buckets(dict.fromkeys(range(BUCKETS), fluss.EARLIEST_OFFSET))
        probe = scanner.poll_arrow(1)  # an awaitable upstream, a (blocking) call here
        async_poll = inspect.isawaitable(probe)
        await _value(probe)
        per_tick = max(1, round(profile.latency_rate * TICK_S))
        template = make_batch(per_tick, seed=7)
        ticks = round((LATENCY_WARMUP_S + profile.rounds * profile.latency_round_s) / TICK_S)
        sent_total = ticks * per_tick
        received: list[tuple[np.ndarray, int]] = []
        done = asyncio.Event()

        async def consume() -> int:
            """Polls until every sent row arrived, or a bounded drain time after the producer stopped."""
            count, deadline = 0, None
            while count < sent_total:
                if done.is_set():
                    deadline = deadline or time.monotonic() + DRAIN_TIMEOUT_S
                    if time.monotonic() > deadline:
                        break
                if async_poll:
                    got = await scanner.poll_arrow(POLL_TIMEOUT_MS)
                else:  # a blocking poll runs off the loop, so the producer keeps its pace
                    got = await asyncio.to_thread(scanner.poll_arrow, POLL_TIMEOUT_MS)
                now_us = time.time_ns() // 1000
                if got.num_rows:
                    received.append((got.column("ts").to_numpy(), now_us))
                    count += got.num_rows
            return count

        with PeakRss(pids) as rss:
            consumer = asyncio.create_task(consume())
            start_us = time.time_ns() // 1000
            t_next = time.monotonic()
            warmup_ticks, round_ticks = round(LATENCY_WARMUP_S / TICK_S), round(profile.latency_round_s / TICK_S)
            steal_marks = []  # /proc/stat's steal and total at each round's start and at the end
            for i in range(ticks):
                if i >= warmup_ticks and (i - warmup_ticks) % round_ticks == 0:
                    steal_marks.append(steal_and_total())
                await asyncio.sleep(max(0.0, t_next - time.monotonic()))
                writer.write_arrow_batch(with_timestamp(template, time.time_ns() // 1000))
                t_next += TICK_S
            steal_marks.append(steal_and_total())
            elapsed = time.time_ns() // 1000 - start_us
            await writer.flush()
            done.set()
            count = await asyncio.wait_for(consumer, DRAIN_TIMEOUT_S + 5)
        await _close(writer)
        await _close(scanner)
        if count < sent_total:
            raise RuntimeError(f"consumer received {count} of {sent_total} rows")
        sent = np.concatenate([ts for ts, _ in received])
        lat_ms = np.concatenate([now - ts for ts, now in received]) / 1000.0
        window_us = int(profile.latency_round_s * 1e6)
        first = start_us + int(LATENCY_WARMUP_S * 1e6)
        for k in range(profile.rounds):
            sel = lat_ms[(sent >= first + k * window_us) & (sent < first + (k + 1) * window_us)]
            if sel.size:
                p50.rounds.append(float(np.percentile(sel, 50)))
                p99.rounds.append(float(np.percentile(sel, 99)))
        rate = sent_total / (elapsed / 1e6)
        steal = _steal_per_round(steal_marks)
        for m in (p50, p99):
            m.note = f"steady producer {rate:,.0f} rows/s achieved, {per_tick} rows every {TICK_S * 1000:.0f} ms; " \
                     f"CPU steal per round {steal}"
            m.rss_peak_mb = rss.peaks_mb()
    finally:
        await _close(conn)
    return [p50, p99]


def _steal_per_round(marks: list[tuple[int, int] | None]) -> str:
    """``"0%, 3.5%, ..."``: the hypervisor's share of the CPU time in each latency round (``bench.monitor.CpuSteal``)."""
    out = []
    for a, b in zip(marks, marks[1:], strict=False):
        out.append("?" if a is None or b is None or b[1] <= a[1] else f"{100 * (b[0] - a[0]) / (b[1] - a[1]):.0f}%")
    return ", ".join(out) or "?"


async def measure_nested(conn: fluss.FlussConnection, bootstrap: str, profile: Profile,
                         pids: dict[str, int | None], system: str = "fluss") -> list[Measurement]:
    """``log.append.nested`` then ``log.scan.nested``: the RF=1 append and full scan of ``NESTED_SCHEMA``."""
    path = await _create_table(conn, "log_nested", 1, NESTED_SCHEMA)
    out = await measure_append(conn, path, "log.append.nested", profile, pids, system, make_nested_batch)
    out += await measure_scans(bootstrap, path, profile, pids, system=system, full_key="log.scan.nested",
                               projected=False)
    return out


class _GrpcPollerNoise(logging.Filter):
    """Drops grpc.aio's harmless ``BlockingIOError`` from its completion-queue poller, logged by asyncio when
    two event loops in one process (ours and the client's I/O thread) both use grpc.aio."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], BlockingIOError))


async def run_scenarios(bootstrap: str, pids: dict[str, int | None], profile: Profile,
                        system: str = "fluss") -> list[Measurement]:
    """Every log scenario against the cluster at ``bootstrap`` (this project's, or Apache Fluss's)."""
    out: list[Measurement] = []
    conn = await _connect(bootstrap)
    try:
        rf1 = await _create_table(conn, "log_rf1", 1)
        rf3 = await _create_table(conn, "log_rf3", 3)
        lat = await _create_table(conn, "log_latency", 1)
        steps: list[tuple[str, Callable[[], Awaitable[list[Measurement]]]]] = [
            ("log.append.rf1", lambda: measure_append(conn, rf1, "log.append.rf1", profile, pids, system)),
            ("log.append.rf3", lambda: measure_append(conn, rf3, "log.append.rf3", profile, pids, system)),
            ("log.scan", lambda: measure_scans(bootstrap, rf1, profile, pids, system=system)),
            ("log.scan.tuned", lambda: measure_scans(bootstrap, rf1, profile, pids, ".tuned", TUNED_SCAN, system)),
            ("log.latency", lambda: measure_latency(bootstrap, lat, profile, pids, system)),
            ("log.nested", lambda: measure_nested(conn, bootstrap, profile, pids, system)),
        ]
        for name, step in steps:
            t0 = time.monotonic()
            with CpuSteal() as steal:
                try:
                    out += await step()
                except Exception as e:  # one broken scenario must not hide the others
                    out.append(Measurement(system, name, "", status=FAILED, note=f"{type(e).__name__}: {e}"))
            print(f"  {system} {name}: {time.monotonic() - t0:.1f}s ({steal.label()})", flush=True)
    finally:
        await _close(conn)
    return out


async def _run(profile: Profile) -> list[Measurement]:
    from fluss.server.cluster import LocalCluster

    with LocalCluster(tablet_servers=3) as cluster:
        pids = server_pids(cluster)
        out = await run_scenarios(cluster.bootstrap_servers, pids, profile)
        return out + await fluss_kv.run_scenarios(cluster.bootstrap_servers, pids, profile)


def run(profile: Profile) -> list[Measurement]:
    """Starts a 3-tablet-server cluster, runs every log scenario, stops the cluster."""
    noise = _GrpcPollerNoise()
    logging.getLogger("asyncio").addFilter(noise)
    try:
        return asyncio.run(_run(profile))
    finally:
        logging.getLogger("asyncio").removeFilter(noise)
