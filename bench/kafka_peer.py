"""Peer: Apache Kafka 4.x, one broker in KRaft mode (broker + controller in one JVM) on loopback ports.

The jars come from Maven Central (``peers/kafka-pom.xml`` → ``bench/.peers/kafka/lib``); figures are measured with
Kafka's own Java tools, i.e. the peer at its best:
- ``log.append``: ``org.apache.kafka.tools.ProducerPerformance``, records of 42 bytes (the rows' value bytes),
  ``acks=all``, ``compression.type=zstd``, ``linger.ms=5``, ``batch.size=1MiB``; one JVM run per round, at its
  **steady state**: the tool prints its rate every 5 s, and the figure is the rate of the windows after the first
  (the first holds the JVM's start, class loading, JIT and the first metadata round trips). A run of
  ``kafka_records`` records (not counted) estimates the rate; each counted run then gets enough records for
  ``STEADY_RUN_S`` seconds (at least two windows after the first). rows/s; the note gives the whole-run rate too.
- ``log.scan.full``: ``ConsumerPerformance`` over the topic (at most ``SCAN_RECORDS_FACTOR`` x ``kafka_records``
  records), its ``fetch.nMsg.sec`` (fetch time only, without the consumer-group join). Kafka has no column
  projection, so the projected scan is compared with this one.
- ``log.latency.p50/p99``: ``EndToEndLatency``: one message in flight at a time (send, wait until consumed, next),
  not a 10k rows/s stream; printed with that caveat. The tool's percentiles are whole milliseconds, truncated: on a
  fast machine its p50 reads 0 (under 1 ms), and no ratio is printed against it.
The same broker is then driven from Python with confluent-kafka (``bench.kafka_python``, system ``kafka-python``):
the Python user's view. There is one broker, so RF=3 is not measured for Kafka.
"""

from __future__ import annotations

import base64
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from bench import kafka_python
from bench.data import LOGICAL_ROW_BYTES, arrow_bytes_per_row, make_batch
from bench.model import FAILED, NOT_RUN, Measurement, Profile, unavailable
from bench.monitor import PeakRss
from bench.setup import KAFKA_LIB, ensure_kafka
from fluss.server.zk.local_server import free_port

PARTITIONS = 3
TOOL_TIMEOUT_S = 180.0
START_TIMEOUT_S = 60.0
LATENCY_MESSAGES = {"quick": 500, "full": 2000}
STEADY_RUN_S = {"quick": 16.0, "full": 26.0}  # a counted producer run: 3 (5) windows of 5 s, the first not counted
SCAN_RECORDS_FACTOR = 10
_WINDOW = re.compile(r"^(\d+) records sent, ([\d.]+) records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg latency, "
                     r"[\d.]+ ms max latency\.$", re.M)
PRODUCER_PROPS = ["acks=all", "compression.type=zstd", "linger.ms=5", "batch.size=1048576"]
KEYS = [("log.append", "rows/s"), ("log.append.mb", "MB/s"), ("log.scan.full", "rows/s"),
        ("log.latency.p50", "ms"), ("log.latency.p99", "ms")]
JVM_OPTS = ["-Xms512m", "-Xmx1g", "-XX:+UseG1GC", "-Djava.awt.headless=true"]


def _java(main: str, *args: str, heap: list[str] | None = None) -> list[str]:
    return ["java", *(heap or ["-Xmx512m"]), "-cp", f"{KAFKA_LIB}/*", main, *args]


