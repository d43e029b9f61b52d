"""The tiered log's pieces without a cluster: the manifest's rules, the local log's tiered retention and restart,
the remote index cache, and the RemoteLogManager against a local folder with a committer that behaves like the
coordinator (compare-and-set, leader epochs), including interrupted uploads, lost commit answers and fencing."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pytest

from fluss.errors import ErrorCode, FlussError
from fluss.fs import remote_log_layout as layout
from fluss.metadata import TableBucket, TablePath
from fluss.record.log_batch import build_batch, iter_batches
from fluss.server.log.config import LogConfig
from fluss.server.log.remote import storage as storage_module
from fluss.server.log.remote.index_cache import RemoteIndexCache
from fluss.server.log.remote.manager import CommittedManifest, RemoteLogManager
from fluss.server.log.remote.manifest import RemoteLogManifest, RemoteLogSegment
from fluss.server.log.remote.storage import RemoteLogStorage
from fluss.server.log.tablet import LogTablet
from fluss.server.log.writer_state import WriterStateManager
from fluss.server.metrics.tablet import TabletServerMetrics

SCHEMA = pa.schema([("v", pa.int64()), ("s", pa.string())])
SMALL = LogConfig(segment_bytes=4096, index_interval_bytes=512, ttl_ms=7 * 86_400_000)


def batch(start: int, n: int, writer_id: int = -1, sequence: int = -1) -> bytes:
    rb = pa.record_batch([pa.array(range(start, start + n), pa.int64()), pa.array([f"row-{v}" for v in
                                                                                 range(start, start + n)])],
                         schema=SCHEMA)
    return build_batch(rb, schema_id=1, compression=0, writer_id=writer_id, batch_sequence=sequence)


_sequences: dict[Path, int] = {}  # per tablet directory (an object id may be reused by a later test's tablet)


def fill(tablet: LogTablet, count: int, *, writer_id: int = 7, epoch: int = 1, timestamp: int | None = None) -> None:
    """Appends records whose value is their offset, 9 per batch, as one idempotent writer; all replicated."""
    while tablet.log_end_offset < count:
        start = tablet.log_end_offset
        n = min(9, count - start)
        seq = _sequences.get(tablet.directory, 0)
        tablet.append_as_leader(batch(start, n, writer_id, seq), epoch, commit_timestamp=timestamp)
        _sequences[tablet.directory] = seq + 1
    tablet.update_high_watermark(tablet.log_end_offset)


def seg(sid: str, start: int, end: int, ts: int = 0) -> RemoteLogSegment:
    return RemoteLogSegment(sid, start, end, ts, (end - start) * 10)


# ---------------------------------------------------------------------------------------------- manifest


def test_manifest_allows_overlapping_segments_and_finds_the_one_holding_an_offset():
    m = RemoteLogManifest(1, -1, 0, (seg("a", 0, 100), seg("b", 80, 150), seg("c", 150, 200)))
    assert (m.start_offset, m.end_offset, m.size_in_bytes) == (0, 200, 2200)
    assert [s.segment_id for s in m.segments_from(0)] == ["a", "b", "c"]
    assert [s.segment_id for s in m.segments_from(99)] == ["b", "c"]  # the largest start <= 99 is b
    assert [s.segment_id for s in m.segments_from(100)] == ["b", "c"]
    assert [s.segment_id for s in m.segments_from(150)] == ["c"]
    assert m.segments_from(200) == [] and m.segments_from(-5) == []


@pytest.mark.parametrize("segments", [
    (seg("a", 0, 100), seg("b", 101, 150)),  # a gap
    (seg("a", 0, 100), seg("b", 50, 100)),  # does not go past the previous end
    (seg("a", 10, 10),),  # empty
])
def test_manifest_rejects_gaps_and_segments_that_do_not_advance(segments):
    with pytest.raises(FlussError) as e:
        RemoteLogManifest(1, -1, 0, segments)
    assert e.value.error_code == ErrorCode.LOG_STORAGE_EXCEPTION


def test_ttl_drops_expired_segments_but_keeps_the_end_where_uploads_continue():
    m = RemoteLogManifest(1, -1, 0, (seg("a", 0, 100, ts=10), seg("b", 100, 200, ts=20), seg("c", 200, 300, ts=30)))
    kept, dropped = m.without_expired(25)
    assert [s.segment_id for s in dropped] == ["a", "b"] and kept.start_offset == 200
    everything, dropped = m.without_expired(10**6)
    assert len(dropped) == 3 and everything.is_empty
    assert (everything.start_offset, everything.end_offset) == (-1, 300)
    again = RemoteLogManifest.from_bytes(everything.to_bytes(), "test")
    assert again == everything and again.with_segments([seg("d", 300, 400)]).start_offset == 300


def test_unreadable_manifest_is_named():
    with pytest.raises(FlussError, match="s3://b/x.manifest is unreadable"):
        RemoteLogManifest.from_bytes(b"{not json", "s3://b/x.manifest")


# ---------------------------------------------------------------------------------------------- local log


def test_tiered_retention_keeps_the_newest_segments_and_never_passes_the_tiered_offset(tmp_path):
    tablet = LogTablet.open(tmp_path / "t", SMALL)
    fill(tablet, 600)
    bases = tablet.segment_base_offsets()
    assert len(bases) >= 6
    assert tablet.delete_tiered_segments(bases[2], keep_segments=2) == 2  # only what ends at or below the bound
    assert tablet.log_start_offset == bases[2]
    assert tablet.delete_tiered_segments(tablet.log_end_offset, keep_segments=2) == len(bases) - 4
    assert tablet.segment_count == 2 and tablet.log_start_offset == bases[-2]
    tablet.close()


def test_sealed_segments_stop_at_the_bound_and_never_include_the_active_one(tmp_path):
    tablet = LogTablet.open(tmp_path / "t", SMALL)
    fill(tablet, 300)
    sealed = tablet.sealed_segments(tablet.log_end_offset)
    assert [s.base_offset for s in sealed] == tablet.segment_base_offsets()[:-1]
    assert all(s.log_path.exists() and s.index_path.exists() for s in sealed)
    assert tablet.sealed_segments(sealed[1].next_offset) == sealed[:2]
    tablet.close()


def test_restart_at_empties_the_log_and_continues_at_the_offset(tmp_path):
    tablet = LogTablet.open(tmp_path / "t", SMALL)
    fill(tablet, 100)
    tablet.restart_at(5000)
    assert (tablet.log_start_offset, tablet.log_end_offset, tablet.high_watermark) == (5000, 5000, 5000)
    assert tablet.epochs.latest_epoch < 0 and len(tablet.writers) == 0
    tablet.append_as_follower(_with_offsets(batch(0, 3), 5000))
    tablet.close()
    reopened = LogTablet.open(tmp_path / "t", SMALL)
    assert (reopened.log_start_offset, reopened.log_end_offset) == (5000, 5003)
    reopened.close()


def _with_offsets(raw: bytes, base: int) -> bytes:
    from fluss.record.log_batch import assign_offsets

    return assign_offsets(raw, base, 1, 123)


def test_writer_state_and_epochs_for_a_segment(tmp_path):
    tablet = LogTablet.open(tmp_path / "t", SMALL)
    fill(tablet, 40, epoch=1)
    tablet.append_as_leader(batch(40, 5, 7, 5), 3)  # batches 0-4 hold offsets 0-39
    assert tablet.leader_epochs_between(0, 40) == [(1, 0)]
    assert tablet.leader_epochs_between(20, 45) == [(1, 20), (3, 40)]
    state = WriterStateManager.from_json(json.loads(json.dumps(tablet.writers.to_json())))
    assert state.check(7, 6, "x") is None  # the next sequence
    assert state.check(7, 5, "x").base_offset == 40  # a resend
    tablet.close()


def test_remote_index_cache_finds_positions_and_stays_within_its_bound():
    entries = np.array([(0, 0), (10, 800), (25, 2000)], dtype=[("o", "<u4"), ("p", "<u4")]).tobytes()
    loads = []
    cache = RemoteIndexCache(max_bytes=30)

    def load():
        loads.append(1)
        return entries

    assert cache.position("a", 100, 100, load) == 0
    assert cache.position("a", 100, 112, load) == 800
    assert cache.position("a", 100, 130, load) == 2000
    assert len(loads) == 1  # cached
    cache.position("b", 0, 5, load)
    assert cache.cached_bytes <= 30 and len(cache) == 1  # "a" evicted


# ---------------------------------------------------------------------------------------------- manager


class FakeCoordinator:
    """The coordinator's rules for CommitRemoteLogManifest: leader epoch fence and compare-and-set."""

    def __init__(self) -> None:
        self.records: dict[TableBucket, CommittedManifest] = {}
        self.leader_epoch = 1
        self.lose_next_answer = False
        self.commits = 0

    async def commit(self, bucket, leader_epoch, path, previous_path, manifest) -> None:
        if leader_epoch != self.leader_epoch:
            raise FlussError("fenced", ErrorCode.FENCED_LEADER_EPOCH_EXCEPTION)
        current = self.records.get(bucket)
        if current is not None and current.path == path:
            return
        if (current.path if current else "") != previous_path:
            raise FlussError("changed", ErrorCode.INVALID_UPDATE_VERSION_EXCEPTION)
        self.records[bucket] = CommittedManifest(path, manifest.start_offset, manifest.end_offset)
        self.commits += 1
        if self.lose_next_answer:
            self.lose_next_answer = False
            raise FlussError("answer lost", ErrorCode.NETWORK_EXCEPTION)

    async def committed(self, bucket):
        return self.records.get(bucket)


