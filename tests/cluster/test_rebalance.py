"""Rebalance (docs/cluster-operations.md) with real processes: a fourth server joins a loaded 3-server cluster and a
rebalance under an acks=all writer and a reader leaves it balanced with nothing lost or duplicated; progress is
listed to completion; a rebalance is cancelled; a coordinator SIGKILLed mid-rebalance is resumed by the next one;
bad requests are refused. Its own cluster (it grows and kills processes)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections import Counter

import pyarrow as pa
import pytest
import pytest_asyncio
from kazoo.client import KazooClient

import fluss
from fluss import (
    EARLIEST_OFFSET,
    ErrorCode,
    FlussError,
    GoalType,
    RebalanceStatus,
    Schema,
    TableDescriptor,
    TablePath,
)
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.server.cluster import LocalCluster
from fluss.table_report import log_states
from tests.cluster.cluster_ops_helpers import AckedAppender, all_in_sync, buckets_of, wait_until

pytestmark = pytest.mark.asyncio(loop_scope="session")

CONFIG = {"log.replica.min-in-sync-replicas-number": "2", "log.replica.fetch.wait-max-time": "100ms",
          "default.replication.factor": "2", "kv.snapshot.interval": "1s",
          "coordinator.rebalance.max-inflight-tasks": "2"}
TABLES = {"events": 6, "orders": 4, "metrics": 2}  # log, primary key, log


@pytest.fixture(scope="module")
def rb_cluster():
    with LocalCluster(tablet_servers=3, server_config=CONFIG, zookeeper_session_timeout="4s") as c:
        yield c


@pytest_asyncio.fixture(loop_scope="session")
async def rconn(rb_cluster):
    conn = await fluss.FlussConnection.create(fluss.Config({
        "bootstrap.servers": rb_cluster.bootstrap_servers, "writer.batch-timeout": "5ms", "request-timeout": "10s"}))
    await conn.get_admin().create_database("rb", ignore_if_exists=True)
    yield conn
    await conn.aclose()


async def _cluster_layout(conn) -> tuple[Counter, Counter]:
    """Replica and leader counts per server over every table of database ``rb``."""
    replicas, leaders = Counter(), Counter()
    for name in await conn.get_admin().list_tables("rb"):
        for b in await buckets_of(conn, TablePath("rb", name)):
            replicas.update(b.replicas)
            leaders[b.leader_id] += 1
    return replicas, leaders


def _spread(counts: Counter, servers) -> int:
    return max(counts.get(s, 0) for s in servers) - min(counts.get(s, 0) for s in servers)


async def _finished(admin, rebalance_id):
    p = await admin.list_rebalance(rebalance_id)
    return p if p is not None and p.status.is_final and not any(
        b.status == RebalanceStatus.REBALANCING for b in p.buckets) and not await admin.list_reassignments() else None


async def test_a_fourth_server_gets_its_share_under_a_writer_and_a_reader(rb_cluster, rconn):
    admin = rconn.get_admin()
    pk = Schema(pa.schema([("k", pa.int64()), ("v", pa.int64())]), primary_keys=["k"])
    for name, n in TABLES.items():
        schema = pk if name == "orders" else Schema(pa.schema([("seq", pa.int64())]))
        await admin.create_table(TablePath("rb", name), TableDescriptor(schema, bucket_count=n))
    for name in TABLES:
        await wait_until(lambda name=name: all_in_sync(rconn, TablePath("rb", name)), 30, f"{name} in sync")
    upserts = (await rconn.get_table(TablePath("rb", "orders"))).new_upsert().create_writer()
    for k in range(200):
        upserts.upsert({"k": k, "v": k})
    await upserts.flush()
    events = await rconn.get_table(TablePath("rb", "events"))
    appender = AckedAppender(events).start()
    reader = await events.new_scan().create_log_scanner()
    reader.subscribe_buckets({b: EARLIEST_OFFSET for b in range(TABLES["events"])})
    seen: list[int] = []
    reading = True

    async def read_loop() -> None:
        while reading:
            seen.extend(r.row["seq"] for recs in (await reader.poll(200)).values() for r in recs)

    read_task = asyncio.create_task(read_loop())
    try:
        await asyncio.sleep(1.0)
        new_id = await asyncio.to_thread(rb_cluster.add_tablet_server)
        assert (await _cluster_layout(rconn))[0][new_id] == 0
        rid = await admin.rebalance([GoalType.REPLICA_DISTRIBUTION, GoalType.LEADER_DISTRIBUTION])
        assert rid.startswith("rebalance-")
        first = await admin.list_rebalance()
        assert first.rebalance_id == rid and first.buckets and first.goals == [GoalType.REPLICA_DISTRIBUTION,
                                                                                GoalType.LEADER_DISTRIBUTION]
        assert any(new_id in b.new_replicas for b in first.buckets)
        observed = {first.status}
        progress = [first.progress]

        async def done():
            p = await admin.list_rebalance(rid)
            observed.add(p.status)
            progress.append(p.progress)
            return await _finished(admin, rid)

        final = await wait_until(done, 60, "the rebalance to complete")
        assert final.status == RebalanceStatus.COMPLETED and final.progress == 1.0
        assert all(b.status == RebalanceStatus.COMPLETED for b in final.buckets)
        assert RebalanceStatus.REBALANCING in observed and min(progress) < 1.0  # progress was listed on the way
        assert progress == sorted(progress)
        for name in TABLES:
            await wait_until(lambda name=name: all_in_sync(rconn, TablePath("rb", name)), 30, f"{name} in sync")
        replicas, leaders = await _cluster_layout(rconn)
        servers = [0, 1, 2, new_id]
        assert _spread(replicas, servers) <= 1, replicas
        assert _spread(leaders, servers) <= 1, leaders
        await asyncio.sleep(0.5)  # writes go on against the new placement
    finally:
        await appender.stop()
        reading = False
        await asyncio.wait_for(read_task, 30)
    seqs = await appender.check(TABLES["events"], min_acked=500)
    await wait_until(lambda: _caught_up(reader, seen, len(seqs)), 30, "the reader to catch up")
    assert len(seen) == len(set(seen)) and set(seen) == set(seqs)  # the reader saw each row once
    lookuper = (await rconn.get_table(TablePath("rb", "orders"))).new_lookup().create_lookuper()
    for k in range(0, 200, 7):
        assert await lookuper.lookup({"k": k}) == {"k": k, "v": k}
    # balanced: another rebalance (from the CLI, waiting) has nothing to move
    again = await asyncio.to_thread(_fluss, "start", "--wait", "-b", rb_cluster.bootstrap_servers)
    assert again.returncode == 0, again.stderr
    assert "COMPLETED 100.00% (0 buckets: none)" in again.stdout, again.stdout
    assert (await admin.list_rebalance()).buckets == []


async def _caught_up(reader, seen, n) -> bool:
    seen.extend(r.row["seq"] for recs in (await reader.poll(200)).values() for r in recs)
    return len(seen) >= n


async def _pile_up(conn, name: str, servers: list[int], buckets: int = 8) -> TablePath:
    """A table whose buckets all sit on ``servers``: a rebalance has to move many of them."""
    admin = conn.get_admin()
    path = TablePath("rb", name)
    await admin.create_table(path, TableDescriptor(Schema(pa.schema([("seq", pa.int64())])), bucket_count=buckets))
    await wait_until(lambda: all_in_sync(conn, path), 30, f"{name} in sync")
    writer = (await conn.get_table(path)).new_append().create_writer()
    writer.write_arrow(pa.table({"seq": pa.array(range(4000), pa.int64())}))
    await writer.flush()
    await admin.alter_table_assignment(path, {b: list(servers) for b in range(buckets)})
    await wait_until(lambda: _no_moves(admin), 60, "the pile-up")
    return path


async def _no_moves(admin) -> bool:
    return not await admin.list_reassignments()


def _fluss(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fluss.cli", "cluster", "rebalance", *args], capture_output=True,
                          text=True, timeout=60)


async def test_cancel_stops_what_has_not_started_and_requests_are_checked(rb_cluster, rconn):
    admin = rconn.get_admin()
    await _pile_up(rconn, "piled", [0, 1])
    b = ["-b", rb_cluster.bootstrap_servers]
    paused = fluss.AlterConfig("coordinator.rebalance.max-inflight-tasks", "0")  # dynamic, as in Fluss
    await admin.alter_cluster_configs([paused])
    rid = await admin.rebalance([GoalType.REPLICA_DISTRIBUTION])
    await asyncio.sleep(0.5)
    p = await admin.list_rebalance(rid)
    assert p.status == RebalanceStatus.NOT_STARTED and len(p.buckets) >= 4
    assert {b.status for b in p.buckets} == {RebalanceStatus.NOT_STARTED}
    with pytest.raises(FlussError) as e:  # one rebalance at a time
        await admin.rebalance()
    assert e.value.error_code == ErrorCode.REBALANCE_FAILURE_EXCEPTION and rid in str(e.value)
    with pytest.raises(FlussError) as e:
        await admin.cancel_rebalance("rebalance-nope")
    assert e.value.error_code == ErrorCode.NO_REBALANCE_IN_PROGRESS_EXCEPTION and rid in str(e.value)
    await admin.alter_cluster_configs([fluss.AlterConfig(paused.key, op_type=fluss.AlterConfigOpType.DELETE)])

    async def started() -> bool:  # back to server.yaml's 2: the moves start without another call
        return any(b.status != RebalanceStatus.NOT_STARTED for b in (await admin.list_rebalance(rid)).buckets)

    await wait_until(started, 20, "the rebalance to resume")
    await admin.cancel_rebalance(rid)
    listed = await asyncio.to_thread(_fluss, "list", "--json", *b)
    assert json.loads(listed.stdout)["rebalance_id"] == rid and json.loads(listed.stdout)["status"] == "CANCELED"
    p = await admin.list_rebalance(rid)
    assert p.status == RebalanceStatus.CANCELED
    statuses = Counter(b.status for b in p.buckets)
    assert statuses[RebalanceStatus.CANCELED] >= 1 and RebalanceStatus.NOT_STARTED not in statuses, statuses
    final = await wait_until(lambda: _finished(admin, rid), 60, "the moves in flight to finish")
    assert final.status == RebalanceStatus.CANCELED
    assert {b.status for b in final.buckets} <= {RebalanceStatus.CANCELED, RebalanceStatus.COMPLETED}
    with pytest.raises(FlussError) as e:
        await admin.cancel_rebalance()
    assert e.value.error_code == ErrorCode.NO_REBALANCE_IN_PROGRESS_EXCEPTION and "CANCELED" in str(e.value)
    cancelled = await asyncio.to_thread(_fluss, "cancel", *b)
    assert cancelled.returncode == 2 and "already CANCELED" in cancelled.stderr
    assert await admin.list_rebalance("rebalance-unknown") is None
    # a hostile client: unknown and repeated goals, an id that is not one
    for goals, message in (([7], "Unknown rebalance goal 7"), ([0, 0], "more than once"),
                           (list(range(17)), "at most 16 goals")):
        with pytest.raises(FlussError, match=message):
            await rconn.run(rconn.cluster.admin_call("Rebalance", pb.RebalanceRequest(goals=goals)))
    with pytest.raises(FlussError, match="Invalid rebalance id"):
        await admin.list_rebalance("x" * 200)
    with pytest.raises(FlussError, match="Invalid rebalance id"):
        await admin.cancel_rebalance("bad\nid")
    refused = await asyncio.to_thread(_fluss, "start", "--goals", "fastest", *b)
    assert refused.returncode != 0 and "unknown rebalance goal 'fastest'" in refused.stderr


async def test_a_new_coordinator_resumes_a_rebalance(rb_cluster, rconn):
    admin = rconn.get_admin()
    piled = await _pile_up(rconn, "piled_again", [1, 2])
    info = await admin.get_table_info(piled)
    local_sizes = {lg.bucket: lg.local_size for lg in await log_states(rconn, info)}  # nothing writes it any more
    assert sum(local_sizes.values()) > 0
    orders = await log_states(rconn, await admin.get_table_info(TablePath("rb", "orders")))
    assert any(lg.kv_size > 0 for lg in orders)  # a primary-key bucket's RocksDB is counted too
    newest = max(n.id for n in await admin.get_server_nodes() if n.server_type == "TabletServer")
    pid = rb_cluster.tablet_server_pid(newest)
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)  # the moves onto the newest server cannot finish before the coordinator dies
    try:
        rid = await admin.rebalance([GoalType.REPLICA_DISTRIBUTION])
        zk = KazooClient(hosts=rb_cluster.zookeeper_address)
        zk.start()
        try:
            data, _ = zk.get("/fluss/rebalance")
        finally:
            zk.stop()
            zk.close()
        stored = json.loads(data)
        assert stored["rebalance_id"] == rid
        # the plan was made with each bucket's size as its leader reported it (the stopped server did not answer:
        # the rebalance went on without the sizes of the buckets it leads)
        planned = [b for b in stored["buckets"] if b["table_id"] == info.table_id]
        assert planned and all(b["size"] == local_sizes[b["bucket"]] for b in planned), (planned, local_sizes)
        assert stored["status"] in (RebalanceStatus.NOT_STARTED, RebalanceStatus.REBALANCING), stored["status"]
        await asyncio.to_thread(rb_cluster.kill_coordinator)
    finally:
        os.kill(pid, signal.SIGCONT)
    await asyncio.to_thread(rb_cluster.start_coordinator)
    final = await wait_until(lambda: _finished(admin, rid), 60, "the new coordinator to finish the rebalance")
    assert final.status == RebalanceStatus.COMPLETED, [(b.bucket_id, b.status) for b in final.buckets]
    replicas, _ = await _cluster_layout(rconn)
    assert _spread(replicas, sorted(replicas)) <= 1, replicas
