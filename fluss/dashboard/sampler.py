"""The dashboard's view of the servers' metrics: every ``interval`` it scrapes the Prometheus endpoint of each server
(``GetServerNodes`` names them: ``metrics_port``), keeps the latest scrape of each, and keeps a short history of
cluster totals from which the live charts are drawn.

Rates come from the counters (``..._total``) of two consecutive samples, so the charts need nothing but the
servers' endpoints; a counter that went down (a server restarted) counts as zero for that interval. Request
latency per API is the mean of the interval (sum and count of the ``totalTimeMs`` histogram) and its 99th
percentile (the upper bound of the bucket holding it, from the histogram's increase).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from dataclasses import dataclass, field

from fluss.metadata import ServerNode
from fluss.metrics.scrape import Scrape, scrape

log = logging.getLogger(__name__)

#: The request latencies the dashboard charts (Fluss's request names).
CHARTED_REQUESTS = ("produceLog", "putKv", "fetchLogClient", "lookup")
_TS = "fluss_tabletserver_"


@dataclass
class Totals:
    """Cluster-wide counters at one instant (summed over the tablet servers)."""

    at: float
    counters: dict[str, float] = field(default_factory=dict)
    requests: dict[str, tuple[float, float, dict[float, float]]] = field(default_factory=dict)  # count, sum, buckets
    tables: dict[tuple[str, str], tuple[float, float]] = field(default_factory=dict)  # records in, bytes out


def totals_of(scrapes: list[Scrape], at: float) -> Totals:
    out = Totals(at)
    for name in ("messagesIn_total", "bytesIn_total", "bytesOut_total", "replicationBytesOut_total"):
        out.counters[name] = sum(s.total(_TS + name) for s in scrapes)
    for request in CHARTED_REQUESTS:
        count = sum(s.total(_TS + "request_totalTimeMs_count", request=request) for s in scrapes)
        total = sum(s.total(_TS + "request_totalTimeMs_sum", request=request) for s in scrapes)
        buckets: dict[float, float] = {}
        for s in scrapes:
            for sample in s.series(_TS + "request_totalTimeMs_bucket", request=request):
                le = float(sample.labels["le"])
                buckets[le] = buckets.get(le, 0.0) + sample.value
        out.requests[request] = (count, total, buckets)
    for s in scrapes:
        for sample in s.series(_TS + "table_messagesIn_total"):
            key = (sample.labels.get("database", ""), sample.labels.get("table", ""))
            records, nbytes = out.tables.get(key, (0.0, 0.0))
            out.tables[key] = (records + sample.value, nbytes)
        for sample in s.series(_TS + "table_bytesOut_total"):
            key = (sample.labels.get("database", ""), sample.labels.get("table", ""))
            records, nbytes = out.tables.get(key, (0.0, 0.0))
            out.tables[key] = (records, nbytes + sample.value)
    return out


def _rate(new: float, old: float, seconds: float) -> float:
    return max(0.0, new - old) / seconds if seconds > 0 else 0.0


def _p99(new: dict[float, float], old: dict[float, float]) -> float | None:
    """The upper bound of the bucket holding the 99th percentile of what was added between two histograms."""
    deltas = sorted((le, max(0.0, n - old.get(le, 0.0))) for le, n in new.items())
    if not deltas or deltas[-1][1] <= 0:
        return None
    target = 0.99 * deltas[-1][1]
    finite = [le for le, _ in deltas if le != float("inf")]
    for le, cumulative in deltas:
        if cumulative >= target:
            return le if le != float("inf") else (finite[-1] if finite else None)
    return None


class MetricsSampler:
    """Scrapes every server every ``interval_s`` and keeps ``keep`` points of history (see the module docstring)."""

    def __init__(self, admin, interval_s: float = 2.0, keep: int = 300) -> None:
        self.admin = admin
        self.interval_s = interval_s
        self.nodes: list[ServerNode] = []
        self.latest: dict[str, Scrape] = {}  # node uid -> latest scrape
        self.errors: dict[str, str] = {}  # node uid -> why its last scrape failed
        self.history: deque[Totals] = deque(maxlen=keep + 1)
        self.samples = 0
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="dashboard-sampler")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001
                pass
            self._task = None

    async def _run(self) -> None:
        while True:
            started = time.monotonic()
            try:
                await self.sample_once()
            except Exception as e:  # noqa: BLE001 - the cluster may be unreachable for a while: keep trying
                log.debug("dashboard sample failed: %s", e)
            await asyncio.sleep(max(0.1, self.interval_s - (time.monotonic() - started)))

    async def sample_once(self) -> None:
        self.nodes = await self.admin.get_server_nodes()
        targets = [n for n in self.nodes if n.metrics_port]

        async def one(node: ServerNode) -> tuple[str, Scrape | str]:
            try:
                return node.uid, await asyncio.to_thread(scrape, f"{node.host}:{node.metrics_port}", 3.0)
            except Exception as e:  # noqa: BLE001 - shown as that server's scrape error
                return node.uid, f"{type(e).__name__}: {e}"

        results = await asyncio.gather(*(one(n) for n in targets))
        latest, errors = {}, {}
        for uid, got in results:
            if isinstance(got, Scrape):
                latest[uid] = got
            else:
                errors[uid] = got
        self.latest, self.errors = latest, errors
        tablet_scrapes = [s for uid, s in latest.items() if uid.startswith("ts-")]
        self.history.append(totals_of(tablet_scrapes, time.time()))
        self.samples += 1

    # ------------------------------------------------------------ what the pages show

    def series(self) -> dict:
        """Rates and latencies between consecutive samples, oldest first."""
        points = list(self.history)
        out: dict = {"t": [], "produce_records": [], "produce_bytes": [], "fetch_bytes": [], "replication_bytes": [],
                     "latency": {r: {"avg": [], "p99": []} for r in CHARTED_REQUESTS}}
        for old, new in zip(points, points[1:], strict=False):
            dt = new.at - old.at
            out["t"].append(round(new.at, 3))
            c_new, c_old = new.counters, old.counters
            out["produce_records"].append(_rate(c_new["messagesIn_total"], c_old["messagesIn_total"], dt))
            out["produce_bytes"].append(_rate(c_new["bytesIn_total"], c_old["bytesIn_total"], dt))
            out["fetch_bytes"].append(_rate(c_new["bytesOut_total"], c_old["bytesOut_total"], dt))
            out["replication_bytes"].append(_rate(c_new["replicationBytesOut_total"],
                                                  c_old["replicationBytesOut_total"], dt))
            for request in CHARTED_REQUESTS:
                n1, s1, b1 = new.requests[request]
                n0, s0, b0 = old.requests[request]
                count = n1 - n0
                out["latency"][request]["avg"].append((s1 - s0) / count if count > 0 else None)
                out["latency"][request]["p99"].append(_p99(b1, b0) if count > 0 else None)
        return out

    def table_rates(self) -> dict[tuple[str, str], tuple[float, float]]:
        """Records in and bytes out per second of every table over the last interval."""
        if len(self.history) < 2:
            return {}
        old, new = self.history[-2], self.history[-1]
        dt = new.at - old.at
        return {key: (_rate(r, old.tables.get(key, (0.0, 0.0))[0], dt), _rate(b, old.tables.get(key, (0.0, 0.0))[1], dt))
                for key, (r, b) in new.tables.items()}

    def table_series(self, database: str, table: str) -> dict:
        points = list(self.history)
        out: dict = {"t": [], "records_in": [], "bytes_out": []}
        for old, new in zip(points, points[1:], strict=False):
            dt = new.at - old.at
            r1, b1 = new.tables.get((database, table), (0.0, 0.0))
            r0, b0 = old.tables.get((database, table), (0.0, 0.0))
            out["t"].append(round(new.at, 3))
            out["records_in"].append(_rate(r1, r0, dt))
            out["bytes_out"].append(_rate(b1, b0, dt))
        return out
