"""One scale curve: x values (the work: buckets, clients, tables, keys) and one or more series measured at each."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field


@dataclass
class Series:
    unit: str
    values: list[float | None] = field(default_factory=list)   # one per x (None: not measured at that x)
    rounds: list[list[float]] = field(default_factory=list)    # the counted rounds behind each value

    def add(self, rounds: list[float]) -> None:
        """The median of ``rounds`` as the next value (None when there are none)."""
        self.rounds.append([float(r) for r in rounds])
        self.values.append(float(statistics.median(rounds)) if rounds else None)


@dataclass
class Curve:
    name: str
    title: str
    x_label: str
    x: list[float] = field(default_factory=list)
    series: dict[str, Series] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    status: str = "ok"

    def series_of(self, name: str, unit: str) -> Series:
        return self.series.setdefault(name, Series(unit))

    def to_json(self) -> dict:
        return {"title": self.title, "x_label": self.x_label, "x": self.x, "status": self.status,
                "notes": self.notes,
                "series": {n: {"unit": s.unit, "values": s.values, "rounds": s.rounds} for n, s in self.series.items()}}


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (0-100) by linear interpolation between the closest ranks."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    k = (len(ordered) - 1) * q / 100
    lo = int(k)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)
