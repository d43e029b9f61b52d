"""The metric types and the registry that holds them; no exposition here (reporters do that, ``prometheus.py``).

Fluss's four metric types, made cheap for hot paths: a hot path only adds to a plain integer (once per batch or
request, never per row), and everything else happens when the metrics are read.

* :class:`Counter` - a count since start (``inc(n)``).
* :class:`Meter` - a counter plus its rate per second over a sliding window (``metrics.meter.window``), as Fluss's
  ``MeterView``: one ticker thread per registry (:class:`MeterTicker`) samples every meter's count each second, and
  the rate is the count added over the last window of samples. Reading a rate changes nothing, so any number of
  readers (Prometheus, the dashboard) see the same values, and the rate, summed once per tick, adds up exactly to
  the count (each second's records are in ``window`` consecutive values, each weighted ``1/window``).
* :class:`Histogram` - counts per fixed bucket (upper bounds), with sum, count and max.
* gauges - a function called at read time (:meth:`MetricRegistry.gauge`), or many values at once from a
  *source* (:meth:`MetricRegistry.add_source`): a function yielding ``(spec, labels, value)`` rows, which is how
  bucket-level gauges are produced without one object per bucket.

Every metric is declared by a :class:`~fluss.metrics.catalog.MetricSpec` (name, type, labels, meaning) and
registered under the label values that identify it. :meth:`MetricRegistry.collect` reads everything into
:class:`Family` values (one per spec, each with its samples); :meth:`MetricRegistry.snapshot` gives the same as
plain Python data. Reads are serialised by a lock; hot-path updates take none (an integer add under the GIL).
:meth:`MetricRegistry.close` stops the ticker.
"""

from __future__ import annotations

import threading
import time
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from fluss.metrics.catalog import Kind, MetricSpec

DEFAULT_METER_WINDOW_S = 60.0

#: Latency buckets (ms) of every ``...Ms`` histogram.
LATENCY_BOUNDS_MS: tuple[float, ...] = (1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000)
#: Size buckets (bytes) of the byte-size histograms.
SIZE_BOUNDS_BYTES: tuple[float, ...] = tuple(float(1 << s) for s in range(10, 35, 2))  # 1 KiB .. 16 GiB
#: Count buckets (records) of the records-per-batch histograms.
COUNT_BOUNDS: tuple[float, ...] = (1, 10, 100, 1000, 10_000, 100_000, 1_000_000)


