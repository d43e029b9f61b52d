"""The primary-key half of a bucket leader: its KvTablet, the PutKv write path, lookups and KV snapshots.

Write path (one PutKv batch at a time per bucket): check the idempotent writer's sequence, merge the rows into
the KvTablet's pre-write buffer (``prepare_batch``), append the resulting changelog to the bucket's log as one
batch carrying the writer id and sequence, and drop the staged values again if the append fails. Staged values
reach RocksDB only when the high watermark passes their log offset (``flush``), so lookups and KV snapshots
never show a change that could still be lost.

Flushes run on the tablet server's KV executor, never on its event loop: the replica asks for one
(``request_flush``, from the high-watermark path) and at most one flush per bucket is queued at a time, catching up
to the latest high watermark it was asked for; ``on_flushed`` tells the server when values became visible (acks of
PutKv wait for that, so a client reads its own acknowledged writes).

Recovery when a replica becomes leader: the local RocksDB if this server kept one that the log still covers,
else the latest KV snapshot recorded by the coordinator, else nothing; then the changelog is replayed from
the state's offset to the log end.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor
from pathlib import Path

import numpy as np
import pyarrow as pa

from fluss.errors import ErrorCode, FlussError
from fluss.nested_values import check_stored_nested
from fluss.record.change_type import ChangeType
from fluss.record.indexed_rows import decode_evolved
from fluss.record.log_batch import COMPRESSION_MIN_BATCH_BYTES, build_batch, build_row_batch, iter_batches
from fluss.server.kv.snapshot import (
    SnapshotHandle,
    create_snapshot,
    delete_old_snapshots,
    list_snapshots,
    restore_snapshot,
)
from fluss.server.kv.tablet import OP_DELETE, OP_UPSERT, KvTablet
from fluss.server.log.tablet import AppendInfo

log = logging.getLogger(__name__)

KV_DIR = "kv"
REPLAY_CHUNK_BYTES = 8 << 20
#: Lookup answers of at most this many rows (of one schema id) are sent as the stored values (``lookup_entries``).
STORED_ROWS_MAX = 16


class KvReplica:
    """Owned by a leader ``Replica`` of a primary-key table; closed when it stops leading."""

    def __init__(self, replica, remote_dir: str | None, executor: Executor | None = None,
                 on_flushed: Callable[[], None] | None = None) -> None:
        self.replica = replica
        self.remote_dir = remote_dir
        self.kv: KvTablet | None = None
        self.last_snapshot_offset = -1
        self.executor = executor  # None: flush in the calling thread (tools and tests)
        self.on_flushed = on_flushed  # called from the executor after values became visible
        self._flush_lock = threading.Lock()
        self._flush_target = -1
        self._flush_queued = False
        self.flush_listener: Callable[[float], None] | None = None  # flush ms (metrics; on the KV executor)

    @property
    def local_dir(self) -> Path:
        return Path(self.replica.directory) / KV_DIR

    # ------------------------------------------------------------ recovery

    def open(self, snapshot_of: Callable[[], SnapshotHandle | None]) -> None:
        """Builds the leader's state (see the module docstring); ``snapshot_of`` asks for the latest snapshot."""
        info = self.replica.table
        schema, schema_id, props = info.row_schema, info.schema_id, info.get_properties()
        counts = info.schema_column_counts
        log_ = self.replica.log
        kv = None
        if (self.local_dir / "db").exists():
            kv = KvTablet.open(self.local_dir, schema, schema_id, props, counts)
            if not (log_.log_start_offset <= kv.flushed_offset <= log_.log_end_offset):
                log.info("local KV state of %s covers offset %d, outside the log [%d, %d): discarded",
                         self.replica.bucket, kv.flushed_offset, log_.log_start_offset, log_.log_end_offset)
                kv.close()
                shutil.rmtree(self.local_dir, ignore_errors=True)
                kv = None
        if kv is None:
            handle = snapshot_of()
            if handle is not None and self.remote_dir:
                log.info("restoring %s from KV snapshot %d (log offset %d)", self.replica.bucket,
                         handle.snapshot_id, handle.log_offset)
                kv = restore_snapshot(handle, self.remote_dir, self.local_dir, schema, schema_id, props, counts)
                self.last_snapshot_offset = handle.log_offset
            else:
                kv = KvTablet.open(self.local_dir, schema, schema_id, props, counts)
                if log_.log_start_offset > 0:
                    log.warning("%s has no KV snapshot and its log starts at %d: rows older than that are lost",
                                self.replica.bucket, log_.log_start_offset)
        self.kv = kv
        latest = self.replica.table  # an ALTER TABLE ADD that arrived while the state was opening
        if latest.schema_id != schema_id:
            kv.update_schema(latest.row_schema, latest.schema_id, latest.schema_column_counts)
        gap = log_.log_start_offset > kv.flushed_offset
        try:
            replayed = self.replay(max(kv.flushed_offset, log_.log_start_offset))
        except BaseException:
            self.close()  # RocksDB's lock must not outlive a failed recovery (it is retried)
            raise
        if gap:  # changes between the state and the log start are gone: the key count is taken afresh
            kv.recount_rows()
        log.info("KV state of %s ready at offset %d (%d changelog records replayed)", self.replica.bucket,
                 kv.flushed_offset, replayed)

    def replay(self, start: int) -> int:
        """Applies the changelog from ``start`` to the log end straight to RocksDB; returns records applied."""
        log_ = self.replica.log
        history = self.kv.history
        offset, applied = start, 0
        while offset < log_.log_end_offset:
            data = log_.read(offset, REPLAY_CHUNK_BYTES).records
            if not data:
                break
            for batch in iter_batches(data):
                if batch.next_offset <= offset:
                    continue
                rows, types = history.read(batch), batch.change_types()  # older ids: added columns null
                if batch.base_offset < offset:
                    skip = offset - batch.base_offset
                    rows, types = rows.slice(skip), types[skip:]
                self.kv.apply_changelog(rows, types, batch.next_offset)
                applied += rows.num_rows
                offset = batch.next_offset
        return applied

    def close(self) -> None:
        if self.kv is not None:
            self.kv.close()
            self.kv = None

    # ------------------------------------------------------------ writes

    def put(self, records: bytes, target_columns: list[int] | None, commit_timestamp: int) -> AppendInfo:
        """Applies the client's batches in order; returns where their changelog went in the log."""
        replica, kv = self.replica, self._kv()
        log_ = replica.log
        first = last = -1
        count = 0
        validated = replica.validator.validate(records, target_columns)  # every batch, before any is applied
        for v in validated:  # routed by the table's bucket function
            replica.routing.check_rows(v.rows, replica.bucket.bucket_id)
        if replica.nested_columns:  # nested NOT NULL, on every validated batch before any is applied
            for v in validated:
                check_stored_nested(v.rows, replica.nested_columns, f"PutKv to {replica.name}")
        for v in validated:
            batch, rows = v.batch, v.rows
            earlier = log_.writers.check(batch.writer_id, batch.batch_sequence, replica.name, allow_gap=True)
            if earlier is not None:  # a resend of a batch already applied
                first = earlier.base_offset if first < 0 else first
                last = max(last, earlier.last_offset)
                continue
            ops = np.where(v.change_types == ChangeType.Delete, OP_DELETE, OP_UPSERT).astype(np.uint8)
            start = log_.log_end_offset
            changelog = kv.prepare_batch(rows, ops, target_columns, start)
            if changelog.num_records == 0:  # nothing changed (e.g. first_row kept the old row)
                log_.writers.update(batch.writer_id, batch.batch_sequence, start, start - 1)
                continue
            schema_id = kv.history.schema_id_with(changelog.batch.num_columns)  # the schema it was merged with
            data = build_batch(changelog.batch, schema_id=schema_id, compression=replica.compression,
                               zstd_level=replica.zstd_level, change_types=changelog.change_types,
                               writer_id=batch.writer_id, batch_sequence=batch.batch_sequence,
                               log_format=replica.log_format, min_compressed_bytes=COMPRESSION_MIN_BATCH_BYTES)
            try:
                info = log_.append_as_leader(data, replica.leader_epoch, commit_timestamp, allow_sequence_gap=True)
            except BaseException:
                kv.abort_from(start)
                raise
            first = info.first_offset if first < 0 else first
            last = info.last_offset
            count += info.record_count
        if first < 0:
            first = last = log_.log_end_offset - 1
        return AppendInfo(first, last, count, commit_timestamp)

    def request_flush(self, high_watermark: int) -> None:
        """Has every change below ``high_watermark`` made visible on the KV executor; returns at once. Requests
        coalesce: while a flush is queued or running, a later one only raises its target."""
        kv = self.kv
        if kv is None or not kv.has_staged_below(high_watermark):
            return
        if self.executor is None:
            self.flush(high_watermark)
            return
        with self._flush_lock:
            self._flush_target = max(self._flush_target, high_watermark)
            if self._flush_queued:
                return
            self._flush_queued = True
        try:
            self.executor.submit(self._flush_queued_target)
        except RuntimeError:  # the executor is shut down: the server is stopping
            with self._flush_lock:
                self._flush_queued = False

    def _flush_queued_target(self) -> None:
        while True:
            with self._flush_lock:
                target = self._flush_target
            self.flush(target)
            with self._flush_lock:
                if self._flush_target == target:
                    self._flush_queued = False
                    break
        if self.on_flushed is not None:
            self.on_flushed()

    @property
    def visible_offset(self) -> int:
        """Changes below this log offset are visible to lookups and scans (-1 before the state is open)."""
        return self.kv.flushed_offset if self.kv is not None else -1

    def flush(self, high_watermark: int) -> None:
        """Makes every change below the high watermark visible (level-triggered: a missed call is caught up)."""
        kv = self.kv
        if kv is None or not kv.has_staged_below(high_watermark):
            return
        try:
            started = time.perf_counter()
            kv.flush_up_to(high_watermark)
            if self.flush_listener is not None:
                self.flush_listener((time.perf_counter() - started) * 1000)
        except Exception:  # noqa: BLE001 - retried at the next high-watermark check
            if self.kv is not None:  # not a flush racing the close of the state
                log.exception("flushing the KV state of %s up to %d failed", self.replica.bucket, high_watermark)

    def _kv(self) -> KvTablet:
        if self.kv is None:
            raise FlussError(f"The KV state of {self.replica.bucket} is not ready", ErrorCode.NOT_LEADER_OR_FOLLOWER)
        return self.kv

    # ------------------------------------------------------------ reads

    def _point_values(self, keys: list[bytes]) -> tuple[list[bool], list[bytes]]:
        values = self._kv().lookup(keys)
        if None not in values:
            return [True] * len(values), values
        return [v is not None for v in values], [v for v in values if v is not None]

    def _prefix_values(self, prefixes: list[bytes]) -> tuple[list[int], list[bytes]]:
        kv = self._kv()
        counts, values = [], []
        for prefix in prefixes:
            matched = kv.prefix_lookup(prefix)
            counts.append(len(matched))
            values.extend(matched)
        return counts, values

    def lookup_entries(self, key_lists: list[list[bytes]], prefix: bool = False) -> list[tuple[list, bytes]]:
        """Several entries of one request for this bucket, with one multi-get (``prefix``: one scan per
        prefix): per entry its found flags (``prefix``: match counts) and a log batch of its rows (empty bytes
        when there are none).

        Up to ``STORED_ROWS_MAX`` rows of one schema id are sent as stored: a batch in the table's KV row format
        (its body is the values themselves), which saves decoding them to Arrow and encoding an Arrow batch;
        every reader decodes row-format bodies of any schema id. More rows (or rows of several schema ids) are
        decoded together into the latest schema and sent as Arrow batches, whose decode is the client's cheapest.
        """
        kv = self._kv()
        keys = key_lists[0] if len(key_lists) == 1 else [k for ks in key_lists for k in ks]
        shape, values = self._prefix_values(keys) if prefix else self._point_values(keys)
        schema_id = _common_schema_id(values) if len(values) <= STORED_ROWS_MAX else None
        if schema_id is not None and kv.history.knows(schema_id):
            fmt = kv.format
            batch = lambda lo, hi: build_row_batch(values[lo:hi], fmt, schema_id)  # noqa: E731
        else:
            rows = decode_evolved(values, kv.history, kv.codec)
            batch = lambda lo, hi: self.encode_rows(rows.slice(lo, hi - lo))  # noqa: E731
        out = []
        at = row = 0
        for ks in key_lists:
            mine = shape[at:at + len(ks)]
            n = sum(mine)
            out.append((mine, batch(row, row + n) if n else b""))
            at += len(ks)
            row += n
        return out

    def scan(self, limit: int | None) -> tuple[pa.RecordBatch, int]:
        return self._kv().scan_all(limit)

    def row_count(self) -> int:
        """Number of committed rows (keys) of the bucket."""
        return self._kv().row_count

    def encode_rows(self, rows: pa.RecordBatch) -> bytes:
        """One uncompressed log batch holding ``rows`` (how lookups and scans send rows back)."""
        history = self._kv().history
        return build_batch(rows, schema_id=history.schema_id_with(rows.num_columns), compression=0)

    # ------------------------------------------------------------ snapshots

    def snapshot_if_changed(self, retain: int) -> SnapshotHandle | None:
        """Uploads a snapshot when the committed state moved since the last one; returns it (or None)."""
        kv = self.kv
        if kv is None or not self.remote_dir or kv.flushed_offset <= self.last_snapshot_offset:
            return None
        existing = list_snapshots(self.remote_dir)
        snapshot_id = existing[-1].snapshot_id + 1 if existing else 1
        handle = create_snapshot(kv, self.remote_dir, snapshot_id)
        self.last_snapshot_offset = handle.log_offset
        delete_old_snapshots(self.remote_dir, retain)
        return handle


def _common_schema_id(values: list[bytes]) -> int | None:
    """The schema id every value starts with, or None when they differ (or a value is too short to have one)."""
    if not values:
        return None
    head = values[0][:2]
    if len(head) < 2 or any(v[:2] != head for v in values):
        return None
    return int.from_bytes(head, "little", signed=True)
