"""Bucket sizes for the rebalance planner (fluss/server/coordinator/bucket_sizes.py) against real gRPC servers: one
DescribeLog per table per server, log + KV bytes per bucket; a server that does not answer in time leaves its buckets
unsized (and is named) without failing anything."""

from __future__ import annotations

import asyncio
import time

import grpc

from fluss.metadata import ServerNode, TableBucket
from fluss.rpc.channels import ChannelPool
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.rpc.gen import fluss_api_pb2_grpc as rpc
from fluss.server.coordinator.bucket_sizes import collect_bucket_sizes
from fluss.server.coordinator.context import CoordinatorContext
from fluss.server.zk.data import LeaderAndIsr


class _Tablet(rpc.TabletServiceServicer):
    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s
        self.requests: list[pb.DescribeLogRequest] = []

    async def DescribeLog(self, request, context):  # noqa: N802 - the RPC's name
        self.requests.append(request)
        await asyncio.sleep(self.delay_s)
        out = []
        for b in request.buckets:
            if b.bucket_id == 9:  # not led here any more
                out.append(pb.DescribeLogBucketPb(partition_id=b.partition_id, bucket_id=b.bucket_id,
                                                  error=pb.ErrorInfo(code=6, message="not leader")))
                continue
            out.append(pb.DescribeLogBucketPb(partition_id=b.partition_id, bucket_id=b.bucket_id,
                                              local_log_size=1000 * request.table_id + b.bucket_id,
                                              kv_size=7 if request.table_id == 2 else 0))
        return pb.DescribeLogResponse(buckets=out)


async def _serve(servicer) -> tuple[grpc.aio.Server, int]:
    server = grpc.aio.server()
    rpc.add_TabletServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, port


async def test_sizes_per_bucket_and_a_silent_server_is_left_out():
    quick, slow = _Tablet(), _Tablet(delay_s=5.0)
    (s1, p1), (s2, p2) = await _serve(quick), await _serve(slow)
    ctx = CoordinatorContext()
    ctx.live_servers = {1: ServerNode(1, "127.0.0.1", p1, "TabletServer"),
                        2: ServerNode(2, "127.0.0.1", p2, "TabletServer")}
    led_by_1 = [TableBucket(1, 0), TableBucket(1, 1), TableBucket(2, 0), TableBucket(3, 0, 5), TableBucket(1, 9)]
    led_by_2 = [TableBucket(1, 2)]
    gone = TableBucket(1, 3)  # led by a server that is not live: not asked
    for tb, leader in [*((tb, 1) for tb in led_by_1), *((tb, 2) for tb in led_by_2), (gone, 7)]:
        ctx.leaders[tb] = (LeaderAndIsr(leader, 0, [leader], 0), 0)
    channels = ChannelPool()
    try:
        started = time.monotonic()
        sizes, missing = await collect_bucket_sizes(ctx, channels, timeout_s=0.5)
        assert time.monotonic() - started < 3
    finally:
        await channels.close()
        await s1.stop(None)
        await s2.stop(None)
    assert missing == [2]
    assert sizes == {TableBucket(1, 0): 1000, TableBucket(1, 1): 1001, TableBucket(2, 0): 2000 + 7,
                     TableBucket(3, 0, 5): 3000}
    assert sorted(r.table_id for r in quick.requests) == [1, 2, 3]  # one request per table, not per bucket
    assert sorted(b.bucket_id for r in quick.requests if r.table_id == 1 for b in r.buckets) == [0, 1, 9]
