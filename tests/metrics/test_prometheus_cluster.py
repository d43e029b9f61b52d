"""A real Prometheus scrapes every server of a LocalCluster; its HTTP API is checked against known traffic.

* The rows appended equal the integral of ``messagesInPerSecond`` over time (within 5%) and the counter behind it.
* Coordinator and tablet server gauges match what the test created (tables, buckets, leaders, replicas).
* Killing a follower raises ``underReplicated`` and ``isrShrinks``; restarting it brings them back.
"""

from __future__ import annotations

import asyncio
import time
import uuid

import pyarrow as pa
import pytest
import pytest_asyncio
from prometheus_server import PrometheusServer

import fluss
from fluss.server.cluster import LocalCluster

WINDOW_S = 5  # metrics.meter.window: short, so rates settle quickly
SCRAPE_S = 1
SCHEMA = pa.schema([("id", pa.int64()), ("payload", pa.string())])


@pytest.fixture(scope="module")
def metrics_cluster():
    config = {"metrics.meter.window": f"{WINDOW_S}s", "log.replica.max-lag-time": "2s", "kv.snapshot.interval": "1s",
              "log.segment.file-size": "256kb"}
    with LocalCluster(tablet_servers=3, metrics=True, server_config=config) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def prometheus(metrics_cluster, tmp_path_factory):
    with PrometheusServer(tmp_path_factory.mktemp("prometheus"), metrics_cluster.metrics_endpoints(),
                          SCRAPE_S) as server:
        expected = {name: 1.0 for name in metrics_cluster.metrics_endpoints()}
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and server.targets_up() != expected:
            time.sleep(0.5)
        assert server.targets_up() == expected and len(expected) == 4
        yield server


@pytest_asyncio.fixture(loop_scope="session")
async def mconn(metrics_cluster):
    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": metrics_cluster.bootstrap_servers}))
    yield conn
    await conn.aclose()


async def _create(conn, name: str, buckets: int, replication: int) -> fluss.TablePath:
    path = fluss.TablePath("fluss", name)
    await conn.get_admin().create_table(path, fluss.TableDescriptor(
        fluss.Schema(SCHEMA), bucket_count=buckets, properties={"table.replication.factor": str(replication)}))
    return path


def _batch(start: int, n: int) -> pa.RecordBatch:
    return pa.record_batch([pa.array(range(start, start + n), pa.int64()), pa.array(["x" * 20] * n)], schema=SCHEMA)


async def test_rows_appended_equal_the_integral_of_the_rate(metrics_cluster, prometheus, mconn):
    path = await _create(mconn, "integral", buckets=3, replication=1)
    writer = (await mconn.get_table(path)).new_append().create_writer()
    start = time.time() - 2 * SCRAPE_S
    total = 0
    while time.time() - start < 12:  # ~10 s of traffic, in uneven batches
        n = 2000 + 700 * (total % 5)
        writer.write_arrow_batch(_batch(total, n))
        await writer.flush()
        total += n
        await asyncio.sleep(0.2)
    end = time.time() + WINDOW_S + 3 * SCRAPE_S  # by then the rates are back to 0 and scraped so
    await asyncio.sleep(end - time.time())
    prometheus.wait_until_scraped(end)
    sel = 'table="integral"'
    counter = prometheus.query(f"sum(fluss_tabletserver_table_messagesIn_total{{{sel}}})", at=end)
    assert float(counter[0]["value"][1]) == total
    integral = prometheus.integral(f"fluss_tabletserver_table_messagesInPerSecond{{{sel}}}", start, end)
    assert integral == pytest.approx(total, rel=0.05), f"integral {integral} of the rate vs {total} rows appended"
    server_integral = prometheus.integral("fluss_tabletserver_messagesInPerSecond", start, end)
    assert server_integral == pytest.approx(total, rel=0.05), f"server-level integral {server_integral} vs {total}"
    # every flush was at least one acknowledged ProduceLog request to a leader
    produce = prometheus.scalar('sum(fluss_tabletserver_request_requests_total{request="produceLog"})')
    assert produce >= 20
    bucket_ends = prometheus.scalar(f"sum(fluss_tabletserver_table_bucket_log_endOffset{{{sel}}})")
    assert bucket_ends == total
    latency_count = prometheus.scalar('sum(fluss_tabletserver_request_totalTimeMs_count{request="produceLog"})')
    assert latency_count == produce


