"""A NotifyLeaderAndIsr that brings many new replicas (a CREATE TABLE of many buckets) creates them concurrently,
off the event loop, and every new leader's leader-epoch checkpoint is on disk when the call returns
(``ReplicaManager._start_creating``). In-process ``ReplicaManager``, no ZooKeeper."""

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
