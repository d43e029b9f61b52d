"""The tiered log on a real cluster (remote.data.dir a local folder): leaders upload, every replica trims its
local log, readers go from remote segments into the local log without a seam, earliest is the remote start,
primary-key buckets keep the changelog their KV recovery needs, bad remote files fail reads by name, a
dropped table leaves nothing behind, and manifest commits are taken only from the bucket's registered leader.

The last test is the smoke of the fault tests (``test_tiered_log_faults.py``, ``make remote-long``): a leader
SIGKILLed while it uploads, on this module's cluster."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path

import pyarrow as pa
import pytest
import pytest_asyncio
from remote_helpers import ROWS, append_rows, check_remote_dir, describe_log, scan_ids, wait_until

import fluss
from fluss import ErrorCode
from fluss.fs import remote_log_layout as layout
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.server.cluster import LocalCluster
from fluss.server.zk.client import ZooKeeperClient
from fluss.table_report import bucket_states
from reliability.raw import RawRpc

pytestmark = pytest.mark.asyncio(loop_scope="session")

TIERED = {
    "log.segment.file-size": "64kb",
    "remote.log.task-interval-duration": "1s",
    "kv.snapshot.interval": "1s",
    "log.retention.check-interval": "1s",
    "log.replica.max-lag-time": "3s",
    "metrics.reporters": "prometheus",  # each server on a free port of its own
}


@pytest.fixture(scope="module")
def tiered_cluster(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tiered-cluster")  # kept by pytest: the servers' logs stay readable
    with LocalCluster(tablet_servers=3, server_config=TIERED, directory=directory) as c:
        yield c


@pytest_asyncio.fixture(loop_scope="session")
async def tconn(tiered_cluster):
    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": tiered_cluster.bootstrap_servers,
                                                            "scanner.remote-log.prefetch-num": "2"}))
    yield conn
    await conn.aclose()


@pytest_asyncio.fixture(loop_scope="session")
async def tdb(tconn):
    name = f"tiered_{uuid.uuid4().hex[:8]}"
    await tconn.get_admin().create_database(name)
    yield name
    await tconn.get_admin().drop_database(name, ignore_if_not_exists=True, cascade=True)


async def log_table(conn, db: str, name: str, buckets: int = 1, **props: str) -> fluss.TablePath:
    path = fluss.TablePath(db, name)
    await conn.get_admin().create_table(path, fluss.TableDescriptor(
        fluss.Schema(ROWS), bucket_count=buckets, properties={"table.replication.factor": "3", **props}))
    return path


async def tiered(conn, path, bucket: int = 0, min_local_start: int = 1, max_local_segments: int | None = None):
    """Waits until the bucket has remote segments from offset 0, its local log starts at min_local_start+ and (when
    given) it keeps at most max_local_segments locally: uploads and local deletion run in rounds, so the first
    round after the appends may leave segments that the next rounds tier."""
    async def check():
        s = await describe_log(conn, path, bucket)
        settled = max_local_segments is None or s.local_segments <= max_local_segments
        return s if s.remote_start == 0 and s.local_start >= min_local_start and settled else None
    return await wait_until(check, 60, f"bucket {bucket} of {path} to be tiered")


def coordinator_requests(cluster: LocalCluster, *apis: str) -> float:
    """How many requests of ``apis`` (e.g. ``getRemoteLogManifest``) the coordinator has served (Prometheus)."""
    address = cluster.metrics_endpoints()["coordinator-0"]
    text = urllib.request.urlopen(f"http://{address}/metrics", timeout=10).read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("fluss_coordinator_request_requests_total{")
               and any(f'request="{api}"' in line for api in apis))


async def test_new_tables_leaders_start_with_nothing_remote_without_asking(tconn, tdb, tiered_cluster):
    """The leaders of a new log table and of a new primary-key table start with an empty remote log and no KV
    snapshot without asking the coordinator (GetRemoteLogManifest, GetKvSnapshot): ZooKeeper shows each bucket's
    first leader term with nothing committed. Their leaders tier and snapshot from there. (RF=1: a follower that
    restarts its log at the leader's log start asks too, legitimately.)"""
    asked = ("getRemoteLogManifest", "getKvSnapshot")
    before = coordinator_requests(tiered_cluster, *asked)
    logs = await log_table(tconn, tdb, "fresh", buckets=3, **{"table.replication.factor": "1"})
    keyed = fluss.TablePath(tdb, "fresh_keyed")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    await tconn.get_admin().create_table(keyed, fluss.TableDescriptor(
        fluss.Schema(schema, primary_keys=["id"]), bucket_count=2, properties={"table.replication.factor": "1"}))
    await append_rows(tconn, logs, 0, 60_000)
    writer = (await tconn.get_table(keyed)).new_upsert().create_writer()
    writer.upsert_arrow_batch(pa.record_batch({"id": pa.array(range(1000), pa.int64()),
                                               "v": [f"v{i}" for i in range(1000)]}, schema=schema))
    await writer.flush()
    for b in range(3):
        await tiered(tconn, logs, b, min_local_start=0)  # committed on the empty remote log it started with
    lookuper = (await tconn.get_table(keyed)).new_lookup().create_lookuper()
    assert (await lookuper.lookup({"id": 7}))["v"] == "v7"
    assert await tconn.get_admin().list_offsets(logs, [0, 1, 2], fluss.OffsetSpec.earliest()) == {0: 0, 1: 0, 2: 0}
    assert sorted((await scan_ids(tconn, logs, buckets=3)).column("id").to_pylist()) == list(range(60_000))
    await asyncio.sleep(2.5)  # two more tiering and KV snapshot rounds
    assert coordinator_requests(tiered_cluster, *asked) == before


async def test_a_later_leader_of_a_tiered_bucket_loads_its_remote_log(tconn, tdb, tiered_cluster):
    """A bucket past its first leader term asks for its committed manifest again: its new leader serves the remote
    log the first leader uploaded."""
    path = await log_table(tconn, tdb, "moved_leader")
    await append_rows(tconn, path, 0, 30_000)
    state = await tiered(tconn, path)
    info = await tconn.get_admin().get_table_info(path)
    first = {s.bucket: s.leader for s in await bucket_states(tconn, info)}[0]
    before = coordinator_requests(tiered_cluster, "getRemoteLogManifest")
    await tconn.get_admin().add_server_tag([first], fluss.ServerTag.TEMPORARY_OFFLINE)  # leadership moves off it
    try:
        async def new_leader():  # the coordinator's metadata only (bucket_states also asks the old leader)
            leader = (await tconn.run(tconn.cluster.update_metadata([path]))).tables[0].buckets[0].leader_id
            return leader not in (first, -1)
        await wait_until(new_leader, 30, "a new leader of bucket 0")

        async def remote_log_served():
            s = await describe_log(tconn, path)
            return s if s.remote_start == 0 and s.remote_segments >= state.remote_segments else None
        await wait_until(remote_log_served, 30, "the new leader to serve the remote log")
        assert coordinator_requests(tiered_cluster, "getRemoteLogManifest") > before
        assert await tconn.get_admin().list_offsets(path, [0], fluss.OffsetSpec.earliest()) == {0: 0}
        assert (await scan_ids(tconn, path)).column("id").to_pylist() == list(range(30_000))
    finally:
        await tconn.get_admin().remove_server_tag([first], fluss.ServerTag.TEMPORARY_OFFLINE)


async def test_history_is_read_from_remote_segments_then_from_the_local_log(tconn, tdb):
    path = await log_table(tconn, tdb, "events", buckets=2)
    await append_rows(tconn, path, 0, 60_000)
    states = [await tiered(tconn, path, b, max_local_segments=2) for b in (0, 1)]
    for s in states:
        # segment counts depend on how well the writer's batches compress (bigger batches under load)
        assert s.remote_end >= s.local_start > 0 and s.remote_segments >= 1 and s.remote_size > 0
        assert s.local_segments <= 2  # table.log.tiered.local-segments
    admin = tconn.get_admin()
    assert await admin.list_offsets(path, [0, 1], fluss.OffsetSpec.earliest()) == {0: 0, 1: 0}
    latest = await admin.list_offsets(path, [0, 1], fluss.OffsetSpec.latest())
    assert sum(latest.values()) == 60_000

    table = await scan_ids(tconn, path, buckets=2, projection=[0, 2])  # projected, like the server would
    assert table.column_names == ["id", "score"]
    assert sorted(table.column("id").to_pylist()) == list(range(60_000))
    assert table.column("score").to_pylist() == [i / 4 for i in table.column("id").to_pylist()]

    # from an offset inside a remote segment: exactly from there, then on into the local log
    start = states[0].local_start // 2
    part = await scan_ids(tconn, path, buckets=1, start=start)
    ids0 = (await scan_ids(tconn, path, buckets=1)).column("id").to_pylist()
    assert part.column("id").to_pylist() == ids0[start:] and len(ids0) == latest[0]

    # record scanner (poll) from the remote start
    scanner = await (await tconn.get_table(path)).new_scan().create_log_scanner()
    scanner.subscribe(0, fluss.EARLIEST_OFFSET)
    seen: list[int] = []
    for _ in range(1000):
        if len(seen) >= latest[0]:
            break
        records = await scanner.poll(5000)
        seen += [r.row["id"] for r in records]
        assert [r.offset for r in records] == list(range(len(seen) - records.count(), len(seen)))
    assert seen == ids0


@pytest.mark.parametrize("log_format,old", [("ARROW", 60_000), ("INDEXED", 20_000)])  # several segments each
async def test_remote_batches_of_an_older_schema_id_and_of_a_row_format_are_read_as_the_reader_s_columns(
        tconn, tdb, log_format, old):
    """Remote segments hold the batches as stored: of the schema id they were written with (ALTER TABLE ADD since)
    and in the table's log format. The scanner decodes them as its own columns (added ones null for older rows),
    projected as the leader would project a fetch (ARROW) or on the client (INDEXED)."""
    path = await log_table(tconn, tdb, f"evolved_{log_format.lower()}", **{"table.log.format": log_format})
    await append_rows(tconn, path, 0, old)
    await tconn.get_admin().alter_table(path, [fluss.TableChange.add_column("note", pa.string())])
    table = await tconn.get_table(path)
    assert table.get_table_info().row_schema.to_arrow().names == ["id", "name", "score", "note"]
    writer = table.new_append().create_writer()
    total = old + 10_000
    for start in range(old, total, 1000):
        ids = list(range(start, start + 1000))
        writer.write_arrow_batch(pa.record_batch(
            {"id": pa.array(ids, pa.int64()), "name": [f"name-{i:08d}" for i in ids], "score": [i / 4 for i in ids],
             "note": [f"n{i}" for i in ids]},
            schema=pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()),
                              ("score", pa.float64()), ("note", pa.string())])))
    await writer.flush()
    await tiered(tconn, path, min_local_start=1)  # the first rows (schema id 1) are in remote segments only

    expected_notes = [None] * old + [f"n{i}" for i in range(old, total)]
    # a record scanner created after the ALTER (every format), projected to id and note
    scanner = await table.new_scan().project([0, 3]).create_log_scanner()
    scanner.subscribe(0, fluss.EARLIEST_OFFSET)
    rows: list[dict] = []
    for _ in range(1000):
        if len(rows) >= total:
            break
        rows += [r.row for r in await scanner.poll(5000)]
    await scanner.aclose()
    assert [r["id"] for r in rows] == list(range(total)) and set(rows[0]) == {"id", "note"}
    assert [r["note"] for r in rows] == expected_notes

    if log_format == "ARROW":  # the Arrow batch scanners read ARROW logs only (as Fluss's)
        got = await scan_ids(tconn, path, projection=[0, 3])  # projected as the leader projects a fetch
        assert got.column_names == ["id", "note"] and got.column("id").to_pylist() == list(range(total))
        assert got.column("note").to_pylist() == expected_notes
        whole = await scan_ids(tconn, path)  # every column, from the remote start
        assert whole.column_names == ["id", "name", "score", "note"] and whole.num_rows == total
        assert whole.column("score").to_pylist()[:3] == [0.0, 0.25, 0.5] and whole.column("note")[0].as_py() is None


