"""Primary-key state across failures: a new leader rebuilds the KV state from the latest KV snapshot plus the
changelog and serves exactly what was written. Own cluster: RF=3, KV snapshots every second."""

from __future__ import annotations

import asyncio
import random
import time

import pyarrow as pa
import pytest
import pytest_asyncio

import fluss
from fluss import Schema, TableDescriptor, TablePath
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.server.cluster import LocalCluster

pytestmark = pytest.mark.asyncio(loop_scope="session")

CONFIG = {"kv.snapshot.interval": "1s", "default.replication.factor": "3", "log.replica.max-lag-time": "3s"}
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("score", pa.int64())])


@pytest.fixture(scope="module")
def kv_cluster(tmp_path_factory):
    directory = tmp_path_factory.mktemp("kv-cluster")  # kept by pytest: the server logs of a failing run
    with LocalCluster(tablet_servers=3, server_config=CONFIG, zookeeper_session_timeout="2s",
                      directory=directory) as c:
        yield c


@pytest.fixture(autouse=True)
def _restart_stopped_processes(kv_cluster):
    """A failing fault test must not leave a server down for the next test."""
    yield
    kv_cluster.restart_stopped()


@pytest_asyncio.fixture(loop_scope="session")
async def kconn(kv_cluster):
    conn = await fluss.FlussConnection.create(fluss.Config({
        "bootstrap.servers": kv_cluster.bootstrap_servers, "writer.batch-timeout": "5ms", "request-timeout": "10s"}))
    yield conn
    await conn.aclose()


async def _apply_random_ops(writer, model: dict[int, dict], rng: random.Random, n: int, tier: str | None = None,
                            altered: bool = False) -> None:
    """``tier``: written in the column an ALTER TABLE ADD added (a writer of the new schema); ``altered``: the
    model has that column (null for rows of a writer of the old schema)."""
    handles = []
    for _ in range(n):
        key = rng.randrange(200)
        if rng.random() < 0.2:
            handles.append(writer.delete({"id": key}))
            model.pop(key, None)
        else:
            row = {"id": key, "name": f"n{rng.randrange(1000)}", "score": rng.randrange(10**6)}
            handles.append(writer.upsert({**row, "tier": tier} if tier is not None else row))
            model[key] = {**row, "tier": tier} if altered else row
    await writer.flush()
    for handle in handles:  # every write was acknowledged (a failure here names its cause)
        await handle.wait()


async def _state(table) -> dict[int, dict]:
    lookuper = table.new_lookup().create_lookuper()
    rows = await asyncio.gather(*(lookuper.lookup({"id": k}) for k in range(200)))
    return {k: r for k, r in zip(range(200), rows, strict=True) if r is not None}


