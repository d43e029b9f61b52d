"""Client metrics (``client.metrics.enabled``): writers, scanners and lookups of one connection.

A connection with metrics enabled owns a :class:`ClientMetrics`: a registry (``fluss.metrics``) with the
connection's ``client_id`` as a label on every series, and the reporters of ``metrics.reporters`` (the servers'
keys; ``client.``-prefixed in Flink options). Writers, scanners and lookupers get their group from it
(:meth:`ClientMetrics.writer`, :meth:`scanner`, :meth:`lookuper`); with metrics disabled they get None and skip the
accounting altogether. Everything is counted per batch, request or poll, never per row.

Read the values in Python with ``connection.metrics.snapshot()``, export them through an application's own
``prometheus_client`` registry with ``connection.metrics.register(registry)``, or let the connection serve
``/metrics`` itself (``metrics.reporters: prometheus``, ``metrics.reporter.prometheus.port``).
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable, Iterator

from fluss.config_values import parse_bool
from fluss.metadata import TableBucket, TablePath
from fluss.metrics import catalog as c
from fluss.metrics.core import COUNT_BOUNDS, SIZE_BOUNDS_BYTES, MetricRegistry, Row
from fluss.metrics.prometheus import RegistryCollector
from fluss.metrics.reporters import Reporter, create_reporters, meter_window_s

METRICS_ENABLED = "metrics.enabled"  # client.metrics.enabled (the Config strips "client.")
CLIENT_ID = "client.id"
_CLIENT_IDS = itertools.count(1)
_SCANNER_IDS = itertools.count(0)


def metrics_enabled(options: dict[str, str]) -> bool:
    raw = options.get(METRICS_ENABLED)
    return False if raw in (None, "") else parse_bool(raw, "client.metrics.enabled")


def _table_labels(path: TablePath) -> dict[str, str]:
    return {"database": path.database_name, "table": path.table_name}


class WriterMetrics:
    """Per table: what the writer sent, retried and buffered (``client_writer_*``)."""

    __slots__ = ("records_send", "bytes_send", "records_retry", "records_per_batch", "bytes_per_batch",
                 "send_latency", "batch_queue_time")

    def __init__(self, registry: MetricRegistry, path: TablePath) -> None:
        labels = _table_labels(path)
        self.records_send = registry.meter(c.W_RECORDS_SEND, **labels)
        self.bytes_send = registry.meter(c.W_BYTES_SEND, **labels)
        self.records_retry = registry.meter(c.W_RECORDS_RETRY, **labels)
        self.records_per_batch = registry.histogram(c.W_RECORDS_PER_BATCH, COUNT_BOUNDS, **labels)
        self.bytes_per_batch = registry.histogram(c.W_BYTES_PER_BATCH, SIZE_BOUNDS_BYTES, **labels)
        self.send_latency = registry.histogram(c.W_SEND_LATENCY, **labels)
        self.batch_queue_time = registry.histogram(c.W_BATCH_QUEUE_TIME, **labels)


class ScannerMetrics:
    """Per scanner (``scanner_id``): fetches, bytes, latency, poll timing, and the lag of each bucket it reads."""

    __slots__ = ("fetches", "bytes_per_request", "fetch_latency", "lag", "last_poll", "between_polls", "labels",
                 "_position", "source")

    def __init__(self, registry: MetricRegistry, path: TablePath, position: Callable[[], dict[TableBucket, int]],
                 partition_names: Callable[[], dict[int, str]]) -> None:
        labels = self.labels = {**_table_labels(path), "scanner_id": str(next(_SCANNER_IDS))}
        self.fetches = registry.meter(c.S_FETCH, **labels)
        self.bytes_per_request = registry.histogram(c.S_BYTES_PER_REQUEST, SIZE_BOUNDS_BYTES, **labels)
        self.fetch_latency = registry.histogram(c.S_FETCH_LATENCY, **labels)
        self.lag: dict[TableBucket, int] = {}  # bucket -> high watermark of its last fetch
        self.last_poll = 0.0
        self.between_polls = 0.0
        self._position = position
        registry.gauge(c.S_TIME_BETWEEN_POLL, lambda: self.between_polls * 1000, **labels)
        registry.gauge(c.S_LAST_POLL_AGO, lambda: time.time() - self.last_poll if self.last_poll else -1, **labels)
        self.source = registry.add_source(lambda: self._lag_rows(partition_names()))

    def polled(self) -> None:
        now = time.time()
        if self.last_poll:
            self.between_polls = now - self.last_poll
        self.last_poll = now

    def bucket_lag(self) -> dict[TableBucket, int]:
        """Records between the scanner's position and each bucket's high watermark (as of its last fetch)."""
        position = self._position()
        return {tb: max(0, hw - position[tb]) for tb, hw in list(self.lag.items()) if tb in position}

    def _lag_rows(self, partition_names: dict[int, str]) -> Iterator[Row]:
        lags = self.bucket_lag()
        yield c.S_RECORDS_LAG, self.labels, sum(lags.values())
        for tb, lag in sorted(lags.items(), key=lambda kv: (kv[0].partition_id or -1, kv[0].bucket_id)):
            partition = partition_names.get(tb.partition_id, str(tb.partition_id)) if tb.partition_id is not None \
                else ""
            yield c.S_BUCKET_LAG, {**self.labels, "partition": partition, "bucket": str(tb.bucket_id)}, lag


class LookupMetrics:
    """Per table: keys looked up, requests, and the latency of a request's oldest key (``client_lookuper_*``)."""

    __slots__ = ("lookups", "requests", "latency")

    def __init__(self, registry: MetricRegistry, path: TablePath) -> None:
        labels = _table_labels(path)
        self.lookups = registry.meter(c.L_LOOKUPS, **labels)
        self.requests = registry.meter(c.L_REQUESTS, **labels)
        self.latency = registry.histogram(c.L_LATENCY, **labels)


