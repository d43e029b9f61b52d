"""A tablet server whose disk fills up refuses writes with a clear error, acknowledges nothing it did not append,
has its leaderships moved by the coordinator, and rejoins the ISRs once space returns.

Tablet server 2's data directory is a small tmpfs (root is needed to mount it; the test is skipped otherwise)."""

from __future__ import annotations

import time

import pyarrow as pa
import pytest

from fluss import ErrorCode
from fluss.record.log_batch import build_batch
from fluss.server.cluster import LocalCluster
from reliability.disk import SmallDisk, can_mount
from reliability.raw import RawRpc

pytestmark = pytest.mark.skipif(not can_mount(), reason="mounting a tmpfs needs root")

SCHEMA = pa.schema([("v", pa.int64())])
VICTIM = 2


def _batch(values) -> bytes:
    return build_batch(pa.record_batch([pa.array(values, pa.int64())], schema=SCHEMA), schema_id=1)


def _wait(predicate, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _offsets_at(raw: RawRpc, server_id: int, table_id: int, bucket: int) -> int | None:
    """The bucket's high watermark at a server, None while that server does not yet lead it (the coordinator's
    notification of the new leader is on its way)."""
    try:
        return raw.offsets(server_id, table_id, bucket=bucket)
    except RuntimeError:
        return None


def test_a_full_disk_refuses_writes_moves_leadership_and_recovers(tmp_path):
    with SmallDisk(tmp_path / "small-disk", size_mb=32) as disk:
        config = {"default.replication.factor": "3", "log.replica.min-in-sync-replicas-number": "2",
                  "log.replica.fetch.wait-max-time": "100ms"}
        with LocalCluster(tablet_servers=3, server_config=config, zookeeper_session_timeout="2s",
                          tablet_server_config={VICTIM: {"data.dir": str(disk.mount_point / "data")}}) as cluster, \
                RawRpc(cluster.bootstrap_servers) as raw:
            table_id = raw.create_table("disk", "t", SCHEMA, buckets=3)
            led = next(b for b in raw.buckets("disk", "t") if b.leader_id == VICTIM)
            assert raw.produce(VICTIM, table_id, _batch([1, 2]), bucket=led.bucket_id).error.code == 0
            before = raw.offsets(VICTIM, table_id, bucket=led.bucket_id)

            disk.fill()
            r = raw.produce(VICTIM, table_id, _batch(list(range(5000))), bucket=led.bucket_id)
            assert r.error.code == ErrorCode.STORAGE_EXCEPTION, r.error
            assert "cannot write its disk" in r.error.message and "No space left" in r.error.message, r.error.message
            assert str(disk.mount_point) not in r.error.message

            # the coordinator moves the leadership to an in-sync replica that has everything acknowledged
            moved = _wait(lambda: [b for b in raw.buckets("disk", "t") if b.bucket_id == led.bucket_id
                                   and b.leader_id not in (VICTIM, -1) and VICTIM not in b.isr], 15,
                          "the leadership to move off the full server")[0]
            new_leader = moved.leader_id
            # the new leader's high watermark catches up with what was acknowledged, and no further: the refused
            # batch was not appended anywhere
            _wait(lambda: _offsets_at(raw, new_leader, table_id, led.bucket_id) == before, 10, "the high watermark")
            assert raw.offsets(new_leader, table_id, bucket=led.bucket_id, offset_type=0) == 0
            _wait(lambda: raw.produce(new_leader, table_id, _batch([3]), bucket=led.bucket_id).error.code == 0, 10,
                  "writes at the new leader")

            disk.free()
            _wait(lambda: all(VICTIM in b.isr for b in raw.buckets("disk", "t")), 30,
                  "the server to rejoin every ISR after space returned")
            r = raw.fetch(new_leader, table_id, 0, bucket=led.bucket_id)
            assert r.error.code == 0 and r.high_watermark == before + 1