@dataclass
class FakeTable:
    table_path: TablePath = field(default_factory=lambda: TablePath("db", "t"))
    pk: bool = False
    table_id: int = 1

    def has_primary_key(self) -> bool:
        return self.pk


@dataclass
class FakeReplica:
    bucket: TableBucket
    log: LogTablet
    leader_epoch: int = 1
    is_leader: bool = True
    table: FakeTable = field(default_factory=FakeTable)
    log_config: LogConfig = SMALL
    tiered_offset: int = -1
    tiered_local_segments: int = 2
    local_ttl_ms: int = -1  # table.log.local-ttl off
    kv_snapshot_offset: int = -1
    kv: object = None


class FakeReplicas:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.replicas: dict[TableBucket, FakeReplica] = {}
        self.partition_names: dict[int, str] = {}

    def bucket_dir(self, tb: TableBucket) -> Path:
        return self.data_dir / "db" / f"t-{tb.table_id}" / f"bucket-{tb.bucket_id}"


@pytest.fixture
def env(tmp_path):
    tb = TableBucket(1, 0)
    replicas = FakeReplicas(tmp_path / "data")
    tablet = LogTablet.open(replicas.bucket_dir(tb), SMALL)
    replica = FakeReplica(tb, tablet)
    replicas.replicas[tb] = replica
    coordinator = FakeCoordinator()
    remote = tmp_path / "remote"
    manager = RemoteLogManager(RemoteLogStorage(str(remote)), replicas, coordinator, 2, 2, 1 << 20)
    yield manager, replica, coordinator, remote
    manager.close()
    tablet.close()


