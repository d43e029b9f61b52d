"""Peer: Apache Kafka with 3 brokers, for the RF=3 append (``log.append.rf3`` of system ``kafka-java``).

Three KRaft nodes, each broker + controller in one JVM (``controller.quorum.voters`` lists all three), on
loopback ports with their own log directories, formatted with one cluster id. The topic has 3 partitions,
replication factor 3 and ``min.insync.replicas=2``; Kafka's ``ProducerPerformance`` writes 42-byte records with
the same producer settings as the single-node figure (``acks=all``, zstd, ``linger.ms=5``, 1 MiB batches), one
JVM run per round after a warm-up run, measured at its steady state as there (``kafka_peer.steady_append``). With ``acks=all`` the leader answers once every in-sync follower has the
batch, like this project's RF=3 ``acks=all``. Every broker is stopped afterwards by the PID started here.
"""

from __future__ import annotations

import base64
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from bench.data import arrow_bytes_per_row, make_batch
from bench.kafka_peer import (
    PARTITIONS,
    PRODUCER_PROPS,
    START_TIMEOUT_S,
    STEADY_RUN_S,
    TOOL_TIMEOUT_S,
    _java,
    steady_append,
)
from bench.model import FAILED, NOT_RUN, Measurement, Profile, unavailable
from bench.monitor import PeakRss
from bench.setup import ensure_kafka
from fluss.server.zk.local_server import free_port

SYSTEM = "kafka-java"
NODES = 3
JVM_OPTS = ["-Xms256m", "-Xmx768m", "-XX:+UseG1GC", "-Djava.awt.headless=true"]
KEYS = [("log.append.rf3", "rows/s"), ("log.append.rf3.mb", "MB/s")]
TOPIC_CONFIG = "min.insync.replicas=2"


class KafkaCluster:
    """``NODES`` combined broker/controller KRaft nodes in a temporary directory."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="bench-kafka3-"))
        self.ports = [free_port() for _ in range(NODES)]
        self.controller_ports = [free_port() for _ in range(NODES)]
        self.processes: list[subprocess.Popen] = []

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.ports)

    def pids(self) -> dict[str, int]:
        return {f"kafka-broker-{i + 1}": p.pid for i, p in enumerate(self.processes)}

    def _config(self, i: int) -> Path:
        node = self.dir / f"node-{i + 1}"
        node.mkdir()
        voters = ",".join(f"{k + 1}@127.0.0.1:{p}" for k, p in enumerate(self.controller_ports))
        cfg = node / "server.properties"
        cfg.write_text("\n".join([
            "process.roles=broker,controller", f"node.id={i + 1}", f"controller.quorum.voters={voters}",
            f"listeners=PLAINTEXT://127.0.0.1:{self.ports[i]},CONTROLLER://127.0.0.1:{self.controller_ports[i]}",
            f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.ports[i]}",
            "controller.listener.names=CONTROLLER",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            f"log.dirs={node / 'data'}", f"num.partitions={PARTITIONS}",
            "default.replication.factor=3", "min.insync.replicas=2",
            "offsets.topic.replication.factor=3", "transaction.state.log.replication.factor=3",
            "transaction.state.log.min.isr=2", "group.initial.rebalance.delay.ms=0",
        ]) + "\n")
        return cfg

    def __enter__(self) -> KafkaCluster:
        try:
            cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
            configs = [self._config(i) for i in range(NODES)]
            formats = [subprocess.Popen(_java("kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(cfg)),
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                       for cfg in configs]  # in parallel: each is a JVM start
            for fmt in formats:
                text, _ = fmt.communicate(timeout=TOOL_TIMEOUT_S)
                if fmt.returncode != 0:
                    raise RuntimeError(f"kafka storage format failed: {text[-300:]}")
            for cfg in configs:
                with open(cfg.parent / "broker.log", "wb") as log:
                    self.processes.append(subprocess.Popen(_java("kafka.Kafka", str(cfg), heap=JVM_OPTS), stdout=log,
                                                           stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL))
            self._wait_listening()
            return self
        except BaseException:
            self.__exit__(None, None, None)
            raise

    def _wait_listening(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        pending = list(self.ports)
        while pending:
            for i, p in enumerate(self.processes):
                if p.poll() is not None:
                    raise RuntimeError(f"kafka node {i + 1} exited with {p.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", pending[0]), timeout=1):
                    pending.pop(0)
            except OSError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"kafka nodes not listening within {START_TIMEOUT_S}s") from None
                time.sleep(0.2)

    def __exit__(self, *exc: object) -> None:
        """SIGTERM to every node at once (one by one, the last ones would wait for a lost controller quorum),
        then SIGKILL whatever is still running after a grace period."""
        for p in self.processes:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 20
        for p in self.processes:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def create_topic(self, name: str) -> None:
        """RF=3 topic; retried until all brokers have registered with the controller."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            out = subprocess.run(_java("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", self.bootstrap,
                                       "--create", "--topic", name, "--partitions", str(PARTITIONS),
                                       "--replication-factor", str(NODES), "--config", TOPIC_CONFIG),
                                 capture_output=True, text=True, timeout=TOOL_TIMEOUT_S)
            if out.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"creating topic {name} failed: {out.stdout[-300:]} {out.stderr[-300:]}")
            time.sleep(1)


def run(profile: Profile) -> list[Measurement]:
    """Starts the 3 nodes, runs ``ProducerPerformance`` rounds against an RF=3 topic, stops the nodes."""
    t0 = time.monotonic()
    err = ensure_kafka()
    if err:
        return unavailable(SYSTEM, KEYS, NOT_RUN, err)
    n = profile.kafka_rf3_records
    m = Measurement(SYSTEM, "log.append.rf3", "rows/s",
                    note=f"3 KRaft brokers, topic RF=3 {TOPIC_CONFIG}; ProducerPerformance, "
                         + ", ".join(PRODUCER_PROPS) + "; steady state (5-s windows after the first)")
    try:
        with KafkaCluster() as cluster:
            cluster.create_topic("bench")
            print(f"  kafka 3 nodes up: {time.monotonic() - t0:.1f}s", flush=True)
            with PeakRss(cluster.pids()) as rss:  # a first run warms up (leaders, JIT, segments)
                steady_append(m, cluster, n, profile.heavy_rounds, STEADY_RUN_S.get(profile.name, 16.0), rss)
            m.rss_peak_mb = rss.peaks_mb()
    except Exception as e:  # the peer failing must not stop the suite
        return unavailable(SYSTEM, KEYS, FAILED, f"{type(e).__name__}: {e}")
    finally:
        print(f"  kafka rf3: {time.monotonic() - t0:.1f}s", flush=True)
    mb_per_row = arrow_bytes_per_row(make_batch(1000)) / 1e6
    mb = Measurement(SYSTEM, "log.append.rf3.mb", "MB/s", [v * mb_per_row for v in m.rounds],
                     note="rows/s x the same rows' Arrow bytes", rss_peak_mb=m.rss_peak_mb)
    return [m, mb]
