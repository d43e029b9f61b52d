"""Metric reporters by name (``metrics.reporters: prometheus``), the same keys on servers and clients.

A reporter is a class registered in :data:`REPORTERS` under the name users write; it gets the registry, the
process's constant labels, the configuration (its own keys are ``metrics.reporter.<name>.*``) and the host to
bind, and is started and closed by its owner (a server, or a client connection with ``client.metrics.enabled``).
Fluss's ``jmx`` and ``prometheus-push`` reporters have no counterpart here; naming them is an error that says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from fluss.config_values import parse_duration_ms
from fluss.errors import ErrorCode, FlussError
from fluss.metrics.core import DEFAULT_METER_WINDOW_S, MetricRegistry
from fluss.metrics.prometheus import DEFAULT_PORT, PrometheusReporter, parse_port_range

METRICS_REPORTERS = "metrics.reporters"
PROMETHEUS_PORT = "metrics.reporter.prometheus.port"
METER_WINDOW = "metrics.meter.window"


class Reporter(Protocol):
    name: str
    port: int | None

    def start(self) -> int | None: ...

    def close(self) -> None: ...


ReporterFactory = Callable[[MetricRegistry, Mapping[str, str], Mapping[str, str], str], Reporter]


def _prometheus(registry: MetricRegistry, const_labels: Mapping[str, str], options: Mapping[str, str],
                host: str) -> Reporter:
    ports = parse_port_range(options.get(PROMETHEUS_PORT) or DEFAULT_PORT)
    return PrometheusReporter(registry, const_labels, ports, host)


REPORTERS: dict[str, ReporterFactory] = {"prometheus": _prometheus}
_ELSEWHERE = {"jmx": "JMX is the JVM's", "prometheus-push": "the Prometheus push gateway reporter is not built"}


def reporter_names(text: str | None) -> list[str]:
    """The reporters named in ``metrics.reporters`` (comma-separated); raises naming an unknown one."""
    names = [n.strip().lower() for n in str(text or "").split(",") if n.strip()]
    for name in names:
        if name not in REPORTERS:
            why = f" ({_ELSEWHERE[name]})" if name in _ELSEWHERE else ""
            raise FlussError(f"Unknown metric reporter '{name}' in '{METRICS_REPORTERS}'{why}; known: "
                             f"{', '.join(sorted(REPORTERS))}", ErrorCode.INVALID_CONFIG_EXCEPTION)
    return names


def meter_window_s(options: Mapping[str, str]) -> float:
    raw = options.get(METER_WINDOW)
    return DEFAULT_METER_WINDOW_S if raw in (None, "") else parse_duration_ms(raw, METER_WINDOW) / 1000


def create_reporters(options: Mapping[str, str], registry: MetricRegistry, const_labels: Mapping[str, str],
                     host: str) -> list[Reporter]:
    """The reporters ``metrics.reporters`` names, not started yet."""
    return [REPORTERS[name](registry, const_labels, options, host) for name in reporter_names(
        options.get(METRICS_REPORTERS))]