def remote_records(manager: RemoteLogManager, replica: FakeReplica, start: int) -> list[int]:
    """Every record value from ``start`` read back from the committed remote segments (as a client would)."""
    state = asyncio.run(manager.state_of(replica)) if manager.cached(replica) is None else manager.cached(replica)
    out: list[int] = []
    offset = start
    for s in state.manifest.segments_from(start):
        data = manager.storage.read_bytes(layout.segment_file(state.tablet_dir, s.segment_id, s.start_offset))
        assert len(data) == s.size_in_bytes
        for b in iter_batches(data, validate=True):
            values = b.to_arrow(SCHEMA).column("v").to_pylist()
            out += [v for v in values if v >= offset]
            offset = max(offset, b.next_offset)
    return out


def test_leader_uploads_sealed_segments_commits_and_trims_the_local_log(env):
    manager, replica, coordinator, remote = env
    fill(replica.log, 1000)
    stats = asyncio.run(manager.run_once())
    sealed = len(replica.log.segment_base_offsets())
    assert stats.uploaded_segments > 3 and stats.commits >= 1 and stats.deleted_local_segments > 0
    assert replica.log.segment_count == 2  # table.log.tiered.local-segments
    state = manager.cached(replica)
    assert state.manifest.end_offset == replica.tiered_offset >= replica.log.log_start_offset
    assert coordinator.records[replica.bucket].path == state.manifest_path
    assert remote_records(manager, replica, 0) == list(range(state.manifest.end_offset))
    # every file of a segment is there; exactly one manifest remains
    first = state.manifest.segments[0]
    for suffix in layout.SEGMENT_FILES:
        assert Path(layout.segment_file(state.tablet_dir, first.segment_id, first.start_offset, suffix)).exists()
    writers = json.loads(Path(layout.segment_file(state.tablet_dir, first.segment_id, first.start_offset,
                                                  layout.WRITER_STATE_FILE)).read_text())
    assert writers["7"][-1][2] == first.end_offset - 1  # the writer's last batch ends the segment
    assert len(list(Path(layout.manifest_dir(state.tablet_dir)).iterdir())) == 1
    assert sealed >= 2 and remote.exists()


def test_remote_log_metrics_count_copies_deletions_and_show_the_remote_log(env, monkeypatch):
    """Fluss's remote-log metrics: per table, segments copied (count, bytes, failures) and expired remote segments
    deleted; per led bucket and per server, the remote log's segments, end offset and size."""
    manager, replica, coordinator, remote = env
    metrics = TabletServerMetrics()
    metrics.attach(SimpleNamespace(replicas=manager.replicas.replicas, partition_names={}, min_isr=1,
                                   remote_log=manager))
    manager.metrics = metrics
    replica.replicas, replica.isr = [0], [0]
    fill(replica.log, 400, timestamp=int(time.time() * 1000) - 10_000)  # ten seconds old

    def value(name: str, field_name: str = "value", **labels) -> int:
        rows = [r for r in metrics.registry.snapshot().get(name, []) if labels.items() <= r["labels"].items()]
        assert len(rows) == 1, (name, rows)
        return rows[0][field_name]

    def refuse(*args, **kwargs):
        raise FlussError("store down", ErrorCode.NETWORK_EXCEPTION)
    monkeypatch.setattr(storage_module, "_upload_file", refuse)
    asyncio.run(manager.run_once())
    table = {"database": "db", "table": "t"}
    assert value("fluss_tabletserver_table_remoteLogCopyErrorPerSecond", "count", **table) == 1
    monkeypatch.undo()
    asyncio.run(manager.run_once())
    state = manager.cached(replica)
    uploaded = state.manifest.segments
    assert value("fluss_tabletserver_table_remoteLogCopyRequestsPerSecond", "count", **table) == len(uploaded) > 2
    assert value("fluss_tabletserver_table_remoteLogCopyBytesPerSecond", "count", **table) == \
        sum(s.size_in_bytes for s in uploaded)
    bucket = {**table, "bucket": "0"}
    assert value("fluss_tabletserver_table_bucket_remoteLog_numSegments", **bucket) == len(uploaded)
    assert value("fluss_tabletserver_table_bucket_remoteLog_endOffset", **bucket) == state.manifest.end_offset
    assert value("fluss_tabletserver_table_bucket_remoteLog_size", **bucket) == state.manifest.size_in_bytes
    assert value("fluss_tabletserver_physicalStorage_remoteLogSize") == state.manifest.size_in_bytes
    replica.log_config = LogConfig(segment_bytes=4096, index_interval_bytes=512, ttl_ms=1000)  # all expired
    asyncio.run(manager.run_once())
    assert value("fluss_tabletserver_table_remoteLogDeleteRequestsPerSecond", "count", **table) == len(uploaded)
    assert value("fluss_tabletserver_table_remoteLogDeleteErrorPerSecond", "count", **table) == 0
    assert value("fluss_tabletserver_table_bucket_remoteLog_numSegments", **bucket) == 0
    assert value("fluss_tabletserver_table_bucket_remoteLog_endOffset", **bucket) == -1
    assert value("fluss_tabletserver_physicalStorage_remoteLogSize") == 0


def test_followers_never_upload_and_trim_only_below_the_leaders_tiered_offset(env):
    manager, replica, coordinator, remote = env
    replica.is_leader = False
    fill(replica.log, 1000)
    assert asyncio.run(manager.run_once()).uploaded_segments == 0 and not remote.exists()
    bases = replica.log.segment_base_offsets()
    replica.tiered_offset = bases[3]  # learnt from the leader
    asyncio.run(manager.run_once())
    assert replica.log.log_start_offset == bases[3]


