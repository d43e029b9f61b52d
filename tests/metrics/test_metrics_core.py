"""The metric types, the registry and the Prometheus exposition, without a cluster."""

from __future__ import annotations

import socket
import time

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from fluss.errors import FlussError
from fluss.metrics import catalog as c
from fluss.metrics.catalog import Kind, MetricSpec
from fluss.metrics.core import Histogram, MetricRegistry, RateWindow
from fluss.metrics.prometheus import PrometheusReporter, RegistryCollector, parse_port_range
from fluss.metrics.reporters import create_reporters, reporter_names
from fluss.metrics.scrape import parse, scrape


def test_meter_rate_summed_per_tick_is_the_count():
    window = RateWindow(5.0, tick_s=1.0, now=0.0)
    count, integral = 0, 0.0
    for second in range(1, 61):  # uneven traffic for 20 s, then nothing; one tick a second
        if second <= 20:
            count += 1000 + 300 * (second % 4)
        window.tick(count, float(second))
        integral += window.rate() * 1.0
    assert integral == pytest.approx(count)


def test_meter_rate_is_the_recent_rate_and_never_spikes_at_start():
    window = RateWindow(10.0, tick_s=1.0, now=0.0)
    window.tick(50, 0.001)
    assert window.rate() == pytest.approx(5.0)  # 50 events in the first ms: 50 / window, no spike
    for t in range(1, 31):
        window.tick(100 * t, float(t))
    assert window.rate() == pytest.approx(100.0)  # steady 100/s
    for t in range(31, 45):
        window.tick(3000, float(t))
    assert window.rate() == 0.0  # nothing for longer than the window


def test_meters_are_ticked_by_the_registry_and_reads_change_nothing():
    r = MetricRegistry(meter_window_s=1.0, tick_s=0.05)
    meter = r.meter(c.T_MESSAGES_IN, database="d", table="t")
    meter.mark(7)
    meter.count += 3
    deadline = time.monotonic() + 5
    while meter.rate() == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert meter.count == 10 and meter.rate() > 0
    assert meter.rate() == meter.rate()  # reading does not sample
    r.close()


def test_histogram_buckets_sum_count_and_quantile():
    h = Histogram((1, 10, 100))
    for v in (0.5, 5, 5, 50, 500):
        h.update(v)
    assert h.cumulative() == [(1, 1), (10, 3), (100, 4), (float("inf"), 5)]
    assert h.count == 5 and h.sum == pytest.approx(560.5) and h.max == 500
    assert h.quantile(0.5) == 10
    assert h.quantile(0.99) == 500


def test_registry_checks_types_and_labels():
    r = MetricRegistry()
    with pytest.raises(ValueError, match="takes labels"):
        r.meter(c.T_MESSAGES_IN, database="d")
    with pytest.raises(ValueError, match="is a Meter"):
        r.counter(c.T_MESSAGES_IN, database="d", table="t")
    assert r.meter(c.T_MESSAGES_IN, database="d", table="t") is r.meter(c.T_MESSAGES_IN, database="d", table="t")


def test_registry_snapshot_sources_and_removal():
    r = MetricRegistry(meter_window_s=1.0)
    r.meter(c.T_MESSAGES_IN, database="d", table="t").mark(5)
    r.meter(c.T_MESSAGES_IN, database="d", table="u").mark(1)
    r.histogram(c.KV_FLUSH_LATENCY).update(3)
    r.gauge(c.LEADER_COUNT, lambda: 4)
    r.add_source(lambda: [(c.B_END_OFFSET, {"database": "d", "table": "t", "partition": "", "bucket": "0"}, 42)])
    snap = r.snapshot()
    rows = {row["labels"]["table"]: row for row in snap["fluss_tabletserver_table_messagesInPerSecond"]}
    assert rows["t"]["count"] == 5 and rows["u"]["count"] == 1
    assert snap["fluss_tabletserver_leaderCount"] == [{"labels": {}, "value": 4.0}]
    assert snap["fluss_tabletserver_table_bucket_log_endOffset"][0]["value"] == 42.0
    assert snap["fluss_tabletserver_kvFlushLatencyMs"][0]["count"] == 1
    assert r.remove(lambda labels: labels.get("table") == "u") == 1
    assert len(r.snapshot()["fluss_tabletserver_table_messagesInPerSecond"]) == 1


