"""Object storage on a real S3 API (moto's server on loopback): ``remote.data.dir`` and the Paimon warehouse are
``s3://`` URLs with Fluss's ``s3.*`` keys. Tiered log segments, KV snapshots and lake tables land in the bucket and
are read back from it: the Python client downloads remote segments with the credentials the coordinator hands
out, a new leader restores its KV state from an S3 snapshot, and pypaimon reads the lake tables."""

from __future__ import annotations

import uuid

import pyarrow as pa
import pytest
import pytest_asyncio
from remote_helpers import ROWS, append_rows, describe_log, scan_ids, wait_until

import fluss
from fluss.fs import s3_filesystem
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.server.cluster import LocalCluster
from fluss.table_report import bucket_states

pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest.fixture(scope="module")
def s3(s3_server):
    """The session's S3 server (tests/conftest.py) with this module's bucket, ``fluss``."""
    s3_server.create_bucket("fluss")
    return s3_server


@pytest.fixture(scope="module")
def s3_cluster(s3, tmp_path_factory):
    config = {
        "remote.data.dir": "s3://fluss/cluster",
        **s3.options(),
        "log.segment.file-size": "64kb",
        "remote.log.task-interval-duration": "1s",
        "kv.snapshot.interval": "1s",
        "datalake.format": "paimon",
        "datalake.paimon.warehouse": "s3://fluss/lake",
    }
    with LocalCluster(tablet_servers=2, server_config=config,
                      directory=tmp_path_factory.mktemp("s3-cluster")) as c:
        yield c


@pytest_asyncio.fixture(loop_scope="session")
async def sconn(s3_cluster):
    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": s3_cluster.bootstrap_servers}))
    yield conn
    await conn.aclose()


@pytest_asyncio.fixture(loop_scope="session")
async def sdb(sconn):
    name = f"s3_{uuid.uuid4().hex[:8]}"
    await sconn.get_admin().create_database(name)
    yield name
    await sconn.get_admin().drop_database(name, ignore_if_not_exists=True, cascade=True)


async def test_log_segments_are_tiered_to_s3_and_read_back_by_the_client(sconn, sdb, s3):
    path = fluss.TablePath(sdb, "events")
    await sconn.get_admin().create_table(path, fluss.TableDescriptor(
        fluss.Schema(ROWS), bucket_count=1, properties={"table.replication.factor": "2"}))
    await append_rows(sconn, path, 0, 40_000)

    async def tiered():
        s = await describe_log(sconn, path)
        return s if s.remote_start == 0 and s.local_start > 0 else None
    state = await wait_until(tiered, 60, "segments on S3")
    info = await sconn.get_admin().get_table_info(path)
    fs = s3_filesystem(s3.options())
    objects = fs.find(f"fluss/cluster/log/{sdb}/events-{info.table_id}/bucket-0")
    assert sum(o.endswith(".log") for o in objects) == state.remote_segments
    assert sum(o.endswith(".manifest") for o in objects) == 1
    # the client has no S3 options of its own: it reads with what GetFileSystemSecurityToken answers
    table = await scan_ids(sconn, path, projection=[0])
    assert table.column("id").to_pylist() == list(range(40_000))


