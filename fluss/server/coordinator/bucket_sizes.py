"""Bucket sizes for the rebalance planner (docs/cluster-operations.md, "Rebalance"): asked of the tablet servers
when a rebalance is planned.

A bucket's size is what one of its replicas holds on a server's disk, as its leader reports it (DescribeLog): the
local log's bytes plus, for a primary-key bucket, its RocksDB's (SST files and memtables). The remote (tiered) log
is not counted: it is on no server's disk.

Each live tablet server is asked about the buckets it leads, one DescribeLog per table it leads buckets of, all at
once (at most :data:`MAX_REQUESTS_PER_SERVER` in flight) and under one deadline per server (:data:`SIZE_TIMEOUT_S`). A server that does not answer in time (or fails)
is logged and its buckets stay without a size: the planner then balances them by counts only. Nothing here fails
a rebalance.
"""

from __future__ import annotations

import asyncio
import logging

from fluss.metadata import TableBucket
from fluss.rpc.channels import ChannelPool
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.server.coordinator.context import CoordinatorContext

log = logging.getLogger(__name__)

#: How long a tablet server may take to report the sizes of the buckets it leads.
SIZE_TIMEOUT_S = 2.0
#: At most this many DescribeLog requests in flight to one server (one per table).
MAX_REQUESTS_PER_SERVER = 16


def leaders_by_server(ctx: CoordinatorContext) -> dict[int, dict[int, list[TableBucket]]]:
    """Server id -> table id -> the buckets it leads (live servers only)."""
    out: dict[int, dict[int, list[TableBucket]]] = {}
    for tb, (lai, _) in ctx.leaders.items():
        if lai.leader in ctx.live_servers:
            out.setdefault(lai.leader, {}).setdefault(tb.table_id, []).append(tb)
    return out


async def collect_bucket_sizes(ctx: CoordinatorContext, channels: ChannelPool,
                               timeout_s: float = SIZE_TIMEOUT_S) -> tuple[dict[TableBucket, int], list[int]]:
    """Each led bucket's size in bytes, and the servers that did not answer in time (their buckets have none)."""
    plan = leaders_by_server(ctx)
    results = await asyncio.gather(*(_sizes_from(sid, ctx.live_servers[sid].address, tables, channels, timeout_s)
                                     for sid, tables in sorted(plan.items())))
    sizes: dict[TableBucket, int] = {}
    missing: list[int] = []
    for sid, got in zip(sorted(plan), results, strict=True):
        if got is None:
            missing.append(sid)
        else:
            sizes.update(got)
    return sizes, missing


async def _sizes_from(sid: int, address: str, tables: dict[int, list[TableBucket]], channels: ChannelPool,
                      timeout_s: float) -> dict[TableBucket, int] | None:
    stub = channels.tablet(address)
    slots = asyncio.Semaphore(MAX_REQUESTS_PER_SERVER)

    async def one_table(table_id: int, buckets: list[TableBucket]) -> dict[TableBucket, int]:
        async with slots:
            resp = await stub.DescribeLog(pb.DescribeLogRequest(table_id=table_id, buckets=[
                pb.TableStatsBucketPb(partition_id=tb.partition_id_or_none_value, bucket_id=tb.bucket_id)
                for tb in buckets]), timeout=timeout_s)
        out = {}
        for r in resp.buckets:
            if not r.error.code and r.local_log_size >= 0 and r.kv_size >= 0:  # a bucket it no longer leads: none
                pid = r.partition_id if r.partition_id >= 0 else None
                out[TableBucket(table_id, r.bucket_id, pid)] = r.local_log_size + r.kv_size
        return out

    try:
        parts = await asyncio.wait_for(asyncio.gather(*(one_table(t, bs) for t, bs in sorted(tables.items()))),
                                       timeout_s)
    except Exception as e:  # noqa: BLE001 - a timeout too: counts only for its buckets
        log.warning("tablet server %d did not report its bucket sizes (%s): the rebalance plans its %d bucket(s) "
                    "by counts only", sid, type(e).__name__ if not str(e) else e,
                    sum(len(bs) for bs in tables.values()))
        return None
    return {tb: size for part in parts for tb, size in part.items()}