def test_an_interrupted_upload_is_never_committed_and_is_cleaned_up_by_the_next_leader(env, monkeypatch):
    manager, replica, coordinator, remote = env
    fill(replica.log, 1000)
    calls = {"n": 0}
    real = storage_module._upload_file

    def failing(fs, local, path):  # a file of the 3rd segment fails, and every one after it
        calls["n"] += 1
        if calls["n"] >= 9:
            raise OSError("connection reset by the store")
        return real(fs, local, path)

    monkeypatch.setattr(storage_module, "_upload_file", failing)
    asyncio.run(manager.run_once())
    state = manager.cached(replica)
    committed = state.manifest
    # the segments uploaded before the failure were committed; the half-uploaded one is not in the manifest
    assert len(committed.segments) == 2
    assert replica.log.log_start_offset <= committed.end_offset
    on_disk = {p.name for p in Path(state.tablet_dir).iterdir()} - {layout.METADATA_DIR}
    assert on_disk - {s.segment_id for s in committed.segments}  # the partial directory is left behind
    monkeypatch.setattr(storage_module, "_upload_file", real)
    # a new leader term (here: the same server, next epoch) loads the committed manifest and removes leftovers
    replica.leader_epoch = coordinator.leader_epoch = 2
    asyncio.run(manager.run_once())
    state = manager.cached(replica)
    on_disk = {p.name for p in Path(state.tablet_dir).iterdir()} - {layout.METADATA_DIR}
    assert on_disk == {s.segment_id for s in state.manifest.segments}
    assert remote_records(manager, replica, 0) == list(range(state.manifest.end_offset))


def test_a_lost_commit_answer_is_resent_and_nothing_is_deleted_or_duplicated(env):
    manager, replica, coordinator, remote = env
    fill(replica.log, 600)
    coordinator.lose_next_answer = True
    asyncio.run(manager.run_once())  # committed at the coordinator, but the leader does not know
    state = manager.cached(replica)
    assert state.pending is not None and coordinator.commits == 1
    fill(replica.log, 1200)
    asyncio.run(manager.run_once())
    state = manager.cached(replica)
    assert state.pending is None and coordinator.records[replica.bucket].path == state.manifest_path
    assert remote_records(manager, replica, 0) == list(range(state.manifest.end_offset))


def test_a_fenced_leader_cannot_commit_and_its_upload_is_removed(env):
    manager, replica, coordinator, remote = env
    fill(replica.log, 600)
    asyncio.run(manager.run_once())
    committed = coordinator.records[replica.bucket]
    fill(replica.log, 1200)
    coordinator.leader_epoch = 5  # another server leads now; this one has not heard yet
    stats = asyncio.run(manager.run_once())
    assert stats.failures == 1 and coordinator.records[replica.bucket] == committed
    tablet_dir = manager.tablet_dir(replica.bucket)
    manifest = manager.storage.read_manifest(committed.path)
    on_disk = {p.name for p in Path(tablet_dir).iterdir()} - {layout.METADATA_DIR}
    assert on_disk == {s.segment_id for s in manifest.segments}
    assert replica.log.log_start_offset <= committed.end_offset  # nothing uncommitted was deleted locally


def test_a_new_leader_with_different_segment_boundaries_overlaps_without_duplicates(env, tmp_path):
    manager, replica, coordinator, remote = env
    fill(replica.log, 700)
    asyncio.run(manager.run_once())
    end = manager.cached(replica).manifest.end_offset
    # the new leader's log was rolled elsewhere: its segment straddles the committed end
    other = LogTablet.open(tmp_path / "other", LogConfig(segment_bytes=6000, index_interval_bytes=512))
    fill(other, 1400)
    replica.log, replica.leader_epoch = other, 2
    coordinator.leader_epoch = 2
    asyncio.run(manager.run_once())
    state = manager.cached(replica)
    assert any(s.start_offset < end < s.end_offset for s in state.manifest.segments) or \
        any(s.start_offset == end for s in state.manifest.segments)
    assert remote_records(manager, replica, 0) == list(range(state.manifest.end_offset))
    assert remote_records(manager, replica, end - 3) == list(range(end - 3, state.manifest.end_offset))
    other.close()


def test_local_segments_expired_before_their_upload_restart_the_remote_log_without_a_hole(env):
    manager, replica, coordinator, remote = env
    replica.log_config = LogConfig(segment_bytes=4096, index_interval_bytes=512, ttl_ms=10**15)
    fill(replica.log, 400, timestamp=1000)
    asyncio.run(manager.run_once())
    end = manager.cached(replica).manifest.end_offset
    assert not manager.cached(replica).manifest.is_empty
    fill(replica.log, 1200, timestamp=2000)
    replica.log.config = LogConfig(segment_bytes=4096, index_interval_bytes=512, ttl_ms=1000)
    replica.log.delete_expired_segments(now_ms=2500)  # expired locally (and tiered ones too) before any upload
    assert replica.log.log_start_offset > end
    asyncio.run(manager.run_once())
    manifest = manager.cached(replica).manifest
    assert manifest.start_offset > end and manifest.end_offset > end


def test_local_ttl_deletes_expired_copies_only_and_only_a_prefix(env):
    """table.log.local-ttl: local copies of tiered segments whose newest record is older than it go, even while
    fewer than table.log.tiered.local-segments remain; what is not committed remotely stays, however old."""
    manager, replica, coordinator, remote = env
    replica.tiered_local_segments = 1000  # the count-based policy deletes nothing here
    now = int(time.time() * 1000)
    fill(replica.log, 600, timestamp=now - 3_600_000)  # an hour old
    fill(replica.log, 900, timestamp=now)  # new
    replica.local_ttl_ms = -1  # '0ms': no TTL cleanup
    stats = asyncio.run(manager.run_once())
    assert stats.uploaded_segments > 3 and stats.deleted_local_segments == 0 and replica.log.log_start_offset == 0
    tiered = replica.tiered_offset
    replica.local_ttl_ms = 2 * 3_600_000  # two hours: nothing is old enough
    assert asyncio.run(manager.run_once()).deleted_local_segments == 0
    replica.local_ttl_ms = 60_000  # a minute: the hour-old copies go, not the new ones nor the uncommitted ones
    assert asyncio.run(manager.run_once()).deleted_local_segments > 0
    start = replica.log.log_start_offset
    assert 0 < start <= 600 and start <= tiered
    first = replica.log._segments[0]  # what stopped the deletion: a copy with new records, or no copy at all
    assert first.max_timestamp >= now - 60_000 or first.next_offset > tiered
    assert remote_records(manager, replica, 0) == list(range(manager.cached(replica).manifest.end_offset))