class ClientMetrics:
    """The metrics of one connection (see the module docstring)."""

    def __init__(self, options: dict[str, str]) -> None:
        self.client_id = options.get(CLIENT_ID) or options.get("id") or f"fluss-py-{os.getpid()}-{next(_CLIENT_IDS)}"
        self.registry = MetricRegistry(meter_window_s(options))
        self.const_labels = {"client_id": self.client_id}
        self.reporters: list[Reporter] = create_reporters(options, self.registry, self.const_labels, "0.0.0.0")
        self._writers: dict[TablePath, WriterMetrics] = {}
        self._lookups: dict[TablePath, LookupMetrics] = {}
        self.ports = {r.name: r.start() for r in self.reporters}

    def writer(self, path: TablePath, buffer=None) -> WriterMetrics:
        """The writer group of a table; ``buffer`` (a ``MemoryBudget``) adds the buffer gauges."""
        group = self._writers.get(path)
        if group is None:
            group = self._writers[path] = WriterMetrics(self.registry, path)
        if buffer is not None:
            labels = _table_labels(path)
            self.registry.gauge(c.W_BUFFER_TOTAL, lambda: buffer.limit, **labels)
            self.registry.gauge(c.W_BUFFER_AVAILABLE, lambda: max(0, buffer.limit - buffer.used), **labels)
            self.registry.gauge(c.W_BUFFER_WAITING, lambda: buffer.waiting, **labels)
        return group

    def scanner(self, path: TablePath, position: Callable[[], dict[TableBucket, int]],
                partition_names: Callable[[], dict[int, str]]) -> ScannerMetrics:
        return ScannerMetrics(self.registry, path, position, partition_names)

    def close_scanner(self, group: ScannerMetrics) -> None:
        """Forgets a closed scanner's series."""
        self.registry.remove_source(group.source)
        scanner_id = group.labels["scanner_id"]
        self.registry.remove(lambda labels: labels.get("scanner_id") == scanner_id)

    def lookuper(self, path: TablePath) -> LookupMetrics:
        group = self._lookups.get(path)
        if group is None:
            group = self._lookups[path] = LookupMetrics(self.registry, path)
        return group

    def snapshot(self) -> dict[str, list[dict]]:
        """Every client metric now, as plain data (``MetricRegistry.snapshot``)."""
        return self.registry.snapshot()

    def register(self, prometheus_registry) -> None:
        """Adds these metrics (with the ``client_id`` label) to a ``prometheus_client`` registry."""
        prometheus_registry.register(RegistryCollector(self.registry, self.const_labels))

    def close(self) -> None:
        for reporter in self.reporters:
            reporter.close()
        self.registry.close()
