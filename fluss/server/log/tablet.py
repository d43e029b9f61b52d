"""LogTablet: the log of one bucket replica, in its own directory.

An ordered list of segments (``segment.py``); the last one is *active* and takes appends. Offsets are contiguous
from ``log_start_offset`` (the first segment's base) to ``log_end_offset`` (LEO, the next offset to assign).

* The leader appends client batches with :meth:`LogTablet.append_as_leader`: every batch's CRC is checked before
  anything is written (one bad batch rejects the request), then offsets, leader epoch and commit timestamp are
  assigned in a new header per batch (with its new CRC) and the whole request is written to the active segment
  with one ``pwritev`` of those headers and the bodies as they arrived (the request is not copied).
  A request goes to a new segment if it would push a non-empty active segment past ``segment_bytes``.
* Followers append batches that already carry offsets (:meth:`append_as_follower`); they must start at LEO.
* Reads return whole batches starting with the batch that contains the fetch offset, never a batch reaching the
  caller's ``max_offset`` (the high watermark for consumers), at most ``max_bytes`` unless a single batch is
  larger and ``min_one_batch`` is set. A read touches one segment.
* The high watermark is set by the replica layer (:meth:`update_high_watermark`; with one replica, to LEO) and is
  persisted with the recovery point (the offset below which everything is fsynced) in ``log.checkpoint`` by
  :meth:`flush` and :meth:`close`, and at every roll.
* Retention (:meth:`delete_expired_segments`) deletes whole segments from the start of the log whose maximum
  commit timestamp is older than ``ttl_ms`` and which lie wholly below the high watermark; never the active one.
  With a tiered (remote) log, :meth:`delete_tiered_segments` also deletes segments below the committed remote end
  while more than ``table.log.tiered.local-segments`` remain; see ``remote/``.

* Every append also maintains the leader-epoch history (``epoch_cache.py``) and the idempotent-writer state
  (``writer_state.py``); both are rebuilt from the batch headers when missing. A leader skips a resent batch of
  an idempotent writer and answers with the offsets it already has.

All public methods take one lock (the server calls them from a thread pool); the lock is held during disk I/O,
which is bounded by ``max_bytes`` for reads and by the request for appends.
"""

from __future__ import annotations

import bisect
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from fluss.errors import ErrorCode, FlussError
from fluss.record.log_batch import (
    HEADER_SIZE,
    BatchHeader,
    Buffer,
    LogBatch,
    iter_batches,
    read_header,
    stamped_header,
)
from fluss.server.log.checkpoint import CheckpointFile
from fluss.server.log.config import LogConfig
from fluss.server.log.epoch_cache import LeaderEpochCache
from fluss.server.log.loader import (
    BOOT_ID_KEY,
    HIGH_WATERMARK_KEY,
    RECOVERY_POINT_KEY,
    WRITTEN_POINT_KEY,
    boot_id,
    load_log,
)
from fluss.server.log.segment import LogSegment
from fluss.server.log.writer_state import WriterStateManager, read_base, write_base

log = logging.getLogger(__name__)

_MAX_RELATIVE_OFFSET = 0xFFFFFFFF  # offsets are stored relative to the segment base as u32 in the indexes


@dataclass(frozen=True)
class AppendInfo:
    first_offset: int
    last_offset: int
    record_count: int
    max_timestamp: int
    batch_count: int = 0


@dataclass(frozen=True)
class FetchData:
    """Whole batches read from the log.

    ``first_offset`` is the base offset of the first returned batch (-1 if none; it can be below the requested
    offset, since the batch containing that offset is returned whole). ``next_offset`` is the offset to fetch
    next (the requested offset if nothing was returned).
    """

    records: bytes | memoryview
    first_offset: int
    next_offset: int
    log_start_offset: int
    log_end_offset: int

    @property
    def is_empty(self) -> bool:
        return not self.records


@dataclass(frozen=True)
class SealedSegment:
    """A sealed (not active) segment, as the remote log uploader sees it: its files and offsets."""

    base_offset: int
    next_offset: int
    size: int
    max_timestamp: int
    log_path: Path
    index_path: Path
    time_index_path: Path


