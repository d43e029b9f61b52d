"""Requests a hostile or buggy program sends straight over gRPC (CRCs computed correctly, so checksums pass):
the servers refuse each with a clear error and what was acknowledged before stays intact.

One cluster for this module: 3 tablet servers, replication factor 3, min ISR 2 and the default replica lag time
(30 s), so a follower that rejoins the ISR quickly can only have done so on its fetch, not on the lag timer.
"""

from __future__ import annotations

import os
import signal
import struct
import time

import crc32c
import numpy as np
import pyarrow as pa
import pytest

from fluss import ErrorCode
from fluss.record.change_type import ChangeType
from fluss.record.log_batch import COMPRESSION_NONE, COMPRESSION_ZSTD, HEADER_SIZE, build_batch
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.server.cluster import LocalCluster
from reliability.raw import RawRpc

CONFIG = {
    "default.replication.factor": "3",
    "log.replica.min-in-sync-replicas-number": "2",
    "log.replica.fetch.wait-max-time": "100ms",
}
LOG_SCHEMA = pa.schema([("v", pa.int64())])
KV_SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])


@pytest.fixture(scope="module")
def hostile_cluster(tmp_path_factory):
    lake = {"datalake.format": "paimon", "datalake.paimon.warehouse": str(tmp_path_factory.mktemp("lake"))}
    with LocalCluster(tablet_servers=3, server_config={**CONFIG, **lake}, zookeeper_session_timeout="2s") as c:
        yield c


@pytest.fixture(scope="module")
def raw(hostile_cluster):
    with RawRpc(hostile_cluster.bootstrap_servers) as r:
        yield r


@pytest.fixture(autouse=True)
def _resume_and_restart(hostile_cluster):
    """A failing test must not leave a server paused or down for the next one."""
    yield
    for sid in hostile_cluster.live_tablet_servers():
        os.kill(hostile_cluster.tablet_server_pid(sid), signal.SIGCONT)
    hostile_cluster.restart_stopped()


def _log_batch(values, schema_id: int = 1, compression: int = COMPRESSION_ZSTD) -> bytes:
    return build_batch(pa.record_batch([pa.array(values, pa.int64())], schema=LOG_SCHEMA), schema_id=schema_id,
                       compression=compression)


def _kv_batch(keys, values, change_type: int = ChangeType.UpdateAfter) -> bytes:
    rb = pa.record_batch([pa.array(keys, pa.int64()), pa.array(values, pa.string())], schema=KV_SCHEMA)
    return build_batch(rb, schema_id=1, change_types=np.full(len(keys), change_type, np.uint8))


def _recrc(batch: bytes | bytearray) -> bytes:
    """The batch with its CRC recomputed, as a hostile writer that knows the format would send it."""
    buf = bytearray(batch)
    struct.pack_into("<I", buf, 0, crc32c.crc32c(bytes(buf[4:])))
    return bytes(buf)


def _with_header_field(batch: bytes, fmt: str, offset: int, value: int) -> bytes:
    buf = bytearray(batch)
    struct.pack_into(fmt, buf, offset, value)
    return _recrc(buf)


def _read_log(raw: RawRpc, leader: int, table_id: int) -> list[int]:
    from fluss.record.log_batch import iter_batches

    out, offset = [], 0
    while True:
        r = raw.fetch(leader, table_id, offset)
        assert r.error.code == 0, r.error
        batches = list(iter_batches(r.records, validate=True))
        if not batches:
            return out
        for b in batches:
            out += b.to_arrow(LOG_SCHEMA).column(0).to_pylist()[max(0, offset - b.base_offset):]
            offset = b.next_offset


def _leader(raw: RawRpc, table: str, db: str = "hostile") -> pb.BucketMetadataPb:
    return raw.wait_for_full_isr(db, table)[0]


