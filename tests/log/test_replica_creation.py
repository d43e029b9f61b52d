"""A NotifyLeaderAndIsr that brings many new replicas (a CREATE TABLE of many buckets) creates them concurrently,
off the event loop, and every new leader's leader-epoch checkpoint is on disk when the call returns
(``ReplicaManager._start_creating``); the KV states of new primary-key leaders are opened together too, each once.
In-process ``ReplicaManager``, no ZooKeeper."""

from __future__ import annotations

import asyncio
import threading
import time

import pyarrow as pa
import pytest

from fluss.errors import ErrorCode
from fluss.metadata import Schema, TableBucket, TableDescriptor, TableInfo, TablePath
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.server.log import epoch_cache
from fluss.server.log.checkpoint import CheckpointFile
from fluss.server.replica.kv_replica import KvReplica
from fluss.server.replica.manager import CREATE_THREADS, ReplicaManager

pytestmark = pytest.mark.asyncio(loop_scope="function")

ME = 1
BUCKETS = 48
INFO = TableInfo(TablePath("db", "many"), 7, 1, TableDescriptor(Schema(pa.schema([("a", pa.int64())])),
                                                               bucket_count=BUCKETS), 0, 0)


def notify(buckets: range, leader_of, epoch: int = 0) -> pb.NotifyLeaderAndIsrRequest:
    return pb.NotifyLeaderAndIsrRequest(coordinator_epoch=1, table_infos=[INFO.to_pb()], buckets=[
        pb.LeaderAndIsrPb(table_id=7, partition_id=-1, bucket_id=b, leader=leader_of(b), leader_epoch=epoch,
                          replicas=[ME, 2], isr=[ME, 2], bucket_epoch=epoch) for b in buckets])


@pytest.fixture
def manager(tmp_path):
    m = ReplicaManager(ME, tmp_path / "data", 1 << 20, 4096)
    yield m
    m.close()


async def test_new_replicas_are_created_concurrently_and_durably(manager, monkeypatch):
    persists: list[str] = []
    busy, most = [0], [0]
    lock = threading.Lock()
    real = epoch_cache.LeaderEpochCache._persist

    def slow_persist(self):  # a disk whose fsyncs take 50 ms
        with lock:
            busy[0] += 1
            most[0] = max(most[0], busy[0])
        time.sleep(0.05)
        real(self)
        with lock:
            busy[0] -= 1
            persists.append(threading.current_thread().name)

    monkeypatch.setattr(epoch_cache.LeaderEpochCache, "_persist", slow_persist)
    ticks = 0

    async def ticker():  # the event loop stays free meanwhile
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    tick_task = asyncio.create_task(ticker())
    start = time.monotonic()
    results = await manager.apply_leader_and_isr(notify(range(BUCKETS), lambda b: ME if b % 2 == 0 else 2))
    elapsed = time.monotonic() - start
    tick_task.cancel()

    assert [r.bucket_id for r in results] == list(range(BUCKETS)) and all(r.error.code == 0 for r in results)
    assert len(manager.replicas) == BUCKETS
    leaders = [b for b in range(BUCKETS) if b % 2 == 0]
    assert len(persists) == len(leaders) and all(name.startswith("replica-create") for name in persists)
    assert most[0] >= min(4, CREATE_THREADS)  # several checkpoints were being written at once
    assert elapsed < len(leaders) * 0.05  # one at a time, the sleeps alone take 1.2 s
    assert ticks >= 5
    for b in range(BUCKETS):
        replica = manager.replicas[TableBucket(7, b)]
        stored = CheckpointFile(replica.directory / epoch_cache.FILE_NAME).read()
        if b % 2 == 0:
            assert replica.is_leader and replica.leader_epoch == 0 and stored == {"0": 0}
        else:
            assert not replica.is_leader and replica.leader_id == 2 and stored == {}


async def test_a_second_notification_meanwhile_waits_for_the_same_replica(manager):
    """Two notifications for the same new buckets in flight together (a retried send): each bucket's log is opened
    once, and the newer leader epoch wins whatever the order in which they finish."""
    first = notify(range(8), lambda b: ME, epoch=0)
    second = notify(range(8), lambda b: 2, epoch=1)
    a, b = await asyncio.gather(manager.apply_leader_and_isr(first), manager.apply_leader_and_isr(second))
    assert all(r.error.code == 0 for r in b)
    assert all(r.error.code in (0, ErrorCode.FENCED_LEADER_EPOCH_EXCEPTION) for r in a)  # stale if it came last
    assert len(manager.replicas) == 8
    for k in range(8):
        replica = manager.replicas[TableBucket(7, k)]
        assert replica.leader_epoch == 1 and replica.leader_id == 2
    # every bucket directory holds one log (a second open of the same directory would have failed or left a
    # second set of files)
    assert sorted(p.name for p in (manager.replicas[TableBucket(7, 0)].directory).iterdir()
                  if p.suffix == ".log") == ["00000000000000000000.log"]


async def test_an_unknown_table_is_refused_per_bucket(manager):
    request = notify(range(2), lambda b: ME)
    del request.table_infos[:]
    results = await manager.apply_leader_and_isr(request)
    assert [r.error.code != 0 for r in results] == [True, True] and not manager.replicas
    assert "no definition of table 7" in results[0].error.message


