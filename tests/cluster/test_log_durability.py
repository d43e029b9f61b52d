"""Crash and retention behaviour of log tables, with real processes on a cluster of their own (small
segments, fast retention checks)."""

from __future__ import annotations

import asyncio
import time

import pyarrow as pa
import pytest
import pytest_asyncio

import fluss
from fluss import (
    EARLIEST_OFFSET,
    ErrorCode,
    FlussError,
    OffsetSpec,
    Schema,
    TableChange,
    TableDescriptor,
    TablePath,
)
from fluss.server.cluster import LocalCluster

pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest.fixture(scope="module")
def small_segments_cluster():
    config = {"log.segment.file-size": "64kb", "log.index.interval-size": "1kb", "log.retention.check-interval": "500ms"}
    with LocalCluster(tablet_servers=2, server_config=config, zookeeper_session_timeout="2s") as c:
        yield c


@pytest_asyncio.fixture(loop_scope="session")
async def dconn(small_segments_cluster):
    conn = await fluss.FlussConnection.create(fluss.Config({
        "bootstrap.servers": small_segments_cluster.bootstrap_servers, "writer.batch-timeout": "5ms",
        "request-timeout": "5s"}))
    yield conn
    await conn.aclose()


async def _read_all(table, buckets) -> pa.Table:
    scanner = await table.new_scan().create_record_batch_log_scanner()
    scanner.subscribe_buckets({b: EARLIEST_OFFSET for b in buckets})
    return await scanner.to_arrow()


async def test_acknowledged_batches_survive_sigkill_of_the_leader(small_segments_cluster, dconn):
    admin = dconn.get_admin()
    await admin.create_database("crash", ignore_if_exists=True)
    path = TablePath("crash", "events")
    await admin.create_table(path, TableDescriptor(Schema(pa.schema([("seq", pa.int64()), ("pad", pa.string())])),
                                                   bucket_count=1))
    table = await dconn.get_table(path)
    leader = (await dconn.run(dconn.cluster.update_metadata([path]))).tables[0].buckets[0].leader_id
    writer = table.new_append().create_writer()
    acked: list[int] = []
    seq = 0

    async def write_one_batch() -> None:
        nonlocal seq
        batch = pa.record_batch([pa.array(range(seq, seq + 200), pa.int64()), pa.array(["p" * 30] * 200)],
                                names=["seq", "pad"])
        handle = writer.write_arrow_batch(batch)
        first = seq
        seq += 200
        try:
            await handle.wait()
            acked.extend(range(first, first + 200))
        except fluss.FlussError:
            pass

    for _ in range(20):
        await write_one_batch()
    killer = asyncio.get_running_loop().run_in_executor(None, small_segments_cluster.kill_tablet_server, leader)
    while not killer.done():  # keep writing while the leader dies: these may or may not be acknowledged
        pending = asyncio.ensure_future(write_one_batch())
        await asyncio.wait([pending], timeout=0.05)
        if not pending.done():
            pending.cancel()
            break
    await killer
    small_segments_cluster.start_tablet_server(leader)

    deadline = time.monotonic() + 30
    while True:
        try:
            got = (await _read_all(table, [0])).column("seq").to_pylist()
            break
        except fluss.FlussError:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.2)
    assert len(acked) >= 4000
    assert got == sorted(got), "records of a bucket come back in offset order"
    assert len(got) == len(set(got)), "no record appears twice"
    missing = set(acked) - set(got)
    assert not missing, f"{len(missing)} acknowledged records lost"
    # whole batches only: every surviving batch of 200 is complete
    assert len(got) % 200 == 0 and all(got[i] % 200 == 0 for i in range(0, len(got), 200))


async def test_log_spans_many_segments_and_reads_from_every_offset(small_segments_cluster, dconn):
    admin = dconn.get_admin()
    await admin.create_database("segs", ignore_if_exists=True)
    path = TablePath("segs", "long")
    await admin.create_table(path, TableDescriptor(Schema(pa.schema([("n", pa.int64()), ("s", pa.string())])),
                                                   properties={"table.log.arrow.compression.type": "NONE"}))
    table = await dconn.get_table(path)
    writer = table.new_append().create_writer()
    total = 0
    for _ in range(40):
        writer.write_arrow_batch(pa.record_batch([pa.array(range(total, total + 500), pa.int64()),
                                                  pa.array(["x" * 20] * 500)], names=["n", "s"]))
        total += 500
        await writer.flush()
    data_dir = small_segments_cluster.dir
    segments = list(data_dir.glob("tablet-server-*/data/segs/long-*/bucket-0/*.log"))
    assert len(segments) >= 2 * 5, f"expected many segments, found {len(segments)}"
    for start in (0, 1, 499, 500, 7_777, 12_345, total - 1):
        scanner = await table.new_scan().create_record_batch_log_scanner()
        scanner.subscribe(0, start)
        assert (await scanner.to_arrow()).column("n").to_pylist() == list(range(start, total))


async def test_retention_deletes_only_whole_expired_segments(small_segments_cluster, dconn):
    admin = dconn.get_admin()
    await admin.create_database("ttl", ignore_if_exists=True)
    path = TablePath("ttl", "short_lived")
    await admin.create_table(path, TableDescriptor(Schema(pa.schema([("n", pa.int64()), ("s", pa.string())])),
                                                   properties={"table.log.ttl": "3s",
                                                               "table.log.arrow.compression.type": "NONE"}))
    table = await dconn.get_table(path)
    writer = table.new_append().create_writer()
    for i in range(10):
        writer.write_arrow_batch(pa.record_batch([pa.array(range(i * 1000, (i + 1) * 1000), pa.int64()),
                                                  pa.array(["y" * 40] * 1000)], names=["n", "s"]))
        await writer.flush()
    end = (await admin.list_offsets(path, [0], OffsetSpec.latest()))[0]
    assert end == 10_000
    deadline = time.monotonic() + 20
    while (start := (await admin.list_offsets(path, [0], OffsetSpec.earliest()))[0]) == 0:
        assert time.monotonic() < deadline, "no expired segment was deleted"
        await asyncio.sleep(0.3)
    assert 0 < start < end, "the active segment is never deleted"
    # stop the expiry (it goes on every 500 ms while the 3 s TTL lasts), then read what is left: a whole suffix
    await admin.alter_table(path, [TableChange.set("table.log.ttl", "7d")])
    first, remaining = -1, []
    for _ in range(10):  # the servers take the ALTER a moment later: read between two equal log starts
        first = (await admin.list_offsets(path, [0], OffsetSpec.earliest()))[0]
        try:
            remaining = (await _read_all(table, [0])).column("n").to_pylist()
        except FlussError as e:  # the segment being read expired meanwhile
            assert e.error_code == ErrorCode.LOG_OFFSET_OUT_OF_RANGE_EXCEPTION, e
            await asyncio.sleep(0.5)
            continue
        if first == (await admin.list_offsets(path, [0], OffsetSpec.earliest()))[0]:
            break
    assert first >= start and remaining and remaining == list(range(first, end)), (start, first, remaining[:3])