def test_spoofed_follower_fetch_beyond_the_log_end_moves_no_high_watermark(hostile_cluster, raw):
    table_id = raw.create_table("hostile", "spoofed_fetch", LOG_SCHEMA)
    bucket = _leader(raw, "spoofed_fetch")
    followers = [r for r in bucket.replicas if r != bucket.leader_id]
    assert raw.produce(bucket.leader_id, table_id, _log_batch([1, 2])).error.code == 0
    pids = [hostile_cluster.tablet_server_pid(f) for f in followers]
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        pending = raw.tablet(bucket.leader_id).ProduceLog.future(pb.ProduceLogRequest(
            acks=-1, table_id=table_id, timeout_ms=20_000,
            buckets=[pb.ProduceBucketPb(partition_id=-1, bucket_id=0, records=_log_batch([3]))]), timeout=30)
        time.sleep(0.5)
        for follower in followers:
            spoof = raw.fetch(bucket.leader_id, table_id, 10**12, follower_id=follower)
            assert spoof.error.code == ErrorCode.LOG_OFFSET_OUT_OF_RANGE_EXCEPTION, spoof.error
        time.sleep(0.5)
        assert not pending.done(), "a spoofed follower fetch acknowledged an acks=all write no follower has"
        assert raw.offsets(bucket.leader_id, table_id) == 2  # the high watermark did not move
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
    assert pending.result().buckets[0].error.code == 0
    assert _read_log(raw, bucket.leader_id, table_id) == [1, 2, 3]


def test_a_follower_fetch_from_a_server_that_is_no_replica_is_refused(raw):
    table_id = raw.create_table("hostile", "stranger_fetch", LOG_SCHEMA, properties={"table.replication.factor": "2"})
    bucket = _leader(raw, "stranger_fetch")
    stranger = next(s for s in raw.tablet_servers() if s not in bucket.replicas)
    r = raw.fetch(bucket.leader_id, table_id, 0, follower_id=stranger)
    assert r.error.code == ErrorCode.NOT_LEADER_OR_FOLLOWER and f"{stranger}" in r.error.message


def test_produce_into_a_primary_key_bucket_is_refused(raw):
    table_id = raw.create_table("hostile", "pk_produce", KV_SCHEMA, primary_keys=["k"])
    bucket = _leader(raw, "pk_produce")
    for records in (_kv_batch([1], ["a"]), build_batch(pa.record_batch(
            [pa.array([1], pa.int64()), pa.array(["a"])], schema=KV_SCHEMA), schema_id=1)):
        r = raw.produce(bucket.leader_id, table_id, records)
        assert r.error.code == ErrorCode.INVALID_TABLE_EXCEPTION and "primary key" in r.error.message, r.error
    assert raw.offsets(bucket.leader_id, table_id) == 0


def test_put_kv_refuses_empty_truncated_and_header_only_payloads(raw):
    table_id = raw.create_table("hostile", "pk_payloads", KV_SCHEMA, primary_keys=["k"])
    leader = _leader(raw, "pk_payloads").leader_id
    good = _kv_batch([1, 2], ["a", "b"])
    header_only = _with_header_field(good[:HEADER_SIZE], "<i", 16, HEADER_SIZE)
    for name, payload in {"empty": b"", "truncated": good[:-8], "header only": header_only,
                          "short header": good[:20]}.items():
        r = raw.put_kv(leader, table_id, payload)
        assert r.error.code == ErrorCode.CORRUPT_RECORD_EXCEPTION, (name, r.error)
    assert raw.offsets(leader, table_id) == 0


def test_put_kv_whose_second_batch_is_corrupt_applies_nothing(raw):
    table_id = raw.create_table("hostile", "pk_atomic", KV_SCHEMA, primary_keys=["k"])
    leader = _leader(raw, "pk_atomic").leader_id
    second = bytearray(_kv_batch([2], ["b"]))
    second[-8] ^= 0xFF  # body byte changed, CRC recomputed: only the Arrow decode can tell
    r = raw.put_kv(leader, table_id, _kv_batch([1], ["a"]) + _recrc(second))
    assert r.error.code == ErrorCode.CORRUPT_RECORD_EXCEPTION and "batch 2" in r.error.message, r.error
    second = _with_header_field(_kv_batch([2], ["b"]), "<i", 20, 5)  # record count disagrees with the body
    r = raw.put_kv(leader, table_id, _kv_batch([1], ["a"]) + second)
    assert r.error.code == ErrorCode.CORRUPT_RECORD_EXCEPTION and "batch 2" in r.error.message, r.error
    assert raw.offsets(leader, table_id) == 0
    resp = raw.tablet(leader).Lookup(pb.LookupRequest(table_id=table_id, buckets=[
        pb.LookupBucketPb(partition_id=-1, bucket_id=0, keys=[_pk_key(1)])]), timeout=5)
    assert list(resp.buckets[0].found) == [False]