async def test_followers_trim_their_local_log_below_the_leaders_tiered_offset(tconn, tdb, tiered_cluster):
    path = await log_table(tconn, tdb, "trimmed")
    await append_rows(tconn, path, 0, 40_000)
    state = await tiered(tconn, path, max_local_segments=2)  # table.log.tiered.local-segments

    def segments_per_server() -> dict[int, int]:
        out = {}
        for sid in range(3):
            logs = list((tiered_cluster.dir / f"tablet-server-{sid}" / "data" / tdb).glob("trimmed-*/bucket-0/*.log"))
            out[sid] = len(logs)
        return out

    async def trimmed():
        counts = segments_per_server()
        return counts if all(n <= 3 for n in counts.values()) else None

    counts = await wait_until(trimmed, 30, "followers to trim their local logs")
    assert len(counts) == 3 and state.local_segments <= 2


async def test_a_follower_that_was_away_restarts_at_the_leaders_log_start(tconn, tdb, tiered_cluster):
    path = await log_table(tconn, tdb, "away")
    await append_rows(tconn, path, 0, 5_000)
    from fluss.table_report import bucket_states

    info = await tconn.get_admin().get_table_info(path)
    leader = (await bucket_states(tconn, info))[0].leader
    follower = next(s for s in range(3) if s != leader)
    tiered_cluster.stop_tablet_server(follower)
    try:
        await append_rows(tconn, path, 5_000, 45_000)
        await tiered(tconn, path, min_local_start=6_000)  # the leader no longer has what the follower lacks
    finally:
        tiered_cluster.start_tablet_server(follower)

    async def back_in_isr():
        states = await bucket_states(tconn, info)
        return follower in states[0].isr
    await wait_until(back_in_isr, 60, f"server {follower} to rejoin the ISR")
    # it restarted at the leader's log start with the epochs and writer state of the offsets before it, from remote
    server_log = (tiered_cluster.dir / "logs" / f"tablet-server-{follower}.log").read_text()
    assert any(f"table_id={info.table_id}, bucket=0) at offset" in line and "aux state from remote storage" in line
               and "writer(s) as of offset" in line for line in server_log.splitlines())
    # the leader goes away: the returned follower (or the other one) leads, and nothing is missing
    tiered_cluster.stop_tablet_server(leader)
    try:
        ids = (await scan_ids(tconn, path)).column("id").to_pylist()
        assert ids == list(range(50_000))
    finally:
        tiered_cluster.start_tablet_server(leader)


