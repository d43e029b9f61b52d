"""A restarted leader on a current local KV state: it opens the local RocksDB, replays no changelog record and does
not wait for the coordinator's latest KV snapshot (asked only when the local state is missing; the offset it
bounds remote retention with is learnt in the background)."""

from __future__ import annotations

import asyncio
import logging
import shutil

import pyarrow as pa
import pytest
from replica_requests import TB, notify, put

from fluss.key.encoding import encode_keys
from fluss.metadata import TableBucket
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.server.kv.snapshot import SnapshotHandle
from fluss.server.replica.manager import ReplicaManager

KEYS = list(range(1000))


def _notify(epoch: int) -> pb.NotifyLeaderAndIsrRequest:
    return notify(0, epoch, [0])


async def _filled(tmp_path) -> None:
    """A leader that took ``KEYS`` and flushed them to its local RocksDB, then stopped."""
    m = ReplicaManager(0, tmp_path, 1 << 20, 4096)
    try:
        assert (await m.apply_leader_and_isr(_notify(1)))[0].error.code == 0
        for start in range(0, len(KEYS), 100):
            req = put(KEYS[start:start + 100])
            await m.put_kv(req, req.buckets[0])
        replica = m.replicas[TB]
        for _ in range(200):  # the flush follows the high watermark on the KV executor
            if replica.kv.kv.flushed_offset >= replica.log.log_end_offset:
                break
            await asyncio.sleep(0.05)
        assert replica.kv.kv.flushed_offset == replica.log.log_end_offset == len(KEYS)
    finally:
        m.close()


class _Coordinator:
    """The tablet server's ``kv_snapshot_of``: counts the calls; each waits until ``released`` is set."""

    def __init__(self, handle: SnapshotHandle | None) -> None:
        self.handle = handle
        self.calls = 0
        self.released = asyncio.Event()

    async def __call__(self, tb: TableBucket) -> SnapshotHandle | None:
        self.calls += 1
        await self.released.wait()
        return self.handle


@pytest.mark.asyncio(loop_scope="session")
async def test_a_restart_on_a_current_local_state_replays_nothing_and_does_not_wait_for_the_coordinator(
        tmp_path, caplog):
    await _filled(tmp_path)
    coordinator = _Coordinator(SnapshotHandle(snapshot_id=3, log_offset=800, files=[]))
    m = ReplicaManager(0, tmp_path, 1 << 20, 4096)
    m.kv_snapshot_of = coordinator
    try:
        with caplog.at_level(logging.INFO, logger="fluss.server.replica.kv_replica"):
            # the coordinator does not answer: the open must not need it
            result = await asyncio.wait_for(m.apply_leader_and_isr(_notify(2)), 20)
        assert result[0].error.code == 0
        assert f"ready at offset {len(KEYS)} (0 changelog records replayed)" in caplog.text
        assert "restoring" not in caplog.text
        keys = encode_keys(pa.record_batch([pa.array([0, 999, 1000], pa.int64())], names=["k"]), [0])
        found, _ = await m.lookup(TB, keys)
        assert found == [True, True, False]
        replica = m.replicas[TB]
        assert replica.kv_snapshot_offset == -1  # not known yet: remote retention stays conservative
        coordinator.released.set()  # the background ask completes
        for _ in range(100):
            if replica.kv_snapshot_offset == 800:
                break
            await asyncio.sleep(0.02)
        assert replica.kv_snapshot_offset == 800 and coordinator.calls == 1
    finally:
        coordinator.released.set()
        m.close()


@pytest.mark.asyncio(loop_scope="session")
async def test_a_leader_without_local_state_asks_for_the_snapshot_and_replays_the_changelog(tmp_path, caplog):
    await _filled(tmp_path)
    for kv_dir in tmp_path.rglob("kv"):
        if kv_dir.is_dir():
            shutil.rmtree(kv_dir)
    coordinator = _Coordinator(None)  # no snapshot: the whole changelog is replayed
    coordinator.released.set()
    m = ReplicaManager(0, tmp_path, 1 << 20, 4096)
    m.kv_snapshot_of = coordinator
    try:
        with caplog.at_level(logging.INFO, logger="fluss.server.replica.kv_replica"):
            assert (await m.apply_leader_and_isr(_notify(2)))[0].error.code == 0
        assert coordinator.calls == 1  # asked during the open, before the replay
        assert f"ready at offset {len(KEYS)} ({len(KEYS)} changelog records replayed)" in caplog.text
    finally:
        m.close()