def _pk_key(k: int) -> bytes:
    from fluss.key.encoding import encode_key
    from fluss.types import parse_type

    return encode_key([k], [parse_type("BIGINT NOT NULL")])


BAD_LOG_BATCHES = {
    "record count 10 for 5 rows": (lambda: _with_header_field(_log_batch([1, 2, 3, 4, 5]), "<i", 20, 10), "10"),
    "record count 2^31-1": (lambda: _with_header_field(_log_batch([1, 2, 3, 4, 5]), "<i", 20, 2**31 - 1),
                            str(2**31 - 1)),
    "garbage body": (lambda: _with_header_field(_log_batch([1, 2])[:HEADER_SIZE] + bytes(range(256)) * 2, "<i", 16,
                                                HEADER_SIZE + 512), "Arrow"),
    "another schema": (lambda: build_batch(pa.record_batch([pa.array([1, 2], pa.int32()), pa.array(["x", "y"])],
                                                           names=["a", "b"]), schema_id=1), "column"),
    "narrower column type": (lambda: build_batch(pa.record_batch([pa.array([1, 2, 3], pa.int32())], names=["v"]),
                                                 schema_id=1), "column"),
    "change types on a log table": (lambda: build_batch(pa.record_batch([pa.array([1], pa.int64())],
                                                                        schema=LOG_SCHEMA), schema_id=1,
                                                        change_types=np.array([ChangeType.Delete], np.uint8)),
                                    "append-only"),
    "compression other than declared": (lambda: _with_header_field(_log_batch([1], compression=COMPRESSION_ZSTD),
                                                                   "<B", 5, 0x08 | COMPRESSION_NONE), "compression"),
    "unknown attribute bits": (lambda: _with_header_field(_log_batch([1]), "<B", 5, 0x08 | 0x40 | 1), "attributes"),
    "reserved bytes set": (lambda: _with_header_field(_log_batch([1]), "<I", 52, 7), "reserved"),
    "sequence without writer": (lambda: _with_header_field(_log_batch([1]), "<i", 48, 3), "writer"),
}


@pytest.mark.parametrize("case", sorted(BAD_LOG_BATCHES))
def test_leader_refuses_a_crc_valid_batch_its_body_contradicts(raw, case):
    table = "bad_" + "".join(c if c.isalnum() else "_" for c in case)
    table_id = raw.create_table("hostile", table, LOG_SCHEMA)
    leader = _leader(raw, table).leader_id
    assert raw.produce(leader, table_id, _log_batch([1, 2])).error.code == 0
    make, mention = BAD_LOG_BATCHES[case]
    r = raw.produce(leader, table_id, _log_batch([3]) + make())
    assert r.error.code == ErrorCode.CORRUPT_RECORD_EXCEPTION, r.error
    assert mention in r.error.message and "batch 2" in r.error.message, r.error.message
    assert raw.offsets(leader, table_id) == 2  # nothing of the request was written
    assert raw.produce(leader, table_id, _log_batch([3])).error.code == 0  # and the bucket still works
    assert _read_log(raw, leader, table_id) == [1, 2, 3]


def test_notify_leader_and_isr_from_an_unknown_coordinator_epoch_fences_nobody(raw):
    target = sorted(raw.tablet_servers())[0]
    r = raw.tablet(target).NotifyLeaderAndIsr(pb.NotifyLeaderAndIsrRequest(coordinator_epoch=2**31 - 1), timeout=10)
    assert r.error.code == ErrorCode.INVALID_COORDINATOR_EXCEPTION and "epoch" in r.error.message, r.error
    r = raw.tablet(target).StopReplica(pb.StopReplicaRequest(coordinator_epoch=2**31 - 1), timeout=10)
    assert r.error.code == ErrorCode.INVALID_COORDINATOR_EXCEPTION, r.error
    # the real coordinator still leads that server: a new table with buckets led by it works
    table_id = raw.create_table("hostile", "after_epoch_spoof", LOG_SCHEMA, buckets=3)
    led = [b for b in raw.buckets("hostile", "after_epoch_spoof") if b.leader_id == target]
    assert led
    assert raw.produce(target, table_id, _log_batch([1]), bucket=led[0].bucket_id).error.code == 0


