"""The client's retries end: a dropped (or dropped and re-created) table fails writers, lookups and scans with
TABLE_NOT_EXIST instead of retrying for ever, and a bucket no server can serve fails after request-timeout with
the last error (own one-server cluster, whose tablet server the deadline tests kill)."""

from __future__ import annotations

import asyncio
import time

import pyarrow as pa
import pytest
import pytest_asyncio

import fluss
from fluss import ErrorCode, FlussError, OffsetSpec, Schema, TableDescriptor, TablePath
from fluss.server.cluster import LocalCluster

pytestmark = pytest.mark.asyncio(loop_scope="session")

LOG = pa.schema([("id", pa.int64()), ("v", pa.string())])
PK = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
REQUEST_TIMEOUT_S = 3


async def _fails_with(awaitable, code: int, within_s: float) -> FlussError:
    start = time.monotonic()
    with pytest.raises(FlussError) as e:
        await asyncio.wait_for(awaitable, within_s)
    assert e.value.error_code == code, e.value
    assert time.monotonic() - start < within_s
    return e.value


async def test_writer_on_a_dropped_table_gets_table_not_exist(conn, admin, database):
    path = TablePath(database, "dropped")
    await admin.create_table(path, TableDescriptor(Schema(LOG), bucket_count=2))
    writer = (await conn.get_table(path)).new_append().create_writer()
    writer.append({"id": 1, "v": "a"})
    await writer.flush()
    await admin.drop_table(path)
    handle = writer.append({"id": 2, "v": "b"})
    error = await _fails_with(writer.flush(), ErrorCode.TABLE_NOT_EXIST, 15)  # flush reports the failed write
    assert str(path) in error.message and "dropped" in error.message
    error = await _fails_with(handle.wait(), ErrorCode.TABLE_NOT_EXIST, 1)
    assert str(path) in error.message and "dropped" in error.message
    late = writer.append({"id": 3, "v": "c"})  # the writer stays failed, at once
    await _fails_with(writer.flush(), ErrorCode.TABLE_NOT_EXIST, 5)
    await _fails_with(late.wait(), ErrorCode.TABLE_NOT_EXIST, 1)


async def test_writers_lookups_and_scans_of_a_dropped_and_recreated_table_get_table_not_exist(conn, admin, database):
    path = TablePath(database, "recreated")
    await admin.create_table(path, TableDescriptor(Schema(PK, primary_keys=["id"]), bucket_count=2))
    table = await conn.get_table(path)
    upsert = table.new_upsert().create_writer()
    upsert.upsert({"id": 1, "v": "old"})
    await upsert.flush()
    lookuper = table.new_lookup().create_lookuper()
    assert await lookuper.lookup({"id": 1}) == {"id": 1, "v": "old"}
    scanner = await table.new_scan().create_log_scanner()
    scanner.subscribe_buckets({0: fluss.EARLIEST_OFFSET, 1: fluss.EARLIEST_OFFSET})

    await admin.drop_table(path)
    await admin.create_table(path, TableDescriptor(Schema(PK, primary_keys=["id"]), bucket_count=2))

    handle = upsert.upsert({"id": 2, "v": "to the old table"})
    error = await _fails_with(upsert.flush(), ErrorCode.TABLE_NOT_EXIST, 15)
    assert "re-created" in error.message
    error = await _fails_with(handle.wait(), ErrorCode.TABLE_NOT_EXIST, 1)
    assert "re-created" in error.message
    error = await _fails_with(lookuper.lookup({"id": 1}), ErrorCode.TABLE_NOT_EXIST, 15)
    assert "re-created" in error.message
    error = await _fails_with(scanner.poll(2000), ErrorCode.TABLE_NOT_EXIST, 15)
    assert "re-created" in error.message
    # the new table is a table like any other
    fresh = await conn.get_table(path)
    writer = fresh.new_upsert().create_writer()
    writer.upsert({"id": 7, "v": "new"})
    await writer.flush()
    assert await fresh.new_lookup().create_lookuper().lookup({"id": 1}) is None


# ---------------------------------------------------------------- deadlines, on a cluster of our own


@pytest.fixture(scope="module")
def lonely_cluster(tmp_path_factory):
    with LocalCluster(tablet_servers=1, zookeeper_session_timeout="2s",
                      directory=tmp_path_factory.mktemp("lonely")) as c:
        yield c


@pytest_asyncio.fixture(loop_scope="session")
async def lonely(lonely_cluster):
    config = fluss.Config({"bootstrap.servers": lonely_cluster.bootstrap_servers,
                           "request-timeout": f"{REQUEST_TIMEOUT_S}s"})
    connection = await fluss.FlussConnection.create(config)
    yield connection, lonely_cluster
    await connection.aclose()
    lonely_cluster.restart_stopped()


async def test_requests_to_a_dead_bucket_leader_fail_after_request_timeout_with_the_last_error(lonely):
    conn, cluster = lonely
    admin = conn.get_admin()
    log_path, pk_path = TablePath("fluss", "orphan_log"), TablePath("fluss", "orphan_pk")
    await admin.create_table(log_path, TableDescriptor(Schema(LOG), bucket_count=1))
    await admin.create_table(pk_path, TableDescriptor(Schema(PK, primary_keys=["id"]), bucket_count=1))
    log_table, pk_table = await conn.get_table(log_path), await conn.get_table(pk_path)
    writer = log_table.new_append().create_writer()
    writer.append({"id": 1, "v": "a"})
    await writer.flush()
    upsert = pk_table.new_upsert().create_writer()
    upsert.upsert({"id": 1, "v": "a"})
    await upsert.flush()
    lookuper = pk_table.new_lookup().create_lookuper()
    assert await lookuper.lookup({"id": 1}) == {"id": 1, "v": "a"}

    cluster.kill_tablet_server(0)
    bound = REQUEST_TIMEOUT_S + 10  # the deadline, plus one attempt in flight when it passes
    retriable = (ErrorCode.NETWORK_EXCEPTION, ErrorCode.LEADER_NOT_AVAILABLE_EXCEPTION,
                 ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.REQUEST_TIME_OUT)

    async def fails(awaitable) -> FlussError:
        start = time.monotonic()
        with pytest.raises(FlussError) as e:
            await asyncio.wait_for(awaitable, bound)
        assert e.value.error_code in retriable, e.value
        assert "last error" in e.value.message, e.value.message
        assert time.monotonic() - start >= REQUEST_TIMEOUT_S * 0.9
        return e.value

    async def write() -> None:
        handle = writer.append({"id": 2, "v": "b"})
        await writer.flush()  # returns once the batch is acknowledged or has failed for good
        await handle.wait()

    await fails(write())
    await fails(lookuper.lookup({"id": 1}))
    await fails(admin.list_offsets(log_path, [0], OffsetSpec.latest()))
