"""A tablet server's metrics: server-wide meters the data paths add to, one :class:`TableMetrics` per table, and
gauges read from the replicas when the metrics are read.

Hot paths add to integers once per request or bucket entry (never per row): ``ReplicaManager`` and
``TabletServicer`` count records and bytes in and out, the ISR loop counts expands and shrinks, log and KV
flushes report their duration through the listeners the replica manager installs. Everything else - leader and
replica counts, under-replicated buckets, writer ids, sizes, and the bucket-level series - is computed when a
reporter reads the registry (:meth:`TabletServerMetrics.replica_rows`), from a copy of the replica map, so it
costs nothing between scrapes.

With a tiered log (issue 15) the RemoteLogManager adds to each table's remote-log meters once per segment it
copies or expires (:meth:`TableMetrics.remote_log`), and the read-time gauges include the remote log of every
bucket led here whose remote state is loaded (``remoteLogSize``, ``table_bucket_remoteLog_*``).

Bucket-level series are bounded: at most ``metrics.bucket-level.max-buckets`` replicas get them (ordered by
database, table, partition and bucket, so the set is stable between scrapes); the number left out is
``bucketMetricsOmitted``, and server-level sums always cover every replica.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from fluss.metadata import TableInfo
from fluss.metrics import catalog as c
from fluss.metrics.core import SIZE_BOUNDS_BYTES, MetricRegistry, Row
from fluss.record.log_batch import HEADER_SIZE, read_header

DEFAULT_MAX_BUCKETS = 2000


def records_in(data: bytes | memoryview) -> int:
    """The record count of every batch in ``data``, from the batch headers alone."""
    total = position = 0
    end = len(data)
    while position + HEADER_SIZE <= end:
        header = read_header(data, position)
        if header.batch_length <= 0:
            break
        total += header.record_count
        position += header.batch_length
    return total


class RemoteLogMeters:
    """Fluss's remote-log meters of one table: segments copied (count, bytes, failures) and expired remote segments
    deleted (count, failures); the RemoteLogManager adds to them once per segment."""

    __slots__ = ("copy_bytes", "copy_requests", "copy_errors", "delete_requests", "delete_errors")

    def __init__(self, registry: MetricRegistry, labels: dict[str, str]) -> None:
        m = registry.meter
        self.copy_bytes = m(c.T_REMOTE_LOG_COPY_BYTES, **labels)
        self.copy_requests = m(c.T_REMOTE_LOG_COPY_REQUESTS, **labels)
        self.copy_errors = m(c.T_REMOTE_LOG_COPY_ERRORS, **labels)
        self.delete_requests = m(c.T_REMOTE_LOG_DELETE_REQUESTS, **labels)
        self.delete_errors = m(c.T_REMOTE_LOG_DELETE_ERRORS, **labels)


class TableMetrics:
    """The per-table meters of one tablet server (labels ``database``, ``table``)."""

    __slots__ = ("messages_in", "bytes_in", "bytes_out", "produce", "produce_failed", "put_kv", "put_kv_failed",
                 "fetch", "fetch_failed", "lookup", "lookup_failed", "prefix_lookup", "prefix_lookup_failed",
                 "limit_scan", "limit_scan_failed", "remote_kv_copy_bytes", "server", "_registry", "_labels",
                 "_remote_log")

    def __init__(self, registry: MetricRegistry, info: TableInfo, server: TabletServerMetrics) -> None:
        labels = {"database": info.table_path.database_name, "table": info.table_path.table_name}
        m = registry.meter
        self.server = server
        self._registry, self._labels, self._remote_log = registry, labels, None
        self.messages_in = m(c.T_MESSAGES_IN, **labels)
        self.bytes_in = m(c.T_BYTES_IN, **labels)
        self.bytes_out = m(c.T_BYTES_OUT, **labels)
        self.produce = m(c.T_PRODUCE, **labels)
        self.produce_failed = m(c.T_PRODUCE_FAILED, **labels)
        self.fetch = m(c.T_FETCH, **labels)
        self.fetch_failed = m(c.T_FETCH_FAILED, **labels)
        if info.has_primary_key():
            self.put_kv = m(c.T_PUT_KV, **labels)
            self.put_kv_failed = m(c.T_PUT_KV_FAILED, **labels)
            self.lookup = m(c.T_LOOKUP, **labels)
            self.lookup_failed = m(c.T_LOOKUP_FAILED, **labels)
            self.prefix_lookup = m(c.T_PREFIX_LOOKUP, **labels)
            self.prefix_lookup_failed = m(c.T_PREFIX_LOOKUP_FAILED, **labels)
            self.limit_scan = m(c.T_LIMIT_SCAN, **labels)
            self.limit_scan_failed = m(c.T_LIMIT_SCAN_FAILED, **labels)
            self.remote_kv_copy_bytes = m(c.T_REMOTE_KV_COPY_BYTES, **labels)
        else:  # a log table has no KV requests: its counts would only be zero series
            self.put_kv = self.put_kv_failed = self.lookup = self.lookup_failed = None
            self.prefix_lookup = self.prefix_lookup_failed = self.limit_scan = self.limit_scan_failed = None
            self.remote_kv_copy_bytes = None

    def remote_log(self) -> RemoteLogMeters:
        """The table's tiered-log meters, registered when the server first tiers or expires one of its segments
        (a cluster without a tiered log exports no such series)."""
        if self._remote_log is None:
            self._remote_log = RemoteLogMeters(self._registry, self._labels)
        return self._remote_log

    def written(self, records: int, nbytes: int) -> None:
        """A bucket entry of a ProduceLog or PutKv was written."""
        self.messages_in.count += records
        self.bytes_in.count += nbytes
        server = self.server
        server.messages_in.count += records
        server.bytes_in.count += nbytes

    def read(self, nbytes: int, follower: bool) -> None:
        """Records were read from a bucket (by a client, or by a follower)."""
        if follower:
            self.server.replication_bytes_out.count += nbytes
        else:
            self.bytes_out.count += nbytes
            self.server.bytes_out.count += nbytes


class TabletServerMetrics:
    """Every metric of one tablet server (see the module docstring); :meth:`attach` gives it the replica manager
    whose replicas the read-time gauges describe."""

    def __init__(self, registry: MetricRegistry | None = None, max_buckets: int = DEFAULT_MAX_BUCKETS) -> None:
        r = self.registry = registry or MetricRegistry()
        self.max_buckets = max_buckets
        self.messages_in = r.meter(c.MESSAGES_IN)
        self.bytes_in = r.meter(c.BYTES_IN)
        self.bytes_out = r.meter(c.BYTES_OUT)
        self.replication_bytes_in = r.meter(c.REPLICATION_BYTES_IN)
        self.replication_bytes_out = r.meter(c.REPLICATION_BYTES_OUT)
        self.isr_expands = r.meter(c.ISR_EXPANDS)
        self.isr_shrinks = r.meter(c.ISR_SHRINKS)
        self.failed_isr_updates = r.meter(c.FAILED_ISR_UPDATES)
        self.log_flush = r.meter(c.LOG_FLUSH)
        self.log_flush_latency = r.histogram(c.LOG_FLUSH_LATENCY)
        self.kv_flush = r.meter(c.KV_FLUSH)
        self.kv_flush_latency = r.histogram(c.KV_FLUSH_LATENCY)
        self.kv_snapshot_duration = r.histogram(c.KV_SNAPSHOT_DURATION)
        self.kv_snapshot_size = r.histogram(c.KV_SNAPSHOT_SIZE, SIZE_BOUNDS_BYTES)
        self.delayed_writes = 0
        self.delayed_fetches = 0
        r.gauge(c.DELAYED_WRITE_COUNT, lambda: self.delayed_writes)
        r.gauge(c.DELAYED_FETCH_COUNT, lambda: self.delayed_fetches)
        self._tables: dict[int, TableMetrics] = {}
        self.manager = None  # the ReplicaManager, once attached
        r.add_source(self.replica_rows)

    def attach(self, manager) -> None:
        """Reads replicas, partition names and the minimum ISR from ``manager`` (a ``ReplicaManager``)."""
        self.manager = manager

    # ------------------------------------------------------------ hot-path helpers

    def table(self, info: TableInfo) -> TableMetrics:
        tm = self._tables.get(info.table_id)
        if tm is None:
            tm = self._tables[info.table_id] = TableMetrics(self.registry, info, self)
        return tm

    def drop_table(self, info: TableInfo) -> None:
        """Unregisters a table's series once this server hosts none of its replicas."""
        if self._tables.pop(info.table_id, None) is not None:
            db, name = info.table_path.database_name, info.table_path.table_name
            self.registry.remove(lambda labels: labels.get("database") == db and labels.get("table") == name)

    def log_flushed(self, ms: float) -> None:
        self.log_flush.count += 1
        self.log_flush_latency.update(ms)

    def kv_flushed(self, ms: float) -> None:
        self.kv_flush.count += 1
        self.kv_flush_latency.update(ms)

    def kv_snapshot_taken(self, info: TableInfo, ms: float, size: int) -> None:
        self.kv_snapshot_duration.update(ms)
        self.kv_snapshot_size.update(size)
        tm = self.table(info)
        if tm.remote_kv_copy_bytes is not None:
            tm.remote_kv_copy_bytes.count += size

    def isr_changed(self, old: list[int], new: list[int]) -> None:
        added, removed = len(set(new) - set(old)), len(set(old) - set(new))
        self.isr_expands.count += added
        self.isr_shrinks.count += removed

    # ------------------------------------------------------------ read-time gauges

    def replica_rows(self) -> Iterator[Row]:
        """Server-level replica gauges and the (bounded) bucket-level series, from the current replicas."""
        manager = self.manager
        if manager is None:
            return
        replicas = list(manager.replicas.values())
        partition_names = manager.partition_names
        min_isr = manager.min_isr
        leaders = under_replicated = under_min = at_min = writer_ids = 0
        log_size = kv_size = remote_size = 0
        remote_log = getattr(manager, "remote_log", None)
        bucket_rows: list[tuple[tuple, dict, int, int, int, int, int | None, tuple[int, int, int] | None]] = []
        for replica in replicas:
            try:
                log_ = replica.log
                size = log_.size_in_bytes
                segments, start, end = log_.segment_count, log_.log_start_offset, log_.log_end_offset
                writer_ids += len(log_.writers)
            except Exception:  # noqa: BLE001 - closed or deleted meanwhile
                continue
            log_size += size
            kv_bytes = None
            if replica.is_leader:
                leaders += 1
                isr = len(replica.isr)
                if isr < len(replica.replicas):
                    under_replicated += 1
                if isr < min_isr:
                    under_min += 1
                elif isr == min_isr:
                    at_min += 1
                kv = replica.kv
                if kv is not None:
                    kv_bytes = _dir_size(kv.local_dir / "db")
                    kv_size += kv_bytes
            remote = None
            state = remote_log.cached(replica) if remote_log is not None and replica.is_leader else None
            if state is not None:  # loaded in this leader term: (segments, end offset, bytes)
                manifest = state.manifest
                remote = (len(manifest.segments), manifest.end_offset if manifest.segments else -1,
                          manifest.size_in_bytes)
                remote_size += remote[2]
            info = replica.table
            path = info.table_path
            labels = {"database": path.database_name, "table": path.table_name,
                      "partition": partition_names.get(replica.bucket.partition_id, "")
                      if replica.bucket.partition_id is not None else "",
                      "bucket": str(replica.bucket.bucket_id)}
            key = (path.database_name, path.table_name, labels["partition"], replica.bucket.bucket_id)
            bucket_rows.append((key, labels, segments, start, end, size, kv_bytes, remote))
        yield c.LEADER_COUNT, {}, leaders
        yield c.REPLICA_COUNT, {}, len(replicas)
        yield c.UNDER_REPLICATED, {}, under_replicated
        yield c.UNDER_MIN_ISR, {}, under_min
        yield c.AT_MIN_ISR, {}, at_min
        yield c.WRITER_ID_COUNT, {}, writer_ids
        yield c.LOG_SIZE, {}, log_size
        yield c.KV_SIZE, {}, kv_size
        yield c.LOCAL_SIZE, {}, log_size + kv_size
        if remote_log is not None:
            yield c.REMOTE_LOG_SIZE, {}, remote_size
        bucket_rows.sort(key=lambda row: row[0])
        kept = bucket_rows[:self.max_buckets]
        yield c.BUCKET_METRICS_OMITTED, {}, len(bucket_rows) - len(kept)
        for _, labels, segments, start, end, size, kv_bytes, remote in kept:
            yield c.B_NUM_SEGMENTS, labels, segments
            yield c.B_START_OFFSET, labels, start
            yield c.B_END_OFFSET, labels, end
            yield c.B_LOG_SIZE, labels, size
            if kv_bytes is not None:
                yield c.B_KV_SIZE, labels, kv_bytes
            if remote is not None:
                yield c.B_REMOTE_NUM_SEGMENTS, labels, remote[0]
                yield c.B_REMOTE_END_OFFSET, labels, remote[1]
                yield c.B_REMOTE_SIZE, labels, remote[2]


def _dir_size(path: Path) -> int:
    """Bytes of the regular files directly in ``path`` (RocksDB keeps its files flat); 0 if it is gone."""
    total = 0
    try:
        with os.scandir(path) as entries:
            for entry in entries:
                try:
                    if entry.is_file(follow_symlinks=False):
                        total += entry.stat(follow_symlinks=False).st_size
                except OSError:
                    continue
    except OSError:
        return 0
    return total