def test_notify_leader_and_isr_that_contradicts_zookeeper_is_refused(raw):
    table_id = raw.create_table("hostile", "lai_spoof", LOG_SCHEMA)
    bucket = _leader(raw, "lai_spoof")
    follower = next(r for r in bucket.replicas if r != bucket.leader_id)
    epoch = _coordinator_epoch(raw)
    forged = pb.NotifyLeaderAndIsrRequest(coordinator_epoch=epoch, buckets=[pb.LeaderAndIsrPb(
        table_id=table_id, partition_id=-1, bucket_id=0, leader=follower, leader_epoch=bucket.leader_epoch + 5,
        replicas=list(bucket.replicas), isr=[follower], bucket_epoch=99)],
        table_infos=[raw.table_info("hostile", "lai_spoof")])
    r = raw.tablet(follower).NotifyLeaderAndIsr(forged, timeout=10)
    assert r.error.code == 0 and r.buckets[0].error.code == ErrorCode.FENCED_LEADER_EPOCH_EXCEPTION, r
    assert raw.produce(follower, table_id, _log_batch([1])).error.code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert raw.produce(bucket.leader_id, table_id, _log_batch([1])).error.code == 0
    # paths that are no znode (found by the fuzzer: they raised inside the check, UNKNOWN_SERVER_ERROR)
    for db, name, partition in (("", "t", None), ("..", "x", None), ("hostile", "a/b", None),
                                ("hostile", "lai_spoof", "")):
        info = pb.TableInfoPb()
        info.CopyFrom(raw.table_info("hostile", "lai_spoof"))
        info.table_path.database_name, info.table_path.table_name = db, name
        info.table_id = table_id if partition is not None else 999_999  # a table the server does not know yet
        req = pb.NotifyLeaderAndIsrRequest(coordinator_epoch=epoch, table_infos=[info], buckets=[pb.LeaderAndIsrPb(
            table_id=info.table_id, partition_id=-1 if partition is None else 5, bucket_id=0,
            leader=bucket.leader_id, leader_epoch=bucket.leader_epoch, replicas=list(bucket.replicas),
            isr=list(bucket.isr))],
            partition_infos=[] if partition is None else [pb.PartitionInfoPb(partition_id=5, partition_name="")])
        r = raw.tablet(follower).NotifyLeaderAndIsr(req, timeout=10)
        assert r.buckets[0].error.code in (ErrorCode.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION,
                                           ErrorCode.PARTITION_NOT_EXISTS), (db, name, partition, r)


def _coordinator_epoch(raw: RawRpc) -> int:
    """The current coordinator epoch, as a spoofer learns it: the tablet servers reject a stale one with it."""
    sid = sorted(raw.tablet_servers())[0]
    r = raw.tablet(sid).NotifyLeaderAndIsr(pb.NotifyLeaderAndIsrRequest(coordinator_epoch=0), timeout=10)
    return int(r.error.message.split("epoch 0 < ")[1].split(")")[0])


def test_controlled_shutdown_and_isr_changes_need_the_servers_registration(raw):
    raw.create_table("hostile", "shutdown_spoof", LOG_SCHEMA, buckets=3)
    before = raw.wait_for_full_isr("hostile", "shutdown_spoof")
    for req in (pb.ControlledShutdownRequest(), pb.ControlledShutdownRequest(server_id=1),
                pb.ControlledShutdownRequest(server_id=1, server_epoch=12345),
                pb.ControlledShutdownRequest(server_id=77, server_epoch=1)):
        r = raw.coordinator.ControlledShutdown(req, timeout=10)
        assert r.error.code == ErrorCode.SERVER_NOT_EXIST_EXCEPTION and "registered" in r.error.message, r.error
    b = before[0]
    r = raw.coordinator.AdjustIsr(pb.AdjustIsrRequest(server_id=b.leader_id, bucket=pb.LeaderAndIsrPb(
        table_id=raw.table_info("hostile", "shutdown_spoof").table_id, partition_id=-1, bucket_id=b.bucket_id,
        leader=b.leader_id, leader_epoch=b.leader_epoch, isr=[b.leader_id], bucket_epoch=0)), timeout=10)
    assert r.error.code != 0
    time.sleep(1)
    after = raw.buckets("hostile", "shutdown_spoof")
    assert [(x.leader_id, sorted(x.isr)) for x in after] == [(x.leader_id, sorted(x.isr)) for x in before]