def test_local_ttl_never_deletes_what_is_not_committed(env, monkeypatch):
    manager, replica, coordinator, remote = env
    replica.tiered_local_segments = 1000
    replica.local_ttl_ms = 60_000
    fill(replica.log, 600, timestamp=int(time.time() * 1000) - 3_600_000)  # an hour old: expired locally

    def refuse(*args, **kwargs):
        raise FlussError("store down", ErrorCode.NETWORK_EXCEPTION)
    monkeypatch.setattr(storage_module, "_upload_file", refuse)
    stats = asyncio.run(manager.run_once())
    assert stats.uploaded_segments == 0 and stats.deleted_local_segments == 0 and replica.log.log_start_offset == 0
    monkeypatch.undo()
    stats = asyncio.run(manager.run_once())
    assert stats.uploaded_segments > 0 and replica.log.segment_count == 1  # every sealed copy expired and tiered
    assert replica.log.log_start_offset == replica.tiered_offset


def test_remote_ttl_removes_expired_segments_and_their_files(env):
    manager, replica, coordinator, remote = env
    fill(replica.log, 800, timestamp=1000)
    asyncio.run(manager.run_once())
    before = manager.cached(replica).manifest
    replica.log_config = LogConfig(segment_bytes=4096, index_interval_bytes=512, ttl_ms=1000)
    stats = asyncio.run(manager.run_once())
    after = manager.cached(replica).manifest
    assert stats.expired_segments == len(before.segments) and after.is_empty
    assert after.end_offset == before.end_offset  # uploads continue there
    tablet_dir = manager.tablet_dir(replica.bucket)
    assert {p.name for p in Path(tablet_dir).iterdir()} == {layout.METADATA_DIR}


def test_a_store_that_fails_keeps_everything_local(env, monkeypatch, caplog):
    manager, replica, coordinator, remote = env
    fill(replica.log, 800)
    segments = replica.log.segment_count

    def down(fs, local, path):
        raise OSError("the store is unreachable")

    monkeypatch.setattr(storage_module, "_upload_file", down)
    stats = asyncio.run(manager.run_once())
    assert stats.failures == 1 and replica.log.segment_count == segments and replica.log.log_start_offset == 0
    assert "keeps growing until remote storage is back" in caplog.text
    monkeypatch.undo()
    asyncio.run(manager.run_once())
    assert replica.log.segment_count == 2
    assert remote_records(manager, replica, 0) == list(range(manager.cached(replica).manifest.end_offset))


def test_primary_key_buckets_keep_their_log_from_the_latest_kv_snapshot(env):
    manager, replica, coordinator, remote = env
    replica.table = FakeTable(pk=True)
    fill(replica.log, 1000)
    bases = replica.log.segment_base_offsets()
    asyncio.run(manager.run_once())
    assert replica.tiered_offset == -1 and replica.log.log_start_offset == 0  # no KV snapshot committed yet
    replica.kv_snapshot_offset = bases[2] + 1
    asyncio.run(manager.run_once())
    assert replica.log.log_start_offset == bases[2]  # only segments that end at or below the snapshot offset


# ---------------------------------------------------------------- client downloads (fluss/client/remote_log.py)


def _remote_segment_file(tmp_path: Path, size: int = 1000):
    from fluss.client.remote_log import RemoteSegment

    segment = RemoteSegment(str(tmp_path / "remote" / "t-1" / "0"), "seg-a", 0, 10, size)
    Path(segment.url).parent.mkdir(parents=True, exist_ok=True)
    Path(segment.url).write_bytes(b"x" * size)
    return segment


def _downloader(tmp_path: Path, deadline_s: float):
    from fluss.client.remote_log import RemoteFileDownloader
    from fluss.client.retry import RetryPolicy

    return RemoteFileDownloader(1, str(tmp_path / "tmp"), dict,
                                RetryPolicy(deadline_s=deadline_s, initial_backoff_s=0.01, max_backoff_s=0.05))


def test_a_download_cut_on_the_way_is_tried_again_and_completes(tmp_path, monkeypatch):
    from fluss.client import remote_log

    segment = _remote_segment_file(tmp_path)
    real, calls = remote_log._download_file, []

    def flaky(fs, remote_path, local):
        calls.append(remote_path)
        if len(calls) <= 2:
            Path(local).write_bytes(b"partial")
            raise ConnectionError("connection reset by peer")
        real(fs, remote_path, local)

    monkeypatch.setattr(remote_log, "_download_file", flaky)
    downloader = _downloader(tmp_path, deadline_s=10)
    try:
        path = downloader.submit(segment).result(10)
        assert len(calls) == 3
        assert path.read_bytes() == b"x" * 1000
        assert [p.name for p in downloader.directory.iterdir()] == [path.name]  # no partial file left
    finally:
        downloader.close()


def test_a_store_unreachable_past_the_request_timeout_fails_naming_the_segment(tmp_path, monkeypatch):
    from fluss.client import remote_log

    segment = _remote_segment_file(tmp_path)

    def unreachable(fs, remote_path, local):
        raise ConnectionError("Could not connect to the endpoint URL")

    monkeypatch.setattr(remote_log, "_download_file", unreachable)
    downloader = _downloader(tmp_path, deadline_s=0.3)
    try:
        with pytest.raises(FlussError) as e:
            downloader.submit(segment).result(10)
        assert e.value.error_code == ErrorCode.NETWORK_EXCEPTION
        assert "seg-a" in e.value.message and "attempts" in e.value.message
        assert "Could not connect" in e.value.message
        assert list(downloader.directory.iterdir()) == []
    finally:
        downloader.close()