async def test_kv_snapshots_go_to_s3_and_a_new_leader_restores_from_them(sconn, sdb, s3, s3_cluster):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    path = fluss.TablePath(sdb, "accounts")
    await sconn.get_admin().create_table(path, fluss.TableDescriptor(
        fluss.Schema(schema, primary_keys=["id"]), bucket_count=1, properties={"table.replication.factor": "2"}))
    writer = (await sconn.get_table(path)).new_upsert().create_writer()
    writer.upsert_arrow_batch(pa.record_batch({"id": pa.array(range(2000), pa.int64()),
                                               "v": [f"v{i}" for i in range(2000)]}, schema=schema))
    await writer.flush()
    info = await sconn.get_admin().get_table_info(path)
    fs = s3_filesystem(s3.options())
    kv_dir = f"fluss/cluster/kv/{sdb}/accounts-{info.table_id}/bucket-0"

    async def snapshotted():  # recorded by the coordinator, with its files on S3
        resp = await sconn.run(sconn.cluster.admin_call("GetLatestKvSnapshots", pb.GetLatestKvSnapshotsRequest(
            table_path=pb.TablePathPb(database_name=sdb, table_name="accounts"))))
        return [s for s in resp.snapshots if s.log_offset == 2000]
    recorded = await wait_until(snapshotted, 60, "a KV snapshot on S3")
    assert recorded[0].manifest_path.startswith("s3://fluss/cluster/kv/")
    assert any(p.endswith(".json") for p in fs.find(f"{kv_dir}/manifests"))
    assert any(p.endswith(".sst") for p in fs.find(f"{kv_dir}/shared"))
    leader = (await bucket_states(sconn, info))[0].leader
    s3_cluster.kill_tablet_server(leader)  # the other replica has no KV state: it must restore from S3
    try:
        lookuper = (await sconn.get_table(path)).new_lookup().create_lookuper()

        async def served():
            try:
                return await lookuper.lookup({"id": 1999})
            except fluss.FlussError:
                return None
        assert (await wait_until(served, 60, "the new leader to serve lookups"))["v"] == "v1999"
        logs = (s3_cluster.dir / "logs" / f"tablet-server-{1 - leader}.log").read_text()
        assert "restoring" in logs and "from KV snapshot" in logs
    finally:
        s3_cluster.start_tablet_server(leader)


async def test_the_paimon_warehouse_on_s3_is_written_and_read_by_pypaimon(sconn, sdb, s3):
    from fluss.lake.paimon import lake_of_table
    from fluss.lake.tiering import tier_table
    from fluss.lake.union_read import union_read

    path = fluss.TablePath(sdb, "lake_events")
    await sconn.get_admin().create_table(path, fluss.TableDescriptor(
        fluss.Schema(ROWS), bucket_count=2, properties={"table.datalake.enabled": "true"}),
        ignore_if_exists=True)  # creating the lake table on S3 can outlast the client's first attempt
    await append_rows(sconn, path, 0, 3000)
    info = await sconn.get_admin().get_table_info(path)
    props = info.get_properties()
    assert props["table.datalake.paimon.warehouse"] == "s3://fluss/lake"
    assert props["table.datalake.paimon.s3.endpoint"] == s3.endpoint
    await tier_table(sconn, lake_of_table(info), info, None)
    fs = s3_filesystem(s3.options())
    assert any(p.endswith(".parquet") or p.endswith(".orc") for p in fs.find(f"fluss/lake/{sdb}.db/lake_events"))
    # pypaimon alone, with the catalog options of the table
    from pypaimon import CatalogFactory

    options = {k[len("table.datalake.paimon."):]: v for k, v in props.items()
               if k.startswith("table.datalake.paimon.")}
    table = CatalogFactory.create(options).get_table(f"{sdb}.lake_events")
    builder = table.new_read_builder()
    lake_rows = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    assert sorted(lake_rows.column("id").to_pylist()) == list(range(3000))
    await append_rows(sconn, path, 3000, 500)
    union = await union_read(sconn, path)
    assert sorted(union.column("id").to_pylist()) == list(range(3500))

    # a primary-key lake table: its changelog is tiered with row kinds (data files read back from S3)
    accounts = fluss.TablePath(sdb, "lake_accounts")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    await sconn.get_admin().create_table(accounts, fluss.TableDescriptor(
        fluss.Schema(schema, primary_keys=["id"]), bucket_count=1, properties={"table.datalake.enabled": "true"}),
        ignore_if_exists=True)
    writer = (await sconn.get_table(accounts)).new_upsert().create_writer()
    for i in range(100):
        writer.upsert({"id": i, "v": "first"})
    for i in range(0, 100, 2):
        writer.upsert({"id": i, "v": "second"})
    writer.delete({"id": 99})
    await writer.flush()
    info = await sconn.get_admin().get_table_info(accounts)
    await tier_table(sconn, lake_of_table(info), info, None)
    rows = (await union_read(sconn, accounts)).to_pylist()
    assert sorted((r["id"], r["v"]) for r in rows) == [(i, "second" if i % 2 == 0 else "first") for i in range(99)]
