"""What every server process has: a metric registry, the per-API request metrics (views over the counts the RPC
layer keeps, ``fluss.rpc.interceptors.RequestStats``), the ZooKeeper session state, and the reporters of
``metrics.reporters``, started with the server and closed with it.

Request names are Fluss's: the API name with a lower-case first letter (``produceLog``, ``lookup``), and
FetchLog split into ``fetchLogClient`` and ``fetchLogFollower``.
"""

from __future__ import annotations

import logging
import time

from fluss.metrics import catalog as c
from fluss.metrics.core import HistogramValue, MetricRegistry
from fluss.metrics.reporters import Reporter, create_reporters, meter_window_s
from fluss.rpc.interceptors import LATENCY_BUCKETS_MS, ApiStats, RequestStats
from fluss.server.zk.client import SessionState

log = logging.getLogger(__name__)


def _fetch_variant(request: object) -> str:
    return "FetchLogFollower" if getattr(request, "follower_id", -1) >= 0 else "FetchLogClient"


def request_name(api: str) -> str:
    """``ProduceLog`` -> ``produceLog``."""
    return api[:1].lower() + api[1:]


def _histogram_of(stats: ApiStats) -> HistogramValue:
    buckets, total = [], 0
    for bound, n in zip((*LATENCY_BUCKETS_MS, float("inf")), list(stats.histogram), strict=True):
        total += n
        buckets.append((float(bound), total))
    return HistogramValue(buckets, stats.total_ms, total)


class ServerMetrics:
    """The registry and reporters of one server process (``kind``: ``coordinator`` or ``tabletserver``)."""

    def __init__(self, kind: str, options: dict[str, str], server_id: int, host: str) -> None:
        self.kind = kind
        self.registry = MetricRegistry(meter_window_s(options))
        self.started = time.monotonic()
        self.request_stats = RequestStats(variants={"FetchLog": _fetch_variant})
        self._viewed: set[str] = set()
        self.registry.before_collect(self._view_new_apis)
        self.const_labels = {"server_id": str(server_id), "host": host}
        self.reporters: list[Reporter] = create_reporters(options, self.registry, self.const_labels, host)
        self.zk_state = SessionState.CONNECTED
        for state in SessionState:
            self.registry.gauge(c.ZK_SESSION_STATE[kind], lambda s=state: 1 if self.zk_state is s else 0,
                                state=state.value)
        self.zk_losses = self.registry.counter(c.ZK_SESSION_LOSSES[kind])

    def _view_new_apis(self) -> None:
        """Registers meter and histogram views for every API that has been called since the last read."""
        for api, stats in list(self.request_stats.apis.items()):
            if api in self._viewed:
                continue
            self._viewed.add(api)
            name = request_name(api)
            self.registry.meter_view(c.REQUESTS[self.kind], lambda s=stats: s.requests, self.started,
                                     request=name)
            self.registry.meter_view(c.ERRORS[self.kind], lambda s=stats: s.errors, self.started,
                                     request=name)
            self.registry.histogram_view(c.TOTAL_TIME[self.kind], lambda s=stats: _histogram_of(s), request=name)

    def zookeeper_state_changed(self, state: SessionState) -> None:
        """A ``ZooKeeperClient.on_session_change`` listener (kazoo's thread; never blocks)."""
        if state is SessionState.LOST and self.zk_state is not SessionState.LOST:
            self.zk_losses.inc()
        self.zk_state = state

    def start(self) -> dict[str, int | None]:
        """Starts every reporter; returns their ports by name (a reporter that cannot start stops the server)."""
        return {r.name: r.start() for r in self.reporters}

    def close(self) -> None:
        for reporter in self.reporters:
            try:
                reporter.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                log.debug("closing metric reporter %s failed", reporter.name, exc_info=True)
        self.registry.close()
