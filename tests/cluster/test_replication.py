"""Replication, failover and coordinator HA with real processes and SIGKILL/SIGSTOP.

One cluster for this module: 3 tablet servers, 2 coordinators, min ISR 2, a short replica lag time."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pyarrow as pa
import pytest
import pytest_asyncio

import fluss
from fluss import EARLIEST_OFFSET, ErrorCode, FlussError, OffsetSpec, Schema, TableDescriptor, TablePath
from fluss.record.log_batch import assign_writer, build_batch
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.server.cluster import LocalCluster
from tests.cluster.cluster_ops_helpers import all_in_sync, buckets_of, restarting_stopped, wait_until

pytestmark = pytest.mark.asyncio(loop_scope="session")

CONFIG = {
    "log.replica.min-in-sync-replicas-number": "2",
    "log.replica.max-lag-time": "2s",
    "log.replica.fetch.wait-max-time": "100ms",
    "default.replication.factor": "3",
}


@pytest.fixture(scope="module")
def ha_cluster():
    with LocalCluster(tablet_servers=3, coordinators=2, server_config=CONFIG, zookeeper_session_timeout="2s") as c:
        yield c


_restart_stopped_processes = restarting_stopped("ha_cluster")


@pytest_asyncio.fixture(loop_scope="session")
async def hconn(ha_cluster):
    conn = await fluss.FlussConnection.create(fluss.Config({
        "bootstrap.servers": ha_cluster.bootstrap_servers, "writer.batch-timeout": "5ms", "request-timeout": "10s"}))
    yield conn
    await conn.aclose()


async def _read_all(table, buckets) -> pa.Table:
    scanner = await table.new_scan().create_record_batch_log_scanner()
    scanner.subscribe_buckets({b: EARLIEST_OFFSET for b in buckets})
    return await scanner.to_arrow()


async def _create(conn, name, buckets=3):
    admin = conn.get_admin()
    await admin.create_database("repl", ignore_if_exists=True)
    path = TablePath("repl", name)
    await admin.create_table(path, TableDescriptor(Schema(pa.schema([("writer", pa.int32()), ("seq", pa.int64())])),
                                                   bucket_count=buckets, bucket_keys=["writer"]))
    await wait_until(lambda: all_in_sync(conn, path), 20, "a full ISR")
    await admin.list_offsets(path, list(range(buckets)), OffsetSpec.latest())  # every leader serves its bucket
    return path, await conn.get_table(path)


async def test_acked_writes_survive_repeated_leader_kills(ha_cluster, hconn):
    path, table = await _create(hconn, "chaos")
    writer = table.new_append().create_writer()
    acked: dict[int, list[int]] = {w: [] for w in range(3)}
    stop = asyncio.Event()

    async def write_loop(w: int) -> None:
        seq = 0
        while not stop.is_set():
            rows = pa.record_batch([pa.array([w] * 50, pa.int32()), pa.array(range(seq, seq + 50), pa.int64())],
                                   names=["writer", "seq"])
            handle = writer.write_arrow_batch(rows)
            try:
                await handle.wait()
                acked[w].extend(range(seq, seq + 50))
            except FlussError:
                pass
            seq += 50

    loops = [asyncio.create_task(write_loop(w)) for w in range(3)]
    try:
        for _ in range(3):
            await asyncio.sleep(1.0)
            leader = (await buckets_of(hconn, path))[0].leader_id
            if leader < 0:
                continue
            await asyncio.to_thread(ha_cluster.kill_tablet_server, leader)
            await asyncio.sleep(1.5)
            await asyncio.to_thread(ha_cluster.start_tablet_server, leader)
        await asyncio.sleep(1.0)
    finally:
        stop.set()
        # bounded: a bucket whose ISR never heals makes acks=all writes retry for ever
        await asyncio.wait_for(asyncio.gather(*loops), 120)
    await asyncio.wait_for(writer.flush(), 120)
    await wait_until(lambda: all_in_sync(hconn, path), 30, "the ISR to heal")
    data = await _read_all(table, [0, 1, 2])
    for w in range(3):
        seqs = [s for wr, s in zip(data.column("writer").to_pylist(), data.column("seq").to_pylist(), strict=True)
                if wr == w]
        assert len(seqs) == len(set(seqs)), f"writer {w}: duplicates"
        missing = set(acked[w]) - set(seqs)
        assert not missing, f"writer {w}: {len(missing)} acknowledged records lost"
        acked_order = [s for s in seqs if s in set(acked[w])]
        assert acked_order == sorted(acked_order), f"writer {w}: acknowledged records out of order"
    assert sum(len(v) for v in acked.values()) > 1000


async def test_followers_rejoin_a_bucket_whose_last_leader_comes_back(ha_cluster, hconn):
    """ISR shrunk to the leader, the leader dies (the bucket is offline), the followers come back first: when the
    leader returns and is elected again, the followers must be told whom to follow and rejoin its ISR."""
    path, table = await _create(hconn, "offline", buckets=1)
    writer = table.new_append().create_writer()
    writer.write_arrow(pa.table({"writer": pa.array([1] * 10, pa.int32()), "seq": pa.array(range(10), pa.int64())}))
    await writer.flush()
    leader = (await buckets_of(hconn, path))[0].leader_id
    followers = [s for s in (0, 1, 2) if s != leader]
    for s in followers:
        await asyncio.to_thread(ha_cluster.kill_tablet_server, s)
    await wait_until(lambda: _isr_is(hconn, path, [leader]), 20, "the ISR to shrink to the leader")
    await asyncio.to_thread(ha_cluster.kill_tablet_server, leader)
    await wait_until(lambda: _leader_is(hconn, path, -1), 20, "the bucket to go offline")
    for s in followers:
        await asyncio.to_thread(ha_cluster.start_tablet_server, s)
    await asyncio.to_thread(ha_cluster.start_tablet_server, leader)
    await wait_until(lambda: all_in_sync(hconn, path), 30, "the followers to rejoin the returned leader's ISR")
    assert (await buckets_of(hconn, path))[0].leader_id == leader
    writer.write_arrow(pa.table({"writer": pa.array([1] * 5, pa.int32()), "seq": pa.array(range(10, 15), pa.int64())}))
    await asyncio.wait_for(writer.flush(), 30)
    assert (await _read_all(table, [0])).column("seq").to_pylist() == list(range(15))


async def _leader_is(conn, path, leader) -> bool:
    return all(b.leader_id == leader for b in await buckets_of(conn, path))


async def test_writes_fail_clearly_without_enough_replicas(ha_cluster, hconn):
    path, table = await _create(hconn, "min_isr", buckets=1)
    writer = table.new_append().create_writer()
    writer.write_arrow(pa.table({"writer": pa.array([1] * 10, pa.int32()), "seq": pa.array(range(10), pa.int64())}))
    await writer.flush()
    leader = (await buckets_of(hconn, path))[0].leader_id
    others = [s for s in (0, 1, 2) if s != leader]
    for s in others:
        await asyncio.to_thread(ha_cluster.kill_tablet_server, s)
    try:
        await wait_until(lambda: _isr_is(hconn, path, [leader]), 20, "the ISR to shrink to the leader")
        strict = await fluss.FlussConnection.create(fluss.Config({
            "bootstrap.servers": ha_cluster.bootstrap_servers, "writer.retries": "0"}))
        try:
            w2 = (await strict.get_table(path)).new_append().create_writer()
            handle = w2.write_arrow_batch(pa.record_batch([pa.array([2], pa.int32()), pa.array([99], pa.int64())],
                                                          names=["writer", "seq"]))
            with pytest.raises(FlussError) as e:
                await handle.wait()
            # the leader refuses the write, or, when it learns of the shrink only after appending it (ZooKeeper,
            # which the wait above reads, has the new ISR first), fails it after the append, as Kafka does
            assert e.value.error_code in (ErrorCode.NOT_ENOUGH_REPLICAS_EXCEPTION,
                                          ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND_EXCEPTION)
            assert "min-in-sync-replicas" in e.value.message
            appended = e.value.error_code == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND_EXCEPTION
        finally:
            await strict.aclose()
        expected = list(range(10)) + ([99] if appended else [])
        assert (await _read_all(table, [0])).column("seq").to_pylist() == expected
    finally:
        for s in others:
            await asyncio.to_thread(ha_cluster.start_tablet_server, s)
    await wait_until(lambda: all_in_sync(hconn, path), 30, "the ISR to heal")


async def _isr_is(conn, path, isr) -> bool:
    return all(sorted(b.isr) == sorted(isr) for b in await buckets_of(conn, path))


async def test_lagging_follower_leaves_and_rejoins_the_isr(ha_cluster, hconn):
    path, table = await _create(hconn, "laggard", buckets=1)
    bucket = (await buckets_of(hconn, path))[0]
    follower = next(r for r in bucket.replicas if r != bucket.leader_id)
    pid = ha_cluster.tablet_server_pid(follower)
    os.kill(pid, signal.SIGSTOP)
    try:
        writer = table.new_append().create_writer()
        for i in range(20):
            writer.append([1, i])
            await writer.flush()
            await asyncio.sleep(0.2)
        await wait_until(lambda: _not_in_isr(hconn, path, follower), 20, "the paused follower to leave the ISR")
    finally:
        os.kill(pid, signal.SIGCONT)
    await wait_until(lambda: all_in_sync(hconn, path), 30, "the follower to rejoin the ISR")


async def _not_in_isr(conn, path, server) -> bool:
    return all(server not in b.isr for b in await buckets_of(conn, path))


async def test_controlled_shutdown_moves_leadership_first(ha_cluster, hconn):
    path, _ = await _create(hconn, "graceful")
    victim = (await buckets_of(hconn, path))[0].leader_id
    t0 = time.monotonic()
    await asyncio.to_thread(ha_cluster.stop_tablet_server, victim)
    moved = time.monotonic() - t0
    meta = await buckets_of(hconn, path)
    assert all(b.leader_id not in (victim, -1) for b in meta), [(b.bucket_id, b.leader_id) for b in meta]
    assert moved < 10
    await wait_until(lambda: _not_in_isr(hconn, path, victim), 10, "the stopped server to leave every ISR")
    await asyncio.to_thread(ha_cluster.start_tablet_server, victim)
    await wait_until(lambda: all_in_sync(hconn, path), 30, "the ISR to heal")


async def test_resent_batches_are_written_once(ha_cluster, hconn):
    path, table = await _create(hconn, "idempotent", buckets=1)
    leader = (await buckets_of(hconn, path))[0].leader_id
    address = next(n for n in await hconn.get_admin().get_server_nodes()
                   if n.server_type == "TabletServer" and n.id == leader).address
    table_id = table.get_table_info().table_id
    writer_id = (await hconn.run(hconn.cluster.admin_call("InitWriter", pb.InitWriterRequest()))).writer_id

    def batch(seq: int, values: list[int]) -> bytes:
        rb = pa.record_batch([pa.array([7] * len(values), pa.int32()), pa.array(values, pa.int64())],
                             names=["writer", "seq"])
        return assign_writer(build_batch(rb, schema_id=1), writer_id, seq)

    async def produce(records: bytes) -> pb.ProduceBucketResultPb:
        req = pb.ProduceLogRequest(acks=-1, table_id=table_id, timeout_ms=5000,
                                   buckets=[pb.ProduceBucketPb(partition_id=-1, bucket_id=0, records=records)])
        return (await hconn.run(hconn.cluster.tablet_call(address, "ProduceLog", req))).buckets[0]

    first = await produce(batch(0, [1, 2]))
    again = await produce(batch(0, [1, 2]))
    assert first.error.code == 0 and again.error.code == 0
    assert again.base_offset == first.base_offset
    assert (await produce(batch(1, [3]))).error.code == 0
    gap = await produce(batch(5, [9]))
    assert gap.error.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_EXCEPTION and "sequence 5" in gap.error.message
    assert (await _read_all(table, [0])).column("seq").to_pylist() == [1, 2, 3]


async def test_stale_coordinator_epoch_is_rejected(ha_cluster, hconn):
    await _create(hconn, "epoch_known")  # every tablet server has heard from the active coordinator (epoch >= 1)
    node = next(n for n in await hconn.get_admin().get_server_nodes() if n.server_type == "TabletServer")
    with pytest.raises(FlussError) as e:
        await hconn.run(hconn.cluster.tablet_call(node.address, "NotifyLeaderAndIsr",
                                                  pb.NotifyLeaderAndIsrRequest(coordinator_epoch=0)))
    assert e.value.error_code == ErrorCode.INVALID_COORDINATOR_EXCEPTION
    assert "stale coordinator" in e.value.message


async def test_coordinator_failover_keeps_data_flowing(ha_cluster, hconn):
    path, table = await _create(hconn, "failover", buckets=2)
    admin = hconn.get_admin()
    writer = table.new_append().create_writer()
    nodes = await admin.get_server_nodes()
    active_port = next(n.port for n in nodes if n.server_type == "CoordinatorServer")
    active = next(i for i, c in enumerate(ha_cluster._coordinators) if c.port == active_port)
    await asyncio.to_thread(ha_cluster.kill_coordinator, active)
    t0 = time.monotonic()
    for i in range(20):  # the bucket leaders keep serving while no coordinator is active
        writer.append([3, i])
    await writer.flush()
    while True:
        try:
            await admin.create_table(TablePath("repl", "after_failover"),
                                     TableDescriptor(Schema(pa.schema([("a", pa.int32())]))))
            break
        except FlussError:
            assert time.monotonic() - t0 < 20, "no standby took over"
            await asyncio.sleep(0.2)
    assert await admin.table_exists(TablePath("repl", "after_failover"))
    offsets = await admin.list_offsets(path, [0, 1], OffsetSpec.latest())
    assert sum(offsets.values()) == 20
    await asyncio.to_thread(ha_cluster.start_coordinator, active)