async def test_primary_key_changelog_stays_local_from_the_latest_kv_snapshot(tconn, tdb, tiered_cluster):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    path = fluss.TablePath(tdb, "accounts")
    await tconn.get_admin().create_table(path, fluss.TableDescriptor(
        fluss.Schema(schema, primary_keys=["id"]), bucket_count=1, properties={"table.replication.factor": "3"}))
    writer = (await tconn.get_table(path)).new_upsert().create_writer()
    for round_ in range(6):
        writer.upsert_arrow_batch(pa.record_batch({"id": pa.array(range(5000), pa.int64()),
                                                   "v": [f"r{round_}-{i:06d}-" * 4 for i in range(5000)]},
                                                  schema=schema))
        await writer.flush()
    await tiered(tconn, path)
    # the changelog from the remote start holds every change (a record scanner: the Arrow batch scanners refuse
    # primary-key tables)
    scanner = await (await tconn.get_table(path)).new_scan().create_log_scanner()
    scanner.subscribe(0, fluss.EARLIEST_OFFSET)
    changes: list[str] = []
    for _ in range(1000):
        if len(changes) >= 30_000 + 25_000:
            break
        changes += [r.change_type.short_string() for r in await scanner.poll(5000)]
    await scanner.aclose()
    assert len(changes) == 30_000 + 25_000  # 5000 inserts, then -U/+U pairs for 5 rounds of updates
    assert changes[:5000] == ["+I"] * 5000 and changes.count("-U") == changes.count("+U") == 25_000
    # a new leader restores the KV snapshot and replays the local changelog: every key with its last value
    from fluss.table_report import bucket_states

    info = await tconn.get_admin().get_table_info(path)
    leader = (await bucket_states(tconn, info))[0].leader
    tiered_cluster.kill_tablet_server(leader)
    try:
        lookuper = (await tconn.get_table(path)).new_lookup().create_lookuper()

        async def all_found():
            try:
                got = [await lookuper.lookup({"id": i}) for i in (0, 2500, 4999)]
            except fluss.FlussError:
                return None
            return got if all(g is not None for g in got) else None
        got = await wait_until(all_found, 60, "the new leader to serve lookups")
        assert [g["v"] for g in got] == [f"r5-{i:06d}-" * 4 for i in (0, 2500, 4999)]
    finally:
        tiered_cluster.start_tablet_server(leader)


