"""Online reassignment of buckets' replicas (docs/cluster-operations.md) with real processes: a log bucket and a
primary-key bucket move (leadership included) under running acks=all writers; a coordinator is killed mid-move and
the next one finishes it; bad requests are refused naming the problem. Its own cluster (it kills processes)."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import time
from pathlib import Path

import pyarrow as pa
import pytest
import pytest_asyncio
from kazoo.client import KazooClient

import fluss
from fluss import EARLIEST_OFFSET, ErrorCode, FlussError, Schema, TableDescriptor, TablePath
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.server.cluster import LocalCluster
from tests.cluster.cluster_ops_helpers import (
    AckedAppender,
    all_in_sync,
    leaders,
    placement,
    restarting_stopped,
    wait_until,
)

pytestmark = pytest.mark.asyncio(loop_scope="session")

THROTTLE = 1024 * 1024
CONFIG = {"log.replica.min-in-sync-replicas-number": "2", "log.replica.fetch.wait-max-time": "100ms",
          "default.replication.factor": "2", "kv.snapshot.interval": "1s",
          "log.replica.catch-up-throttle": str(THROTTLE)}


@pytest.fixture(scope="module")
def move_cluster():
    with LocalCluster(tablet_servers=3, server_config=CONFIG, zookeeper_session_timeout="3s") as c:
        yield c


_restart_stopped_processes = restarting_stopped("move_cluster")


@pytest_asyncio.fixture(loop_scope="session")
async def mconn(move_cluster):
    conn = await fluss.FlussConnection.create(fluss.Config({
        "bootstrap.servers": move_cluster.bootstrap_servers, "writer.batch-timeout": "5ms",
        "request-timeout": "10s"}))
    await conn.get_admin().create_database("moves", ignore_if_exists=True)
    yield conn
    await conn.aclose()


async def _bucket(conn, path, bucket: int = 0):
    meta = await conn.run(conn.cluster.update_metadata([path]))
    return next(b for b in meta.tables[0].buckets if b.bucket_id == bucket)


async def _moved(conn, path, target: list[int]) -> bool:
    if await conn.get_admin().list_reassignments():
        return False
    b = await _bucket(conn, path)
    return list(b.replicas) == target and sorted(b.isr) == sorted(target) and b.leader_id in target


def _replica_dir(cluster: LocalCluster, sid: int, table: str, table_id: int) -> Path:
    return cluster.dir / f"tablet-server-{sid}" / "data" / "moves" / f"{table}-{table_id}" / "bucket-0"


def _plan(replicas: list[int], leader: int) -> tuple[list[int], int]:
    """A target that replaces the leader by the server holding no replica: leadership must move."""
    newcomer = next(s for s in range(3) if s not in replicas)
    other = next(r for r in replicas if r != leader)
    return [newcomer, other], newcomer


async def test_log_bucket_moves_under_an_acks_all_writer(move_cluster, mconn):
    admin = mconn.get_admin()
    path = TablePath("moves", "log")
    await admin.create_table(path, TableDescriptor(Schema(pa.schema([("seq", pa.int64())])), bucket_count=1))
    await wait_until(lambda: all_in_sync(mconn, path), 20, "a full ISR")
    table = await mconn.get_table(path)
    appender = AckedAppender(table, batch=200).start()
    try:
        await asyncio.sleep(1.0)
        before = await _bucket(mconn, path)
        target, newcomer = _plan(list(before.replicas), before.leader_id)
        old_dir = _replica_dir(move_cluster, before.leader_id, "log", table.get_table_info().table_id)
        assert old_dir.is_dir()
        await admin.alter_table_assignment(path, {0: target})
        await wait_until(lambda: _moved(mconn, path, target), 60, f"bucket 0 to move to {target}")
        assert (await _bucket(mconn, path)).leader_id == newcomer
        await asyncio.sleep(1.0)  # writes go on against the new leader
    finally:
        await appender.stop()
    await appender.check(buckets=1, min_acked=2001)
    await wait_until(lambda: _gone(old_dir), 20, "the old replica's files to go")
    assert _replica_dir(move_cluster, newcomer, "log", table.get_table_info().table_id).is_dir()


async def _gone(path: Path) -> bool:
    return not path.exists()


async def test_primary_key_bucket_moves_and_serves_lookups(move_cluster, mconn):
    admin = mconn.get_admin()
    path = TablePath("moves", "pk")
    schema = Schema(pa.schema([("k", pa.int64()), ("v", pa.int64())]), primary_keys=["k"])
    await admin.create_table(path, TableDescriptor(schema, bucket_count=1))
    await wait_until(lambda: all_in_sync(mconn, path), 20, "a full ISR")
    table = await mconn.get_table(path)
    writer = table.new_upsert().create_writer()
    keys = 300
    acked_round = -1
    failures: list[str] = []
    stop = asyncio.Event()

    async def write_loop() -> None:
        nonlocal acked_round
        version = 0
        while not stop.is_set():
            handles = [writer.upsert({"k": k, "v": version}) for k in range(keys)]
            try:
                for h in handles:
                    await h.wait()
                acked_round = version
            except FlussError as e:
                failures.append(str(e))
            version += 1

    loop = asyncio.create_task(write_loop())
    try:
        await asyncio.sleep(2.0)  # a KV snapshot (kv.snapshot.interval 1s) and log after it
        before = await _bucket(mconn, path)
        target, newcomer = _plan(list(before.replicas), before.leader_id)
        await admin.alter_table_assignment(path, {0: target})
        await wait_until(lambda: _moved(mconn, path, target), 60, f"bucket 0 to move to {target}")
        assert (await _bucket(mconn, path)).leader_id == newcomer
        await asyncio.sleep(1.0)
    finally:
        stop.set()
        await asyncio.wait_for(loop, 60)
    await asyncio.wait_for(writer.flush(), 60)
    assert not failures, failures[:3]
    assert acked_round >= 3
    lookuper = table.new_lookup().create_lookuper()
    for k in range(keys):  # every round was acknowledged whole: each key holds the last one, on the new leader
        assert await lookuper.lookup({"k": k}) == {"k": k, "v": acked_round}, k


async def test_a_new_coordinator_finishes_a_move(move_cluster, mconn):
    admin = mconn.get_admin()
    path = TablePath("moves", "failover")
    await admin.create_table(path, TableDescriptor(Schema(pa.schema([("seq", pa.int64())])), bucket_count=1))
    await wait_until(lambda: all_in_sync(mconn, path), 20, "a full ISR")
    table = await mconn.get_table(path)
    writer = table.new_append().create_writer()
    writer.write_arrow(pa.table({"seq": pa.array(range(5000), pa.int64())}))
    await writer.flush()
    before = await _bucket(mconn, path)
    target, newcomer = _plan(list(before.replicas), before.leader_id)
    # the newcomer is paused (still registered) so the move cannot finish before the coordinator dies
    pid = move_cluster.tablet_server_pid(newcomer)
    os.kill(pid, signal.SIGSTOP)
    try:
        await admin.alter_table_assignment(path, {0: target})
        zk = KazooClient(hosts=move_cluster.zookeeper_address)
        zk.start()
        try:
            assert zk.get_children("/fluss/reassignments"), "the move is recorded in ZooKeeper"
        finally:
            zk.stop()
            zk.close()
        await asyncio.to_thread(move_cluster.kill_coordinator)
    finally:
        os.kill(pid, signal.SIGCONT)
    await asyncio.to_thread(move_cluster.start_coordinator)
    await wait_until(lambda: _moved(mconn, path, target), 60, "the new coordinator to finish the move")
    writer.write_arrow(pa.table({"seq": pa.array(range(5000, 5100), pa.int64())}))
    await writer.flush()
    scanner = await table.new_scan().create_record_batch_log_scanner()
    scanner.subscribe_buckets({0: EARLIEST_OFFSET})
    assert sorted((await scanner.to_arrow()).column("seq").to_pylist()) == list(range(5100))


async def test_catching_up_is_throttled(mconn):
    """4 MiB of incompressible rows reach the new replica at log.replica.catch-up-throttle (1 MiB/s, one second's
    worth at once): the move takes two to three seconds, where unthrottled it takes about a quarter of one."""
    admin = mconn.get_admin()
    path = TablePath("moves", "throttled")
    await admin.create_table(path, TableDescriptor(Schema(pa.schema([("b", pa.binary())])), bucket_count=1))
    await wait_until(lambda: all_in_sync(mconn, path), 20, "a full ISR")
    writer = (await mconn.get_table(path)).new_append().create_writer()
    for _ in range(4):
        writer.write_arrow(pa.table({"b": pa.array([os.urandom(1024) for _ in range(1024)], pa.binary())}))
    await writer.flush()
    before = await _bucket(mconn, path)
    target, _ = _plan(list(before.replicas), before.leader_id)
    t0 = time.monotonic()
    await admin.alter_table_assignment(path, {0: target})
    await wait_until(lambda: _moved(mconn, path, target), 60, f"bucket 0 to move to {target}")
    elapsed = time.monotonic() - t0
    assert elapsed >= 2.0, f"4 MiB moved in {elapsed:.2f}s: faster than the 1 MiB/s throttle allows"


async def test_a_move_is_cancelled_by_giving_back_its_original_replicas(move_cluster, mconn):
    """4 MiB at the 1 MiB/s throttle: the move is still copying when it is cancelled; the bucket goes back to its
    original replicas (leader unchanged), the new replica's files are deleted, and nothing written is lost."""
    admin = mconn.get_admin()
    path = TablePath("moves", "cancelled")
    await admin.create_table(path, TableDescriptor(Schema(pa.schema([("b", pa.binary())])), bucket_count=1))
    await wait_until(lambda: all_in_sync(mconn, path), 20, "a full ISR")
    table = await mconn.get_table(path)
    writer = table.new_append().create_writer()
    for _ in range(4):
        writer.write_arrow(pa.table({"b": pa.array([os.urandom(1024) for _ in range(1024)], pa.binary())}))
    await writer.flush()
    before = await _bucket(mconn, path)
    original, leader = list(before.replicas), before.leader_id
    target, newcomer = _plan(original, leader)
    await admin.alter_table_assignment(path, {0: target})
    assert [r.target_replicas for r in await admin.list_reassignments()] == [target]
    with pytest.raises(FlussError, match=re.escape(f"cancel it by giving its original replicas {original}")):
        await admin.alter_table_assignment(path, {0: list(reversed(original))})
    await admin.alter_table_assignment(path, {0: original})  # the cancel
    await wait_until(lambda: _moved(mconn, path, original), 30, "the bucket to go back")
    assert (await _bucket(mconn, path)).leader_id == leader
    new_dir = _replica_dir(move_cluster, newcomer, "cancelled", table.get_table_info().table_id)
    await wait_until(lambda: _gone(new_dir), 20, "the cancelled replica's files to go")
    scanner = await table.new_scan().create_record_batch_log_scanner()
    scanner.subscribe_buckets({0: EARLIEST_OFFSET})
    assert (await scanner.to_arrow()).num_rows == 4096


