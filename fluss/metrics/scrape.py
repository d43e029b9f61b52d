"""Reading a Prometheus endpoint back: ``scrape(address)`` parses ``/metrics`` with ``prometheus_client``'s parser
into :class:`Scrape`, a flat list of samples with lookups by name and labels (the dashboard and the tests use it).
"""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families


@dataclass(frozen=True)
class ScrapedSample:
    name: str
    labels: Mapping[str, str]
    value: float


class Scrape:
    """The samples of one scrape, taken at ``at`` (``time.time()``) in ``seconds``."""

    def __init__(self, samples: list[ScrapedSample], at: float, seconds: float) -> None:
        self.samples = samples
        self.at = at
        self.seconds = seconds
        self._by_name: dict[str, list[ScrapedSample]] = {}
        for s in samples:
            self._by_name.setdefault(s.name, []).append(s)

    def series(self, name: str, **labels: str) -> Iterator[ScrapedSample]:
        for s in self._by_name.get(name, ()):
            if all(s.labels.get(k) == v for k, v in labels.items()):
                yield s

    def value(self, name: str, default: float | None = None, **labels: str) -> float | None:
        """The first matching sample's value (``default`` when there is none)."""
        return next((s.value for s in self.series(name, **labels)), default)

    def total(self, name: str, **labels: str) -> float:
        """The sum of every matching sample."""
        return sum(s.value for s in self.series(name, **labels))

    def names(self) -> set[str]:
        return set(self._by_name)


def parse(text: str, at: float | None = None, seconds: float = 0.0) -> Scrape:
    samples = [ScrapedSample(s.name, dict(s.labels), s.value)
               for family in text_string_to_metric_families(text) for s in family.samples]
    return Scrape(samples, time.time() if at is None else at, seconds)


def fetch_text(address: str, timeout_s: float = 5.0) -> str:
    """The body of ``http://<address>/metrics``."""
    url = address if address.startswith("http") else f"http://{address}/metrics"
    with urllib.request.urlopen(url, timeout=timeout_s) as response:  # noqa: S310 - an operator-given endpoint
        return response.read().decode()


def scrape(address: str, timeout_s: float = 5.0) -> Scrape:
    started = time.perf_counter()
    at = time.time()
    text = fetch_text(address, timeout_s)
    return parse(text, at, time.perf_counter() - started)
