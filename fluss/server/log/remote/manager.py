"""RemoteLogManager: the tiered log of every bucket a tablet server hosts (one per tablet server).

Every ``remote.log.task-interval-duration`` (:meth:`run_once`), for each bucket:

* **Leader: upload.** Sealed local segments that end at or below the high watermark (so every in-sync replica has
  them) and beyond the committed remote end are uploaded, oldest first, each under a new segment id (data file,
  offset and time index, writer-state snapshot at the segment end, leader-epoch entries; see
  ``fluss/fs/remote_log_layout.py``). Then a new manifest (``manifest.py``) is written and committed through the
  coordinator with a compare-and-set on the previous manifest's path and the leader epoch (CommitRemoteLogManifest).
  A segment is in the remote log only once committed: a crash before leaves files nobody references.
* **Leader: remote TTL.** Segments whose newest record is older than ``table.log.ttl`` leave the manifest in the
  same commit; their files are deleted after it.
* **Every replica: local retention.** Segments below the *tiered offset* are deleted locally while more than
  ``table.log.tiered.local-segments`` remain, or when their newest record is older than ``table.log.local-ttl``
  (default ``table.log.ttl``; off when ``0ms``), oldest first. On the leader the tiered offset is the committed remote end (for a
  primary-key table also at most the latest KV snapshot's log offset, so a new leader can replay its changelog
  from local disk); followers learn it from the leader in fetch responses. This retention never deletes what is
  not committed: a store that is down makes the local log grow, with a warning each round. (``table.log.ttl`` is
  the table's retention and applies locally as it did before, uploaded or not: expired data is gone everywhere.)

Crash and leader-change safety: a leader loads the committed manifest when its term starts (GetRemoteLogManifest)
and deletes segment directories and manifests that it does not reference (leftovers of an interrupted upload or a
fenced leader). An upload of a fenced leader fails its commit and its files are removed. A commit whose answer is
lost (coordinator failing over) is sent again, unchanged, the next round: the coordinator accepts a manifest it has
already recorded, so the outcome is decided exactly once and the leader never deletes files the committed
manifest names. Followers never upload.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Protocol

from fluss.errors import ErrorCode, FlussError
from fluss.fs import remote_log_layout as layout
from fluss.metadata import TableBucket
from fluss.server.log.remote.aux_state import AuxState, load_aux_state
from fluss.server.log.remote.index_cache import RemoteIndexCache
from fluss.server.log.remote.manifest import RemoteLogManifest, RemoteLogSegment
from fluss.server.log.remote.storage import RemoteLogStorage, executor_transfer
from fluss.server.log.tablet import SealedSegment
from fluss.server.log.writer_state import WriterStateManager

log = logging.getLogger(__name__)

MAX_SEGMENTS_PER_COMMIT = 16
#: A commit answered with one of these was refused for good (another leader or manifest is current).
_REJECTED = {ErrorCode.FENCED_LEADER_EPOCH_EXCEPTION, ErrorCode.INVALID_UPDATE_VERSION_EXCEPTION,
             ErrorCode.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION}


@dataclass(frozen=True)
class CommittedManifest:
    """What the coordinator recorded for a bucket (from ZooKeeper)."""

    path: str
    start_offset: int
    end_offset: int


class ManifestCommitter(Protocol):
    async def commit(self, bucket: TableBucket, leader_epoch: int, path: str, previous_path: str,
                     manifest: RemoteLogManifest) -> None: ...

    async def committed(self, bucket: TableBucket) -> CommittedManifest | None: ...


@dataclass
class _PendingCommit:
    """A commit whose answer was lost: sent again, unchanged, before anything else."""

    path: str
    previous_path: str
    manifest: RemoteLogManifest
    uploaded: list[RemoteLogSegment]
    dropped: list[RemoteLogSegment]


@dataclass
class TieredBucket:
    """A leader's view of its bucket's committed remote log."""

    tablet_dir: str
    leader_epoch: int
    manifest: RemoteLogManifest
    manifest_path: str  # "" when nothing is committed
    writers: WriterStateManager | None = None  # writer state at ``writers_end`` (the chain of snapshots)
    writers_end: int = -1
    pending: _PendingCommit | None = None
    uploaded_segments: int = 0
    uploaded_bytes: int = 0
    last_warning_ms: int = 0
    loaded_ms: int = field(default_factory=lambda: int(time.time() * 1000))


@dataclass
class RoundStats:
    uploaded_segments: int = 0
    uploaded_bytes: int = 0
    expired_segments: int = 0
    deleted_local_segments: int = 0
    commits: int = 0
    failures: int = 0


class RemoteLogManager:
    def __init__(self, storage: RemoteLogStorage, replicas, committer: ManifestCommitter,
                 thread_pool_size: int = 4, transfer_threads: int = 4, index_cache_bytes: int = 1 << 30,
                 metrics=None) -> None:
        self.storage = storage
        self.replicas = replicas  # the ReplicaManager
        self.metrics = metrics  # the tablet server's TabletServerMetrics (remote-log meters per table), or None
        self.committer = committer
        self.index_cache = RemoteIndexCache(index_cache_bytes)
        self._bucket_pool = ThreadPoolExecutor(max(1, thread_pool_size), thread_name_prefix="remote-log")
        self._transfer_pool = ThreadPoolExecutor(max(1, transfer_threads), thread_name_prefix="remote-transfer")
        self._concurrency = asyncio.Semaphore(max(1, thread_pool_size))
        self._states: dict[TableBucket, TieredBucket] = {}
        self._locks: dict[TableBucket, asyncio.Lock] = {}
        self.totals = RoundStats()

    # ------------------------------------------------------------ per-bucket state

    def tablet_dir(self, tb: TableBucket) -> str:
        relative = self.replicas.bucket_dir(tb).relative_to(self.replicas.data_dir).as_posix()
        return self.storage.tablet_dir(relative)

    def cached(self, replica) -> TieredBucket | None:
        """The loaded state of a bucket this server leads in its current term (None if not loaded)."""
        state = self._states.get(replica.bucket)
        return state if state is not None and state.leader_epoch == replica.leader_epoch else None

    async def state_of(self, replica) -> TieredBucket:
        """The committed remote log of a bucket this server leads, loaded (once per leader term) if needed."""
        state = self.cached(replica)
        if state is not None:
            return state
        lock = self._locks.setdefault(replica.bucket, asyncio.Lock())
        async with lock:
            state = self.cached(replica)
            if state is None:
                state = await self._load(replica)
                self._states[replica.bucket] = state
        return state

    def start_empty(self, replica) -> None:
        """The state of a new leader of a bucket in its first leader term with no manifest committed (ZooKeeper's
        view, checked with the NotifyLeaderAndIsr: a new table or partition): the empty remote log, without
        GetRemoteLogManifest and without listing remote storage (no leader of the bucket uploaded before this
        term). A state already loaded for the term stays. Were it wrong, the first commit's compare-and-set on the
        previous manifest would refuse it, and the state would be loaded again."""
        if self.cached(replica) is not None:
            return
        tb = replica.bucket
        self._states[tb] = TieredBucket(self.tablet_dir(tb), replica.leader_epoch,
                                        RemoteLogManifest(tb.table_id, tb.partition_id_or_none_value, tb.bucket_id),
                                        "")

    async def _load(self, replica) -> TieredBucket:
        tb = replica.bucket
        epoch = replica.leader_epoch
        tablet_dir = self.tablet_dir(tb)
        record = await self.committer.committed(tb)
        pid = tb.partition_id_or_none_value
        if record is None or not record.path:
            manifest, path = RemoteLogManifest(tb.table_id, pid, tb.bucket_id), ""
        else:
            manifest = await self._run(self.storage.read_manifest, record.path)
            path = record.path
        state = TieredBucket(tablet_dir, epoch, manifest, path)
        await self._run(self._remove_unreferenced, state)
        if manifest.segments:
            last = manifest.segments[-1]
            try:
                raw = await self._run(self.storage.read_bytes, layout.segment_file(
                    tablet_dir, last.segment_id, last.start_offset, layout.WRITER_STATE_FILE))
                state.writers, state.writers_end = WriterStateManager.from_json(json.loads(raw)), last.end_offset
            except (FlussError, ValueError) as e:
                log.warning("writer state of remote segment %s of %s unavailable (%s): rebuilt from the local log",
                            last.segment_id, tb, e)
        log.info("remote log of %s (leader epoch %d): %d segment(s), offsets [%d, %d)", tb, epoch,
                 len(manifest.segments), manifest.start_offset, manifest.end_offset)
        return state

    def _remove_unreferenced(self, state: TieredBucket) -> None:
        """Deletes segment directories and manifests the committed manifest does not name (interrupted uploads,
        fenced leaders)."""
        referenced = {s.segment_id for s in state.manifest.segments}
        for segment_id in self.storage.list_segment_ids(state.tablet_dir) - referenced:
            log.info("deleting unreferenced remote log segment %s in %s", segment_id, state.tablet_dir)
            self.storage.delete_segment(state.tablet_dir, segment_id)
        for url in self.storage.list_manifests(state.tablet_dir):
            if state.manifest_path and url.rstrip("/").endswith(state.manifest_path.rsplit("/", 1)[-1]):
                continue
            self.storage.delete_manifest(url)

    def forget(self, tb: TableBucket) -> None:
        self._states.pop(tb, None)
        self._locks.pop(tb, None)

    async def _run(self, fn: Callable, *args):
        return await asyncio.get_running_loop().run_in_executor(self._bucket_pool, fn, *args)

    # ------------------------------------------------------------ the periodic task

    async def run_once(self) -> RoundStats:
        """One round over every hosted bucket: leaders upload, commit and expire; every replica trims locally."""
        stats = RoundStats()
        replicas = list(self.replicas.replicas.values())

        async def one(replica) -> None:
            async with self._concurrency:
                try:
                    if replica.is_leader:
                        await self._tier(replica, stats)
                    stats.deleted_local_segments += await self._run(self._trim_local, replica)
                except Exception as e:  # noqa: BLE001 - one bucket must not stop the others
                    stats.failures += 1
                    self._warn(replica, e)

        await asyncio.gather(*(one(r) for r in replicas))
        for name in ("uploaded_segments", "uploaded_bytes", "expired_segments", "deleted_local_segments", "commits",
                     "failures"):
            setattr(self.totals, name, getattr(self.totals, name) + getattr(stats, name))
        return stats

    def _warn(self, replica, error: Exception) -> None:
        log_ = replica.log
        pending = [s for s in log_.sealed_segments(log_.high_watermark) if s.next_offset > replica.tiered_offset]
        log.warning("remote log of %s: %s; the local log keeps growing until remote storage is back "
                    "(%d segment(s), %d bytes not tiered, local log %d bytes)", replica.bucket,
                    getattr(error, "message", error), len(pending), sum(s.size for s in pending), log_.size_in_bytes)

    async def _tier(self, replica, stats: RoundStats) -> None:
        state = await self.state_of(replica)
        if state.pending is not None:
            await self._commit(replica, state, state.pending, stats)
        for _ in range(64):  # a backlog is tiered in commits of MAX_SEGMENTS_PER_COMMIT segments
            if not replica.is_leader or replica.leader_epoch != state.leader_epoch:
                return
            if not await self._tier_once(replica, state, stats):
                break
        self._update_tiered_offset(replica, state)

    async def _tier_once(self, replica, state: TieredBucket, stats: RoundStats) -> bool:
        """Uploads up to MAX_SEGMENTS_PER_COMMIT segments and expires old ones in one commit; False when there
        was nothing to do."""
        log_ = replica.log
        manifest = state.manifest
        dropped: list[RemoteLogSegment] = []
        if replica.log_config.ttl_ms >= 0:
            manifest, dropped = manifest.without_expired(int(time.time() * 1000) - replica.log_config.ttl_ms)
        remote_end = manifest.end_offset
        candidates = [s for s in log_.sealed_segments(log_.high_watermark) if s.next_offset > remote_end]
        if candidates and manifest.segments and candidates[0].base_offset > remote_end:
            # table.log.ttl removed local segments before they were uploaded: what is remote is older still, so
            # it is expired too, and the remote log restarts at the local log (it never has a hole)
            log.warning("remote log of %s: local segments [%d, %d) expired before their upload; the remote log "
                        "restarts at %d", replica.bucket, remote_end, candidates[0].base_offset,
                        candidates[0].base_offset)
            dropped += list(manifest.segments)
            manifest = replace(manifest, segments=(), uploaded_end_offset=-1)
        uploaded: list[RemoteLogSegment] = []
        failed = False
        try:
            for segment in candidates[:MAX_SEGMENTS_PER_COMMIT]:
                if not replica.is_leader or replica.leader_epoch != state.leader_epoch:
                    break
                uploaded.append(await self._upload(replica, state, segment))
        except FlussError as e:
            if not uploaded and not dropped:
                raise
            failed = True  # commit what is complete; the rest waits for the next round
            log.warning("remote log of %s: upload stopped after %d segment(s): %s", replica.bucket, len(uploaded),
                        e.message)
        if not uploaded and not dropped:
            return False
        manifest = manifest.with_segments(uploaded)
        path = await self._run(self.storage.write_manifest, state.tablet_dir, manifest)
        await self._commit(replica, state, _PendingCommit(path, state.manifest_path, manifest, uploaded, dropped),
                           stats)
        return bool(candidates[len(uploaded):]) and bool(uploaded) and not failed

    def _meters(self, replica):
        """The table's remote-log meters (None without metrics)."""
        return self.metrics.table(replica.table).remote_log() if self.metrics is not None else None

    async def _upload(self, replica, state: TieredBucket, segment: SealedSegment) -> RemoteLogSegment:
        writers = await self._run(self._writer_state_at, replica, state, segment)
        epochs = replica.log.leader_epochs_between(segment.base_offset, segment.next_offset)
        started = time.monotonic()
        meters = self._meters(replica)
        try:
            segment_id = await self._run(self.storage.upload_segment, state.tablet_dir, segment,
                                         json.dumps(writers.to_json()).encode(),
                                         json.dumps([[e, s] for e, s in epochs]).encode(),
                                         executor_transfer(self._transfer_pool))
        except Exception:
            if meters is not None:
                meters.copy_errors.count += 1
            raise
        if meters is not None:
            meters.copy_requests.count += 1
            meters.copy_bytes.count += segment.size
        state.writers, state.writers_end = writers, segment.next_offset
        log.info("uploaded log segment [%d, %d) of %s (%d bytes) as %s in %.3fs", segment.base_offset,
                 segment.next_offset, replica.bucket, segment.size, segment_id, time.monotonic() - started)
        epoch = epochs[-1][0] if epochs else replica.leader_epoch
        return RemoteLogSegment(segment_id, segment.base_offset, segment.next_offset, segment.max_timestamp,
                                segment.size, epoch)

    def _writer_state_at(self, replica, state: TieredBucket, segment: SealedSegment) -> WriterStateManager:
        """Writer state at the segment's end: the previous snapshot plus this segment's batches, or, without one,
        rebuilt from every local segment up to this one."""
        log_ = replica.log
        if state.writers is not None and state.writers_end >= 0:
            writers = WriterStateManager.from_json(state.writers.to_json())
            bases, start = [segment.base_offset], state.writers_end
        else:
            writers = WriterStateManager()
            bases = [b for b in log_.segment_base_offsets() if b <= segment.base_offset]
            start = -1
        for base in bases:
            for h in log_.batch_headers(base):
                if h.base_offset >= start and h.next_offset <= segment.next_offset:
                    writers.update(h.writer_id, h.batch_sequence, h.base_offset, h.next_offset - 1)
        return writers

    async def _commit(self, replica, state: TieredBucket, pending: _PendingCommit, stats: RoundStats) -> None:
        tb = replica.bucket
        try:
            await self.committer.commit(tb, state.leader_epoch, pending.path, pending.previous_path, pending.manifest)
        except FlussError as e:
            if e.error_code in _REJECTED:
                log.warning("commit of the remote log manifest of %s refused (%s): removing its upload", tb, e.message)
                self._states.pop(tb, None)
                await self._run(self._discard, state.tablet_dir, pending)
                raise
            state.pending = pending  # the answer was lost: send the same commit again next round
            raise
        stats.commits += 1
        state.pending = None
        old_path = state.manifest_path
        state.manifest, state.manifest_path = pending.manifest, pending.path
        state.uploaded_segments += len(pending.uploaded)
        state.uploaded_bytes += sum(s.size_in_bytes for s in pending.uploaded)
        stats.uploaded_segments += len(pending.uploaded)
        stats.uploaded_bytes += sum(s.size_in_bytes for s in pending.uploaded)
        stats.expired_segments += len(pending.dropped)
        if pending.dropped:
            log.info("remote log of %s: %d segment(s) expired (table.log.ttl); now [%d, %d)", tb,
                     len(pending.dropped), pending.manifest.start_offset, pending.manifest.end_offset)
        await self._run(self._cleanup_after_commit, state.tablet_dir, old_path, pending.dropped,
                        self._meters(replica))
        self._update_tiered_offset(replica, state)

    def _discard(self, tablet_dir: str, pending: _PendingCommit) -> None:
        try:
            for segment in pending.uploaded:
                self.storage.delete_segment(tablet_dir, segment.segment_id)
            self.storage.delete_manifest(pending.path)
        except FlussError as e:
            log.info("could not remove a refused upload in %s (%s): the next leader removes it", tablet_dir, e)

    def _cleanup_after_commit(self, tablet_dir: str, old_manifest: str, dropped: list[RemoteLogSegment],
                              meters=None) -> None:
        try:
            if old_manifest:
                self.storage.delete_manifest(old_manifest)
            for segment in dropped:
                try:
                    self.storage.delete_segment(tablet_dir, segment.segment_id)
                except FlussError:
                    if meters is not None:
                        meters.delete_errors.count += 1
                    raise
                if meters is not None:
                    meters.delete_requests.count += 1
        except FlussError as e:
            log.info("cleanup in %s after a commit failed (%s): retried when the next leader term starts",
                     tablet_dir, e)

    # ------------------------------------------------------------ local retention

    def _update_tiered_offset(self, replica, state: TieredBucket) -> None:
        end = state.manifest.end_offset
        if replica.table.has_primary_key():
            end = min(end, replica.kv_snapshot_offset)
        replica.tiered_offset = end

    def _trim_local(self, replica) -> int:
        bound = replica.tiered_offset
        if bound <= replica.log.log_start_offset:
            return 0
        local_ttl = replica.local_ttl_ms
        expired_before = int(time.time() * 1000) - local_ttl if local_ttl > 0 else None
        deleted = replica.log.delete_tiered_segments(bound, replica.tiered_local_segments, expired_before)
        if deleted:
            log.info("deleted %d local segment(s) of %s below the tiered offset %d (log now starts at %d)", deleted,
                     replica.bucket, bound, replica.log.log_start_offset)
        return deleted

    # ------------------------------------------------------------ a follower's restart

    async def aux_state(self, tb: TableBucket, restart_offset: int) -> AuxState | None:
        """The leader epochs and writer state (``aux_state.py``) a follower of ``tb`` restarting its log at
        ``restart_offset`` loads from the committed remote log; None when nothing is committed below it. Raises
        (FlussError, or the coordinator RPC's error) when the coordinator or the store cannot answer."""
        record = await self.committer.committed(tb)
        if record is None or not record.path:
            return None
        manifest = await self._run(self.storage.read_manifest, record.path)
        return await self._run(load_aux_state, self.storage, self.tablet_dir(tb), manifest, restart_offset)

    # ------------------------------------------------------------ reads

    def fetch_info(self, replica, state: TieredBucket, offset: int, max_segments: int = 64):
        """Remote segment descriptors for a client fetch at ``offset`` (below the local log start), or None when
        the remote log does not hold it."""
        from fluss.rpc.gen import fluss_api_pb2 as pb

        segments = state.manifest.segments_from(offset)[:max_segments]
        if not segments:
            return None
        first = segments[0]
        position = self.index_cache.position(
            f"{state.tablet_dir}/{first.segment_id}", first.start_offset, offset,
            lambda: self.storage.read_bytes(layout.segment_file(state.tablet_dir, first.segment_id,
                                                                first.start_offset, layout.INDEX_FILE)))
        return pb.RemoteLogFetchInfoPb(
            remote_log_tablet_dir=state.tablet_dir,
            partition_name=self.replicas.partition_names.get(replica.bucket.partition_id, "")
            if replica.bucket.partition_id is not None else "",
            remote_log_segments=[pb.RemoteLogSegmentPb(
                remote_log_segment_id=s.segment_id, remote_log_start_offset=s.start_offset,
                remote_log_end_offset=s.end_offset, segment_size_in_bytes=s.size_in_bytes,
                max_timestamp=s.max_timestamp) for s in segments],
            first_start_pos=position)

    def offset_for_timestamp(self, state: TieredBucket, timestamp: int) -> int | None:
        """The start of the first remote segment holding a record at or after ``timestamp`` (None if none)."""
        for s in state.manifest.segments:
            if s.max_timestamp >= timestamp:
                return s.start_offset
        return None

    async def delete_bucket(self, tb: TableBucket) -> None:
        """Removes a dropped bucket's remote log (every replica is told; the first one does the work)."""
        self.forget(tb)
        await self._run(self.storage.delete_tablet_dir, self.tablet_dir(tb))

    def close(self) -> None:
        self._bucket_pool.shutdown(wait=False, cancel_futures=True)
        self._transfer_pool.shutdown(wait=False, cancel_futures=True)

