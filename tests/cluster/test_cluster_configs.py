"""Live cluster configuration on a real cluster: ``admin.alter_cluster_configs`` changes a dynamic option of running
servers (a tablet server's KV snapshot interval: snapshots start within seconds, no restart), the override survives
restarts of the tablet server and of the coordinator, bad changes are refused with nothing stored, and
``describe_cluster_configs`` names each value's source. Own cluster (one tablet server, restarted here)."""

from __future__ import annotations

import asyncio
import time
import uuid

import pyarrow as pa
import pytest
import pytest_asyncio

import fluss
from fluss import AlterConfig, AlterConfigOpType, ErrorCode, FlussError, Schema, TableDescriptor, TablePath
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.server.cluster import LocalCluster

pytestmark = pytest.mark.asyncio(loop_scope="session")

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


@pytest.fixture(scope="module")
def config_cluster(tmp_path_factory):
    directory = tmp_path_factory.mktemp("config-cluster")
    with LocalCluster(tablet_servers=1, server_config={"log.retention.check-interval": "30s"},
                      directory=directory) as c:
        yield c


@pytest_asyncio.fixture(loop_scope="session")
async def cconn(config_cluster):
    conn = await fluss.FlussConnection.create(fluss.Config({
        "bootstrap.servers": config_cluster.bootstrap_servers, "writer.batch-timeout": "5ms",
        "request-timeout": "10s"}))
    yield conn
    await conn.aclose()


async def _entries(admin) -> dict[str, fluss.ConfigEntry]:
    return {e.key: e for e in await admin.describe_cluster_configs()}


async def _snapshot_offset(conn, path) -> int:
    resp = await conn.run(conn.cluster.admin_call("GetLatestKvSnapshots",
                                                  pb.GetLatestKvSnapshotsRequest(table_path=path.to_pb())))
    return max((s.log_offset for s in resp.snapshots), default=-1)


async def _upsert(conn, path, ids: range) -> None:
    table = await conn.get_table(path)
    writer = table.new_upsert().create_writer()
    for i in ids:
        writer.upsert({"id": i, "v": f"v{i}"})
    await writer.flush()


async def _wait_snapshot_beyond(conn, path, offset: int, timeout_s: float) -> int:
    deadline = time.monotonic() + timeout_s
    while (snap := await _snapshot_offset(conn, path)) <= offset:
        assert time.monotonic() < deadline, f"no KV snapshot beyond offset {offset} within {timeout_s}s"
        await asyncio.sleep(0.2)
    return snap


async def _admin_when_served(conn, timeout_s: float = 30):
    """The admin once a (restarted) coordinator answers."""
    admin = conn.get_admin()
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            await admin.describe_cluster_configs()
            return admin
        except FlussError:
            assert time.monotonic() < deadline, "the coordinator did not serve again in time"
            await asyncio.sleep(0.3)


async def test_bad_changes_are_refused_and_nothing_is_stored(cconn):
    admin = cconn.get_admin()
    before = await _entries(admin)
    assert (before["kv.snapshot.interval"].value, before["kv.snapshot.interval"].source) == ("10min",
                                                                                             "DEFAULT_CONFIG")
    assert before["log.retention.check-interval"].source == "INITIAL_SERVER_CONFIG"
    cases = [
        ([AlterConfig("kv.snapshot.interval", "1s"), AlterConfig("no.such.key", "1")], "no.such.key"),
        ([AlterConfig("kv.snapshot.interval", "1s"), AlterConfig("default.bucket.number", "4")],
         "default.bucket.number"),
        ([AlterConfig("kv.snapshot.interval", "fast")], "fast"),
        ([AlterConfig("kv.snapshot.interval", "1s", AlterConfigOpType.APPEND)], "APPEND"),
        # over the 64 KiB value cap of all metadata (the node stays far below what ZooKeeper holds)
        ([AlterConfig("datalake.paimon.huge", "x" * (100 << 10))], "bytes"),
    ]
    for changes, word in cases:
        with pytest.raises(FlussError) as err:
            await admin.alter_cluster_configs(changes)
        assert err.value.error_code == ErrorCode.INVALID_CONFIG_EXCEPTION, err.value
        assert word in err.value.message, err.value.message
    assert await _entries(admin) == before