@pytest.mark.parametrize("targets, partition, message, code", [
    ({0: [0, 0]}, None, "listed more than once", ErrorCode.INVALID_REPLICATION_FACTOR),
    ({0: [0, 42]}, None, "[42] are not live tablet servers", ErrorCode.SERVER_NOT_EXIST_EXCEPTION),
    ({0: []}, None, "the new replica set is empty", ErrorCode.INVALID_REPLICATION_FACTOR),
    ({5: [0, 1]}, None, "Bucket 5 does not exist", ErrorCode.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION),
    ({}, None, "No bucket to reassign", ErrorCode.INVALID_REPLICATION_FACTOR),
    ({0: [0, 1]}, "p1", "is not partitioned", ErrorCode.PARTITION_NOT_EXISTS),
])
async def test_bad_requests_are_refused(mconn, targets, partition, message, code):
    admin = mconn.get_admin()
    path = TablePath("moves", "bad")
    await admin.create_table(path, TableDescriptor(Schema(pa.schema([("a", pa.int32())])), bucket_count=2),
                             ignore_if_exists=True)
    with pytest.raises(FlussError) as e:
        await admin.alter_table_assignment(path, targets, partition_name=partition)
    assert message in e.value.message and e.value.error_code == code
    with pytest.raises(FlussError, match="does not exist"):
        await admin.alter_table_assignment(TablePath("moves", "nope"), {0: [0]})