async def test_cluster_gauges_match_what_exists(metrics_cluster, prometheus, mconn):
    await _create(mconn, "gauges", buckets=5, replication=3)
    expected_tables = len(await mconn.get_admin().list_tables("fluss"))
    expected_buckets = 0
    for name in await mconn.get_admin().list_tables("fluss"):
        expected_buckets += (await mconn.get_admin().get_table_info(fluss.TablePath("fluss", name))).num_buckets
    prometheus.wait_for("sum(fluss_coordinator_tableCount)", lambda v: v == expected_tables)
    prometheus.wait_for("sum(fluss_coordinator_bucketCount)", lambda v: v == expected_buckets)
    assert prometheus.scalar("sum(fluss_coordinator_activeCoordinatorCount)") == 1
    assert prometheus.scalar("sum(fluss_coordinator_activeTabletServerCount)") == 3
    assert prometheus.scalar("sum(fluss_coordinator_offlineBucketCount)") == 0
    prometheus.wait_for("sum(fluss_tabletserver_leaderCount)", lambda v: v == expected_buckets)
    prometheus.wait_for('sum(fluss_tabletserver_replicaCount)', lambda v: v >= expected_buckets + 2 * 5)
    up = prometheus.query('fluss_tabletserver_zookeeper_sessionState{state="connected"}')
    assert len(up) == 3 and all(r["value"][1] == "1" for r in up)


async def test_killing_a_follower_raises_under_replicated(metrics_cluster, prometheus, mconn):
    path = await _create(mconn, "replicated", buckets=3, replication=3)
    writer = (await mconn.get_table(path)).new_append().create_writer()
    writer.write_arrow_batch(_batch(0, 1000))
    await writer.flush()
    prometheus.wait_for("sum(fluss_tabletserver_underReplicated)", lambda v: v == 0)
    shrinks_before = prometheus.scalar("sum(fluss_tabletserver_isrShrinks_total)") or 0
    admin = mconn.get_admin()
    paths = [fluss.TablePath("fluss", name) for name in await admin.list_tables("fluss")]
    resp = await mconn.run(mconn.cluster.update_metadata(paths))
    info = await admin.get_table_info(path)
    leaders = {b.leader_id for t in resp.tables if t.table_info.table_id == info.table_id for b in t.buckets}
    victim = next(s for s in metrics_cluster.live_tablet_servers() if s not in leaders) \
        if len(leaders) < 3 else sorted(leaders)[0]
    # buckets of the single-replica tables on the victim have no other replica: they go offline with it
    alone = sum(1 for t in resp.tables for b in t.buckets if list(b.replicas) == [victim])
    metrics_cluster.kill_tablet_server(victim)
    try:
        prometheus.wait_for("sum(fluss_tabletserver_underReplicated)", lambda v: v >= 1, timeout_s=30)
        prometheus.wait_for("sum(fluss_tabletserver_isrShrinks_total)", lambda v: v > shrinks_before, timeout_s=30)
        prometheus.wait_for("sum(fluss_coordinator_activeTabletServerCount)", lambda v: v == 2, timeout_s=30)
        prometheus.wait_for("sum(fluss_coordinator_offlineBucketCount)", lambda v: v == alone, timeout_s=10)
        assert prometheus.targets_up()[f"tablet-server-{victim}"] == 0
    finally:
        metrics_cluster.start_tablet_server(victim)
    prometheus.wait_for("sum(fluss_tabletserver_underReplicated)", lambda v: v == 0, timeout_s=60)
    prometheus.wait_for("sum(fluss_coordinator_offlineBucketCount)", lambda v: v == 0, timeout_s=30)
    assert prometheus.scalar("sum(fluss_tabletserver_isrExpands_total)") >= 1