def test_a_missing_segment_fails_at_once_without_retrying(tmp_path, monkeypatch):
    from fluss.client import remote_log

    segment = _remote_segment_file(tmp_path)
    Path(segment.url).unlink()
    real, calls = remote_log._download_file, []
    monkeypatch.setattr(remote_log, "_download_file", lambda *a: (calls.append(a), real(*a)))
    downloader = _downloader(tmp_path, deadline_s=10)
    try:
        with pytest.raises(FlussError) as e:
            downloader.submit(segment).result(10)
        assert e.value.error_code == ErrorCode.LOG_STORAGE_EXCEPTION
        assert "seg-a" in e.value.message and "does not exist" in e.value.message
        assert len(calls) == 1
    finally:
        downloader.close()


def test_the_tiered_log_options_are_declared_implemented_and_checked():
    from fluss.server.config import ServerConfig
    from fluss.table_options import validate_table_properties

    validate_table_properties({"table.log.tiered.local-segments": "3"}, "db.t", False)
    with pytest.raises(FlussError) as e:
        validate_table_properties({"table.log.tiered.local-segments": "0"}, "db.t", False)
    assert "'table.log.tiered.local-segments'" in e.value.message and "at least 1" in e.value.message
    base = {"zookeeper.address": "127.0.0.1:2181", "bind.listeners": "FLUSS://127.0.0.1:9123"}
    tiered = {"remote.data.dir": "s3://b/p", "remote.log.task-interval-duration": "30s",
              "remote.log.index-file-cache-size": "64mb", "remote.log-manager.thread-pool-size": "2",
              "remote.log.data-transfer-thread-num": "2", "s3.endpoint": "http://127.0.0.1:9000",
              "s3.access-key": "k", "s3.secret-key": "s", "s3.path.style.access": "true"}
    assert ServerConfig({**base, **tiered}).check() == []
    with pytest.raises(FlussError) as e:
        ServerConfig({**base, "remote.log-manager.thread-pool-size": "0"}).check()
    assert "'remote.log-manager.thread-pool-size'" in e.value.message


@pytest.mark.parametrize("log_format", ["ARROW", "INDEXED", "COMPACTED"])
def test_remote_batches_of_older_schema_ids_decode_as_the_readers_columns(log_format):
    """What the scanner does with remote batches (stored as written: any schema id, the table's log format): an
    ARROW batch projected as the leader would (project_as_the_leader), a row-format one whole, then the scanner's
    SchemaReader gives the reader's columns, null where a batch's schema id lacks them."""
    from fluss.client.remote_log import project_as_the_leader
    from fluss.client.schema_reader import SchemaReader
    from fluss.metadata import Schema, TableDescriptor, TableInfo

    full = pa.schema([("v", pa.int64()), ("s", pa.string()), ("note", pa.string())])
    info = TableInfo(TablePath("db", "t"), 7, 2, TableDescriptor(Schema(full), bucket_count=1,
                                                                   properties={"table.log.format": log_format}),
                     0, 0, schema_column_counts=[2, 3])
    old = pa.record_batch([pa.array([1, 2], pa.int64()), pa.array(["a", "b"])], schema=SCHEMA)
    new = pa.record_batch([pa.array([3], pa.int64()), pa.array(["c"]), pa.array(["n3"])], schema=full)
    stored = [next(iter_batches(build_batch(old, schema_id=1, compression=0, log_format=log_format))),
              next(iter_batches(build_batch(new, schema_id=2, compression=0, base_offset=2, log_format=log_format)))]
    projection = [2, 0]  # note, v
    if log_format == "ARROW":
        server_projection = projection
        reader = SchemaReader(info, server_projection, columns=projection)
        batches = project_as_the_leader(stored, reader.history, server_projection)
        assert [b.schema_id for b in batches] == [1, 2] and batches[0].size_in_bytes < stored[0].size_in_bytes
    else:  # row formats: decoded whole, projected on the client
        reader = SchemaReader(info, None, columns=projection)
        batches = stored
    got = pa.Table.from_batches([reader.read(b) for b in batches])
    assert got.column_names == ["note", "v"]
    assert got.to_pydict() == {"note": [None, None, "n3"], "v": [1, 2, 3]}
    whole = SchemaReader(info, None)  # no projection: every column of the latest schema
    assert pa.Table.from_batches([whole.read(b) for b in stored]).to_pydict() == {
        "v": [1, 2, 3], "s": ["a", "b", "c"], "note": [None, None, "n3"]}


# ---------------------------------------------------------------------------------------------- a follower's aux state


def test_the_state_segment_ends_at_the_restart_offset_or_is_the_latest_ending_before_it():
    from fluss.server.log.remote.aux_state import state_segment

    m = RemoteLogManifest(1, -1, 0, (seg("a", 0, 100), seg("b", 100, 200), seg("c", 200, 300)))
    assert state_segment(m, 200).segment_id == "b"  # ends exactly at the restart
    assert state_segment(m, 300).segment_id == "c"
    assert state_segment(m, 250).segment_id == "b"  # none ends at 250: the latest ending before it
    assert state_segment(m, 5000).segment_id == "c"  # past the remote end (local segments expired unuploaded)
    assert state_segment(m, 50) is None  # no segment ends at or before it: its state would be ahead of the log
    overlapping = RemoteLogManifest(1, -1, 0, (seg("a", 0, 100), seg("b", 80, 210), seg("c", 210, 300)))
    assert state_segment(overlapping, 200).segment_id == "a"  # "b" ends past 200
    assert state_segment(overlapping, 210).segment_id == "b"
    assert state_segment(RemoteLogManifest(1, -1, 0), 100) is None