# ---------------------------------------------------------------- server tags (run last: they grow the cluster)


async def test_temporary_offline_moves_leadership_off_and_keeps_replicas(mconn):
    admin = mconn.get_admin()
    path = TablePath("moves", "resting")
    await admin.create_table(path, TableDescriptor(Schema(pa.schema([("v", pa.int64())])), bucket_count=6))
    await wait_until(lambda: all_in_sync(mconn, path), 20, "a full ISR")
    before = await placement(mconn, path)
    assert 1 in (await leaders(mconn, path)).values()
    await admin.add_server_tag([1], fluss.ServerTag.TEMPORARY_OFFLINE)

    async def one_leads_nothing() -> bool:
        now = await leaders(mconn, path)
        return all(leader >= 0 and leader != 1 for leader in now.values())

    await wait_until(one_leads_nothing, 20, "server 1 to lead nothing")
    assert await placement(mconn, path) == before  # replicas stay
    await wait_until(lambda: all_in_sync(mconn, path), 20, "server 1 to stay in every ISR")
    fresh = TablePath("moves", "created_while_resting")
    await admin.create_table(fresh, TableDescriptor(Schema(pa.schema([("v", pa.int64())])), bucket_count=6))
    assert 1 not in (await leaders(mconn, fresh)).values()
    assert any(1 in r for r in (await placement(mconn, fresh)).values())  # it still gets replicas
    writer = (await mconn.get_table(path)).new_append().create_writer()
    writer.write_arrow(pa.table({"v": pa.array(range(600), pa.int64())}))
    await writer.flush()  # acks=all with server 1 still replicating

    with pytest.raises(FlussError) as e:
        await admin.add_server_tag([1], fluss.ServerTag.PERMANENT_OFFLINE)
    assert e.value.error_code == ErrorCode.SERVER_TAG_ALREADY_EXIST_EXCEPTION and "1 (TEMPORARY_OFFLINE)" in str(e.value)
    await admin.remove_server_tag([1], fluss.ServerTag.TEMPORARY_OFFLINE)
    preferred = [b for b, r in before.items() if r[0] == 1]

    async def leads_its_preferred() -> bool:
        now = await leaders(mconn, path)
        return all(now[b] == 1 for b in preferred)

    await wait_until(leads_its_preferred, 20, "server 1 to lead its preferred buckets again")