async def _state_once_served(table, timeout_s: float = 30) -> dict[int, dict]:
    """The table's state as soon as its (new or restarted) leader serves lookups again."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return await _state(table)
        except fluss.FlussError:
            assert time.monotonic() < deadline, "the bucket did not serve lookups again in time"
            await asyncio.sleep(0.2)


async def _leader(conn, path) -> int:
    return (await conn.run(conn.cluster.update_metadata([path]))).tables[0].buckets[0].leader_id


async def _snapshot_offset(conn, path) -> int:
    resp = await conn.run(conn.cluster.admin_call("GetLatestKvSnapshots",
                                                  pb.GetLatestKvSnapshotsRequest(table_path=path.to_pb())))
    return max((s.log_offset for s in resp.snapshots), default=-1)


async def test_new_leader_restores_snapshot_and_replays_the_changelog(kv_cluster, kconn):
    admin = kconn.get_admin()
    await admin.create_database("kv", ignore_if_exists=True)
    path = TablePath("kv", "users")
    await admin.create_table(path, TableDescriptor(Schema(SCHEMA, primary_keys=["id"]), bucket_count=1))
    table = await kconn.get_table(path)
    writer = table.new_upsert().create_writer()
    rng, model = random.Random(7), {}
    await _apply_random_ops(writer, model, rng, 600)

    deadline = time.monotonic() + 20
    while (snap := await _snapshot_offset(kconn, path)) <= 0:
        assert time.monotonic() < deadline, "no KV snapshot was recorded by the coordinator"
        await asyncio.sleep(0.3)
    # ALTER TABLE ADD after the snapshot: its values and part of the changelog have schema id 1, the rest id 2
    await admin.alter_table(path, [fluss.TableChange.add_column("tier", pa.string())])
    model = {k: {**r, "tier": None} for k, r in model.items()}
    table = await kconn.get_table(path)
    await _apply_random_ops(writer, model, rng, 150, altered=True)  # changes after the snapshot: replayed from
    writer = table.new_upsert().create_writer()  # the log, by a writer of each schema id
    await _apply_random_ops(writer, model, rng, 150, tier="gold", altered=True)
    assert await _state(table) == model

    old_leader = await _leader(kconn, path)
    await asyncio.to_thread(kv_cluster.kill_tablet_server, old_leader)
    deadline = time.monotonic() + 20
    while (new_leader := await _leader(kconn, path)) in (old_leader, -1):
        assert time.monotonic() < deadline, "no new leader was elected"
        await asyncio.sleep(0.2)
    state = await _state_once_served(table)
    assert state == model
    assert (await admin.get_table_stats(path)).row_count == len(model)  # snapshot's count + the replayed changes
    log_text = (kv_cluster.dir / "logs" / f"tablet-server-{new_leader}.log").read_text()
    assert "from KV snapshot" in log_text, "the new leader did not restore from the snapshot"

    await _apply_random_ops(writer, model, rng, 200, tier="silver", altered=True)  # the new leader serves writes
    assert await _state(table) == model
    await asyncio.to_thread(kv_cluster.start_tablet_server, old_leader)
    assert snap > 0


async def test_restarted_leader_recovers_the_same_state(kv_cluster, kconn):
    admin = kconn.get_admin()
    await admin.create_database("kv", ignore_if_exists=True)
    path = TablePath("kv", "scores")
    await admin.create_table(path, TableDescriptor(Schema(SCHEMA, primary_keys=["id"]), bucket_count=1,
                                                   properties={"table.replication.factor": "1"}))
    table = await kconn.get_table(path)
    writer = table.new_upsert().create_writer()
    rng, model = random.Random(11), {}
    await _apply_random_ops(writer, model, rng, 500)
    leader = await _leader(kconn, path)
    await asyncio.to_thread(kv_cluster.kill_tablet_server, leader)  # RF=1: the bucket waits for this server
    await asyncio.to_thread(kv_cluster.start_tablet_server, leader)
    state = await _state_once_served(table)
    assert state == model
    assert (await admin.get_table_stats(path)).row_count == len(model)


async def test_snapshot_scan_reads_current_rows_with_the_offset_to_continue_from(kv_cluster, kconn):
    admin = kconn.get_admin()
    await admin.create_database("kv", ignore_if_exists=True)
    path = TablePath("kv", "scanned")
    await admin.create_table(path, TableDescriptor(Schema(SCHEMA, primary_keys=["id"]), bucket_count=1))
    table = await kconn.get_table(path)
    writer = table.new_upsert().create_writer()
    rng, model = random.Random(3), {}
    await _apply_random_ops(writer, model, rng, 300)
    scanner = table.new_scan().limit(1000).create_bucket_batch_scanner(
        fluss.TableBucket(table.get_table_info().table_id, 0))
    rows = (await scanner.to_arrow()).to_pylist()
    assert {r["id"]: r for r in rows} == model
    end = (await admin.list_offsets(path, [0], fluss.OffsetSpec.latest()))[0]
    assert scanner.log_offset == end  # the changelog continues exactly after the snapshot
    limited = table.new_scan().limit(5).project_by_name(["id"]).create_bucket_batch_scanner(
        fluss.TableBucket(table.get_table_info().table_id, 0))
    got = (await limited.to_arrow())
    assert got.num_rows == 5 and got.schema.names == ["id"]
    assert set(got.column("id").to_pylist()) <= set(model)


NESTED = pa.schema([pa.field("id", pa.int64(), nullable=False),
                    ("tags", pa.list_(pa.string())),
                    ("attrs", pa.map_(pa.string(), pa.list_(pa.int32()))),
                    ("point", pa.struct([("x", pa.float64()), ("labels", pa.map_(pa.int32(), pa.string()))]))])


def _nested_row(rng: random.Random, key: int) -> dict:
    return {"id": key, "tags": [f"t{rng.randrange(9)}" for _ in range(rng.randrange(4))] if rng.random() < .9 else None,
            "attrs": {f"k{j}": [rng.randrange(100)] * j for j in range(rng.randrange(3))},
            "point": {"x": rng.random(), "labels": {rng.randrange(5): None if rng.random() < .3 else "l"}}}


async def test_nested_values_survive_a_snapshot_restore_and_changelog_replay(kv_cluster, kconn):
    admin = kconn.get_admin()
    await admin.create_database("kv", ignore_if_exists=True)
    path = TablePath("kv", "nested")
    await admin.create_table(path, TableDescriptor(Schema(NESTED, primary_keys=["id"]), bucket_count=1))
    table = await kconn.get_table(path)
    writer = table.new_upsert().create_writer()
    rng, model = random.Random(5), {}

    async def ops(n: int) -> None:
        for _ in range(n):
            key = rng.randrange(100)
            if rng.random() < 0.15:
                writer.delete({"id": key})
                model.pop(key, None)
            else:
                model[key] = _nested_row(rng, key)
                writer.upsert(model[key])
        await writer.flush()

    def as_read(row: dict) -> dict:
        return {**row, "attrs": list(row["attrs"].items()),
                "point": {**row["point"], "labels": list(row["point"]["labels"].items())}}

    async def state() -> dict:
        lookuper = table.new_lookup().create_lookuper()
        rows = await asyncio.gather(*(lookuper.lookup({"id": k}) for k in range(100)))
        return {k: r for k, r in enumerate(rows) if r is not None}

    await ops(400)
    deadline = time.monotonic() + 20
    while await _snapshot_offset(kconn, path) <= 0:
        assert time.monotonic() < deadline, "no KV snapshot was recorded by the coordinator"
        await asyncio.sleep(0.3)
    await ops(150)  # replayed from the changelog after the restore
    want = {k: as_read(v) for k, v in model.items()}
    assert await state() == want

    old_leader = await _leader(kconn, path)
    await asyncio.to_thread(kv_cluster.kill_tablet_server, old_leader)
    deadline = time.monotonic() + 20
    while await _leader(kconn, path) in (old_leader, -1):
        assert time.monotonic() < deadline, "no new leader was elected"
        await asyncio.sleep(0.2)
    deadline = time.monotonic() + 30
    while True:
        try:
            got = await state()
            break
        except fluss.FlussError:
            assert time.monotonic() < deadline, "the bucket did not serve lookups again in time"
            await asyncio.sleep(0.2)
    assert got == want
    await asyncio.to_thread(kv_cluster.start_tablet_server, old_leader)
