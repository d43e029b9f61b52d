"""Tells tablet servers which replicas they host and who leads them (NotifyLeaderAndIsr, StopReplica).

Each live server has one sender task draining an ordered queue, so a server sees notifications in the order
the coordinator made its decisions. A failed send is retried while the server stays registered; requests carry
the coordinator epoch so a stale coordinator is fenced by the servers.
"""

from __future__ import annotations

import asyncio
import logging

import grpc

from fluss.errors import RETRIABLE_CODES
from fluss.metadata import ServerNode, TableBucket
from fluss.rpc.channels import ChannelFactory, ChannelPool
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.server.coordinator.context import CoordinatorContext

log = logging.getLogger(__name__)

RETRY_DELAY_S = 0.2


class TabletNotifier:
    def __init__(self, context: CoordinatorContext, channels: ChannelFactory | None = None) -> None:
        self.ctx = context
        self.channels = ChannelPool(channels)
        self._queues: dict[int, asyncio.Queue] = {}
        self._tasks: dict[int, asyncio.Task] = {}

    def add_server(self, node: ServerNode) -> None:
        if node.id in self._tasks:
            return
        queue: asyncio.Queue = asyncio.Queue()
        self._queues[node.id] = queue
        self._tasks[node.id] = asyncio.create_task(self._sender(node, queue), name=f"notify-ts-{node.id}")

    def forget(self, sid: int, node: ServerNode | None) -> None:
        task = self._tasks.pop(sid, None)
        self._queues.pop(sid, None)
        if task:
            task.cancel()
        if node is not None:
            asyncio.create_task(self.channels.drop(node.address))

    def leader_and_isr(self, sid: int, buckets: list[TableBucket]) -> None:
        """Queues a NotifyLeaderAndIsr for ``buckets`` (built when sent, from the then-current state)."""
        node = self.ctx.live_servers.get(sid)
        if node is None or not buckets:
            return
        self.add_server(node)
        self._queues[sid].put_nowait(("leader", list(buckets)))

    def stop_replicas(self, sid: int, buckets: list[TableBucket], delete: bool) -> None:
        node = self.ctx.live_servers.get(sid)
        if node is None or not buckets:
            return
        self.add_server(node)
        self._queues[sid].put_nowait(("stop", [pb.StopReplicaPb(table_id=tb.table_id,
                                                                partition_id=tb.partition_id_or_none_value,
                                                                bucket_id=tb.bucket_id, delete=delete)
                                               for tb in buckets]))

    def build_leader_and_isr(self, buckets: list[TableBucket]) -> pb.NotifyLeaderAndIsrRequest:
        req = pb.NotifyLeaderAndIsrRequest(coordinator_epoch=self.ctx.epoch)
        tables, partitions = set(), set()
        for tb in buckets:
            entry = self.ctx.leaders.get(tb)
            info = self.ctx.tables_by_id.get(tb.table_id)
            if entry is None or info is None:
                continue
            lai, _ = entry
            req.buckets.append(pb.LeaderAndIsrPb(
                table_id=tb.table_id, partition_id=tb.partition_id_or_none_value, bucket_id=tb.bucket_id,
                leader=lai.leader, leader_epoch=lai.leader_epoch, replicas=self.ctx.replicas(tb), isr=lai.isr,
                bucket_epoch=lai.bucket_epoch))
            if tb.table_id not in tables:
                tables.add(tb.table_id)
                req.table_infos.append(info.to_pb())
            if tb.partition_id is not None and tb.partition_id not in partitions:
                partitions.add(tb.partition_id)
                p = self.ctx.partitions.get(tb.partition_id)
                if p is not None:
                    req.partition_infos.append(pb.PartitionInfoPb(partition_id=tb.partition_id, partition_name=p.name,
                                                                  partition_spec=p.reg.spec,
                                                                  bucket_count=p.reg.bucket_count))
        return req

    async def _sender(self, node: ServerNode, queue: asyncio.Queue) -> None:
        stub = self.channels.tablet(node.address)
        while True:
            kind, payload = await queue.get()
            while True:
                try:
                    if kind == "leader":
                        req = self.build_leader_and_isr(payload)
                        if not req.buckets:
                            break
                        resp = await stub.NotifyLeaderAndIsr(req, timeout=10)
                    else:
                        resp = await stub.StopReplica(pb.StopReplicaRequest(coordinator_epoch=self.ctx.epoch,
                                                                            buckets=payload), timeout=10)
                except grpc.aio.AioRpcError as e:
                    log.debug("notify tablet server %d failed (%s); retrying", node.id, e.code())
                    await asyncio.sleep(RETRY_DELAY_S)
                    continue
                if resp.error.code in RETRIABLE_CODES:  # e.g. the server could not check it against ZooKeeper
                    log.info("tablet server %d: %s; retrying", node.id, resp.error.message)
                    await asyncio.sleep(RETRY_DELAY_S)
                    continue
                if resp.error.code:
                    log.warning("tablet server %d refused %s: %s", node.id, kind, resp.error.message)
                break

    async def close(self) -> None:
        for task in self._tasks.values():
            task.cancel()
        self._tasks.clear()
        await self.channels.close()
