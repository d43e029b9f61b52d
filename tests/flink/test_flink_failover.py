"""A streaming Flink INSERT into a replicated primary-key table survives a SIGKILLed bucket leader.

Own cluster (3 tablet servers, RF=3, min ISR 2, a 2 s ZooKeeper session so a dead server's buckets move
quickly); the Flink job runs in the session's PyFlink JVM with no restart strategy, so the sink itself has to
ride out the failover (retry on transport / NOT_LEADER errors, refresh the leaders, resend the same batches)."""

from __future__ import annotations

import asyncio
import collections
import time

import pytest
import pytest_asyncio

import fluss
from fluss.server.cluster import LocalCluster

CATALOG = "fluss_ha"
CONFIG = {
    "default.replication.factor": "3",
    "log.replica.min-in-sync-replicas-number": "2",
    "log.replica.max-lag-time": "2s",
    "log.replica.fetch.wait-max-time": "100ms",
    "kv.snapshot.interval": "1s",
}


@pytest.fixture(scope="module")
def ha_cluster(tmp_path_factory):
    directory = tmp_path_factory.mktemp("flink-failover-cluster")  # kept by pytest: the logs of a failing run
    with LocalCluster(tablet_servers=3, server_config=CONFIG, zookeeper_session_timeout="2s",
                      directory=directory) as c:
        yield c


@pytest.fixture(autouse=True)
def _restart_stopped_processes(ha_cluster):
    """A failing fault test must not leave a server down for the next test."""
    yield
    ha_cluster.restart_stopped()


@pytest_asyncio.fixture(loop_scope="session")
async def hconn(ha_cluster):
    conn = await fluss.FlussConnection.create(fluss.Config({
        "bootstrap.servers": ha_cluster.bootstrap_servers, "request-timeout": "10s"}))
    yield conn
    await conn.aclose()


