"""Faults of the tiered log on real processes, each on a cluster of its own, checked afterwards against what was
acknowledged: leaders killed (SIGKILL) while uploads run, leadership moved during uploads, and remote storage
(a real S3 API) unreachable for a while. Nothing acknowledged is lost, nothing is read twice, and the remote log
holds exactly what its committed manifest names.

These take minutes (three clusters, repeated kills, a 30 s+ outage): they are marked ``long`` and run by
``make remote-long`` (``pytest -m long tests/remote``) and ``make test-long``, not by ``make test``, which runs their smoke
(a leader killed while it uploads, on the shared tiered cluster: ``test_tiered_log.py``)."""

from __future__ import annotations

import asyncio
import random

import pytest
from remote_helpers import ROWS, TcpProxy, append_rows, check_remote_dir, describe_log, scan_ids, wait_until

import fluss
from fluss.fs import remote_log_layout as layout
from fluss.server.cluster import LocalCluster
from fluss.table_report import bucket_states

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.long]

FAST = {
    "log.segment.file-size": "64kb",
    "remote.log.task-interval-duration": "500ms",
    "log.replica.max-lag-time": "3s",
}


async def create(conn, name: str, buckets: int) -> fluss.TablePath:
    path = fluss.TablePath("fluss", name)
    await conn.get_admin().create_table(path, fluss.TableDescriptor(
        fluss.Schema(ROWS), bucket_count=buckets, properties={"table.replication.factor": "3"}))
    return path


async def leaders(conn, path) -> dict[int, int]:
    info = await conn.get_admin().get_table_info(path)
    return {s.bucket: s.leader for s in await bucket_states(conn, info)}


async def test_leaders_killed_while_uploading_lose_and_duplicate_nothing(tmp_path):
    rng = random.Random(15)
    with LocalCluster(tablet_servers=3, server_config=FAST, directory=tmp_path / "cluster",
                      zookeeper_session_timeout="2s") as cluster:
        conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": cluster.bootstrap_servers,
                                                                "request-timeout": "60s"}))
        try:
            path = await create(conn, "killed", buckets=2)
            written = 0
            for _ in range(4):
                await append_rows(conn, path, written, 30_000)  # acknowledged (acks=all)
                written += 30_000
                await asyncio.sleep(rng.uniform(0.3, 1.2))  # uploads of the new segments are under way
                victim = (await leaders(conn, path))[rng.randrange(2)]
                cluster.kill_tablet_server(victim)
                await asyncio.sleep(rng.uniform(0.5, 2.5))
                cluster.start_tablet_server(victim)
            for b in (0, 1):
                await wait_until(lambda b=b: _tiered_from_zero(conn, path, b), 60, f"bucket {b} tiered")
            table = await scan_ids(conn, path, buckets=2)
            assert sorted(table.column("id").to_pylist()) == list(range(written))  # each record once
            assert (await conn.get_admin().list_offsets(path, [0, 1], fluss.OffsetSpec.earliest())) == {0: 0, 1: 0}
            # a last, undisturbed leader term has removed every leftover of the killed uploads
            info = await conn.get_admin().get_table_info(path)
            for b in (0, 1):
                tablet_dir = cluster.dir / "remote" / layout.LOG_DIR / "fluss" / f"killed-{info.table_id}" / f"bucket-{b}"
                victim = (await leaders(conn, path))[b]
                cluster.stop_tablet_server(victim)  # a new leader term (graceful: controlled shutdown)
                cluster.start_tablet_server(victim)
                await wait_until(lambda b=b: _tiered_from_zero(conn, path, b), 60, f"bucket {b} tiered again")
                await asyncio.sleep(1.5)
                assert check_remote_dir(tablet_dir) == (await describe_log(conn, path, b)).remote_segments
        finally:
            await conn.aclose()


async def _tiered_from_zero(conn, path, bucket):
    try:
        s = await describe_log(conn, path, bucket)
    except fluss.FlussError:
        return None
    return s if s.remote_start == 0 and s.local_start > 0 else None


async def test_leadership_moved_during_uploads_continues_from_the_committed_manifest(tmp_path):
    with LocalCluster(tablet_servers=3, server_config=FAST, directory=tmp_path / "cluster") as cluster:
        conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": cluster.bootstrap_servers}))
        try:
            path = await create(conn, "moved", buckets=1)
            await append_rows(conn, path, 0, 40_000)
            first = (await leaders(conn, path))[0]
            await asyncio.sleep(0.4)
            cluster.stop_tablet_server(first)  # leadership moves (controlled shutdown) while segments upload
            await append_rows(conn, path, 40_000, 40_000)
            second = (await leaders(conn, path))[0]
            assert second != first
            s = await wait_until(lambda: _tiered_from_zero(conn, path, 0), 60, "the new leader to tier")
            assert s.remote_end > 40_000
            cluster.start_tablet_server(first)
            assert (await scan_ids(conn, path)).column("id").to_pylist() == list(range(80_000))
        finally:
            await conn.aclose()


async def test_remote_storage_unreachable_for_a_while_keeps_the_log_local_and_loses_nothing(
        tmp_path, s3_server, s3_bucket):
    proxy = TcpProxy(s3_server.port)
    config = {**FAST, **s3_server.options(endpoint=f"http://127.0.0.1:{proxy.port}"),
              "remote.data.dir": f"s3://{s3_bucket}/cluster"}
    try:
        with LocalCluster(tablet_servers=3, server_config=config, directory=tmp_path / "cluster") as cluster:
            conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": cluster.bootstrap_servers,
                                                                    **s3_server.options()}))
            try:
                path = await create(conn, "outage", buckets=1)
                await append_rows(conn, path, 0, 30_000)
                before = await wait_until(lambda: _tiered_from_zero(conn, path, 0), 60, "first uploads")
                proxy.cut()
                await append_rows(conn, path, 30_000, 60_000)  # writes go on while the store is away

                async def warned():
                    logs = "".join(p.read_text() for p in (cluster.dir / "logs").glob("tablet-server-*.log"))
                    return "keeps growing until remote storage is back" in logs
                await wait_until(warned, 90, "the leader to warn that the store is unreachable")
                during = await describe_log(conn, path, 0)
                assert during.remote_end <= 30_000 + 20_000 and during.local_segments > before.local_segments + 3
                assert during.local_start == before.local_start  # nothing uncommitted was deleted
                proxy.restore()

                async def caught_up():
                    s = await describe_log(conn, path, 0)
                    # the segments written during the outage (its writes ran past 60_000) uploaded, local ones trimmed
                    return s if s.remote_end >= 60_000 and s.local_segments <= 3 else None
                after = await wait_until(caught_up, 90, "uploads to resume after the outage")
                assert after.remote_start == 0
                ids = (await scan_ids(conn, path)).column("id").to_pylist()
                assert ids == list(range(90_000))
            finally:
                await conn.aclose()
    finally:
        proxy.close()