def test_epochs_of_the_remote_segments_merge_into_one_history_below_the_restart_offset():
    from fluss.server.log.remote.aux_state import epoch_segments, merge_epochs

    m = RemoteLogManifest(1, -1, 0, (seg("a", 0, 100), seg("b", 100, 200), seg("c", 200, 300)))
    assert [s.segment_id for s in epoch_segments(m, 200)] == ["a", "b"]
    assert [s.segment_id for s in epoch_segments(m, 201)] == ["a", "b", "c"]
    per_segment = [[(1, 0)], [(1, 100), (3, 150)], [(3, 200), (4, 260)]]
    assert merge_epochs(per_segment, 250) == [(1, 0), (3, 150)]
    assert merge_epochs(per_segment, 300) == [(1, 0), (3, 150), (4, 260)]
    # an older epoch starting at or after a newer one's start never held data (a leader change rewrote it)
    assert merge_epochs([[(1, 0), (2, 50)], [(3, 40)]], 100) == [(1, 0), (3, 40)]


def _leader_with_tiered_history(env) -> tuple[RemoteLogManager, FakeReplica]:
    manager, replica, _, _ = env
    fill(replica.log, 300, epoch=1)
    fill(replica.log, 700, epoch=4)
    asyncio.run(manager.run_once())
    assert replica.log.log_start_offset > 300  # what the follower lacks is only remote
    return manager, replica


def test_a_restarted_follower_gets_the_epochs_and_writer_state_from_the_remote_segment_ending_there(env, tmp_path):
    manager, leader = _leader_with_tiered_history(env)
    restart = leader.log.log_start_offset
    aux = asyncio.run(manager.aux_state(leader.bucket, restart))
    assert aux.writers_offset == restart and aux.epochs == [(1, 0), (4, 300)]
    follower = LogTablet.open(tmp_path / "follower", SMALL)
    fill(follower, 20, writer_id=99)  # it was away: an old tail, then the leader's start passed it
    follower.restart_at(restart, aux.epochs, aux.writers)
    assert follower.epochs.entries() == [(1, 0), (4, 300)]
    assert follower.end_offset_for_epoch(1) == (1, 300)  # OffsetForLeaderEpoch answers as the leader would
    # as the leader would: the writer's last batch before the restart is a duplicate, the next one is new
    resent, base, last = aux.writers.to_json()["7"][-1]
    assert last == restart - 1
    earlier = follower.writers.check(7, resent, "x")
    assert earlier is not None and (earlier.base_offset, earlier.last_offset) == (base, restart - 1)
    assert follower.writers.check(7, resent + 1, "x") is None
    # batches fetched after the restart build on it, and a truncation keeps it
    data = leader.log.read(restart, 1 << 20).records
    follower.append_as_follower(bytes(data))
    follower.truncate_to(restart)
    assert follower.writers.check(7, resent, "x").last_offset == restart - 1
    follower.close()
    reopened = LogTablet.open(tmp_path / "follower", SMALL)  # the server restarts: the base state is on disk
    assert reopened.writers.check(7, resent, "x").last_offset == restart - 1
    assert reopened.epochs.entries() == [(1, 0), (4, 300)]
    reopened.close()
    reopened_without = LogTablet.open(tmp_path / "plain", SMALL)
    fill(reopened_without, 5)
    reopened_without.restart_at(restart)  # what a restart without the aux state gave: an unknown writer
    assert reopened_without.epochs.entries() == []
    with pytest.raises(FlussError) as e:  # its resend is not recognised: the writer restarts the bucket at 0
        reopened_without.writers.check(7, resent, "x")
    assert e.value.error_code == ErrorCode.UNKNOWN_WRITER_ID_EXCEPTION
    assert reopened_without.writers.check(7, 0, "x") is None
    reopened_without.close()


def test_aux_state_of_an_unreadable_remote_segment_fails_naming_the_file(env):
    manager, leader = _leader_with_tiered_history(env)
    restart = leader.log.log_start_offset
    state = manager.cached(leader)
    last = state_seg = next(s for s in state.manifest.segments if s.end_offset == restart)
    Path(layout.segment_file(state.tablet_dir, last.segment_id, last.start_offset, layout.WRITER_STATE_FILE)).unlink()
    with pytest.raises(FlussError, match=state_seg.segment_id):
        asyncio.run(manager.aux_state(leader.bucket, restart))
    assert asyncio.run(manager.aux_state(TableBucket(1, 5), restart)) is None  # nothing committed for it


