"""A new leader whose KV state cannot be recovered says so: the failure is logged with its cause, answered to
writers and readers (KV_STORAGE_EXCEPTION naming it, not "still recovering" for ever) and retried.

In-process: a ReplicaManager on a temporary directory, driven by NotifyLeaderAndIsr requests as the coordinator
would send them."""

from __future__ import annotations

import asyncio

import numpy as np
import pyarrow as pa
import pytest
from replica_requests import SCHEMA, TB, notify, put

from fluss.errors import ErrorCode, FlussError
from fluss.record.change_type import ChangeType
from fluss.record.log_batch import build_batch
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.server.replica import manager as manager_module
from fluss.server.replica.manager import ReplicaManager


def _notify(leader: int, epoch: int) -> pb.NotifyLeaderAndIsrRequest:
    return notify(leader, epoch, [0, 1])


@pytest.mark.asyncio(loop_scope="session")
async def test_a_failed_kv_recovery_is_reported_with_its_cause_and_retried(tmp_path, caplog, monkeypatch):
    monkeypatch.setattr(manager_module, "KV_RECOVERY_RETRY_S", 0.2)
    m = ReplicaManager(0, tmp_path, 1 << 20, 4096)
    try:
        assert (await m.apply_leader_and_isr(_notify(0, 1)))[0].error.code == 0
        req = put([1, 2])
        await m.put_kv(req, req.buckets[0])
        replica = m.replicas[TB]
        # a changelog batch no KV state can apply (a body of another layout, CRC valid), as an older server or a
        # damaged disk could have left it: appended past the leader's validation
        bad = build_batch(pa.record_batch([pa.array([1, 2, 3], pa.int32())], names=["k"]), schema_id=1,
                          change_types=np.full(3, ChangeType.Insert, np.uint8))
        replica.log.append_as_leader(bad, 1)
        assert (await m.apply_leader_and_isr(_notify(1, 2)))[0].error.code == 0  # follower for a term
        with caplog.at_level("ERROR", logger="fluss.server.replica.manager"):
            result = (await m.apply_leader_and_isr(_notify(0, 3)))[0]
        assert result.error.code == ErrorCode.KV_STORAGE_EXCEPTION and "could not be recovered" in result.error.message
        assert "KV recovery of" in caplog.text and "Traceback" in caplog.text  # logged with its stack
        for call in (lambda: m.lookup(TB, [b"x"]), lambda: m.put_kv(req, req.buckets[0])):
            with pytest.raises(FlussError) as e:
                await call()
            assert e.value.error_code == ErrorCode.KV_STORAGE_EXCEPTION and "failed to recover" in e.value.message
        # the retry hits the same changelog batch: it keeps failing, and says so each time
        caplog.clear()
        with caplog.at_level("ERROR", logger="fluss.server.replica.manager"):
            for _ in range(100):
                if caplog.text.count("KV recovery of") >= 2:
                    break
                await asyncio.sleep(0.1)
        assert caplog.text.count("KV recovery of") >= 2
    finally:
        m.close()


def _put_seq(keys: list[int], seq: int, delete: bool = False) -> pb.PutKvRequest:
    from fluss.record.log_batch import assign_writer

    rb = pa.record_batch([pa.array(keys, pa.int64()), pa.array([str(k) for k in keys])], schema=SCHEMA)
    types = np.full(len(keys), ChangeType.Delete if delete else ChangeType.UpdateAfter, np.uint8)
    records = assign_writer(build_batch(rb, schema_id=1, change_types=types), 42, seq)
    return pb.PutKvRequest(acks=1, table_id=7, buckets=[pb.PutKvBucketPb(partition_id=-1, bucket_id=0,
                                                                          records=records)])


@pytest.mark.asyncio(loop_scope="session")
async def test_a_new_leader_takes_the_next_put_after_a_batch_that_changed_nothing(tmp_path):
    """A delete of an absent key writes no changelog, so its sequence is in no log: a new leader rebuilt from
    the log must still take the writer's next batch (found by the nemesis suite: the writer failed for good)."""
    m = ReplicaManager(0, tmp_path, 1 << 20, 4096)
    try:
        await m.apply_leader_and_isr(_notify(0, 1))
        for req in (_put_seq([1], 0), _put_seq([99], 1, delete=True)):  # the second changes nothing
            await m.put_kv(req, req.buckets[0])
    finally:
        m.close()
    m = ReplicaManager(0, tmp_path, 1 << 20, 4096)  # the next leader: state from the log alone
    try:
        await m.apply_leader_and_isr(_notify(0, 2))
        req = _put_seq([2], 2)
        replica, info = await m.put_kv(req, req.buckets[0])
        again, _ = await m.put_kv(req, req.buckets[0])  # a resend is still recognised
        assert replica.log.log_end_offset == 2  # +I of key 1, +I of key 2, nothing twice
        with pytest.raises(FlussError) as e:  # an older sequence that is not a resend is still refused
            old = _put_seq([3], 1)
            await m.put_kv(old, old.buckets[0])
        assert e.value.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_EXCEPTION
    finally:
        m.close()


@pytest.mark.asyncio(loop_scope="session")
async def test_a_leader_whose_kv_state_cannot_be_flushed_still_becomes_a_follower(tmp_path, monkeypatch, caplog):
    """Closing the KV state flushes RocksDB; on a full disk that fails. The leadership change must happen anyway
    (found by the nemesis suite: the server stayed leader of an old epoch and never rejoined the ISR)."""
    m = ReplicaManager(0, tmp_path, 1 << 20, 4096)
    try:
        await m.apply_leader_and_isr(_notify(0, 1))
        req = put([1, 2])
        await m.put_kv(req, req.buckets[0])
        kv = m.replicas[TB].kv

        def full_disk() -> None:
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(kv, "close", full_disk)
        with caplog.at_level("WARNING", logger="fluss.server.replica.replica"):
            result = (await m.apply_leader_and_isr(_notify(1, 2)))[0]
        replica = m.replicas[TB]
        assert result.error.code == 0, result.error.message
        assert not replica.is_leader and replica.leader_id == 1 and replica.leader_epoch == 2 and replica.kv is None
        assert "closing the KV state of" in caplog.text and "No space left" in caplog.text
    finally:
        m.close()
