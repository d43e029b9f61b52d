"""The Prometheus reporter: a ``prometheus_client`` collector over a :class:`~fluss.metrics.core.MetricRegistry`,
served over HTTP on the first free port of ``metrics.reporter.prometheus.port`` (a port or a range ``9250-9260``,
so several servers can share a host).

The exposition format is ``prometheus_client``'s; this module only turns families into its metric families
(see ``catalog.py`` for the type mapping) and adds the process's constant labels (``server_id``, ``host`` or
``client_id``) to every series. The process's own resource metrics (``process_*``, ``python_*``) come from
``prometheus_client``'s standard collectors.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping

from prometheus_client import (
    CollectorRegistry,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    start_http_server,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from fluss.errors import ErrorCode, FlussError
from fluss.metrics.catalog import Kind
from fluss.metrics.core import MetricRegistry

log = logging.getLogger(__name__)

DEFAULT_PORT = "9249"


def parse_port_range(text: str, key: str = "metrics.reporter.prometheus.port") -> range:
    """``"9249"`` -> ``range(9249, 9250)``; ``"9250-9260"`` -> both ends included; ``"0"``: any free port."""
    raw = str(text).strip()
    first, sep, last = raw.partition("-")
    try:
        lo = int(first)
        hi = int(last) if sep else lo
    except ValueError:
        raise FlussError(f"Invalid '{key}' {raw!r}: expected a port or a range like 9250-9260",
                         ErrorCode.INVALID_CONFIG_EXCEPTION) from None
    if not (0 <= lo <= hi <= 65535):
        raise FlussError(f"Invalid '{key}' {raw!r}: ports must be 0-65535, low end first",
                         ErrorCode.INVALID_CONFIG_EXCEPTION)
    return range(lo, hi + 1)


class RegistryCollector(Collector):
    """Exposes a :class:`MetricRegistry` with constant labels to ``prometheus_client``."""

    def __init__(self, registry: MetricRegistry, const_labels: Mapping[str, str]) -> None:
        self.registry = registry
        self.const_names = list(const_labels)
        self.const_values = [str(v) for v in const_labels.values()]

    def collect(self) -> Iterator[Metric]:
        for family in self.registry.collect():
            spec = family.spec
            names = [*self.const_names, *spec.labels]
            doc = spec.description
            if spec.kind is Kind.METER:
                rate = GaugeMetricFamily(spec.full_name, doc + " Per second, over metrics.meter.window.",
                                         labels=names)
                total = CounterMetricFamily(spec.counter_name, doc + " Count since start.", labels=names)
                for s in family.samples:
                    values = self._values(spec.labels, s.labels)
                    rate.add_metric(values, s.value)
                    total.add_metric(values, s.count)
                yield rate
                yield total
            elif spec.kind is Kind.HISTOGRAM:
                hist = HistogramMetricFamily(spec.full_name, doc, labels=names)
                for s in family.samples:
                    buckets = [(_le(bound), n) for bound, n in s.histogram.buckets]
                    hist.add_metric(self._values(spec.labels, s.labels), buckets, s.histogram.sum)
                yield hist
            else:
                cls = CounterMetricFamily if spec.kind is Kind.COUNTER else GaugeMetricFamily
                metric = cls(spec.full_name, doc, labels=names)
                for s in family.samples:
                    metric.add_metric(self._values(spec.labels, s.labels), s.value)
                yield metric

    def _values(self, label_names, labels: Mapping[str, str]) -> list[str]:
        return [*self.const_values, *(str(labels.get(n, "")) for n in label_names)]


def _le(bound: float) -> str:
    return "+Inf" if bound == float("inf") else repr(float(bound))


class PrometheusReporter:
    """Serves ``/metrics`` for one registry (and the process collectors) on the first free port of a range."""

    name = "prometheus"

    def __init__(self, registry: MetricRegistry, const_labels: Mapping[str, str], ports: range,
                 host: str = "0.0.0.0", process_metrics: bool = True) -> None:
        self.collector_registry = CollectorRegistry(auto_describe=False)
        self.collector_registry.register(RegistryCollector(registry, const_labels))
        if process_metrics:
            ProcessCollector(registry=self.collector_registry)
            PlatformCollector(registry=self.collector_registry)
            GCCollector(registry=self.collector_registry)
        self.host = host
        self.ports = ports
        self.port: int | None = None
        self._server = None
        self._thread = None

    def start(self) -> int:
        """Binds the first free port of the range; returns it. Raises naming the range when none is free."""
        last_error: OSError | None = None
        for port in self.ports:
            try:
                self._server, self._thread = start_http_server(port, self.host, self.collector_registry)
            except OSError as e:
                last_error = e
                continue
            self.port = self._server.server_port
            log.info("Prometheus metrics served on http://%s:%d/metrics", self.host, self.port)
            return self.port
        span = f"{self.ports.start}" if len(self.ports) == 1 else f"{self.ports.start}-{self.ports.stop - 1}"
        raise FlussError(f"Cannot serve Prometheus metrics: no free port in {span} on {self.host} ({last_error})",
                         ErrorCode.INVALID_CONFIG_EXCEPTION)

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