def test_a_follower_whose_aux_state_cannot_be_loaded_keeps_its_log_is_not_fetched_and_retries(tmp_path):
    """Remote storage down: the restart waits (the old log stays, the bucket is not fetched, so it cannot join the
    ISR) and is retried after a growing backoff; once the store answers the log restarts with the aux state."""
    from fluss.rpc.gen import fluss_api_pb2 as pb
    from fluss.server.log.remote.aux_state import AuxState
    from fluss.server.replica.fetcher import AUX_RETRY_INITIAL_S, ReplicaFetcherManager

    tb = TableBucket(1, 0)
    tablet = LogTablet.open(tmp_path / "f", SMALL)
    fill(tablet, 20, writer_id=3)
    writers = WriterStateManager()
    writers.update(7, 41, 480, 499)
    answers: list[object] = [FlussError("store unreachable", ErrorCode.LOG_STORAGE_EXCEPTION),
                             FlussError("store unreachable", ErrorCode.LOG_STORAGE_EXCEPTION),
                             AuxState(500, [(0, 0), (2, 300)], writers, 500)]

    class Remote:
        async def aux_state(self, bucket, offset):
            assert (bucket, offset) == (tb, 500)
            answer = answers.pop(0)
            if isinstance(answer, Exception):
                raise answer
            return answer

    class Stub:
        calls = 0

        async def FetchLog(self, *_a, **_k):  # noqa: N802 - the gRPC method name
            Stub.calls += 1
            raise AssertionError("a bucket waiting for its aux state was fetched")

    replica = SimpleNamespace(bucket=tb, log=tablet, is_leader=False)
    manager = SimpleNamespace(server_id=5, remote_log=Remote(), replicas={tb: replica},
                              disk=SimpleNamespace(failure=None))
    out_of_range = pb.FetchBucketResultPb(log_start_offset=500, high_watermark=800)

    async def scenario() -> None:
        fetcher = ReplicaFetcherManager(manager, lambda _: None, 100)
        fetcher._buckets[1] = {tb}  # following tb from leader 1
        delays = []
        for _ in range(2):
            await fetcher._reset_out_of_range(replica, out_of_range)
            await fetcher._restarting[tb]
            assert tablet.log_end_offset == 20 and tablet.log_start_offset == 0  # nothing changed
            delays.append(fetcher._aux_retry[tb][1])
            await fetcher._fetch_once(1, Stub())  # within the backoff: not fetched
            fetcher._aux_retry[tb] = (0.0, fetcher._aux_retry[tb][1])  # the backoff is over
        assert delays == [AUX_RETRY_INITIAL_S, 2 * AUX_RETRY_INITIAL_S] and Stub.calls == 0
        await fetcher._reset_out_of_range(replica, out_of_range)
        await fetcher._restarting[tb]
        assert (tablet.log_start_offset, tablet.log_end_offset) == (500, 500)
        assert tablet.epochs.entries() == [(0, 0), (2, 300)]
        assert tablet.writers.check(7, 41, "x").base_offset == 480 and tablet.writers.check(7, 42, "x") is None
        assert tb not in fetcher._aux_retry and tb not in fetcher._restarting
        await fetcher.close()

    asyncio.run(scenario())
    tablet.close()


def test_the_base_writer_state_follows_the_local_retention_and_a_stale_one_is_ignored(tmp_path):
    from fluss.server.log.writer_state import BASE_FILE

    tablet = LogTablet.open(tmp_path / "t", SMALL)
    base = WriterStateManager()
    base.update(5, 10, 90, 99)  # a writer whose batches are all before the restart
    tablet.restart_at(100, [(0, 0)], base)
    tablet.append_as_follower(_with_offsets(batch(0, 200, 8, 0), 100))  # another writer, then the segment rolls
    for i in range(1, 40):
        tablet.append_as_follower(_with_offsets(batch(0, 20, 8, i), tablet.log_end_offset))
    tablet.update_high_watermark(tablet.log_end_offset)
    assert tablet.segment_count > 3
    assert tablet.delete_tiered_segments(tablet.log_end_offset, 2) > 0  # retention folds them into the base
    start = tablet.log_start_offset
    tablet.truncate_to(tablet.log_end_offset - 20)
    assert tablet.writers.check(5, 10, "x").base_offset == 90  # still known after retention and a truncation
    tablet.close()
    reopened = LogTablet.open(tmp_path / "t", SMALL)
    assert reopened.log_start_offset == start and reopened.writers.check(5, 10, "x").base_offset == 90
    assert reopened.writers.check(8, 39, "x") is None  # the truncated batch is the next one again
    reopened.close()
    (tmp_path / "t" / BASE_FILE).write_text('{"offset": 1, "writers": {"5": [[10, 90, 99]]}}')  # not this log start
    stale = LogTablet.open(tmp_path / "t", SMALL)
    assert stale.writers.check(5, 0, "x") is None  # unknown writer: rebuilt from the local log alone
    stale.close()


def test_two_readers_of_one_segment_each_read_their_own_copy(tmp_path):
    """Two scanners of one connection (e.g. a tiering job's and a union read's) reading the same remote segment:
    the first one deleting its downloaded file once read must not take the second's (it did: both downloaded to
    one path, and the second read failed with FileNotFoundError)."""
    from fluss.client.remote_log import RemoteLogReader

    tb = TableBucket(1, 0)
    rows = build_batch(pa.record_batch([pa.array(range(10), pa.int64()), pa.array([f"r{i}" for i in range(10)])],
                                       schema=SCHEMA), schema_id=1, compression=0)
    segment = _remote_segment_file(tmp_path, size=len(rows))
    Path(segment.url).write_bytes(rows)
    info = SimpleNamespace(remote_log_tablet_dir=segment.tablet_dir, first_start_pos=0, remote_log_segments=[
        SimpleNamespace(remote_log_segment_id=segment.segment_id, remote_log_start_offset=0, remote_log_end_offset=10,
                        segment_size_in_bytes=len(rows))])
    downloader = _downloader(tmp_path, deadline_s=10)
    first, second = RemoteLogReader(downloader, 2), RemoteLogReader(downloader, 2)
    try:
        first.add(tb, info)
        second.add(tb, info)

        async def read_all(reader):
            chunks = []
            while not chunks or chunks[-1].segment_end is None:
                chunks += await reader.read({tb}, 5)
            return [v for c in chunks for b in c.batches for v in b.to_arrow(SCHEMA).column("v").to_pylist()]

        async def both():
            got_first = await read_all(first)  # deletes its copy at the end of the segment
            return got_first, await read_all(second)

        assert asyncio.run(both()) == (list(range(10)), list(range(10)))
        assert list(downloader.directory.iterdir()) == []  # each reader deleted its own copy
    finally:
        first.close()
        second.close()
        downloader.close()
