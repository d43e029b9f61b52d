"""The Kafka peer's steady-state producer figure (``bench.kafka_peer``): the 5-s windows ProducerPerformance prints
are read back, the first one (JVM warm-up) is left out, and the counted runs are sized from a first run."""

from __future__ import annotations

import pytest

from bench import kafka_peer
from bench.model import Measurement

# ProducerPerformance's output (Kafka 4.1): a line per 5-s window, then the whole run's line with percentiles
OUTPUT = """\
500000 records sent, 99960.0 records/sec (4.20 MB/sec), 150.2 ms avg latency, 900.0 ms max latency.
2500000 records sent, 500000.0 records/sec (21.00 MB/sec), 20.1 ms avg latency, 80.0 ms max latency.
2000000 records sent, 400000.0 records/sec (16.80 MB/sec), 25.3 ms avg latency, 95.0 ms max latency.
6000000 records sent, 352941.2 records/sec (14.82 MB/sec), 45.10 ms avg latency, 900.00 ms max latency, 20 ms 50th, \
150 ms 95th, 700 ms 99th, 890 ms 99.9th.
"""


class _Broker:
    bootstrap = "127.0.0.1:1"


def test_the_steady_rate_leaves_out_the_first_window(monkeypatch):
    monkeypatch.setattr(kafka_peer, "_tool", lambda cmd, rss, name: OUTPUT)
    whole, steady = kafka_peer._produce(_Broker(), 6_000_000, rss=None)
    assert whole == pytest.approx(352941.2)
    assert steady == pytest.approx(4_500_000 / (2_500_000 / 500_000 + 2_000_000 / 400_000))  # 450k, not 353k


def test_a_run_too_short_for_a_second_window_has_no_steady_rate(monkeypatch):
    short = OUTPUT.splitlines()[0] + "\n" + "500000 records sent, 90000.0 records/sec (3.78 MB/sec), 150.00 ms avg " \
        "latency, 900.00 ms max latency, 20 ms 50th, 150 ms 95th, 700 ms 99th, 890 ms 99.9th.\n"
    monkeypatch.setattr(kafka_peer, "_tool", lambda cmd, rss, name: short)
    assert kafka_peer._produce(_Broker(), 500_000, rss=None) == (pytest.approx(90000.0), None)


def test_counted_runs_are_sized_from_the_first_run(monkeypatch):
    runs: list[int] = []

    def produce(target, records, rss):
        runs.append(records)
        return (100_000.0, None) if len(runs) == 1 else (300_000.0, 400_000.0)

    monkeypatch.setattr(kafka_peer, "_produce", produce)
    m = Measurement("kafka-java", "log.append", "rows/s", note="x")
    total = kafka_peer.steady_append(m, _Broker(), 50_000, 3, 16.0, rss=None)
    assert runs == [50_000, 1_600_000, 1_600_000, 1_600_000]  # 16 s at the first run's 100k records/s
    assert m.rounds == [400_000.0] * 3 and total == 50_000 + 3 * 1_600_000
    assert "whole-run rate 300k-300k" in m.note