def test_snapshot_and_lake_commits_with_bogus_ids_are_refused(raw):
    table_id = raw.create_table("hostile", "commit_spoof", KV_SCHEMA, primary_keys=["k"],
                                properties={"table.datalake.enabled": "true"})
    bucket = _leader(raw, "commit_spoof")
    snap = pb.KvSnapshotPb(table_id=table_id, partition_id=-1, bucket_id=0, snapshot_id=1, log_offset=0,
                           manifest_path="file:///etc", create_time=1)
    r = raw.coordinator.CommitKvSnapshot(pb.CommitKvSnapshotRequest(
        server_id=bucket.leader_id, leader_epoch=bucket.leader_epoch, snapshot=snap), timeout=10)
    assert r.error.code == ErrorCode.SERVER_NOT_EXIST_EXCEPTION, r.error
    for snapshot in (
        pb.LakeSnapshotPb(table_id=table_id, snapshot_id=1, buckets=[pb.LakeBucketOffsetPb(
            partition_id=-1, bucket_id=7, log_offset=0)]),
        pb.LakeSnapshotPb(table_id=table_id, snapshot_id=1, buckets=[pb.LakeBucketOffsetPb(
            partition_id=-1, bucket_id=0, log_offset=-5)]),
        pb.LakeSnapshotPb(table_id=table_id, snapshot_id=-3, buckets=[]),
        pb.LakeSnapshotPb(table_id=table_id, snapshot_id=1, buckets=[pb.LakeBucketOffsetPb(
            partition_id=42, bucket_id=0, log_offset=0)]),
    ):
        r = raw.admin.CommitLakeTableSnapshot(pb.CommitLakeTableSnapshotRequest(snapshot=snapshot), timeout=10)
        assert r.error.code != 0, snapshot
    r = raw.admin.GetLatestLakeSnapshot(pb.GetLatestLakeSnapshotRequest(
        table_path=pb.TablePathPb(database_name="hostile", table_name="commit_spoof")), timeout=10)
    assert r.error.code == ErrorCode.LAKE_SNAPSHOT_NOT_EXIST


def test_a_restarted_follower_rejoins_the_isr_as_soon_as_it_caught_up(hostile_cluster, raw):
    table_id = raw.create_table("hostile", "rejoin", LOG_SCHEMA)
    bucket = _leader(raw, "rejoin")
    follower = next(r for r in bucket.replicas if r != bucket.leader_id)
    hostile_cluster.kill_tablet_server(follower)
    deadline = time.monotonic() + 20
    while follower in raw.buckets("hostile", "rejoin")[0].isr:
        assert time.monotonic() < deadline, "the killed follower never left the ISR"
        time.sleep(0.1)
    for i in range(20):
        assert raw.produce(bucket.leader_id, table_id, _log_batch([i])).error.code == 0
    hostile_cluster.start_tablet_server(follower)
    started = time.monotonic()
    while follower not in raw.buckets("hostile", "rejoin")[0].isr:
        assert time.monotonic() - started < 8, "the follower did not rejoin the ISR soon after catching up"
        time.sleep(0.1)


def test_fetch_from_beyond_the_log_end_is_an_offset_error_without_server_paths(hostile_cluster, raw):
    table_id = raw.create_table("hostile", "far_fetch", LOG_SCHEMA)
    leader = _leader(raw, "far_fetch").leader_id
    r = raw.fetch(leader, table_id, 10**12)
    assert r.error.code == ErrorCode.LOG_OFFSET_OUT_OF_RANGE_EXCEPTION and "10000000000" in r.error.message
    assert str(hostile_cluster.dir) not in r.error.message and "/" not in r.error.message, r.error.message
