"""Peer: Redis Streams (Debian's ``redis-server``, started here on a free loopback port, no persistence).

- ``log.append``: ``XADD`` of one entry per row (10 fields), pipelined ``PIPELINE_DEPTH`` commands at a time, from
  the same rows (as Python dicts, made before the clock starts). rows/s.
- ``log.scan.full``: ``XRANGE`` pages of ``SCAN_PAGE`` entries over the whole stream. Redis cannot return only
  some fields of an entry, so there is no projected figure: the projected scan is compared with this one.
- ``log.latency.p50/p99``: a producer task pipelines one tick's rows every 10 ms with the send time in field
  ``ts``; a consumer task blocks in ``XREAD``; latency = read return time - ``ts``.
- ``kv.*``: ``HSET`` per row (pipelined) for the upsert, pipelined ``HGETALL`` for batched lookups and one
  ``HGETALL`` at a time for the single-key latency.
The Redis client is ``redis`` (redis-py with hiredis); the per-entry loop is the nature of these APIs.
"""

from __future__ import annotations

import asyncio
import gc
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import redis
import redis.asyncio as aioredis

from bench.data import arrow_bytes_per_row, make_batch
from bench.fluss_kv import lookup_keys
from bench.model import FAILED, NOT_RUN, Measurement, Profile, unavailable
from bench.monitor import PeakRss
from bench.setup import ensure_redis
from fluss.server.zk.local_server import free_port

PIPELINE_DEPTH = 5_000
LOOKUP_PIPELINE = 1_000
LATENCY_LOOKUPS = 300
SCAN_PAGE = 10_000
TICK_S = 0.01
LATENCY_WARMUP_S = 1.0
START_TIMEOUT_S = 10.0
KEYS = [("log.append", "rows/s"), ("log.append.mb", "MB/s"), ("log.scan.full", "rows/s"),
        ("log.latency.p50", "ms"), ("log.latency.p99", "ms")]


class RedisServer:
    """A ``redis-server`` process on a free loopback port, stopped (and its directory removed) on exit."""

    def __init__(self) -> None:
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="bench-redis-"))
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> RedisServer:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.dir), "--daemonize", "no", "--loglevel", "warning"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                if redis.Redis(port=self.port, socket_timeout=1).ping():
                    return self
            except redis.ConnectionError:
                time.sleep(0.05)
        self.__exit__(None, None, None)
        raise TimeoutError(f"redis-server did not answer on port {self.port} within {START_TIMEOUT_S}s")

    def __exit__(self, *exc: object) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None


