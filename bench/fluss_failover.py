"""Leader failover of a replicated log table: how long writes stop when a bucket leader dies.

Own ``LocalCluster`` (1 coordinator, 3 tablet servers, ZooKeeper session timeout ``SESSION_TIMEOUT``), one log
table of the benchmark rows, 1 bucket, RF=3, ``log.replica.min-in-sync-replicas-number`` 2, written with
``writer.acks=all``. Per round, with a full ISR:

1. a batch is written and acknowledged (the writer knows the current leader);
2. the clock starts, the leader is killed with ``kill -9`` (the PID the cluster started);
3. the next batch is written at once and the clock stops when it is acknowledged: the client's retries end when
   the coordinator, told by ZooKeeper that the leader's session ended, has elected an in-sync follower and the
   client has found it. Detection takes up to the session timeout, so the figure is read next to it;
4. the killed server is started again and the round waits for a full ISR.

``log.failover.rf3`` (s, lower is better); the note splits off the session timeout. No raw limit or peer is
measured for it (a Kafka controller failover would need its own cluster tuning to be comparable).
"""

from __future__ import annotations

import asyncio
import time

import fluss
from bench.data import SCHEMA, make_batch
from bench.model import FAILED, Measurement, Profile
from bench.monitor import PeakRss
from fluss.server.cluster import LocalCluster

SESSION_TIMEOUT = "2s"
CONFIG = {"log.replica.min-in-sync-replicas-number": "2", "log.replica.max-lag-time": "2s",
          "default.replication.factor": "3"}
ROWS_PER_WRITE = 1_000
ISR_TIMEOUT_S = 60.0


async def _buckets(conn: fluss.FlussConnection, path: fluss.TablePath):
    return list((await conn.run(conn.cluster.update_metadata([path]))).tables[0].buckets)


async def _wait_full_isr(conn: fluss.FlussConnection, path: fluss.TablePath) -> int:
    """The leader id, once the bucket has a leader and all 3 replicas in its ISR."""
    deadline = time.monotonic() + ISR_TIMEOUT_S
    while True:
        (b,) = await _buckets(conn, path)
        if b.leader_id >= 0 and sorted(b.isr) == sorted(b.replicas):
            return b.leader_id
        if time.monotonic() > deadline:
            raise TimeoutError(f"no full ISR within {ISR_TIMEOUT_S}s: leader {b.leader_id}, isr {list(b.isr)}")
        await asyncio.sleep(0.1)


async def _rounds(cluster: LocalCluster, rounds: int) -> Measurement:
    m = Measurement("fluss", "log.failover.rf3", "s", better="lower")
    conn = await fluss.FlussConnection.create(fluss.Config({
        "bootstrap.servers": cluster.bootstrap_servers, "writer.acks": "all", "writer.batch-timeout": "1ms",
        "request-timeout": "5s"}))
    try:
        admin = conn.get_admin()
        await admin.create_database("bench", ignore_if_exists=True)
        path = fluss.TablePath("bench", "log_failover")
        await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(SCHEMA), bucket_count=1,
                                                             properties={"table.replication.factor": "3"}))
        writer = (await conn.get_table(path)).new_append().create_writer()
        pids = {f"tablet-server-{sid}": cluster.tablet_server_pid(sid) for sid in cluster.live_tablet_servers()}
        with PeakRss(pids) as rss:
            for r in range(rounds + 1):  # round 0 warms up (first election, connections)
                leader = await _wait_full_isr(conn, path)
                writer.write_arrow_batch(make_batch(ROWS_PER_WRITE, seed=2 * r))
                await writer.flush()
                t0 = time.perf_counter()
                cluster.kill_tablet_server(leader)
                writer.write_arrow_batch(make_batch(ROWS_PER_WRITE, seed=2 * r + 1))
                await writer.flush()
                dt = time.perf_counter() - t0
                if r:
                    m.rounds.append(dt)
                cluster.start_tablet_server(leader)
                rss.add(f"tablet-server-{leader}", cluster.tablet_server_pid(leader))  # the restarted process
        m.rss_peak_mb = rss.peaks_mb()
        await writer.aclose()
    finally:
        await conn.aclose()
    m.note = (f"kill -9 of the bucket leader -> next acks=all write acknowledged; ZooKeeper session timeout "
              f"{SESSION_TIMEOUT} (detection), RF=3, min ISR 2")
    return m


async def _run(profile: Profile) -> list[Measurement]:
    with LocalCluster(tablet_servers=3, server_config=CONFIG, zookeeper_session_timeout=SESSION_TIMEOUT) as cluster:
        try:
            return [await _rounds(cluster, profile.heavy_rounds + 1)]
        except Exception as e:  # reported, the run goes on
            return [Measurement("fluss", "log.failover.rf3", "s", status=FAILED, note=f"{type(e).__name__}: {e}")]


def run(profile: Profile) -> list[Measurement]:
    """A 3-tablet-server cluster, ``heavy_rounds + 1`` leader kills, the cluster stopped."""
    return asyncio.run(_run(profile))