async def test_kv_storage_and_request_metrics_of_a_primary_key_table(metrics_cluster, prometheus, mconn):
    path = fluss.TablePath("fluss", "kv")
    await mconn.get_admin().create_table(path, fluss.TableDescriptor(
        fluss.Schema(SCHEMA, primary_keys=["id"]), bucket_count=2, properties={"table.replication.factor": "1"}))
    table = await mconn.get_table(path)
    upsert = table.new_upsert().create_writer()
    for start in range(0, 20_000, 5000):  # a flush each: at least one PutKv request per batch, however they group
        upsert.upsert_arrow_batch(_batch(start, 5000))
        await upsert.flush()
    lookuper = table.new_lookup().create_lookuper()
    assert len([r for r in await asyncio.gather(*(lookuper.lookup({"id": i}) for i in range(50))) if r]) == 50
    sel = 'table="kv"'
    prometheus.wait_for(f"sum(fluss_tabletserver_table_messagesIn_total{{{sel}}})", lambda v: v == 20_000)
    prometheus.wait_for(f"sum(fluss_tabletserver_table_remoteKvCopyBytes_total{{{sel}}})", lambda v: v > 0)
    prometheus.wait_for("sum(fluss_tabletserver_kvSnapshotDurationMs_count)", lambda v: v >= 2)
    assert prometheus.scalar("sum(fluss_tabletserver_kvSnapshotSize_sum)") > 0
    assert prometheus.scalar("sum(fluss_tabletserver_kvFlush_total)") >= 1
    assert prometheus.scalar("sum(fluss_tabletserver_kvFlushLatencyMs_count)") >= 1
    prometheus.wait_for(f"sum(fluss_tabletserver_table_bucket_logicalStorage_kvSize{{{sel}}})", lambda v: v > 0)
    assert prometheus.scalar(f"count(fluss_tabletserver_table_bucket_logicalStorage_kvSize{{{sel}}})") == 2
    assert prometheus.scalar("sum(fluss_tabletserver_logicalStorage_kvSize)") > 0
    assert prometheus.scalar("sum(fluss_tabletserver_writerIdCount)") >= 1
    put = prometheus.scalar(f"sum(fluss_tabletserver_table_totalPutKvRequests_total{{{sel}}})")
    assert put >= 4
    # a write that reaches a new leader before its KV state is open fails (and is retried by the writer)
    assert prometheus.scalar(f"sum(fluss_tabletserver_table_failedPutKvRequests_total{{{sel}}})") < put
    prometheus.wait_for(f"sum(fluss_tabletserver_table_totalLookupRequests_total{{{sel}}})", lambda v: v >= 1)
    assert prometheus.scalar('sum(fluss_tabletserver_request_requests_total{request="lookup"})') >= 1
    # incompressible rows roll 256 kb segments: each roll flushes the sealed segment
    segmented = await _create(mconn, "segmented", buckets=1, replication=1)
    writer = (await mconn.get_table(segmented)).new_append().create_writer()
    for start in range(0, 20_000, 5000):
        writer.write_arrow_batch(pa.record_batch([pa.array(range(start, start + 5000), pa.int64()),
                                                  pa.array([uuid.uuid4().hex for _ in range(5000)])], schema=SCHEMA))
        await writer.flush()
    prometheus.wait_for("sum(fluss_tabletserver_logFlush_total)", lambda v: v >= 1)
    assert prometheus.scalar("sum(fluss_tabletserver_logFlushLatencyMs_count)") >= 1
    assert prometheus.scalar("sum(fluss_tabletserver_table_bucket_log_numSegments)") > \
        prometheus.scalar("count(fluss_tabletserver_table_bucket_log_numSegments)")
    await lookuper.aclose()
    await upsert.aclose()
    await mconn.get_admin().drop_table(path)  # its series go with its last replica
    prometheus.wait_for(f"count(fluss_tabletserver_table_messagesIn_total{{{sel}}}) or vector(0)",
                        lambda v: v == 0, timeout_s=30)