async def test_permanent_offline_drains_a_server_under_an_acks_all_writer_and_it_retires(move_cluster, mconn):
    admin = mconn.get_admin()
    new_id = await asyncio.to_thread(move_cluster.add_tablet_server)  # a fourth server takes the drained replicas
    path = TablePath("moves", "drained")
    await admin.create_table(path, TableDescriptor(Schema(pa.schema([("seq", pa.int64())])), bucket_count=4))
    await wait_until(lambda: all_in_sync(mconn, path), 20, "a full ISR")
    leaving = 0
    assert any(leaving in r for r in (await placement(mconn, path)).values())
    table = await mconn.get_table(path)
    appender = AckedAppender(table, batch=100).start()
    try:
        await asyncio.sleep(0.5)
        await admin.add_server_tag([leaving], fluss.ServerTag.PERMANENT_OFFLINE)

        async def drained() -> bool:
            if await admin.list_reassignments():
                return False
            return all(leaving not in r for r in (await placement(mconn, path)).values())

        await wait_until(drained, 60, f"server {leaving} to be drained")
        with pytest.raises(FlussError, match="PERMANENT_OFFLINE"):  # nothing may move onto it
            await admin.alter_table_assignment(path, {0: [leaving, new_id]})
        await asyncio.to_thread(move_cluster.stop_tablet_server, leaving)  # retired: nothing is lost
        await asyncio.sleep(1.0)
    finally:
        await appender.stop()
    await appender.check(buckets=4, min_acked=501)
    assert any(new_id in r for r in (await placement(mconn, path)).values())
    await admin.remove_server_tag([leaving], fluss.ServerTag.PERMANENT_OFFLINE)  # a retired server's tag goes too
    with pytest.raises(FlussError) as e:
        await admin.remove_server_tag([leaving], fluss.ServerTag.PERMANENT_OFFLINE)
    assert e.value.error_code == ErrorCode.SERVER_TAG_NOT_EXIST_EXCEPTION
    with pytest.raises(FlussError) as e:
        await admin.add_server_tag([99], fluss.ServerTag.TEMPORARY_OFFLINE)
    assert e.value.error_code == ErrorCode.SERVER_NOT_EXIST_EXCEPTION and "[99]" in str(e.value)
    with pytest.raises(FlussError, match="Unknown server tag 7"):
        await mconn.run(mconn.cluster.admin_call("AddServerTag", pb.AddServerTagRequest(server_ids=[1], server_tag=7)))