class LogTablet:
    def __init__(self, directory: Path, config: LogConfig, segments: list[LogSegment], high_watermark: int,
                 recovery_point: int, checkpoint: CheckpointFile, name: str | None = None,
                 checkpoint_found: bool = True) -> None:
        self.directory = Path(directory)
        self.name = name or self.directory.name  # how errors sent to clients name this log (never its path)
        self.config = config
        self._segments = segments
        self._bases = [s.base_offset for s in segments]
        self._high_watermark = high_watermark
        self._recovery_point = recovery_point
        self._written_point = recovery_point  # appended data before this is in the page cache (see checkpoint)
        self._checkpoint = checkpoint
        self._checkpointed: dict[str, int] | None = None
        self._checkpoint_missing = not checkpoint_found  # no file yet: it reads as an empty log at its start
        self._unflushed_records = 0
        self._closed = False
        self._lock = threading.RLock()
        self.epochs = LeaderEpochCache(self.directory)
        self.writers = WriterStateManager()
        # the writer state as of the log start, when its earlier batches are only remote (restart_at)
        self._base_writers: WriterStateManager | None = read_base(self.directory, self.log_start_offset)
        self.flush_listener: Callable[[float], None] | None = None  # gets each flush's duration in ms (metrics)
        self._rebuild_state()

    @classmethod
    def open(cls, directory: Path, config: LogConfig | None = None, name: str | None = None) -> LogTablet:
        """Create the log in ``directory`` or recover the one there (see ``loader.py``). ``name`` is how error
        messages name the log (e.g. its table and bucket): they travel to clients, which must not learn server
        paths."""
        config = config or LogConfig()
        name = name or Path(directory).name
        try:
            loaded = load_log(Path(directory), config)
        except OSError as e:
            log.error("cannot open the log of %s in %s: %s", name, directory, e)
            raise FlussError(f"Cannot open the log of {name}: {_os_error(e)}", ErrorCode.LOG_STORAGE_EXCEPTION) from e
        return cls(directory, config, loaded.segments, loaded.high_watermark, loaded.recovery_point,
                   loaded.checkpoint, name, loaded.checkpoint_found)

    # -- offsets --------------------------------------------------------------------------------------------
    @property
    def log_start_offset(self) -> int:
        return self._segments[0].base_offset

    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def recovery_point(self) -> int:
        return self._recovery_point

    @property
    def segment_count(self) -> int:
        return len(self._segments)

    @property
    def size_in_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    def segment_base_offsets(self) -> list[int]:
        with self._lock:
            return list(self._bases)

    def sealed_segments(self, max_offset: int) -> list[SealedSegment]:
        """Every sealed segment (all but the active one) that ends at or below ``max_offset``, oldest first."""
        with self._lock:
            return [SealedSegment(s.base_offset, s.next_offset, s.size, s.max_timestamp, s.log_path,
                                  s.offset_index.path, s.time_index.path)
                    for s in self._segments[:-1] if s.next_offset <= max_offset]

    def leader_epochs_between(self, start_offset: int, end_offset: int) -> list[tuple[int, int]]:
        """``(epoch, start)`` entries covering ``[start_offset, end_offset)`` (see ``epoch_cache.py``)."""
        with self._lock:
            return self.epochs.entries_between(start_offset, end_offset)

    def batch_headers(self, base_offset: int) -> list[BatchHeader]:
        """The batch headers of the segment starting at ``base_offset`` (empty if it is gone)."""
        with self._lock:
            i = bisect.bisect_left(self._bases, base_offset)
            if i == len(self._bases) or self._bases[i] != base_offset:
                return []
            segment = self._segments[i]
            try:
                return [header for _, header, _ in segment.walk(0)]
            except OSError as e:
                raise FlussError(f"Cannot read {segment.log_path}: {e}", ErrorCode.LOG_STORAGE_EXCEPTION) from e

    def update_high_watermark(self, offset: int) -> int:
        """Set the high watermark, clamped into ``[log_start_offset, log_end_offset]``; returns the new value."""
        with self._lock:
            self._high_watermark = min(max(offset, self.log_start_offset), self.log_end_offset)
            return self._high_watermark

    # -- appends ----------------------------------------------------------------------------------------------
    @contextmanager
    def held_if_free(self) -> Iterator[bool]:
        """Holds this log's lock when no other thread holds it (yields True), else yields False at once: the
        event loop appends a small batch itself only when that cannot wait behind a worker's read, roll or
        checkpoint (the appends it makes take the lock again: it is re-entrant)."""
        held = self._lock.acquire(blocking=False)
        try:
            yield held
        finally:
            if held:
                self._lock.release()

    def append_as_leader(self, data: bytes, leader_epoch: int, commit_timestamp: int | None = None,
                         batches: list[LogBatch] | None = None, allow_sequence_gap: bool = False) -> AppendInfo:
        """Validate, assign offsets to and append one or more client batches.

        ``batches``: the batches of ``data`` already validated by the caller (the leader's ``BatchValidator``
        checks far more than the CRC checked here otherwise). ``allow_sequence_gap``: see
        ``WriterStateManager.check`` (the changelog of a PutKv).

        Resent batches of an idempotent writer are skipped; if every batch is a resend, nothing is written and
        the offsets of the earlier append are returned.
        """
        if batches is None:
            view = memoryview(data).cast("B") if not isinstance(data, memoryview) else data.cast("B")
            batches = self._validated(view)
        timestamp = int(time.time() * 1000) if commit_timestamp is None else commit_timestamp
        with self._lock:
            self._ensure_open()
            fresh, duplicate_first = self._drop_duplicates(batches, allow_sequence_gap)
            if not fresh:
                first, last = duplicate_first
                return AppendInfo(first, last, 0, timestamp, 0)
            first = offset = self.log_end_offset
            headers: list[BatchHeader] = []
            parts: list[Buffer] = []  # new header, then the untouched body, of every batch: no copy of the request
            for batch in fresh:
                header = stamped_header(batch.raw, offset, leader_epoch, timestamp)
                headers.append(read_header(header))
                parts += (header, batch.raw[HEADER_SIZE:])
                offset += batch.record_count
            self._assign_epoch(leader_epoch, first)
            try:
                self._append(parts, headers)
            except FlussError:
                self._forget_epochs_past_end()  # the epoch starts at the next append instead
                raise
            self._track_writers(headers)
            if duplicate_first is not None:
                first = duplicate_first[0]
            return AppendInfo(first, offset - 1, offset - first, timestamp, len(headers))

    def _drop_duplicates(self, batches: list[LogBatch], allow_gap: bool = False
                         ) -> tuple[list[LogBatch], tuple[int, int] | None]:
        """The batches not yet appended, and the offsets of the first resent one (if any)."""
        fresh: list[LogBatch] = []
        first_duplicate: tuple[int, int] | None = None
        pending: dict[int, int] = {}
        for batch in batches:
            wid, seq = batch.writer_id, batch.batch_sequence
            if wid >= 0 and wid in pending:
                if seq != pending[wid] + 1:
                    raise FlussError(f"Out-of-order batch sequence {seq} from writer {wid} in one request to "
                                     f"{self.name}", ErrorCode.OUT_OF_ORDER_SEQUENCE_EXCEPTION)
                pending[wid] = seq
                fresh.append(batch)
                continue
            earlier = self.writers.check(wid, seq, self.name, allow_gap)
            if earlier is not None:
                if fresh:
                    raise FlussError(f"Batch sequence {seq} of writer {wid} was already appended but follows "
                                     "new batches in the same request", ErrorCode.OUT_OF_ORDER_SEQUENCE_EXCEPTION)
                if first_duplicate is None:
                    first_duplicate = (earlier.base_offset, earlier.last_offset)
                else:
                    first_duplicate = (first_duplicate[0], earlier.last_offset)
                continue
            if wid >= 0:
                pending[wid] = seq
            fresh.append(batch)
        return fresh, first_duplicate

    def _track_writers(self, headers: list[BatchHeader]) -> None:
        for h in headers:
            self.writers.update(h.writer_id, h.batch_sequence, h.base_offset, h.next_offset - 1)

    def _rebuild_state(self) -> None:
        """Writer state (and a missing epoch history) from the batch headers of the whole log, on top of the
        writer state as of its start when it was restarted with one."""
        self.writers.clear()
        if self._base_writers is not None:
            self.writers = WriterStateManager.from_json(self._base_writers.to_json())
        rebuild_epochs = self.epochs.latest_epoch < 0
        for segment in self._segments:
            for _, header, _ in segment.walk(0):
                self.writers.update(header.writer_id, header.batch_sequence, header.base_offset,
                                    header.next_offset - 1)
                if rebuild_epochs:
                    self.epochs.assign(header.leader_epoch, header.base_offset)
        self.epochs.truncate_from_end(self.log_end_offset)

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """``(epoch, end offset)`` of the largest known epoch <= ``epoch`` (see ``epoch_cache.py``)."""
        with self._lock:
            return self.epochs.end_offset_for(epoch, self.log_end_offset)

    def append_as_follower(self, data: bytes) -> AppendInfo:
        """Append batches fetched from the leader (offsets already assigned; must continue at LEO)."""
        view = memoryview(data).cast("B") if not isinstance(data, memoryview) else data.cast("B")
        batches = self._validated(view)
        with self._lock:
            self._ensure_open()
            expected = first = self.log_end_offset
            for batch in batches:
                if batch.base_offset != expected:
                    raise FlussError(
                        f"Follower append to {self.name} has a batch at offset {batch.base_offset} where "
                        f"offset {expected} was expected (log end offset {first})",
                        ErrorCode.LOG_STORAGE_EXCEPTION,
                    )
                expected = batch.next_offset
            for batch in batches:
                self._assign_epoch(batch.leader_epoch, batch.base_offset)
            headers = [b.header for b in batches]
            try:
                self._append(view, headers)
            except FlussError:
                self._forget_epochs_past_end()
                raise
            self._track_writers(headers)
            return AppendInfo(first, expected - 1, expected - first, max(b.commit_timestamp for b in batches),
                              len(batches))

    def _assign_epoch(self, epoch: int, start_offset: int) -> None:
        try:
            self.epochs.assign(epoch, start_offset)
        except OSError as e:
            log.error("cannot write the leader epoch history of %s: %s", self.directory, e)
            raise FlussError(f"Cannot write the leader epoch history of {self.name}: {_os_error(e)}",
                             ErrorCode.LOG_STORAGE_EXCEPTION) from e

    def _forget_epochs_past_end(self) -> None:
        try:
            self.epochs.truncate_from_end(self.log_end_offset)
        except FlussError:  # the disk refuses this too; the in-memory history is right, and start-up repairs it
            log.warning("cannot persist the leader epoch history of %s", self.directory)

    def _validated(self, view: memoryview) -> list[LogBatch]:
        batches = list(iter_batches(view, validate=True))
        consumed = sum(b.size_in_bytes for b in batches)
        if not batches or consumed != len(view):
            raise FlussError(
                f"Append to {self.name}: {len(view) - consumed} trailing bytes after {len(batches)} complete "
                f"batches (an incomplete batch)",
                ErrorCode.CORRUPT_RECORD_EXCEPTION,
            )
        for batch in batches:
            if batch.record_count <= 0:
                raise FlussError(
                    f"Append to {self.name}: batch with {batch.record_count} records",
                    ErrorCode.CORRUPT_RECORD_EXCEPTION,
                )
        return batches

    def _append(self, data: Buffer | list[Buffer], headers: list[BatchHeader]) -> None:
        """Writes ``data`` (the batches described by ``headers``, as one buffer or as consecutive parts)."""
        active = self._segments[-1]
        last_next_offset = headers[-1].next_offset
        size = sum(h.batch_length for h in headers)
        if not active.is_empty and (
            active.size + size > self.config.segment_bytes
            or last_next_offset - active.base_offset > _MAX_RELATIVE_OFFSET
        ):
            self._roll()
            active = self._segments[-1]
        try:
            active.append(data, headers, self.config.index_interval_bytes)
        except OSError as e:
            log.error("cannot append to %s: %s", active.log_path, e)
            raise FlussError(f"Cannot append to the log of {self.name}: {_os_error(e)}",
                             ErrorCode.LOG_STORAGE_EXCEPTION) from e
        self._unflushed_records += last_next_offset - headers[0].base_offset
        interval = self.config.flush_interval_messages
        if interval is not None and self._unflushed_records >= interval:
            self._flush()

    # -- rolling, flushing, closing ----------------------------------------------------------------------------
    def roll_if_needed(self) -> bool:
        """Start a new segment if the active one is full; returns whether it did."""
        with self._lock:
            self._ensure_open()
            active = self._segments[-1]
            if active.is_empty or active.size < self.config.segment_bytes:
                return False
            self._roll()
            return True

    def roll(self) -> None:
        """Seal the active segment (if it has data) and start a new one at LEO."""
        with self._lock:
            self._ensure_open()
            if not self._segments[-1].is_empty:
                self._roll()

    def _roll(self) -> None:
        self._flush()  # fsyncs the segment being sealed and advances the recovery point to its end
        try:
            segment = LogSegment.create(self.directory, self.log_end_offset)
        except OSError as e:
            log.error("cannot roll a new segment in %s: %s", self.directory, e)
            raise FlussError(f"Cannot roll a new segment of {self.name}: {_os_error(e)}",
                             ErrorCode.LOG_STORAGE_EXCEPTION) from e
        self._segments.append(segment)
        self._bases.append(segment.base_offset)

    def flush(self) -> None:
        """fsync unflushed data and persist the high watermark and recovery point."""
        with self._lock:
            self._ensure_open()
            self._flush()

    def _flush(self) -> None:
        started = time.perf_counter()
        try:
            if self._recovery_point < self.log_end_offset or self._unflushed_records:
                for segment in self._segments:
                    if segment.next_offset > self._recovery_point:
                        segment.flush()
            self._recovery_point = self.log_end_offset
            self._unflushed_records = 0
        except OSError as e:
            log.error("cannot flush the log in %s: %s", self.directory, e)
            raise FlussError(f"Cannot flush the log of {self.name}: {_os_error(e)}",
                             ErrorCode.LOG_STORAGE_EXCEPTION) from e
        self._write_checkpoint()
        if self.flush_listener is not None:
            self.flush_listener((time.perf_counter() - started) * 1000)

    def checkpoint(self) -> bool:
        """Persist the high watermark and the *written point* (the log end offset now) with the machine's boot id
        in the checkpoint file (see ``loader.py``): after a crash of the process, not of the machine, start-up
        re-checks only what was appended since. The appended data itself is not fsynced (that is what
        replication is for, as in Kafka and Apache Fluss), so this costs one small file write. Returns whether
        the written point moved."""
        with self._lock:
            if self._closed:
                return False
            moved = self.log_end_offset > self._written_point
            self._written_point = self.log_end_offset
            self._write_checkpoint()
            return moved

    def _write_checkpoint(self) -> None:
        self._written_point = min(max(self._written_point, self._recovery_point), self.log_end_offset)
        values = {HIGH_WATERMARK_KEY: self._high_watermark, RECOVERY_POINT_KEY: self._recovery_point,
                  WRITTEN_POINT_KEY: self._written_point, BOOT_ID_KEY: boot_id()}
        if values == self._checkpointed:
            return
        start = self.log_start_offset
        if self._checkpoint_missing and self._high_watermark == self._recovery_point == self._written_point == \
                self.log_end_offset == start:
            return  # an empty log without a checkpoint file, which reads as these values (``loader.py``)
        self._checkpoint.write(values)
        self._checkpointed = values
        self._checkpoint_missing = False

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            try:
                self._flush()
            finally:
                for segment in self._segments:
                    segment.close()
                self._closed = True

    def __enter__(self) -> LogTablet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _ensure_open(self) -> None:
        if self._closed:
            raise FlussError(f"The log of {self.name} is closed", ErrorCode.LOG_STORAGE_EXCEPTION)

    # -- reads ------------------------------------------------------------------------------------------------
    def read(self, start_offset: int, max_bytes: int, max_offset: int | None = None,
             min_one_batch: bool = True) -> FetchData:
        """Whole batches from the one containing ``start_offset`` (see the module docstring)."""
        with self._lock:
            self._ensure_open()
            log_start, log_end = self.log_start_offset, self.log_end_offset
            if start_offset < log_start or start_offset > log_end:
                raise FlussError(
                    f"Fetch offset {start_offset} is out of range for {self.name}: the log holds offsets "
                    f"[{log_start}, {log_end})",
                    ErrorCode.LOG_OFFSET_OUT_OF_RANGE_EXCEPTION,
                )
            empty = FetchData(b"", -1, start_offset, log_start, log_end)
            if start_offset == log_end or (max_offset is not None and start_offset >= max_offset):
                return empty
            index = bisect.bisect_right(self._bases, start_offset) - 1
            try:
                for segment in self._segments[index:]:
                    found = segment.find_batch(start_offset)
                    if found is None:
                        continue
                    position, header = found
                    records, next_offset = segment.read(position, max_bytes, max_offset, min_one_batch)
                    if not records:
                        return empty
                    return FetchData(records, header.base_offset, next_offset, log_start, log_end)
            except OSError as e:
                log.error("cannot read offset %d from %s: %s", start_offset, self.directory, e)
                raise FlussError(f"Cannot read offset {start_offset} of {self.name}: {_os_error(e)}",
                                 ErrorCode.LOG_STORAGE_EXCEPTION) from e
            return empty

    def tail_bytes_from(self, offset: int) -> int | None:
        """At most how many bytes a read from ``offset`` touches when ``offset`` lies in the active segment: from
        the offset index's entry at or below it to the segment's end (None for an offset outside that segment,
        or a closed log). In memory only: no file is read."""
        with self._lock:
            if self._closed or not self._segments:
                return None
            active = self._segments[-1]
            if offset < active.base_offset or offset >= active.next_offset:
                return None
            _, position = active.offset_index.lookup(offset)
            return active.size - position

    def offset_for_timestamp(self, timestamp: int) -> int:
        """The first offset whose batch commit timestamp is ``>= timestamp`` (LEO if there is none)."""
        with self._lock:
            self._ensure_open()
            for segment in self._segments:
                found = segment.find_offset_by_timestamp(timestamp)
                if found is not None:
                    return found
            return self.log_end_offset

    # -- truncation and retention -----------------------------------------------------------------------------
    def truncate_to(self, offset: int) -> None:
        """Drop every batch at or after ``offset`` (a batch containing ``offset`` is dropped whole, so LEO can
        end up below ``offset``). Truncating at or below the log start empties the log, which restarts at
        ``offset``."""
        with self._lock:
            self._ensure_open()
            if offset >= self.log_end_offset:
                return
            try:
                if offset <= self.log_start_offset:
                    for segment in reversed(self._segments):
                        segment.delete()
                    self._segments = [LogSegment.create(self.directory, offset)]
                else:
                    while self._segments[-1].base_offset >= offset:
                        self._segments.pop().delete()
                    self._segments[-1].truncate_to(offset, self.config.index_interval_bytes)
            except OSError as e:
                log.error("cannot truncate %s to offset %d: %s", self.directory, offset, e)
                raise FlussError(f"Cannot truncate the log of {self.name} to offset {offset}: {_os_error(e)}",
                                 ErrorCode.LOG_STORAGE_EXCEPTION) from e
            self._bases = [s.base_offset for s in self._segments]
            log_end = self.log_end_offset
            self._high_watermark = min(max(self._high_watermark, self.log_start_offset), log_end)
            self._recovery_point = min(max(self._recovery_point, self.log_start_offset), log_end)
            self._unflushed_records = 0
            self._write_checkpoint()
            self.epochs.truncate_from_end(log_end)
            self._rebuild_state()

    def restart_at(self, offset: int, epochs: list[tuple[int, int]] | None = None,
                   writers: WriterStateManager | None = None) -> None:
        """Drop the whole log and continue it empty at ``offset`` (a follower whose leader's log now starts past
        this log's end). ``epochs`` (leader-epoch entries starting below ``offset``) and ``writers`` (the writer
        state as of ``offset``) are the history of the offsets before it, loaded from remote storage
        (``remote/aux_state.py``): the epoch cache starts with them, and the writer state is rebuilt on top of
        ``writers`` from now on (after a truncation too)."""
        with self._lock:
            self._ensure_open()
            try:
                for segment in reversed(self._segments):
                    segment.delete()
                self._segments = [LogSegment.create(self.directory, offset)]
            except OSError as e:
                log.error("cannot restart %s at offset %d: %s", self.directory, offset, e)
                raise FlussError(f"Cannot restart the log of {self.name} at offset {offset}: {_os_error(e)}",
                                 ErrorCode.LOG_STORAGE_EXCEPTION) from e
            self._bases = [offset]
            self._high_watermark = self._recovery_point = offset
            self._unflushed_records = 0
            self._write_checkpoint()
            self.epochs.clear()
            for epoch, start in epochs or ():
                if start < offset:
                    self._assign_epoch(epoch, start)
            self._base_writers = WriterStateManager.from_json(writers.to_json()) if writers is not None else None
            try:
                write_base(self.directory, offset, self._base_writers)
            except OSError as e:
                log.error("cannot write the writer state of %s: %s", self.directory, e)
                raise FlussError(f"Cannot write the writer state of {self.name}: {_os_error(e)}",
                                 ErrorCode.LOG_STORAGE_EXCEPTION) from e
            self._rebuild_state()

    def delete_expired_segments(self, now_ms: int) -> int:
        """Delete whole segments, oldest first, whose max commit timestamp is older than ``ttl_ms`` and which lie
        below the high watermark; never the active segment. Returns how many were deleted."""
        if self.config.ttl_ms < 0:
            return 0
        deadline = now_ms - self.config.ttl_ms
        bound = self._high_watermark
        return self._delete_oldest(lambda s, remaining: s.max_timestamp < deadline and s.next_offset <= bound,
                                   "expired")

    def delete_tiered_segments(self, max_offset: int, keep_segments: int, expired_before_ms: int | None = None) -> int:
        """Tiered local retention: delete segments, oldest first, that end at or below ``max_offset`` (committed in
        remote storage) while more than ``keep_segments`` segments (the active one included) remain, or whose
        newest record is older than ``expired_before_ms`` (``table.log.local-ttl``; None: no TTL cleanup). Only a
        prefix of the log goes: the first segment that must stay stops the deletion."""
        bound = min(self._high_watermark, max_offset)

        def deletable(s: LogSegment, remaining: int) -> bool:
            if s.next_offset > bound:
                return False
            return remaining > keep_segments or (expired_before_ms is not None and s.max_timestamp < expired_before_ms)
        return self._delete_oldest(deletable, "tiered")

    def _delete_oldest(self, deletable, why: str) -> int:
        deleted = 0
        with self._lock:
            self._ensure_open()
            while len(self._segments) > 1:
                oldest = self._segments[0]
                if not deletable(oldest, len(self._segments)):
                    break
                try:
                    if self._base_writers is not None:  # keep the base "as of the log start" true
                        for _, h, _ in oldest.walk(0):
                            self._base_writers.update(h.writer_id, h.batch_sequence, h.base_offset,
                                                      h.next_offset - 1)
                    oldest.delete()
                except OSError as e:
                    log.error("cannot delete %s segment %s: %s", why, oldest.log_path, e)
                    raise FlussError(f"Cannot delete {'an' if why == 'expired' else 'a'} {why} segment of {self.name}: "
                                     f"{_os_error(e)}",
                                     ErrorCode.LOG_STORAGE_EXCEPTION) from e
                self._segments.pop(0)
                self._bases.pop(0)
                deleted += 1
            if deleted and self._base_writers is not None:
                try:
                    write_base(self.directory, self.log_start_offset, self._base_writers)
                except OSError as e:  # the next open ignores the stale file and rebuilds from the local log
                    log.warning("cannot write the writer state of %s: %s", self.directory, e)
            if deleted:
                self._recovery_point = max(self._recovery_point, self.log_start_offset)
                self._high_watermark = max(self._high_watermark, self.log_start_offset)
                self.epochs.truncate_from_start(self.log_start_offset)
        return deleted

    def __repr__(self) -> str:
        return (f"LogTablet({self.directory}, offsets [{self.log_start_offset}, {self.log_end_offset}), "
                f"hw={self._high_watermark}, segments={len(self._segments)})")


def _os_error(e: OSError) -> str:
    """An OS error as clients may see it: the reason, never the file name (server paths stay in the log)."""
    return e.strerror or type(e).__name__
