"""Online reassignment (docs/cluster-operations.md): how fast a bucket moves, and what a move costs writers.

Own ``LocalCluster`` (1 coordinator, 3 tablet servers, min ISR 2, no catch-up throttle). Per round, a 1-bucket
RF=2 table of the benchmark rows is loaded (``profile.recovery_rows`` rows), then moved to a set that replaces its
leader by the third server (leadership moves too); the clock runs from ``alter_table_assignment`` until the move is
finished (``list_reassignments`` empty, new leader serving: a primary-key bucket answers a lookup, so its KV state
is rebuilt on the new leader). The size is the leader's local log (DescribeLog).

* ``log.reassign`` / ``kv.reassign`` (MB/s of log moved, higher is better);
* ``log.reassign.write.p99.before`` / ``.during`` (ms): p99 of acks=all writes of 100 rows, each awaited, to
  another RF=2 table while nothing moves and while a log bucket moves.
* ``rebalance.write.p99.before`` / ``.during`` (ms) and ``rebalance.time`` (s): after the rounds, a fourth tablet
  server joins (next to 3 more 4-bucket tables of 100k rows) and a rebalance (default goals, ``coordinator.rebalance.max-inflight-tasks`` 1 as in Fluss) spreads
  every table loaded above over the four; the same probe writer's p99 before it and while it runs, and how long it
  takes (``rebalance`` -> ``list_rebalance`` COMPLETED).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import fluss
from bench.data import SCHEMA, make_batch
from bench.model import FAILED, Measurement, Profile
from fluss.server.cluster import LocalCluster
from fluss.table_report import describe_table_json

CONFIG = {"log.replica.min-in-sync-replicas-number": "2", "default.replication.factor": "2",
          "log.replica.fetch.wait-max-time": "100ms"}
LOAD_BATCH = 20_000
TIMEOUT_S = 300.0
REBALANCE_TABLES, REBALANCE_ROWS = 3, 100_000  # 3 tables of 4 buckets, 100k rows each, besides the rounds' tables


async def _bucket(conn, path):
    return (await conn.run(conn.cluster.update_metadata([path]))).tables[0].buckets[0]


async def _until(predicate, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not await predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        await asyncio.sleep(0.02)


async def _all_in_sync(conn, path) -> bool:
    meta = await conn.run(conn.cluster.update_metadata([path]))
    return all(b.leader_id >= 0 and sorted(b.isr) == sorted(b.replicas) for b in meta.tables[0].buckets)


async def _in_sync(conn, path) -> bool:
    b = await _bucket(conn, path)
    return b.leader_id >= 0 and sorted(b.isr) == sorted(b.replicas)


async def _load(conn, name: str, rows: int, pk: bool):
    admin = conn.get_admin()
    path = fluss.TablePath("bench", name)
    schema = fluss.Schema(SCHEMA, primary_keys=["seq"]) if pk else fluss.Schema(SCHEMA)
    await admin.create_table(path, fluss.TableDescriptor(schema, bucket_count=1))
    await _until(lambda: _in_sync(conn, path), "a full ISR")
    table = await conn.get_table(path)
    writer = table.new_upsert().create_writer() if pk else table.new_append().create_writer()
    for start in range(0, rows, LOAD_BATCH):
        batch = make_batch(min(LOAD_BATCH, rows - start), seed=start, start_seq=start)
        if pk:
            writer.upsert_arrow_batch(batch)
        else:
            writer.write_arrow_batch(batch)
    await writer.flush()
    await _until(lambda: _in_sync(conn, path), "a full ISR after the load")
    return path, table


async def _move(conn, path, table, pk: bool) -> tuple[float, int]:
    """Seconds to move the bucket off its leader, and the bytes of its log."""
    size = (await describe_table_json(conn, path))["buckets"][0]["local_log"]["size"]
    b = await _bucket(conn, path)
    newcomer = next(s for s in range(3) if s not in b.replicas)
    target = [newcomer, next(r for r in b.replicas if r != b.leader_id)]
    admin = conn.get_admin()
    t0 = time.perf_counter()
    await admin.alter_table_assignment(path, {0: target})

    async def moved() -> bool:
        if await admin.list_reassignments():
            return False
        now = await _bucket(conn, path)
        return list(now.replicas) == target and now.leader_id == newcomer

    await _until(moved, "the move")
    if pk:
        await table.new_lookup().create_lookuper().lookup({"seq": 0})  # retries until the KV state is rebuilt
    return time.perf_counter() - t0, size


async def _write_latencies(writer, stop: asyncio.Event, out: list[float]) -> None:
    seq = 0
    while not stop.is_set():
        t0 = time.perf_counter()
        writer.write_arrow_batch(make_batch(100, seed=seq, start_seq=seq))
        await writer.flush()
        out.append((time.perf_counter() - t0) * 1000)
        seq += 100


def _p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[98] if len(values) > 1 else values[0]


async def _rounds(cluster: LocalCluster, profile: Profile) -> list[Measurement]:
    log_m = Measurement("fluss", "log.reassign", "MB/s")
    kv_m = Measurement("fluss", "kv.reassign", "MB/s")
    before = Measurement("fluss", "log.reassign.write.p99.before", "ms", better="lower")
    during = Measurement("fluss", "log.reassign.write.p99.during", "ms", better="lower")
    conn = await fluss.FlussConnection.create(fluss.Config({
        "bootstrap.servers": cluster.bootstrap_servers, "writer.acks": "all", "writer.batch-timeout": "1ms",
        "request-timeout": "30s"}))
    try:
        await conn.get_admin().create_database("bench", ignore_if_exists=True)
        probe_path, probe = await _load(conn, "reassign_probe", 1000, pk=False)
        probe_writer = probe.new_append().create_writer()
        rows = profile.recovery_rows
        for r in range(profile.heavy_rounds + 1):  # round 0 warms up
            path, table = await _load(conn, f"reassign_log_{r}", rows, pk=False)
            async with _probe_latencies(probe_writer) as quiet:
                await asyncio.sleep(2.0)
            async with _probe_latencies(probe_writer) as busy:
                seconds, size = await _move(conn, path, table, pk=False)
            kv_path, kv_table = await _load(conn, f"reassign_kv_{r}", rows, pk=True)
            kv_seconds, kv_size = await _move(conn, kv_path, kv_table, pk=True)
            if r:
                log_m.rounds.append(size / seconds / 1e6)
                kv_m.rounds.append(kv_size / kv_seconds / 1e6)
                before.rounds.append(_p99(quiet))
                during.rounds.append(_p99(busy))
        rebalance = await _rebalance(cluster, conn, probe_writer)
        await probe_writer.aclose()
    finally:
        await conn.aclose()
    note = (f"{rows} benchmark rows in one RF=2 bucket, moved off its leader (leadership moves); no throttle; "
            "3 tablet servers on one machine")
    log_m.note = note
    kv_m.note = note + "; until the new leader answers a lookup (KV rebuilt from snapshot + log)"
    before.note = during.note = "acks=all writes of 100 rows to another RF=2 table, each awaited"
    return [log_m, kv_m, before, during, *rebalance]


@asynccontextmanager
async def _probe_latencies(writer) -> AsyncIterator[list[float]]:
    """The latencies (ms) of the probe writer's awaited writes while the body runs."""
    samples: list[float] = []
    stop = asyncio.Event()
    task = asyncio.create_task(_write_latencies(writer, stop, samples))
    try:
        yield samples
    finally:
        stop.set()
        await task


