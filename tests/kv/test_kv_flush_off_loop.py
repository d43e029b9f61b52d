"""RocksDB work runs off the tablet server's event loop: a large KV flush does not delay an unrelated RPC.

A tablet server's ``ReplicaManager`` and ``TabletServicer`` serve gRPC on loopback in this process. A primary-key
bucket's leader has a follower (id 99, played by this test) in its ISR, so PutKv batches written with acks=1 stay in
the pre-write buffer until the follower catches up. Then one FetchLog from the follower moves the high watermark
over all of them: a flush of ``BATCHES`` x ``ROWS`` values. A probe in its own process calls ListOffsets on the
server meanwhile; its slowest answer during the flush must stay under ``BOUND_S`` and under half the flush (the same
flush, run on the event loop, stalled it for about a second: a probe started early in a flush on the loop waits for
most of it, however fast the machine).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from fluss.metadata import Schema, TableDescriptor, TablePath
from fluss.record.change_type import ChangeType
from fluss.record.log_batch import build_batch
from fluss.rpc.channels import ChannelPool
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.rpc.gen import fluss_api_pb2_grpc as rpc
from fluss.rpc.listeners import Listener
from fluss.rpc.server import RpcServerBuilder
from fluss.server.replica.manager import ReplicaManager
from fluss.server.tablet.service import TabletServicer

BATCHES, ROWS = 40, 30_000
BOUND_S = 0.4
MIN_FLUSH_S = 0.2  # a shorter flush cannot show a stall above the probes' own jitter
TABLE_ID, FOLLOWER = 7, 99
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("payload", pa.string())])

pytestmark = pytest.mark.asyncio(loop_scope="function")

PROBE = """
import json, sys, time, pathlib
from fluss.rpc.channels import ChannelFactory
from fluss.rpc.gen import fluss_api_pb2 as pb, fluss_api_pb2_grpc as rpc
address, table_id, stop_file = sys.argv[1], int(sys.argv[2]), pathlib.Path(sys.argv[3])
request = pb.ListOffsetsRequest(follower_id=-1, offset_type=0, table_id=table_id, partition_id=-1, bucket_ids=[0])
samples = []
with ChannelFactory().sync_channel(address) as channel:
    stub = rpc.TabletServiceStub(channel)
    stub.ListOffsets(request, timeout=30)
    print("ready", flush=True)
    while not stop_file.exists():
        start = time.time()
        resp = stub.ListOffsets(request, timeout=30)
        assert resp.buckets[0].error.code == 0, resp
        samples.append((start, time.time() - start))
        time.sleep(0.005)
print(json.dumps(samples))
"""


def _table_info() -> pb.TableInfoPb:
    desc = TableDescriptor(Schema(SCHEMA, primary_keys=["id"]), bucket_count=1)
    return pb.TableInfoPb(table_path=TablePath("db", "big").to_pb(), table_id=TABLE_ID, schema_id=1,
                          descriptor=desc.to_pb())


def _upserts(start: int) -> bytes:
    ids = pa.array(range(start, start + ROWS), pa.int64())
    rows = pa.record_batch([ids, pa.array([f"value-{i:09d}" for i in range(start, start + ROWS)])], schema=SCHEMA)
    return build_batch(rows, schema_id=1, change_types=np.full(ROWS, int(ChangeType.UpdateAfter), np.uint8))


async def test_a_large_kv_flush_does_not_delay_an_unrelated_rpc(tmp_path: Path):
    manager = ReplicaManager(0, tmp_path / "data", 1 << 30, 4096)
    server = (RpcServerBuilder([Listener("FLUSS", "127.0.0.1", 0)])
              .add_service(rpc.add_TabletServiceServicer_to_server, TabletServicer(manager, 1 << 30)).build())
    await server.start()
    address = server.listeners[0].address
    pool = ChannelPool()
    stop_file = tmp_path / "stop"
    probe = None
    try:
        await manager.apply_leader_and_isr(pb.NotifyLeaderAndIsrRequest(
            coordinator_epoch=1, table_infos=[_table_info()],
            buckets=[pb.LeaderAndIsrPb(table_id=TABLE_ID, partition_id=-1, bucket_id=0, leader=0, leader_epoch=1,
                                       replicas=[0, FOLLOWER], isr=[0, FOLLOWER], bucket_epoch=1)]))
        tablet = pool.tablet(address)
        for i in range(BATCHES):  # acks=1: appended and staged, not visible (the follower has not fetched)
            resp = await tablet.PutKv(pb.PutKvRequest(acks=1, table_id=TABLE_ID, timeout_ms=30_000, buckets=[
                pb.PutKvBucketPb(partition_id=-1, bucket_id=0, records=_upserts(i * ROWS))]), timeout=120)
            assert resp.buckets[0].error.code == 0, resp
        replica = next(iter(manager.replicas.values()))
        leo = replica.log.log_end_offset
        assert replica.kv.kv.staged_count == BATCHES * ROWS and replica.kv.kv.flushed_offset == 0

        probe = subprocess.Popen([sys.executable, "-c", PROBE, address, str(TABLE_ID), str(stop_file)],
                                 stdout=subprocess.PIPE, text=True)
        ready = await asyncio.to_thread(probe.stdout.readline)
        assert ready.strip() == "ready"
        await asyncio.sleep(0.3)
        started = time.time()
        fetched = await tablet.FetchLog(pb.FetchLogRequest(follower_id=FOLLOWER, max_bytes=1, max_wait_ms=0, tables=[
            pb.FetchTablePb(table_id=TABLE_ID, buckets=[
                pb.FetchBucketPb(partition_id=-1, bucket_id=0, fetch_offset=leo, max_bytes=1)])]), timeout=60)
        assert fetched.tables[0].buckets[0].error.code == 0
        while replica.kv.kv.flushed_offset < leo:  # the flush of every staged value, on the KV executor
            await asyncio.sleep(0.01)
        ended = time.time()
    finally:
        stop_file.write_text("")
        out = (await asyncio.to_thread(probe.communicate, timeout=60))[0] if probe else ""
        await pool.close()
        await server.stop(0)
        await asyncio.to_thread(manager.close)
    samples = json.loads(out.strip().splitlines()[-1])
    during = [took for at, took in samples if started <= at <= ended]
    flush_s = ended - started
    assert flush_s > MIN_FLUSH_S, f"the flush took {flush_s:.2f}s: too small to show a stall"
    assert during, "the probe did not run during the flush"
    bound = min(BOUND_S, flush_s / 2)
    assert max(during) < bound, f"an unrelated RPC waited {max(during):.2f}s during a flush of " \
                                f"{BATCHES * ROWS} values ({flush_s:.2f}s, {len(during)} probes)"
    assert len(during) >= 3, "the probe answered too rarely during the flush"