async def test_a_corrupt_or_missing_remote_segment_fails_the_read_naming_it(tconn, tdb, tiered_cluster):
    path = await log_table(tconn, tdb, "damaged")
    await append_rows(tconn, path, 0, 30_000)
    state = await tiered(tconn, path)
    info = await tconn.get_admin().get_table_info(path)
    bucket_dir = tiered_cluster.dir / "remote" / layout.LOG_DIR / tdb / f"damaged-{info.table_id}" / "bucket-0"
    data_files = sorted(bucket_dir.glob("*/*.log"), key=lambda p: p.name)
    assert len(data_files) == state.remote_segments
    first = data_files[0]
    original = first.read_bytes()
    damaged = bytearray(original)
    damaged[len(damaged) // 2] ^= 0xFF
    first.write_bytes(bytes(damaged))
    try:
        with pytest.raises(fluss.FlussError) as e:
            await scan_ids(tconn, path)
        assert first.parent.name in e.value.message and "corrupt" in e.value.message
    finally:
        first.write_bytes(original)
    first.rename(first.with_suffix(".moved"))
    try:
        with pytest.raises(fluss.FlussError) as e:
            await scan_ids(tconn, path)
        assert first.parent.name in e.value.message and "does not exist" in e.value.message
    finally:
        first.with_suffix(".moved").rename(first)
    assert (await scan_ids(tconn, path)).column("id").to_pylist() == list(range(30_000))


async def test_describe_shows_the_local_and_the_remote_log(tconn, tdb, tiered_cluster):
    path = await log_table(tconn, tdb, "described")
    await append_rows(tconn, path, 0, 30_000)
    state = await tiered(tconn, path)
    out = subprocess.run([sys.executable, "-m", "fluss.cli", "table", "describe", f"{tdb}.described",
                          "--bootstrap-servers", tiered_cluster.bootstrap_servers],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout[out.stdout.index("bucket  leader"):].splitlines()
    header = [h.replace(" ", "_") for h in
              ("bucket", "leader", "replicas", "isr", "log start", "log end", "local start", "local end",
               "local size", "local segs", "remote start", "remote end", "remote size", "remote segs")]
    assert lines[0].split() == [w for h in header for w in h.split("_")]
    row = dict(zip(header, lines[1].split(), strict=True))
    assert row["log_start"] == "0" and row["log_end"] == "30000" and row["remote_start"] == "0"
    assert int(row["local_start"]) == state.local_start <= int(row["remote_end"])
    assert row["remote_size"].endswith("KB") and int(row["remote_segs"]) == state.remote_segments


async def test_the_leaders_metrics_show_its_remote_log_and_the_copies(tconn, tdb, tiered_cluster):
    path = await log_table(tconn, tdb, "measured")
    await append_rows(tconn, path, 0, 30_000)
    state = await tiered(tconn, path, max_local_segments=2)
    info = await tconn.get_admin().get_table_info(path)
    leader = {s.bucket: s.leader for s in await bucket_states(tconn, info)}[0]
    node = next(n for n in tiered_cluster.server_nodes() if n.server_type == "TabletServer" and n.id == leader)
    assert node.metrics_port > 0

    def scrape() -> dict[str, float]:
        text = urllib.request.urlopen(f"http://{node.host}:{node.metrics_port}/metrics", timeout=10).read().decode()
        out = {}
        for line in text.splitlines():
            if line.startswith("fluss_") and f'database="{tdb}"' in line and 'table="measured"' in line:
                name, value = line.rsplit(" ", 1)
                out[name.split("{")[0] + ("[b0]" if 'bucket="0"' in name else "")] = float(value)
        return out

    async def current():  # the gauges are read at scrape time; the leader may have tiered a last segment meanwhile
        m = scrape()
        s = await describe_log(tconn, path)
        return m if m.get("fluss_tabletserver_table_bucket_remoteLog_numSegments[b0]") == s.remote_segments else None
    m = await wait_until(current, 30, "the leader's metrics to show its remote log")
    assert m["fluss_tabletserver_table_bucket_remoteLog_endOffset[b0]"] >= state.remote_end
    assert m["fluss_tabletserver_table_bucket_remoteLog_size[b0]"] >= state.remote_size > 0
    assert m["fluss_tabletserver_table_remoteLogCopyRequests_total"] >= state.remote_segments
    assert m["fluss_tabletserver_table_remoteLogCopyBytes_total"] >= state.remote_size
    assert m["fluss_tabletserver_table_remoteLogCopyError_total"] == 0


async def test_dropping_a_table_removes_its_remote_log(tconn, tdb, tiered_cluster):
    path = await log_table(tconn, tdb, "dropped")
    await append_rows(tconn, path, 0, 40_000)
    await tiered(tconn, path)
    info = await tconn.get_admin().get_table_info(path)
    remote_dir = tiered_cluster.dir / "remote" / layout.LOG_DIR / tdb / f"dropped-{info.table_id}"
    assert any(remote_dir.rglob("*.log"))
    await tconn.get_admin().drop_table(path)

    async def gone():
        return not any(Path(remote_dir).rglob("*.log"))
    await wait_until(gone, 30, "the remote log of the dropped table to be deleted")
    await asyncio.sleep(0)


async def test_manifest_commits_are_taken_only_from_the_registered_leader(tconn, tdb, tiered_cluster):
    """CommitRemoteLogManifest changes what readers see and what leaders delete: the coordinator refuses it from
    anyone but the registered incarnation of the bucket's leader, and refuses a manifest outside
    remote.data.dir/log/ or with offsets that make no sense (docs/reliability.md)."""
    path = await log_table(tconn, tdb, "spoofed")
    await append_rows(tconn, path, 0, 30_000)
    await tiered(tconn, path)
    info = await tconn.get_admin().get_table_info(path)
    leader = {s.bucket: s.leader for s in await bucket_states(tconn, info)}[0]
    zk = ZooKeeperClient(tiered_cluster.zookeeper_address)
    zk.start()
    try:
        before = zk.get_remote_log_manifest(info.table_id, -1, 0)
        leader_epoch = zk.get_leader_and_isr(info.table_id, -1, 0)[0].leader_epoch
        server_epoch = zk.tablet_server_epoch(leader)
        other = next(sid for sid in tiered_cluster.live_tablet_servers() if sid != leader)
        remote_log = f"{tiered_cluster.dir / 'remote'}/{layout.LOG_DIR}/{tdb}/spoofed-{info.table_id}/bucket-0"

        def commit(manifest_path: str = f"{remote_log}/metadata/forged.manifest", start: int = 0,
                   end: int = 10**9, count: int = 1, **fields) -> pb.ErrorInfo:
            request = dict(server_id=leader, server_epoch=server_epoch, leader_epoch=leader_epoch,
                           previous_manifest_path=before.manifest_path)
            request.update(fields)
            with RawRpc(tiered_cluster.bootstrap_servers) as raw:
                return raw.coordinator.CommitRemoteLogManifest(pb.CommitRemoteLogManifestRequest(
                    manifest=pb.RemoteLogManifestPb(
                        table_id=info.table_id, partition_id=-1, bucket_id=0, remote_log_manifest_path=manifest_path,
                        remote_log_start_offset=start, remote_log_end_offset=end, remote_log_size=1,
                        segment_count=count), **request), timeout=10).error

        refused = [
            (commit(server_epoch=0), ErrorCode.SERVER_NOT_EXIST_EXCEPTION),  # no registration epoch
            (commit(server_epoch=server_epoch + 1), ErrorCode.SERVER_NOT_EXIST_EXCEPTION),
            (commit(server_id=other, server_epoch=zk.tablet_server_epoch(other)),
             ErrorCode.FENCED_LEADER_EPOCH_EXCEPTION),  # another live server, registered, not the leader
            (commit(leader_epoch=leader_epoch + 5), ErrorCode.FENCED_LEADER_EPOCH_EXCEPTION),
            (commit(manifest_path="file:///etc/passwd"), ErrorCode.INVALID_UPDATE_VERSION_EXCEPTION),
            (commit(manifest_path=f"{remote_log}/../../../../kv/x.manifest"),
             ErrorCode.INVALID_UPDATE_VERSION_EXCEPTION),
            (commit(start=500, end=100), ErrorCode.INVALID_UPDATE_VERSION_EXCEPTION),
            (commit(start=-7), ErrorCode.INVALID_UPDATE_VERSION_EXCEPTION),
        ]
        for error, code in refused:
            assert error.code == code, error
        after = zk.get_remote_log_manifest(info.table_id, -1, 0)  # the leader's own rounds may have moved on
        assert after.manifest_path.startswith(f"{remote_log}/metadata/") and "forged" not in after.manifest_path
        assert after.remote_log_start_offset == 0 and after.remote_log_end_offset <= 30_000
    finally:
        zk.close()
    assert (await scan_ids(tconn, path)).column("id").to_pylist() == list(range(30_000))


async def test_fault_smoke_a_leader_killed_while_uploading_loses_and_duplicates_nothing(tconn, tdb, tiered_cluster):
    path = await log_table(tconn, tdb, "killed")
    info = await tconn.get_admin().get_table_info(path)
    await append_rows(tconn, path, 0, 30_000)  # ~14 segments of 64 KiB: uploads run in the next rounds
    leader = {s.bucket: s.leader for s in await bucket_states(tconn, info)}[0]
    await asyncio.sleep(0.6)
    tiered_cluster.kill_tablet_server(leader)  # SIGKILL, mid-round or between rounds
    try:
        await append_rows(tconn, path, 30_000, 10_000)  # acknowledged by the next leader
    finally:
        tiered_cluster.start_tablet_server(leader)
    await tiered(tconn, path, max_local_segments=2)
    assert (await scan_ids(tconn, path)).column("id").to_pylist() == list(range(40_000))  # each record once
    assert (await tconn.get_admin().list_offsets(path, [0], fluss.OffsetSpec.earliest())) == {0: 0}
    tablet_dir = tiered_cluster.dir / "remote" / layout.LOG_DIR / tdb / f"killed-{info.table_id}" / "bucket-0"

    async def only_committed_files():  # the killed upload's leftovers go when a new leader term loads the manifest
        try:
            return check_remote_dir(tablet_dir) == (await describe_log(tconn, path)).remote_segments
        except AssertionError:
            return False
    await wait_until(only_committed_files, 30, "the remote directory to hold exactly the committed segments")
