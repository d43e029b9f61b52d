"""Rack-aware placement end to end: tablet servers register their ``tablet-server.rack``, the coordinator spreads
each bucket's replicas over racks for new tables and partitions, a cluster grows with ``add_tablet_server``, and
``fluss table describe --json`` / ``fluss cluster status --json`` report the placement. Uses its own cluster (it
adds servers)."""

from __future__ import annotations

import json
import subprocess
import sys

import pyarrow as pa
import pytest
import pytest_asyncio

import fluss
from fluss import ErrorCode, FlussError, Schema, TableDescriptor, TablePath
from fluss.server.cluster import LocalCluster
from fluss.table_report import describe_table_json

pytestmark = pytest.mark.asyncio(loop_scope="session")

RACKS = {0: "rack-a", 1: "rack-a", 2: "rack-b"}


@pytest.fixture(scope="module")
def rack_cluster():
    with LocalCluster(tablet_servers=3, racks=dict(RACKS)) as c:
        yield c


@pytest_asyncio.fixture(loop_scope="session")
async def rack_conn(rack_cluster):
    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": rack_cluster.bootstrap_servers}))
    await conn.get_admin().create_database("racks", ignore_if_exists=True)
    yield conn
    await conn.aclose()


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fluss.cli", *args], capture_output=True, text=True, timeout=120)


async def _placement(conn, path: TablePath) -> list[dict]:
    return (await describe_table_json(conn, path))["buckets"]


async def test_servers_report_their_racks(rack_conn):
    nodes = await rack_conn.get_admin().get_server_nodes()
    assert {n.id: n.rack for n in nodes if n.server_type == "TabletServer"} == RACKS
    assert all(n.rack is None for n in nodes if n.server_type == "CoordinatorServer")


async def test_buckets_of_tables_and_partitions_span_both_racks(rack_conn):
    admin = rack_conn.get_admin()
    schema = Schema(pa.schema([("k", pa.int64()), ("v", pa.string())]), primary_keys=["k"])
    pk = TablePath("racks", "pk")
    await admin.create_table(pk, TableDescriptor(schema, bucket_count=6, properties={"table.replication.factor": "2"}))
    log_schema = Schema(pa.schema([("d", pa.string()), ("v", pa.int64())]))
    parted = TablePath("racks", "parted")
    await admin.create_table(parted, TableDescriptor(log_schema, partition_keys=["d"], bucket_count=4,
                                                     properties={"table.replication.factor": "3"}))
    await admin.create_partition(parted, {"d": "2026"})
    for path, rf in ((pk, 2), (parted, 3)):
        buckets = await _placement(rack_conn, path)
        assert len(buckets) == (6 if path == pk else 4)
        for b in buckets:
            assert len(b["replicas"]) == rf and b["leader"] == b["replicas"][0]
            assert {RACKS[s] for s in b["replicas"]} == {"rack-a", "rack-b"}, b  # never all on rack-a
            assert sorted(b["isr"]) == sorted(b["replicas"])
    # leaders spread over every server
    assert {b["leader"] for b in await _placement(rack_conn, pk)} == {0, 1, 2}


async def test_the_cluster_grows_and_new_tables_use_the_new_server(rack_cluster, rack_conn):
    sid = rack_cluster.add_tablet_server(rack="rack-b")
    assert sid == 3
    racks = {**RACKS, 3: "rack-b"}
    nodes = await rack_conn.get_admin().get_server_nodes()
    assert {n.id: n.rack for n in nodes if n.server_type == "TabletServer"} == racks
    path = TablePath("racks", "after_growth")
    await rack_conn.get_admin().create_table(path, TableDescriptor(
        Schema(pa.schema([("v", pa.int64())])), bucket_count=8, properties={"table.replication.factor": "2"}))
    buckets = await _placement(rack_conn, path)
    for b in buckets:  # two racks of two servers: one replica in each
        assert sorted(racks[s] for s in b["replicas"]) == ["rack-a", "rack-b"], b
    assert {b["leader"] for b in buckets} == {0, 1, 2, 3}
    # the new server serves: append and read back through it
    table = await rack_conn.get_table(path)
    writer = table.new_append().create_writer()
    writer.write_arrow(pa.table({"v": pa.array(range(100), pa.int64())}))
    await writer.flush()
    described = await describe_table_json(rack_conn, path)
    assert sum(b["log_end_offset"] for b in described["buckets"]) == 100

    status = _cli("cluster", "status", "--dir", str(rack_cluster.dir), "--json")
    assert status.returncode == 0, status.stdout + status.stderr
    report = json.loads(status.stdout)
    assert report["status"] == "ok"
    assert {s["id"]: s["rack"] for s in report["servers"] if s["type"] == "TabletServer"} == racks
    tables = {t["table"]: t for t in report["tables"]}
    grown = tables["racks.after_growth"]["buckets"]
    assert [(b["leader"], b["replicas"]) for b in grown] == [(b["leader"], b["replicas"]) for b in buckets]
    assert sum(b["log_end_offset"] for b in grown) == 100

    text = _cli("cluster", "status", "--dir", str(rack_cluster.dir))
    assert "tablet-server-3" in text.stdout and "rack rack-b" in text.stdout


async def test_table_describe_json(rack_cluster, rack_conn):
    done = _cli("table", "describe", "racks.pk", "--json", "--bootstrap-servers", rack_cluster.bootstrap_servers)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert (out["table"], out["kind"], out["primary_key"], out["bucket_count"]) == ("racks.pk", "primary_key",
                                                                                     ["k"], 6)
    assert [c["name"] for c in out["columns"]] == ["k", "v"]
    assert len(out["buckets"]) == 6
    b = out["buckets"][0]
    assert set(b) >= {"bucket", "leader", "replicas", "isr", "log_start_offset", "log_end_offset", "local_log"}


async def test_a_server_without_a_rack_makes_placement_refuse(rack_cluster, rack_conn):
    sid = rack_cluster.add_tablet_server()
    try:
        with pytest.raises(FlussError) as e:
            await rack_conn.get_admin().create_table(TablePath("racks", "mixed"), TableDescriptor(
                Schema(pa.schema([("v", pa.int64())])), bucket_count=1))
        assert e.value.error_code == ErrorCode.INVALID_SERVER_RACK_INFO_EXCEPTION
        assert f"[{sid}]" in e.value.message and "tablet-server.rack" in e.value.message
    finally:
        rack_cluster.stop_tablet_server(sid)