async def _wait_until(predicate, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            value = await predicate()
        except fluss.FlussError:  # a bucket without a leader for a moment
            value = None
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out after {timeout_s}s waiting for {what}"
        await asyncio.sleep(0.2)


async def _buckets(conn, path):
    return list((await conn.run(conn.cluster.update_metadata([path]))).tables[0].buckets)


async def _full_isr(conn, path) -> bool:
    return all(sorted(b.isr) == sorted(b.replicas) and b.leader_id >= 0 for b in await _buckets(conn, path))


async def _kv_rows(conn, path, buckets: int) -> dict[int, tuple[int, str]]:
    """Every row of a primary-key table (the KV snapshot of each bucket, read from its leader)."""
    table = await conn.get_table(path)
    out: dict[int, tuple[int, str]] = {}
    for b in range(buckets):
        bucket = fluss.TableBucket(table.get_table_info().table_id, b)
        data = (await table.new_scan().limit(1_000_000).create_bucket_batch_scanner(bucket).to_arrow()).to_pylist()
        for row in data:
            assert row["id"] not in out, f"key {row['id']} in two buckets"
            out[row["id"]] = (row["version"], row["payload"])
    return out


def _job_result(table_result, timeout_s: float) -> None:
    table_result.wait(int(timeout_s * 1000))  # raises when the job fails or does not finish in time


async def _leaders(conn, path) -> dict[int, int]:
    return {b.bucket_id: b.leader_id for b in await _buckets(conn, path)}


async def test_streaming_insert_survives_a_sigkilled_bucket_leader(ha_cluster, hconn, new_stream_env):
    """The job upserts 12 versions of 2000 keys into a primary-key table and appends every generated row to a log
    table; the server leading buckets of both is SIGKILLed while it runs and restarted later. The primary-key table
    ends with each key's last version, the log table with every row exactly once (batches resent after the
    failover carry the same writer id + sequence, which the new leader de-duplicates)."""
    admin = hconn.get_admin()
    await admin.create_database("failover", ignore_if_exists=True)
    pk_path, log_path = fluss.TablePath("failover", "accounts"), fluss.TablePath("failover", "account_events")
    buckets = 3
    env = new_stream_env(ha_cluster.bootstrap_servers, CATALOG, {
        "execution.checkpointing.interval": "1s",
        "restart-strategy.type": "none",  # the job fails if the sink gives up: no restore hides the failover
        "table.exec.sink.require-on-conflict": "false",  # Flink 2.3: insert-only input into a PK sink
        # one source task feeds both sink tasks by key, so each key's versions arrive in order
        "table.exec.sink.keyed-shuffle": "FORCE",
    })
    c = f"{CATALOG}.failover"
    env.execute_sql(f"""CREATE TABLE {c}.accounts (id INT NOT NULL, version INT, payload STRING,
        PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket.num' = '{buckets}')""").wait()
    env.execute_sql(f"""CREATE TABLE {c}.account_events (seq BIGINT, id INT)
        WITH ('bucket.num' = '{buckets}', 'client.writer.bucket.no-key-assigner' = 'ROUND_ROBIN')""").wait()
    for path in (pk_path, log_path):
        await _wait_until(lambda p=path: _full_isr(hconn, p), 30, f"a full ISR of {path}")

    keys, versions, rate = 2000, 12, 2400  # 24000 rows over about 10 s
    rows = keys * versions
    env.execute_sql(f"""CREATE TEMPORARY TABLE gen (seq BIGINT) WITH ('connector' = 'datagen',
        'rows-per-second' = '{rate}', 'fields.seq.kind' = 'sequence', 'fields.seq.start' = '0',
        'fields.seq.end' = '{rows - 1}', 'scan.parallelism' = '1')""").wait()
    result = env.execute_sql(f"""EXECUTE STATEMENT SET BEGIN
        INSERT INTO {c}.accounts SELECT CAST(seq % {keys} AS INT), CAST(seq / {keys} AS INT),
            CONCAT('v', CAST(seq AS STRING)) FROM gen;
        INSERT INTO {c}.account_events SELECT seq, CAST(seq % {keys} AS INT) FROM gen;
        END""")
    job = result.get_job_client()
    finished = asyncio.ensure_future(asyncio.to_thread(_job_result, result, 180))
    try:
        async def written() -> int:
            return sum((await admin.list_offsets(pk_path, list(range(buckets)), fluss.OffsetSpec.latest())).values())

        await _wait_until(written, 60, "the first rows in the primary-key table")
        pk_leaders, log_leaders = await _leaders(hconn, pk_path), await _leaders(hconn, log_path)
        both = sorted(set(pk_leaders.values()) & set(log_leaders.values()) - {-1})
        victim = both[0] if both else pk_leaders[0]  # a leader of both tables when there is one
        victim_bucket = min(b for b, leader in pk_leaders.items() if leader == victim)
        assert not finished.done(), "the job finished before the fault was injected"
        await asyncio.to_thread(ha_cluster.kill_tablet_server, victim)

        async def moved() -> bool:  # every bucket the victim led has a new leader
            now = {p: await _leaders(hconn, p) for p in (pk_path, log_path)}
            return all(now[p][b] not in (-1, victim) for p, old in ((pk_path, pk_leaders), (log_path, log_leaders))
                       for b, leader in old.items() if leader == victim)

        await _wait_until(moved, 30, f"new leaders for the buckets of the killed server {victim}")
        at_failover = (await admin.list_offsets(pk_path, [victim_bucket], fluss.OffsetSpec.latest()))[victim_bucket]

        async def bucket_grows() -> bool:  # the job writes to the moved bucket while its old leader is down
            latest = await admin.list_offsets(pk_path, [victim_bucket], fluss.OffsetSpec.latest())
            return latest[victim_bucket] > at_failover

        await _wait_until(bucket_grows, 60, f"writes to bucket {victim_bucket} on its new leader")
        await asyncio.to_thread(ha_cluster.start_tablet_server, victim)
        await finished  # raises if the job failed
    finally:
        if not finished.done():
            try:
                job.cancel()
            except Exception:  # the job ended meanwhile
                pass
        await asyncio.gather(finished, return_exceptions=True)

    for path in (pk_path, log_path):
        await _wait_until(lambda p=path: _full_isr(hconn, p), 60, f"the ISR of {path} to heal")
    expected = {}
    for seq in range(rows):
        expected[seq % keys] = (seq // keys, f"v{seq}")
    got = await _kv_rows(hconn, pk_path, buckets)
    assert len(got) == keys
    wrong = {k: (got.get(k), v) for k, v in expected.items() if got.get(k) != v}
    assert not wrong, f"{len(wrong)} keys differ (got, expected), e.g. {list(wrong.items())[:5]}"

    scanner = await (await hconn.get_table(log_path)).new_scan().create_record_batch_log_scanner()
    scanner.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in range(buckets)})
    events = (await scanner.to_arrow()).to_pylist()
    counts = collections.Counter(e["seq"] for e in events)
    assert set(counts) == set(range(rows)), f"{rows - len(counts)} rows lost"
    duplicated = sorted(s for s, n in counts.items() if n > 1)
    assert not duplicated, f"{len(duplicated)} rows written twice, e.g. {duplicated[:10]}"
    assert all(e["id"] == e["seq"] % keys for e in events)