async def test_a_dynamic_option_takes_effect_without_restart_and_survives_restarts(config_cluster, cconn):
    admin = cconn.get_admin()
    await admin.create_database("cfg", ignore_if_exists=True)
    path = TablePath("cfg", f"kv_{uuid.uuid4().hex[:6]}")
    await admin.create_table(path, TableDescriptor(Schema(SCHEMA, primary_keys=["id"]), bucket_count=1))
    await _upsert(cconn, path, range(100))
    await asyncio.sleep(2)
    assert await _snapshot_offset(cconn, path) <= 0  # the default interval is 10 minutes: no snapshot yet

    await admin.alter_cluster_configs([AlterConfig("kv.snapshot.interval", "1s")])
    entry = (await _entries(admin))["kv.snapshot.interval"]
    assert (entry.value, entry.source) == ("1s", "DYNAMIC_SERVER_CONFIG")
    first = await _wait_snapshot_beyond(cconn, path, 0, 20)  # the running tablet server snapshots now

    config_cluster.stop_tablet_server(0)
    config_cluster.start_tablet_server(0)
    await _upsert(cconn, path, range(100, 200))  # retried by the writer until the restarted leader serves
    await _wait_snapshot_beyond(cconn, path, first, 30)  # still every second after the restart

    config_cluster.stop_coordinator()
    config_cluster.start_coordinator()
    admin = await _admin_when_served(cconn)
    entry = (await _entries(admin))["kv.snapshot.interval"]
    assert (entry.value, entry.source) == ("1s", "DYNAMIC_SERVER_CONFIG")

    await admin.alter_cluster_configs([AlterConfig("kv.snapshot.interval", op_type=AlterConfigOpType.DELETE)])
    entry = (await _entries(admin))["kv.snapshot.interval"]
    assert (entry.value, entry.source) == ("10min", "DEFAULT_CONFIG")


async def test_catch_up_throttle_and_lake_options_are_set_and_reset(cconn, tmp_path):
    admin = cconn.get_admin()
    await admin.create_database("cfg", ignore_if_exists=True)
    lake_table = TableDescriptor(Schema(SCHEMA), bucket_count=1, properties={"table.datalake.enabled": "true"})
    with pytest.raises(FlussError) as err:  # no lake configured on this cluster yet
        await admin.create_table(TablePath("cfg", "lake_before"), lake_table)
    assert err.value.error_code == ErrorCode.LAKE_STORAGE_NOT_CONFIGURED_EXCEPTION, err.value
    warehouse = str(tmp_path / "warehouse")
    await admin.alter_cluster_configs([AlterConfig("log.replica.catch-up-throttle", "5mb"),
                                       AlterConfig("datalake.format", "paimon"),
                                       AlterConfig("datalake.paimon.warehouse", warehouse)])
    entries = await _entries(admin)
    assert entries["log.replica.catch-up-throttle"].value == "5mb"
    assert (entries["datalake.format"].value, entries["datalake.format"].source) == ("paimon",
                                                                                     "DYNAMIC_SERVER_CONFIG")
    # the running coordinator now creates lake tables in the new warehouse (no restart)
    path = TablePath("cfg", f"lake_{uuid.uuid4().hex[:6]}")
    await admin.create_table(path, lake_table)
    props = (await admin.get_table_info(path)).descriptor.properties
    assert props["table.datalake.format"] == "paimon"
    assert props["table.datalake.paimon.warehouse"] == warehouse
    await admin.alter_cluster_configs([AlterConfig(k, op_type=AlterConfigOpType.DELETE) for k in (
        "log.replica.catch-up-throttle", "datalake.format", "datalake.paimon.warehouse")])
    entries = await _entries(admin)
    assert "datalake.format" not in entries and "log.replica.catch-up-throttle" not in entries
