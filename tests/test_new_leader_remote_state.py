"""A NotifyLeaderAndIsr's new leaders skip asking the coordinator for their remote log manifest and KV snapshot
only where ZooKeeper shows there is nothing to ask for (``ControlRequestChecker``, "Nothing remote yet"): the
bucket's first leader term (leader epoch 0: no earlier leader uploaded anything) and no ``remote_log_manifest`` or
``kv_snapshot`` node under the bucket. Against a real ZooKeeper server."""

from __future__ import annotations

import pyarrow as pa

from fluss.metadata import Schema, TableBucket, TablePath
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.server.coordinator.context import table_info_of
from fluss.server.tablet.control_checks import ControlRequestChecker
from fluss.server.zk.client import ZooKeeperClient
from fluss.server.zk.data import (
    Assignment,
    KvSnapshotRecord,
    LeaderAndIsr,
    RemoteLogManifestRecord,
    TableRegistration,
)

ME = 1
TABLE_ID = 5
SCHEMA = Schema(pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())]), primary_keys=["k"])


def create_table(zk: ZooKeeperClient, buckets: int) -> pb.TableInfoPb:
    reg = TableRegistration(TABLE_ID, 1, [], buckets, [], None, {}, {}, 0, 0)
    schema_json = SCHEMA.row_schema.to_json()
    zk.create_table("db", "t", reg, schema_json, Assignment(TABLE_ID, {b: [ME, 2] for b in range(buckets)}),
                    {b: LeaderAndIsr(ME, 0, [ME, 2], 1) for b in range(buckets)})
    return table_info_of(TablePath("db", "t"), reg, schema_json).to_pb()


def notification(info: pb.TableInfoPb, epochs: dict[int, int]) -> pb.NotifyLeaderAndIsrRequest:
    return pb.NotifyLeaderAndIsrRequest(coordinator_epoch=1, table_infos=[info], buckets=[
        pb.LeaderAndIsrPb(table_id=TABLE_ID, partition_id=-1, bucket_id=b, leader=ME, leader_epoch=e,
                          replicas=[ME, 2], isr=[ME, 2], bucket_epoch=0) for b, e in epochs.items()])


async def test_only_first_term_buckets_with_nothing_committed_need_not_ask(zk):
    info = create_table(zk, 6)
    zk.set_remote_log_manifest(TABLE_ID, -1, 1, RemoteLogManifestRecord("/r/log/m1", 0, 10, 100, 1, 0, 1))
    zk.set_kv_snapshot(TABLE_ID, -1, 2, KvSnapshotRecord(1, 10, "/r/kv/s1", 1, 0))
    _, version = zk.get_leader_and_isr(TABLE_ID, -1, 3)
    zk.set_leader_and_isr(TABLE_ID, -1, 3, LeaderAndIsr(ME, 1, [ME, 2], 1), version)  # a second leader term
    _, version = zk.get_leader_and_isr(TABLE_ID, -1, 5)
    zk.set_leader_and_isr(TABLE_ID, -1, 5, LeaderAndIsr(ME, 0, [ME], 1, 1), version)  # an ISR change: same term

    checker = ControlRequestChecker(zk, ME)
    request = notification(info, {0: 0, 1: 0, 2: 0, 3: 1, 4: 0, 5: 0})
    asked = frozenset(TableBucket(TABLE_ID, b) for b in (0, 1, 2, 3, 5))  # bucket 4: hosted here already
    checked = await checker.leader_and_isr(request, {}, asked)
    assert not checked.refused and len(checked.buckets) == 6
    assert checked.nothing_remote == {TableBucket(TABLE_ID, 0), TableBucket(TABLE_ID, 5)}

    assert (await checker.leader_and_isr(request, {})).nothing_remote == set()  # nothing asked: nothing looked up


async def test_a_bucket_led_elsewhere_is_not_looked_up(zk):
    info = create_table(zk, 2)
    _, version = zk.get_leader_and_isr(TABLE_ID, -1, 0)
    zk.set_leader_and_isr(TABLE_ID, -1, 0, LeaderAndIsr(2, 0, [ME, 2], 1), version)  # (a forged request says ME)
    checker = ControlRequestChecker(zk, ME)
    checked = await checker.leader_and_isr(notification(info, {0: 0, 1: 0}), {},
                                           frozenset(TableBucket(TABLE_ID, b) for b in range(2)))
    assert set(checked.refused) == {TableBucket(TABLE_ID, 0)}  # contradicts ZooKeeper's leader
    assert checked.nothing_remote == {TableBucket(TABLE_ID, 1)}