async def test_a_replica_created_before_its_turn_is_applied(manager, monkeypatch):
    """Bucket 0's creation is slow, the others' finish while the notification still waits for bucket 0: each is
    applied from the replica already published."""
    real = epoch_cache.LeaderEpochCache._persist

    def slow_first(self):
        if self._file.path.parent.name == "bucket-0":
            time.sleep(0.3)
        real(self)

    monkeypatch.setattr(epoch_cache.LeaderEpochCache, "_persist", slow_first)
    results = await manager.apply_leader_and_isr(notify(range(4), lambda b: ME))
    assert [r.error.code for r in results] == [0, 0, 0, 0], [r.error.message for r in results]
    assert all(manager.replicas[TableBucket(7, k)].is_leader for k in range(4)) and not manager._creating


PK_BUCKETS = 16
PK_INFO = TableInfo(TablePath("db", "keyed"), 8, 1, TableDescriptor(
    Schema(pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())]), primary_keys=["k"]),
    bucket_count=PK_BUCKETS), 0, 0)


def notify_pk(buckets: range, epoch: int = 0) -> pb.NotifyLeaderAndIsrRequest:
    return pb.NotifyLeaderAndIsrRequest(coordinator_epoch=1, table_infos=[PK_INFO.to_pb()], buckets=[
        pb.LeaderAndIsrPb(table_id=8, partition_id=-1, bucket_id=b, leader=ME, leader_epoch=epoch, replicas=[ME],
                          isr=[ME], bucket_epoch=epoch) for b in buckets])


def slow_kv_opens(monkeypatch, seconds: float) -> dict:
    """KvReplica.open takes ``seconds`` longer; what ran where and how many at once is recorded."""
    seen = {"threads": [], "buckets": [], "busy": 0, "most": 0}
    lock = threading.Lock()
    real = KvReplica.open

    def slow_open(self, snapshot_of):
        with lock:
            seen["busy"] += 1
            seen["most"] = max(seen["most"], seen["busy"])
        try:
            time.sleep(seconds)
            real(self, snapshot_of)
        finally:
            with lock:
                seen["busy"] -= 1
                seen["threads"].append(threading.current_thread().name)
                seen["buckets"].append(self.replica.bucket.bucket_id)

    monkeypatch.setattr(KvReplica, "open", slow_open)
    return seen


async def test_new_primary_key_leaders_open_their_kv_states_together(manager, monkeypatch):
    """The KV states (RocksDB) of a notification's new primary-key leaders are opened on the creation threads at
    once, not one bucket after the other, and every one is open when the notification is answered."""
    seen = slow_kv_opens(monkeypatch, 0.2)
    start = time.monotonic()
    results = await manager.apply_leader_and_isr(notify_pk(range(PK_BUCKETS)))
    elapsed = time.monotonic() - start
    assert all(r.error.code == 0 for r in results), [r.error.message for r in results]
    assert all(manager.replicas[TableBucket(8, b)].kv is not None for b in range(PK_BUCKETS))
    assert sorted(seen["buckets"]) == list(range(PK_BUCKETS))  # each opened once
    assert all(name.startswith("replica-create") for name in seen["threads"])
    assert seen["most"] >= min(4, CREATE_THREADS)
    assert elapsed < PK_BUCKETS * 0.2  # one at a time, the sleeps alone take 3.2 s (together ~0.4 s)


async def test_a_notification_sent_again_meanwhile_opens_each_kv_state_once(manager, monkeypatch):
    """A notification resent while the first is still opening the KV states waits for the same opens: RocksDB is
    opened once per bucket (a second open of the same directory fails on RocksDB's lock) and both answers are OK."""
    seen = slow_kv_opens(monkeypatch, 0.1)
    first, again = await asyncio.gather(manager.apply_leader_and_isr(notify_pk(range(6))),
                                        manager.apply_leader_and_isr(notify_pk(range(6))))
    assert all(r.error.code == 0 for r in first + again), [r.error.message for r in first + again]
    assert sorted(seen["buckets"]) == list(range(6))
    assert all(manager.replicas[TableBucket(8, b)].kv is not None for b in range(6)) and not manager._kv_opening


async def test_a_failed_kv_open_is_answered_for_its_bucket_only(manager, monkeypatch):
    real = KvReplica.open

    def broken_bucket_1(self, snapshot_of):
        if self.replica.bucket.bucket_id == 1:
            raise OSError("disk on fire")
        real(self, snapshot_of)

    monkeypatch.setattr(KvReplica, "open", broken_bucket_1)
    monkeypatch.setattr("fluss.server.replica.manager.KV_RECOVERY_RETRY_S", 60.0)
    results = await manager.apply_leader_and_isr(notify_pk(range(3)))
    assert [r.error.code for r in results] == [0, ErrorCode.KV_STORAGE_EXCEPTION, 0]
    assert "could not be recovered" in results[1].error.message and "OSError" in results[1].error.message
    assert manager.replicas[TableBucket(8, 1)].kv is None and manager.replicas[TableBucket(8, 2)].kv is not None