def test_a_failing_gauge_is_skipped_not_fatal():
    r = MetricRegistry()
    r.gauge(c.LEADER_COUNT, lambda: 1 / 0)
    r.gauge(c.REPLICA_COUNT, lambda: 2)
    snap = r.snapshot()
    assert snap["fluss_tabletserver_leaderCount"] == []
    assert snap["fluss_tabletserver_replicaCount"][0]["value"] == 2


def test_prometheus_exposition_uses_fluss_names_and_types():
    r = MetricRegistry(meter_window_s=1.0)
    r.meter(c.T_MESSAGES_IN, database="db", table="t").mark(12)
    r.close()
    r.histogram(c.KV_FLUSH_LATENCY).update(3.0)
    r.counter(c.ZK_SESSION_LOSSES["tabletserver"]).inc()
    registry = CollectorRegistry()
    registry.register(RegistryCollector(r, {"server_id": "7", "host": "h"}))
    text = generate_latest(registry).decode()
    assert "# TYPE fluss_tabletserver_table_messagesInPerSecond gauge" in text
    assert "# TYPE fluss_tabletserver_table_messagesIn_total counter" in text
    assert "# TYPE fluss_tabletserver_kvFlushLatencyMs histogram" in text
    got = parse(text)
    assert got.value("fluss_tabletserver_table_messagesIn_total", database="db", table="t", server_id="7") == 12
    assert got.value("fluss_tabletserver_kvFlushLatencyMs_bucket", le="5.0") == 1
    assert got.value("fluss_tabletserver_zookeeper_sessionLosses_total") == 1


def test_every_spec_has_a_unique_name_and_a_meaning():
    names = [s.full_name for s in c.ALL]
    assert len(names) == len(set(names))
    assert all(s.description.endswith(".") or s.description.endswith(")") for s in c.ALL)
    meters = [s for s in c.ALL if s.kind is Kind.METER]
    assert all(s.name.endswith("PerSecond") for s in meters)
    assert MetricSpec("x", "aPerSecond", Kind.METER, "").counter_name == "fluss_x_a"


def test_port_ranges():
    assert parse_port_range("9249") == range(9249, 9250)
    assert parse_port_range(" 9250-9260 ") == range(9250, 9261)
    for bad in ("abc", "9260-9250", "70000", "1-"):
        with pytest.raises(FlussError, match="metrics.reporter.prometheus.port"):
            parse_port_range(bad)


def test_reporter_takes_the_first_free_port_of_its_range():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        ports = range(busy, busy + 20)
        r = MetricRegistry()
        r.gauge(c.LEADER_COUNT, lambda: 3)
        reporter = PrometheusReporter(r, {"server_id": "1", "host": "127.0.0.1"}, ports, "127.0.0.1")
        try:
            port = reporter.start()
            assert port != busy and port in ports
            got = scrape(f"127.0.0.1:{port}")
            assert got.value("fluss_tabletserver_leaderCount", server_id="1") == 3
            assert got.value("process_cpu_seconds_total") is not None  # the process collectors are there too
        finally:
            reporter.close()
        full = PrometheusReporter(r, {}, range(busy, busy + 1), "127.0.0.1")
        with pytest.raises(FlussError, match=f"no free port in {busy}"):
            full.start()


def test_reporters_by_name():
    assert reporter_names("prometheus") == ["prometheus"]
    assert reporter_names(None) == []
    with pytest.raises(FlussError, match="Unknown metric reporter 'jmx'.*JVM"):
        reporter_names("prometheus, jmx")
    assert create_reporters({}, MetricRegistry(), {}, "127.0.0.1") == []


def test_server_config_check_refuses_bad_metric_options_before_start():
    from fluss.server.config import ServerConfig

    base = {"zookeeper.address": "127.0.0.1:2181", "bind.listeners": "FLUSS://127.0.0.1:9123"}
    assert ServerConfig({**base, "metrics.reporters": "prometheus",
                         "metrics.reporter.prometheus.port": "9250-9260"}).check() == []
    with pytest.raises(FlussError, match="Unknown metric reporter 'jmx'"):
        ServerConfig({**base, "metrics.reporters": "jmx"}).check()
    with pytest.raises(FlussError, match="metrics.reporter.prometheus.port"):
        ServerConfig({**base, "metrics.reporter.prometheus.port": "9300-9200"}).check()


def test_metrics_doc_is_current():
    from fluss.metrics.docs import main

    assert main(["--check"]) == 0, "docs/metrics.md is stale: run `python -m fluss.metrics.docs`"
