"""A replica added to a tiered bucket whose early segments are only remote (docs/remote-log.md, "A follower
restarting at the leader's log start"; docs/cluster-operations.md, reassignment): it restarts at the leader's local
log start with the leader epochs and the idempotent writers' state of the remote segment ending there, takes over
leadership, and a writer whose last batches are only in remote storage goes on: its resent batch is recognised as a
duplicate, its next one is taken, and reading from earliest (remote, then local) returns every row once. Its own
cluster (3 servers, replication factor 2)."""

from __future__ import annotations

import asyncio
import re

import pytest
import pytest_asyncio
from remote_helpers import ROWS, append_rows, describe_log, rows, scan_ids, wait_until

import fluss
from fluss.record.log_batch import assign_writer, build_batch
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.server.cluster import LocalCluster

pytestmark = pytest.mark.asyncio(loop_scope="session")

CONFIG = {
    "log.segment.file-size": "64kb",
    "remote.log.task-interval-duration": "500ms",
    "log.retention.check-interval": "1s",
    "log.replica.fetch.wait-max-time": "100ms",
    "log.replica.max-lag-time": "5s",
}
WRITER_BATCHES = 6
WRITER_ROWS = 100
WRITER_IDS = 1_000_000  # the raw writer's ids start here; the bulk rows are 0..BULK-1
BULK = 30_000


@pytest.fixture(scope="module")
def aux_cluster(tmp_path_factory):
    with LocalCluster(tablet_servers=3, server_config=CONFIG,
                      directory=tmp_path_factory.mktemp("aux-state-cluster")) as c:
        yield c


@pytest_asyncio.fixture(loop_scope="session")
async def aconn(aux_cluster):
    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": aux_cluster.bootstrap_servers,
                                                            "request-timeout": "10s"}))
    await conn.get_admin().create_database("aux", ignore_if_exists=True)
    yield conn
    await conn.aclose()


async def _bucket(conn, path):
    return (await conn.run(conn.cluster.update_metadata([path]))).tables[0].buckets[0]


async def _address(conn, server_id: int) -> str:
    return next(n for n in await conn.get_admin().get_server_nodes()
                if n.server_type == "TabletServer" and n.id == server_id).address


async def test_a_moved_replica_loads_epochs_and_writer_state_from_remote_and_dedups_as_leader(aux_cluster, aconn):
    admin = aconn.get_admin()
    path = fluss.TablePath("aux", "moved")
    await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(ROWS), bucket_count=1, properties={
        "table.replication.factor": "2", "table.log.tiered.local-segments": "2"}))
    table_id = (await admin.get_table_info(path)).table_id

    async def in_sync():
        b = await _bucket(aconn, path)
        return b.leader_id >= 0 and sorted(b.isr) == sorted(b.replicas) and len(b.replicas) == 2
    await wait_until(in_sync, 30, "a full ISR")
    writer_id = (await aconn.run(aconn.cluster.admin_call("InitWriter", pb.InitWriterRequest()))).writer_id

    def writer_batch(seq: int) -> bytes:
        return assign_writer(build_batch(rows(WRITER_IDS + seq * WRITER_ROWS, WRITER_ROWS), schema_id=1),
                             writer_id, seq)

    async def produce(server: int, seq: int) -> pb.ProduceBucketResultPb:
        req = pb.ProduceLogRequest(acks=-1, table_id=table_id, timeout_ms=10_000, buckets=[
            pb.ProduceBucketPb(partition_id=-1, bucket_id=0, records=writer_batch(seq))])
        return (await aconn.run(aconn.cluster.tablet_call(await _address(aconn, server), "ProduceLog",
                                                          req))).buckets[0]

    # an idempotent writer writes, then enough other rows follow that its batches are only in remote storage
    before = await _bucket(aconn, path)
    first_leader = before.leader_id
    offsets = []
    for seq in range(WRITER_BATCHES):
        r = await produce(first_leader, seq)
        for _ in range(100):  # the metadata can name the leader a moment before it has created the replica
            if r.error.code != 21:
                break
            await asyncio.sleep(0.1)
            r = await produce(first_leader, seq)
        assert r.error.code == 0, r.error.message
        offsets.append(r.base_offset)
    await append_rows(aconn, path, 0, BULK)
    last_writer_offset = offsets[-1] + WRITER_ROWS - 1

    async def tiered_past_the_writer():
        s = await describe_log(aconn, path)
        return s if s.remote_start == 0 and s.local_start > last_writer_offset else None
    state = await wait_until(tiered_past_the_writer, 40, "the writer's batches to be only remote")
    assert state.local_start > last_writer_offset

    # the bucket moves to the server holding no replica, which leads afterwards
    newcomer = next(s for s in range(3) if s not in before.replicas)
    other = next(r for r in before.replicas if r != first_leader)
    target = [newcomer, other]
    await admin.alter_table_assignment(path, {0: target})

    async def moved():
        if await admin.list_reassignments():
            return False
        b = await _bucket(aconn, path)
        return list(b.replicas) == target and sorted(b.isr) == sorted(target) and b.leader_id == newcomer
    await wait_until(moved, 40, f"bucket 0 to move to {target} led by {newcomer}")

    # the writer goes on against the new leader: a resend of its last batch is a duplicate, the next is new
    resent = await produce(newcomer, WRITER_BATCHES - 1)
    assert resent.error.code == 0, resent.error.message
    assert resent.base_offset == offsets[-1]  # the offset it already has, not a second copy
    nxt = await produce(newcomer, WRITER_BATCHES)
    assert nxt.error.code == 0, nxt.error.message
    assert nxt.base_offset > last_writer_offset
    again = await produce(newcomer, WRITER_BATCHES)
    assert again.error.code == 0 and again.base_offset == nxt.base_offset

    ids = (await scan_ids(aconn, path)).column("id").to_pylist()
    expected = list(range(BULK)) + list(range(WRITER_IDS, WRITER_IDS + (WRITER_BATCHES + 1) * WRITER_ROWS))
    assert len(ids) == len(expected) and sorted(ids) == sorted(expected)

    # it restarted at the leader's local start with the state of the remote segment ending there
    server_log = (aux_cluster.dir / "logs" / f"tablet-server-{newcomer}.log").read_text()
    line = next(x for x in server_log.splitlines() if "with the aux state from remote storage" in x)
    # (without the aux state its epoch history started at the restart offset, and it knew no writer)
    assert re.search(r"leader epochs \[\(\d+, 0\)", line), line  # the history from offset 0
    found = re.search(r"at offset (\d+) with .* (\d+) writer\(s\) as of offset (\d+)", line)
    assert found and found[1] == found[3] and int(found[1]) > last_writer_offset and int(found[2]) >= 2, line