async def _rebalance(cluster: LocalCluster, conn, probe_writer) -> list[Measurement]:
    """3 -> 4 tablet servers: a rebalance of everything loaded, with the probe writer's p99 before and during."""
    admin = conn.get_admin()
    for i in range(REBALANCE_TABLES):  # more buckets, so the rebalance lasts long enough for a p99
        path = fluss.TablePath("bench", f"rebalance_{i}")
        await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(SCHEMA), bucket_count=4))
        await _until(lambda path=path: _all_in_sync(conn, path), "a full ISR")
        writer = (await conn.get_table(path)).new_append().create_writer()
        for start in range(0, REBALANCE_ROWS, LOAD_BATCH):
            writer.write_arrow_batch(make_batch(LOAD_BATCH, seed=start, start_seq=start))
        await writer.flush()
    async with _probe_latencies(probe_writer) as quiet:
        await asyncio.sleep(3.0)
    await asyncio.to_thread(cluster.add_tablet_server)
    async with _probe_latencies(probe_writer) as busy:
        t0 = time.perf_counter()
        rid = await admin.rebalance()
        moved = len((await admin.list_rebalance(rid)).buckets)

        async def done() -> bool:
            return (await admin.list_rebalance(rid)).status.is_final

        await _until(done, "the rebalance")
        seconds = time.perf_counter() - t0
    status = (await admin.list_rebalance(rid)).status.name
    note = (f"3 -> 4 tablet servers, {moved} bucket moves one at a time ({status}); the probe writer of "
            "log.reassign.write.p99.*")
    return [Measurement("fluss", "rebalance.write.p99.before", "ms", better="lower", rounds=[_p99(quiet)], note=note),
            Measurement("fluss", "rebalance.write.p99.during", "ms", better="lower", rounds=[_p99(busy)], note=note),
            Measurement("fluss", "rebalance.time", "s", better="lower", rounds=[seconds], note=note)]


async def _run(profile: Profile) -> list[Measurement]:
    with LocalCluster(tablet_servers=3, server_config=CONFIG, zookeeper_session_timeout="3s") as cluster:
        try:
            return await _rounds(cluster, profile)
        except Exception as e:  # reported, the run goes on
            return [Measurement("fluss", "log.reassign", "MB/s", status=FAILED, note=f"{type(e).__name__}: {e}")]


def run(profile: Profile) -> list[Measurement]:
    """A 3-tablet-server cluster, ``heavy_rounds + 1`` rounds of one log and one primary-key bucket move."""
    return asyncio.run(_run(profile))


if __name__ == "__main__":
    from bench.model import QUICK

    for m in run(QUICK):
        print(f"{m.key:<36} {m.median if m.median is not None else m.status!s:>10} {m.unit}  {m.rounds}  {m.note}")
