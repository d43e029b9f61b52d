"""Process-level behaviour of the cluster: restarts, SIGKILLs and atomic metadata. Uses its own cluster so
killing processes cannot disturb the shared one."""

from __future__ import annotations

import asyncio
import time

import pyarrow as pa
import pytest
import pytest_asyncio
from kazoo.client import KazooClient

import fluss
from fluss import ErrorCode, FlussError, Schema, TableDescriptor, TablePath
from fluss.server.cluster import LocalCluster

pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest.fixture(scope="module")
def own_cluster():
    with LocalCluster(tablet_servers=3, zookeeper_session_timeout="2s") as c:
        yield c


@pytest.fixture(autouse=True)
def _restart_stopped_processes(own_cluster):
    """A failing fault test must not leave a server down for the next test."""
    yield
    own_cluster.restart_stopped()


@pytest_asyncio.fixture(loop_scope="session")
async def own_admin(own_cluster):
    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": own_cluster.bootstrap_servers}))
    yield conn.get_admin()
    await conn.aclose()


async def _tablet_ids(admin) -> set[int]:
    return {n.id for n in await admin.get_server_nodes() if n.server_type == "TabletServer"}


async def test_metadata_survives_coordinator_restart(own_cluster, own_admin):
    await own_admin.create_database("durable", ignore_if_exists=True)
    path = TablePath("durable", "t")
    schema = Schema(pa.schema([("k", pa.int64()), ("v", pa.string())]), primary_keys=["k"])
    await own_admin.create_table(path, TableDescriptor(schema, bucket_count=3, comment="keep me"))
    before = await own_admin.get_table_info(path)

    own_cluster.kill_coordinator()
    own_cluster.start_coordinator()

    after = await own_admin.get_table_info(path)
    assert (after.table_id, after.schema_id, after.num_buckets, after.comment) == \
        (before.table_id, before.schema_id, 3, "keep me")
    assert after.get_primary_keys() == ["k"]
    assert "durable" in await own_admin.list_databases()
    # ids keep increasing after the restart
    await own_admin.create_table(TablePath("durable", "t2"), TableDescriptor(schema))
    assert (await own_admin.get_table_info(TablePath("durable", "t2"))).table_id > before.table_id


async def test_killed_tablet_server_leaves_and_rejoins(own_cluster, own_admin):
    assert await _tablet_ids(own_admin) == {0, 1, 2}
    own_cluster.kill_tablet_server(2)
    t0 = time.monotonic()
    while 2 in await _tablet_ids(own_admin):
        assert time.monotonic() - t0 < 15, "killed server still listed after its session timeout"
        await asyncio.sleep(0.2)
    own_cluster.start_tablet_server(2)
    t0 = time.monotonic()
    while await _tablet_ids(own_admin) != {0, 1, 2}:
        assert time.monotonic() - t0 < 30
        await asyncio.sleep(0.2)


async def test_buckets_of_a_dead_server_get_new_leaders_from_the_isr(own_cluster, own_admin):
    await own_admin.create_database("ha", ignore_if_exists=True)
    path = TablePath("ha", "replicated")
    await own_admin.create_table(path, TableDescriptor(Schema(pa.schema([("a", pa.int32())])), bucket_count=3,
                                                       properties={"table.replication.factor": "2"}))
    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": own_cluster.bootstrap_servers}))
    try:
        buckets = (await conn.run(conn.cluster.update_metadata([path]))).tables[0].buckets
        victim = buckets[0].leader_id
        own_cluster.kill_tablet_server(victim)
        t0 = time.monotonic()
        while True:
            meta = (await conn.run(conn.cluster.update_metadata([path]))).tables[0].buckets
            # the coordinator updates the buckets one after the other: wait for the last one
            if all(b.leader_id not in (victim, -1) and victim not in b.isr for b in meta):
                break
            assert time.monotonic() - t0 < 20, [(b.bucket_id, b.leader_id, list(b.isr)) for b in meta]
            await asyncio.sleep(0.2)
        for b in meta:
            assert victim not in b.isr
            assert b.leader_id in b.replicas
        own_cluster.start_tablet_server(victim)
    finally:
        await conn.aclose()


async def test_failed_create_leaves_no_half_created_table(own_cluster, own_admin):
    """A ZooKeeper transaction that fails midway must leave nothing behind."""
    await own_admin.create_database("atomic", ignore_if_exists=True)
    zk = KazooClient(hosts=own_cluster.zookeeper_address + "/fluss")
    zk.start()
    try:
        next_id = int(zk.get("/metadata/table_id_seq")[0])
        # Occupy the assignment node the next table would create: the create transaction must fail whole.
        zk.create(f"/tabletservers/tables/{next_id}", b"{}")
        with pytest.raises(FlussError) as e:
            await own_admin.create_table(TablePath("atomic", "half"),
                                         TableDescriptor(Schema(pa.schema([("a", pa.int32())]))))
        assert e.value.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
        assert not zk.exists("/metadata/databases/atomic/tables/half")
        assert not await own_admin.table_exists(TablePath("atomic", "half"))
        zk.delete(f"/tabletservers/tables/{next_id}")
        await own_admin.create_table(TablePath("atomic", "half"), TableDescriptor(Schema(pa.schema([("a", pa.int32())]))))
        assert await own_admin.table_exists(TablePath("atomic", "half"))
    finally:
        zk.stop()
        zk.close()