class KafkaBroker:
    """A single KRaft node in a temporary directory, formatted, started and stopped by this object."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="bench-kafka-"))
        self.port = free_port()
        self.controller_port = free_port()
        self.process: subprocess.Popen | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def _write_config(self) -> Path:
        cfg = self.dir / "server.properties"
        cfg.write_text("\n".join([
            "process.roles=broker,controller", "node.id=1",
            f"controller.quorum.voters=1@127.0.0.1:{self.controller_port}",
            f"listeners=PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names=CONTROLLER",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            f"log.dirs={self.dir / 'data'}", f"num.partitions={PARTITIONS}",
            "offsets.topic.replication.factor=1", "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1", "group.initial.rebalance.delay.ms=0",
        ]) + "\n")
        return cfg

    def __enter__(self) -> KafkaBroker:
        cfg = self._write_config()
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        fmt = subprocess.run(_java("kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(cfg)),
                             capture_output=True, text=True, timeout=TOOL_TIMEOUT_S)
        if fmt.returncode != 0:
            raise RuntimeError(f"kafka storage format failed: {fmt.stdout[-300:]} {fmt.stderr[-300:]}")
        with open(self.dir / "broker.log", "wb") as log:
            self.process = subprocess.Popen(_java("kafka.Kafka", str(cfg), heap=JVM_OPTS), stdout=log,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"kafka broker exited with {self.process.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                time.sleep(0.2)
        self.__exit__(None, None, None)
        raise TimeoutError(f"kafka broker not listening on {self.port} within {START_TIMEOUT_S}s")

    def __exit__(self, *exc: object) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def create_topic(self, name: str, partitions: int) -> None:
        out = subprocess.run(_java("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", self.bootstrap,
                                   "--create", "--topic", name, "--partitions", str(partitions),
                                   "--replication-factor", "1"),
                             capture_output=True, text=True, timeout=TOOL_TIMEOUT_S)
        if out.returncode != 0:
            raise RuntimeError(f"creating topic {name} failed: {out.stdout[-300:]} {out.stderr[-300:]}")


def _tool(cmd: list[str], rss: PeakRss, name: str) -> str:
    """Runs a Kafka tool with its process watched by ``rss``; returns its stdout (raises on failure)."""
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)
        rss.add(name, proc.pid)
        try:
            rc = proc.wait(TOOL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise
        out.seek(0)
        text = out.read()
    if rc != 0:
        raise RuntimeError(f"{cmd[5] if len(cmd) > 5 else cmd[0]} exited {rc}: {text[-300:]}")
    return text


def _produce(broker: KafkaBroker, records: int, rss: PeakRss) -> tuple[float, float | None]:
    """One ProducerPerformance run: (the whole run's records/s, the steady rate of its 5-s windows after the first,
    or None when the run printed fewer than two windows)."""
    text = _tool(_java("org.apache.kafka.tools.ProducerPerformance", "--topic", "bench",
                       "--num-records", str(records), "--record-size", str(LOGICAL_ROW_BYTES),
                       "--throughput", "-1", "--producer-props", f"bootstrap.servers={broker.bootstrap}",
                       *PRODUCER_PROPS), rss, "kafka-producer-perf")
    found = re.findall(rf"^{records} records sent, ([\d.]+) records/sec .*50th", text, re.M)
    if not found:
        raise RuntimeError(f"unexpected ProducerPerformance output: {text[-300:]}")
    windows = [(int(n), float(rate)) for n, rate in _WINDOW.findall(text)][1:]  # the first one warms the JVM up
    steady = sum(n for n, _ in windows) / sum(n / rate for n, rate in windows) if windows else None
    return float(found[-1]), steady


def steady_append(m: Measurement, target, first_records: int, rounds: int, run_s: float, rss: PeakRss) -> int:
    """Appends ``rounds`` steady-state rates to ``m.rounds`` (see the module docstring): a first run of
    ``first_records`` (not counted) estimates the rate, each counted run gets records for ``run_s`` seconds.
    ``target`` has ``bootstrap``. Returns the records written in all."""
    estimate, _ = _produce(target, first_records, rss)
    per_run = max(first_records, int(estimate * run_s))
    whole: list[float] = []
    for _ in range(rounds):
        rate, steady = _produce(target, per_run, rss)
        whole.append(rate)
        m.rounds.append(rate if steady is None else steady)  # None: faster than planned, under two windows
    m.note += (f"; {per_run} records per run, whole-run rate {min(whole) / 1e3:.0f}k-{max(whole) / 1e3:.0f}k "
               f"records/s (first run of {first_records}: {estimate / 1e3:.0f}k)")
    return first_records + rounds * per_run


def _consume(broker: KafkaBroker, messages: int, rss: PeakRss) -> float:
    text = _tool(_java("org.apache.kafka.tools.ConsumerPerformance", "--bootstrap-server", broker.bootstrap,
                       "--topic", "bench", "--messages", str(messages), "--timeout", "60000"),
                 rss, "kafka-consumer-perf")
    lines = [ln for ln in text.splitlines() if ln.count(",") >= 9 and not ln.startswith("SLF4J")]
    header = next(i for i, ln in enumerate(lines) if "fetch.nMsg.sec" in ln)
    names = [c.strip() for c in lines[header].split(",")]
    values = [c.strip() for c in lines[header + 1].split(",")]
    row = dict(zip(names, values, strict=False))
    if int(float(row["data.consumed.in.nMsg"])) < messages:
        raise RuntimeError(f"ConsumerPerformance read {row['data.consumed.in.nMsg']} of {messages}")
    return float(row["fetch.nMsg.sec"])


def _latency(broker: KafkaBroker, messages: int, rss: PeakRss) -> tuple[float, float]:
    text = _tool(_java("org.apache.kafka.tools.EndToEndLatency", broker.bootstrap, "latency", str(messages), "all",
                       str(LOGICAL_ROW_BYTES)), rss, "kafka-end-to-end-latency")
    m = re.search(r"50th = ([\d.]+), 99th = ([\d.]+)", text)
    if not m:
        raise RuntimeError(f"unexpected EndToEndLatency output: {text[-300:]}")
    return float(m.group(1)), float(m.group(2))


def _measure(broker: KafkaBroker, profile: Profile) -> list[Measurement]:
    broker.create_topic("bench", PARTITIONS)
    broker.create_topic("latency", 1)
    n = profile.kafka_records
    mb_per_row = arrow_bytes_per_row(make_batch(1000)) / 1e6
    produce = Measurement("kafka-java", "log.append", "rows/s",
                          note="ProducerPerformance, " + ", ".join(PRODUCER_PROPS) + "; steady state (5-s windows "
                               "after the first)")
    scan = Measurement("kafka-java", "log.scan.full", "rows/s", note="ConsumerPerformance fetch.nMsg.sec")
    p50 = Measurement("kafka-java", "log.latency.p50", "ms", better="lower",
                      note="EndToEndLatency: one message in flight, not a steady 10k rows/s; the tool prints "
                           "whole milliseconds, truncated (0 = under 1 ms)")
    p99 = Measurement("kafka-java", "log.latency.p99", "ms", better="lower", note=p50.note)
    pids = {"kafka-broker": broker.pid}
    with PeakRss(pids) as rss:
        total = steady_append(produce, broker, n, profile.rounds, STEADY_RUN_S.get(profile.name, 16.0), rss)
    produce.rss_peak_mb = rss.peaks_mb()
    scan_records = min(total, SCAN_RECORDS_FACTOR * n)
    with PeakRss(pids) as rss:
        for _ in range(profile.rounds):  # the producer runs warmed the broker: no warm-up round
            scan.rounds.append(_consume(broker, scan_records, rss))
    scan.rss_peak_mb = rss.peaks_mb()
    scan.note += f", {scan_records} records per scan"
    with PeakRss(pids) as rss:
        for _ in range(profile.rounds):
            a, b = _latency(broker, LATENCY_MESSAGES.get(profile.name, 500), rss)
            p50.rounds.append(a)
            p99.rounds.append(b)
    p50.rss_peak_mb = p99.rss_peak_mb = rss.peaks_mb()
    mb = Measurement("kafka-java", "log.append.mb", "MB/s", [v * mb_per_row for v in produce.rounds],
                     note="rows/s x the same rows' Arrow bytes", rss_peak_mb=produce.rss_peak_mb)
    return [produce, mb, scan, p50, p99]


def _python_client(broker: KafkaBroker, profile: Profile) -> list[Measurement]:
    """The same broker through confluent-kafka (see ``bench.kafka_python``), or why not."""
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        return unavailable(kafka_python.SYSTEM, KEYS, NOT_RUN, "confluent-kafka is not installed (requirements.lock)")
    out: list[Measurement] = []
    pids = {"kafka-broker": broker.pid}
    for name, step in (("throughput", kafka_python.measure_throughput), ("latency", kafka_python.measure_latency)):
        try:
            out += step(broker.bootstrap, broker.create_topic, profile, pids)
        except Exception as e:  # one broken scenario must not hide the others
            out.append(Measurement(kafka_python.SYSTEM, f"log.{name}", "", status=FAILED,
                                   note=f"{type(e).__name__}: {e}"))
    return out


def run(profile: Profile) -> list[Measurement]:
    """Resolves Kafka if needed, starts one KRaft node, runs the log scenarios with Kafka's tools and with
    confluent-kafka, stops it."""
    t0 = time.monotonic()
    err = ensure_kafka()
    if err:
        return unavailable("kafka-java", KEYS, NOT_RUN, err) + unavailable(kafka_python.SYSTEM, KEYS, NOT_RUN, err)
    try:
        with KafkaBroker() as broker:
            out = _measure(broker, profile)
            print(f"  kafka java tools: {time.monotonic() - t0:.1f}s", flush=True)
            out += _python_client(broker, profile)
    except Exception as e:  # the peer failing must not stop the suite
        return unavailable("kafka-java", KEYS, FAILED, f"{type(e).__name__}: {e}")
    finally:
        print(f"  kafka: {time.monotonic() - t0:.1f}s", flush=True)
    return out