def _append_and_scan(server: RedisServer, profile: Profile) -> list[Measurement]:
    n = profile.peer_rows_per_round
    client = redis.Redis(port=server.port)
    stream = "bench:log"
    rounds = [make_batch(n, seed=r, start_seq=r * n) for r in range(profile.rounds + 1)]
    mb_per_row = arrow_bytes_per_row(rounds[0]) / 1e6
    append = Measurement("redis", "log.append", "rows/s", note="XADD per row, pipelined")
    scan = Measurement("redis", "log.scan.full", "rows/s", note=f"XRANGE pages of {SCAN_PAGE}")
    with PeakRss({"redis-server": server.pid}) as rss:
        for r, batch in enumerate(rounds):
            rows = batch.to_pylist()
            gc.collect()  # the previous round's dicts, not this round's clock
            t0 = time.perf_counter()
            pipe = client.pipeline(transaction=False)
            for i, row in enumerate(rows, 1):
                pipe.xadd(stream, row)
                if i % PIPELINE_DEPTH == 0:
                    pipe.execute()
            pipe.execute()
            dt = time.perf_counter() - t0
            if r:
                append.rounds.append(n / dt)
    append.rss_peak_mb = rss.peaks_mb()
    total = client.xlen(stream)
    with PeakRss({"redis-server": server.pid}) as rss:
        for r in range(profile.rounds + 1):
            t0 = time.perf_counter()
            seen, start = 0, "-"
            for _ in range(total // SCAN_PAGE + 2):  # bounded: one page more than needed
                page = client.xrange(stream, min=start, max="+", count=SCAN_PAGE)
                if not page:
                    break
                seen += len(page)
                start = "(" + page[-1][0].decode()
            dt = time.perf_counter() - t0
            assert seen == total, f"XRANGE read {seen} of {total}"
            if r:
                scan.rounds.append(seen / dt)
    scan.rss_peak_mb = rss.peaks_mb()
    scan.note += f", {total} entries per scan"
    client.close()
    mb = Measurement("redis", "log.append.mb", "MB/s", [v * mb_per_row for v in append.rounds],
                     note="rows/s x the same rows' Arrow bytes", rss_peak_mb=append.rss_peak_mb)
    return [append, mb, scan]


def _kv(server: RedisServer, profile: Profile) -> list[Measurement]:
    """HSET per row (pipelined) as the upsert, pipelined HGETALL as the batched lookup, one HGETALL at a time for
    the single-key latency; the same rows and key counts as this project's primary-key scenarios."""
    client = redis.Redis(port=server.port)
    n = profile.kv_rows // 4
    rounds = [make_batch(n, seed=r, start_seq=r * n).to_pylist() for r in range(profile.rounds + 1)]
    keys = n * len(rounds)
    upsert = Measurement("redis", "kv.upsert", "rows/s", note="HSET per row (10 fields), pipelined")
    batched = Measurement("redis", "kv.lookup.batched", "rows/s", note=f"HGETALL pipelined {LOOKUP_PIPELINE} at a time")
    p50 = Measurement("redis", "kv.lookup.latency.p50", "ms", better="lower", note="one HGETALL at a time")
    p99 = Measurement("redis", "kv.lookup.latency.p99", "ms", better="lower", note=p50.note)
    rng = np.random.default_rng(3)
    with PeakRss({"redis-server": server.pid}) as rss:
        for r, rows in enumerate(rounds):
            gc.collect()
            t0 = time.perf_counter()
            pipe = client.pipeline(transaction=False)
            for i, row in enumerate(rows, 1):
                pipe.hset(f"kv:{row['seq']}", mapping=row)
                if i % PIPELINE_DEPTH == 0:
                    pipe.execute()
            pipe.execute()
            if r:
                upsert.rounds.append(n / (time.perf_counter() - t0))
        for r in range(profile.rounds + 1):
            sample = rng.integers(0, keys, lookup_keys(profile)).tolist()
            t0 = time.perf_counter()
            found = 0
            for start in range(0, len(sample), LOOKUP_PIPELINE):
                pipe = client.pipeline(transaction=False)
                for k in sample[start:start + LOOKUP_PIPELINE]:
                    pipe.hgetall(f"kv:{k}")
                found += sum(bool(v) for v in pipe.execute())
            dt = time.perf_counter() - t0
            if found != len(sample):
                raise RuntimeError(f"HGETALL found {found} of {len(sample)} keys")
            lat = np.empty(LATENCY_LOOKUPS)
            for i, k in enumerate(rng.integers(0, keys, LATENCY_LOOKUPS).tolist()):
                t1 = time.perf_counter()
                client.hgetall(f"kv:{k}")
                lat[i] = (time.perf_counter() - t1) * 1000
            if r:
                batched.rounds.append(len(sample) / dt)
                p50.rounds.append(float(np.percentile(lat, 50)))
                p99.rounds.append(float(np.percentile(lat, 99)))
    client.close()
    for m in (upsert, batched, p50, p99):
        m.rss_peak_mb = rss.peaks_mb()
    return [upsert, batched, p50, p99]


async def _latency(server: RedisServer, profile: Profile) -> list[Measurement]:
    client = aioredis.Redis(port=server.port)
    stream = "bench:latency"
    per_tick = max(1, round(profile.latency_rate * TICK_S))
    template = make_batch(per_tick, seed=7).to_pylist()
    ticks = round((LATENCY_WARMUP_S + profile.rounds * profile.latency_round_s) / TICK_S)
    sent_total = ticks * per_tick
    sends: list[np.ndarray] = []
    lats: list[np.ndarray] = []
    done = asyncio.Event()

    async def consume() -> None:
        last, got = "0-0", 0
        deadline: float | None = None
        while got < sent_total:
            if done.is_set():
                deadline = deadline or time.monotonic() + 10
                if time.monotonic() > deadline:
                    return
            resp = await client.xread({stream: last}, count=SCAN_PAGE, block=100)
            now_us = time.time_ns() // 1000
            for _, entries in resp:
                ts = np.fromiter((int(f[b"ts"]) for _, f in entries), dtype=np.int64, count=len(entries))
                sends.append(ts)
                lats.append((now_us - ts) / 1000.0)
                got += len(entries)
                last = entries[-1][0]

    p50 = Measurement("redis", "log.latency.p50", "ms", better="lower")
    p99 = Measurement("redis", "log.latency.p99", "ms", better="lower")
    with PeakRss({"redis-server": server.pid}) as rss:
        consumer = asyncio.create_task(consume())
        start_us = time.time_ns() // 1000
        t_next = time.monotonic()
        for _ in range(ticks):
            await asyncio.sleep(max(0.0, t_next - time.monotonic()))
            ts = time.time_ns() // 1000
            pipe = client.pipeline(transaction=False)
            for row in template:
                pipe.xadd(stream, {**row, "ts": ts})
            await pipe.execute()
            t_next += TICK_S
        elapsed = time.time_ns() // 1000 - start_us
        done.set()
        await asyncio.wait_for(consumer, 20)
    await client.aclose()
    sent = np.concatenate(sends) if sends else np.zeros(0, dtype=np.int64)
    lat = np.concatenate(lats) if lats else np.zeros(0)
    if sent.size < sent_total:
        raise RuntimeError(f"XREAD got {sent.size} of {sent_total} entries")
    window = int(profile.latency_round_s * 1e6)
    first = start_us + int(LATENCY_WARMUP_S * 1e6)
    for k in range(profile.rounds):
        sel = lat[(sent >= first + k * window) & (sent < first + (k + 1) * window)]
        if sel.size:
            p50.rounds.append(float(np.percentile(sel, 50)))
            p99.rounds.append(float(np.percentile(sel, 99)))
    for m in (p50, p99):
        m.note = f"XADD pipelined per tick, XREAD BLOCK; {sent_total / (elapsed / 1e6):,.0f} rows/s achieved"
        m.rss_peak_mb = rss.peaks_mb()
    return [p50, p99]


def run(profile: Profile) -> list[Measurement]:
    """Installs Redis if needed, starts it, runs the log scenarios, stops it."""
    err = ensure_redis()
    if err:
        return unavailable("redis", KEYS, NOT_RUN, err)
    out: list[Measurement] = []
    with RedisServer() as server:
        for name, step in (("append+scan", lambda: _append_and_scan(server, profile)),
                           ("latency", lambda: asyncio.run(_latency(server, profile))),
                           ("kv", lambda: _kv(server, profile))):
            t0 = time.monotonic()
            try:
                out += step()
            except Exception as e:  # one broken scenario must not hide the others
                out.append(Measurement("redis", f"log.{name}", "", status=FAILED, note=f"{type(e).__name__}: {e}"))
            print(f"  redis {name}: {time.monotonic() - t0:.1f}s", flush=True)
    return out