class Counter:
    """A count since start; hot paths call ``inc`` once per batch."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    def inc(self, n: int = 1) -> None:
        self.count += n


class RateWindow:
    """The rate of a growing count over the last window, from samples a ticker takes (see the module docstring).

    ``tick(count, now)`` records the count (once per tick); ``rate()`` is the count added between the oldest and
    the newest sample kept (one window apart once the window is full) divided by their distance, but never by
    less than a window (so a new meter's first seconds show no spike). The value changes only at ticks. The
    samples are two rings of doubles (~1 KB for a 60 s window at 1 s ticks).
    """

    __slots__ = ("window_s", "_times", "_counts", "_next", "_size")

    def __init__(self, window_s: float, tick_s: float = 1.0, now: float | None = None, count: float = 0) -> None:
        self.window_s = window_s
        keep = max(2, int(round(window_s / tick_s)) + 1)
        self._times = array("d", bytes(8 * keep))
        self._counts = array("d", bytes(8 * keep))
        self._next = 0
        self._size = 0
        self.tick(count, time.monotonic() if now is None else now)

    def tick(self, count: float, now: float) -> None:
        i = self._next
        self._times[i] = now
        self._counts[i] = count
        self._next = (i + 1) % len(self._times)
        if self._size < len(self._times):
            self._size += 1

    def rate(self) -> float:
        n = len(self._times)
        newest = (self._next - 1) % n
        oldest = (self._next - self._size) % n
        return (self._counts[newest] - self._counts[oldest]) / max(self._times[newest] - self._times[oldest],
                                                                   self.window_s)


class Meter:
    """Fluss's Meter: a count and its rate per second over a window (exported as both)."""

    __slots__ = ("count", "window")

    def __init__(self, window_s: float = DEFAULT_METER_WINDOW_S, tick_s: float = 1.0) -> None:
        self.count = 0
        self.window = RateWindow(window_s, tick_s)

    def mark(self, n: int = 1) -> None:
        self.count += n

    def tick(self, now: float) -> None:
        self.window.tick(self.count, now)

    def rate(self) -> float:
        return self.window.rate()


class MeterView:
    """A meter over a count kept elsewhere (the RPC layer's request stats): ``read()`` returns the count."""

    __slots__ = ("_read", "window")

    def __init__(self, read: Callable[[], int], window_s: float = DEFAULT_METER_WINDOW_S, tick_s: float = 1.0,
                 since: float | None = None) -> None:
        self._read = read
        # ``since``: when the count started, before this view existed (its rate then covers that time too)
        self.window = RateWindow(window_s, tick_s, since)

    @property
    def count(self) -> int:
        return self._read()

    def tick(self, now: float) -> None:
        self.window.tick(self._read(), now)

    def rate(self) -> float:
        return self.window.rate()


class MeterTicker:
    """A daemon thread that samples the counts of a registry's meters every ``tick_s`` (Flink's view updater)."""

    def __init__(self, meters: Callable[[], list], tick_s: float) -> None:
        self._meters = meters
        self.tick_s = tick_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fluss-metrics-ticker", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        next_tick = time.monotonic() + self.tick_s
        while not self._stop.wait(max(0.0, next_tick - time.monotonic())):
            now = time.monotonic()
            for meter in self._meters():
                meter.tick(now)
            next_tick += self.tick_s
            if next_tick < now:  # the thread was starved: do not tick in a burst to catch up
                next_tick = now + self.tick_s

    def stop(self) -> None:
        self._stop.set()


class Histogram:
    """Counts per bucket of fixed upper bounds (the last bucket is unbounded), with sum, count and max."""

    __slots__ = ("bounds", "counts", "sum", "count", "max")

    def __init__(self, bounds: Sequence[float] = LATENCY_BOUNDS_MS) -> None:
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(self.bounds) + 1)
        self.sum = 0.0
        self.count = 0
        self.max = 0.0

    def update(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.sum += value
        self.count += 1
        if value > self.max:
            self.max = value

    def cumulative(self) -> list[tuple[float, int]]:
        """``(upper bound, count of values <= it)`` per bucket, the last bound ``inf``."""
        out, total = [], 0
        for bound, n in zip((*self.bounds, float("inf")), self.counts, strict=True):
            total += n
            out.append((bound, total))
        return out

    def quantile(self, q: float) -> float:
        """An estimate of the ``q`` quantile: the upper bound of the bucket holding it (max for the last)."""
        if self.count == 0:
            return 0.0
        rank = q * self.count
        total = 0
        for bound, n in zip(self.bounds, self.counts, strict=False):
            total += n
            if total >= rank:
                return bound
        return self.max


@dataclass(frozen=True)
class HistogramValue:
    buckets: list[tuple[float, int]]  # cumulative, as Histogram.cumulative
    sum: float
    count: int


@dataclass
class Sample:
    """One series of a family: its label values and value (a number, or the parts of a meter or histogram)."""

    labels: dict[str, str]
    value: float | None = None  # counter, gauge, meter rate
    count: float | None = None  # meter count
    histogram: HistogramValue | None = None


@dataclass
class Family:
    spec: MetricSpec
    samples: list[Sample] = field(default_factory=list)


Labels = tuple[str, ...]
Row = tuple[MetricSpec, Mapping[str, str], float]


class MetricRegistry:
    """The metrics of one process part (a server, a client connection), keyed by spec and label values."""

    def __init__(self, meter_window_s: float = DEFAULT_METER_WINDOW_S, tick_s: float = 1.0) -> None:
        self.meter_window_s = meter_window_s
        self.tick_s = tick_s
        self._ticker: MeterTicker | None = None
        self._metrics: dict[MetricSpec, dict[Labels, object]] = {}
        self._sources: list[Callable[[], Iterable[Row]]] = []
        self._hooks: list[Callable[[], None]] = []
        self._lock = threading.Lock()
        self._collecting = threading.Lock()

    # ------------------------------------------------------------ registration

    def counter(self, spec: MetricSpec, **labels: str) -> Counter:
        return self._register(spec, Kind.COUNTER, labels, Counter)

    def meter(self, spec: MetricSpec, **labels: str) -> Meter:
        return self._register(spec, Kind.METER, labels, lambda: Meter(self.meter_window_s, self.tick_s))

    def histogram(self, spec: MetricSpec, bounds: Sequence[float] = LATENCY_BOUNDS_MS, **labels: str) -> Histogram:
        return self._register(spec, Kind.HISTOGRAM, labels, lambda: Histogram(bounds))

    def gauge(self, spec: MetricSpec, read: Callable[[], float], **labels: str) -> None:
        self._register(spec, Kind.GAUGE, labels, lambda: read, replace=True)

    def meter_view(self, spec: MetricSpec, read: Callable[[], int], since: float | None = None,
                   **labels: str) -> MeterView:
        """A meter whose count ``read()`` returns (kept by someone else, counting since ``since``, a
        ``time.monotonic()`` value; default now)."""
        return self._register(spec, Kind.METER, labels,
                              lambda: MeterView(read, self.meter_window_s, self.tick_s, since))

    def histogram_view(self, spec: MetricSpec, read: Callable[[], HistogramValue], **labels: str) -> None:
        """A histogram whose value ``read()`` returns (kept by someone else)."""
        self._register(spec, Kind.HISTOGRAM, labels, lambda: read, replace=True)

    def before_collect(self, hook: Callable[[], None]) -> None:
        """``hook()`` runs at the start of every read (e.g. to register views of things that appeared)."""
        self._hooks.append(hook)

    def add_source(self, source: Callable[[], Iterable[Row]]) -> Callable[[], Iterable[Row]]:
        """``source()`` is called at every read and yields gauge rows (many series at once, e.g. per bucket)."""
        with self._lock:
            self._sources.append(source)
        return source

    def remove_source(self, source: Callable[[], Iterable[Row]]) -> None:
        with self._lock:
            if source in self._sources:
                self._sources.remove(source)

    def remove(self, predicate: Callable[[Mapping[str, str]], bool]) -> int:
        """Unregisters every metric whose labels match (e.g. a dropped table's); returns how many."""
        removed = 0
        with self._lock:
            for spec, children in self._metrics.items():
                for key in [k for k in children if predicate(dict(zip(spec.labels, k, strict=True)))]:
                    del children[key]
                    removed += 1
        return removed

    def _register(self, spec: MetricSpec, kind: Kind, labels: Mapping[str, str], make, replace: bool = False):
        if spec.kind is not kind:
            raise ValueError(f"{spec.full_name} is a {spec.kind.value}, not a {kind.value}")
        if set(labels) != set(spec.labels):
            raise ValueError(f"{spec.full_name} takes labels {spec.labels}, got {tuple(labels)}")
        key = tuple(str(labels[name]) for name in spec.labels)
        with self._lock:
            children = self._metrics.setdefault(spec, {})
            metric = children.get(key)
            if metric is None or replace:
                metric = children[key] = make()
            if kind is Kind.METER and self._ticker is None:
                self._ticker = MeterTicker(self._meters, self.tick_s)
            return metric

    def _meters(self) -> list:
        with self._lock:
            return [m for spec, children in self._metrics.items() if spec.kind is Kind.METER
                    for m in children.values()]

    def close(self) -> None:
        """Stops the meters' ticker (their rates stay as they are)."""
        if self._ticker is not None:
            self._ticker.stop()

    # ------------------------------------------------------------ reading

    def collect(self) -> list[Family]:
        """Every metric's current value (meters are sampled now), one family per spec, sorted by name."""
        with self._collecting:  # one read at a time (the hooks register views)
            return self._collect()

    def _collect(self) -> list[Family]:
        for hook in list(self._hooks):
            hook()
        families: dict[MetricSpec, Family] = {}
        with self._lock:
            for spec, children in self._metrics.items():
                family = families.setdefault(spec, Family(spec))
                for key, metric in list(children.items()):
                    sample = _read(spec, metric)
                    if sample is not None:
                        sample.labels = dict(zip(spec.labels, key, strict=True))
                        family.samples.append(sample)
            sources = list(self._sources)
        for source in sources:
            for spec, labels, value in source():
                families.setdefault(spec, Family(spec)).samples.append(Sample(dict(labels), float(value)))
        return sorted(families.values(), key=lambda f: f.spec.full_name)

    def snapshot(self) -> dict[str, list[dict]]:
        """:meth:`collect` as plain data: ``{full name: [{"labels": {...}, "value": ..., ...}, ...]}``; a meter
        has ``rate`` (its value) and ``count``, a histogram ``count``, ``sum`` and cumulative ``buckets``."""
        out: dict[str, list[dict]] = {}
        for family in self.collect():
            rows = out.setdefault(family.spec.full_name, [])
            for s in family.samples:
                row: dict = {"labels": s.labels}
                if s.histogram is not None:
                    row.update(count=s.histogram.count, sum=s.histogram.sum, buckets=s.histogram.buckets)
                elif family.spec.kind is Kind.METER:
                    row.update(rate=s.value, count=s.count)
                else:
                    row["value"] = s.value
                rows.append(row)
        return out


def _read(spec: MetricSpec, metric: object) -> Sample | None:
    if spec.kind is Kind.METER:
        return Sample({}, metric.rate(), float(metric.count))
    if spec.kind is Kind.COUNTER:
        return Sample({}, float(metric.count))
    if spec.kind is Kind.HISTOGRAM:
        if isinstance(metric, Histogram):
            return Sample({}, histogram=HistogramValue(metric.cumulative(), metric.sum, metric.count))
        return Sample({}, histogram=metric())
    try:
        value = metric()
    except Exception:  # noqa: BLE001 - a gauge whose object went away (closed tablet) is skipped this time
        return None
    return None if value is None else Sample({}, float(value))
