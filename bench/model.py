"""What a benchmark family hands back: one ``Measurement`` per (system, figure), rounds included.

A measurement is either ``ok`` with its per-round values, or carries a status saying why there is no figure
(``not available``: the feature has not landed; ``not run``: the peer could not be started; ``failed``: it broke).
``Profile`` holds the sizes of a run (quick or full), so every family scales the same way.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

OK = "ok"
NOT_AVAILABLE = "not available"
NOT_RUN = "not run"
FAILED = "failed"


@dataclass(frozen=True)
class Profile:
    """Sizes of one run; ``quick`` keeps ``make bench`` to a few minutes on 2 cores."""

    name: str
    rounds: int
    rows_per_round: int        # rows written per append round (this project, raw limits)
    peer_rows_per_round: int   # rows per round through the Redis per-entry pipeline
    kafka_records: int         # records per Kafka perf-tool run
    latency_rate: int          # rows/s of the steady producer
    latency_round_s: float     # length of one latency round
    kv_rows: int               # rows for the rocksdict raw limits
    heavy_rounds: int          # counted rounds of the slow scenarios (KV recovery, tiering, Flink jobs)
    recovery_rows: int         # rows in the primary-key bucket rebuilt from its changelog (and moved by reassignment)
    restart_rows: int          # rows in the primary-key bucket of the restart and snapshot-recovery scenarios
    kafka_rf3_records: int     # records per perf-tool run against the 3-broker Kafka cluster
    tiering_rows: int          # rows tiered per tiering round
    freshness_s: float         # length of the freshness window under a steady write load
    flink_rows: int            # rows of the bounded datagen source of the Flink SQL jobs


QUICK = Profile("quick", rounds=3, rows_per_round=250_000, peer_rows_per_round=30_000, kafka_records=300_000,
                latency_rate=10_000, latency_round_s=3.0, kv_rows=200_000, heavy_rounds=2, recovery_rows=200_000,
                restart_rows=1_000_000, kafka_rf3_records=75_000, tiering_rows=200_000, freshness_s=20.0,
                flink_rows=500_000)
FULL = Profile("full", rounds=5, rows_per_round=1_000_000, peer_rows_per_round=150_000, kafka_records=1_500_000,
               latency_rate=10_000, latency_round_s=10.0, kv_rows=1_000_000, heavy_rounds=3, recovery_rows=1_000_000,
               restart_rows=1_000_000, kafka_rf3_records=500_000, tiering_rows=1_000_000, freshness_s=60.0,
               flink_rows=2_000_000)


@dataclass
class Measurement:
    """One figure of one system, measured over several rounds (after a warm-up that is not counted)."""

    system: str                      # "fluss", "raw", "redis", "kafka-java"
    key: str                         # what was measured, e.g. "log.append.rf1"
    unit: str                        # "rows/s", "MB/s", "ms", "ops/s"
    rounds: list[float] = field(default_factory=list)
    status: str = OK
    note: str = ""
    rss_peak_mb: dict[str, float] = field(default_factory=dict)
    better: str = "higher"           # "higher" for throughput, "lower" for latency

    @property
    def median(self) -> float | None:
        return statistics.median(self.rounds) if self.status == OK and self.rounds else None

    def spread(self) -> dict[str, float] | None:
        if self.status != OK or not self.rounds:
            return None
        qs = statistics.quantiles(self.rounds, n=4, method="inclusive") if len(self.rounds) > 1 else self.rounds * 3
        return {"min": min(self.rounds), "max": max(self.rounds), "q1": qs[0], "q3": qs[2]}

    def to_json(self) -> dict:
        return {"system": self.system, "key": self.key, "unit": self.unit, "status": self.status,
                "median": self.median, "spread": self.spread(), "rounds": self.rounds, "note": self.note,
                "rss_peak_mb": self.rss_peak_mb, "better": self.better}

    @classmethod
    def from_json(cls, d: dict) -> Measurement:
        """The inverse of ``to_json`` (measurements made in another process, e.g. the pyfluss venv)."""
        return cls(d["system"], d["key"], d["unit"], list(d["rounds"]), d["status"], d["note"],
                   dict(d["rss_peak_mb"]), d.get("better", "higher"))


def unavailable(system: str, keys: list[tuple[str, str]], status: str, note: str) -> list[Measurement]:
    """Placeholders for figures a system could not give (``keys`` are (key, unit) pairs)."""
    return [Measurement(system, k, u, status=status, note=note) for k, u in keys]

