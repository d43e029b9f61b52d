"""Peer: Apache Fluss itself (the Java project this one re-implements), driven by its official Python client.

Apache Fluss's server is resolved from Maven Central (``org.apache.fluss:fluss-server``, a shaded jar) and its
Python client ``pyfluss`` from PyPI into its own venv (see ``bench.setup``). ``ApacheFlussCluster`` starts the same
shape as this project's benchmark cluster: a ZooKeeper (the same Debian one, via ``LocalZooKeeper``), one
coordinator and 3 tablet servers as JVMs on loopback ports. ``bench.upstream_client`` then runs the very same
scenario code (``bench.fluss_log.run_scenarios``) inside the pyfluss venv, so both systems get identical calls.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.model import FAILED, NOT_RUN, Measurement, Profile, unavailable
from bench.setup import APACHE_FLUSS_LIB, BENCH_DIR, PYFLUSS_REQUIREMENT, PYFLUSS_VENV, ensure_apache_fluss
from bench.upstream_client import RESULT_MARK
from fluss.server.zk.local_server import LocalZooKeeper, free_port

SYSTEM = "apache-fluss"
TABLET_SERVERS = 3
START_TIMEOUT_S = 90.0
REGISTER_GRACE_S = 3.0   # after the ports listen, time for the tablet servers to register in ZooKeeper
CLIENT_TIMEOUT_S = 600.0
JVM_OPTS = [
    "-Xms256m", "-Xmx1g", "-XX:+UseG1GC", "-XX:+IgnoreUnrecognizedVMOptions",
    "--add-opens=java.base/java.nio=ALL-UNNAMED", "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED", "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED", "-Dio.netty.tryReflectionSetAccessible=true",
]
KEYS = [("log.append.rf1", "rows/s"), ("log.append.rf3", "rows/s"), ("log.scan.full", "rows/s"),
        ("log.scan.projected", "rows/s"), ("log.latency.p50", "ms"), ("log.latency.p99", "ms")]
COORDINATOR_MAIN = "org.apache.fluss.server.coordinator.CoordinatorServer"
TABLET_MAIN = "org.apache.fluss.server.tablet.TabletServer"


class ApacheFlussCluster:
    """ZooKeeper + 1 coordinator + ``tablet_servers`` tablet servers of Apache Fluss, in a temporary directory."""

    def __init__(self, tablet_servers: int = TABLET_SERVERS) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="bench-apache-fluss-"))
        self.tablet_servers = tablet_servers
        self.zookeeper: LocalZooKeeper | None = None
        self.procs: dict[str, subprocess.Popen] = {}
        self.ports: dict[str, int] = {}

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.ports['coordinator']}"

    def pids(self) -> dict[str, int]:
        out = {name: p.pid for name, p in self.procs.items()}
        if self.zookeeper is not None and self.zookeeper.process is not None:
            out["zookeeper"] = self.zookeeper.process.pid
        return out

    def _spawn(self, name: str, main: str, config: dict[str, str]) -> None:
        conf_dir = self.dir / name
        conf_dir.mkdir(parents=True)
        (conf_dir / "server.yaml").write_text("".join(f"{k}: {v}\n" for k, v in config.items()))
        with open(self.dir / f"{name}.log", "wb") as log:
            self.procs[name] = subprocess.Popen(
                ["java", *JVM_OPTS, "-cp", f"{APACHE_FLUSS_LIB}/*", main, "--configDir", str(conf_dir)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def __enter__(self) -> ApacheFlussCluster:
        try:
            self.zookeeper = LocalZooKeeper(self.dir / "zookeeper")
            self.zookeeper.start()
            base = {"zookeeper.address": self.zookeeper.address, "remote.data.dir": str(self.dir / "remote")}
            self.ports["coordinator"] = free_port()
            self._spawn("coordinator", COORDINATOR_MAIN,
                        {**base, "bind.listeners": f"FLUSS://127.0.0.1:{self.ports['coordinator']}"})
            for sid in range(self.tablet_servers):
                name = f"tablet-server-{sid}"
                self.ports[name] = free_port()
                self._spawn(name, TABLET_MAIN, {
                    **base, "bind.listeners": f"FLUSS://127.0.0.1:{self.ports[name]}",
                    "tablet-server.id": str(sid), "data.dir": str(self.dir / name / "data")})
            self._wait_listening()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _wait_listening(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        pending = set(self.ports)
        while pending and time.monotonic() < deadline:
            for name in list(pending):
                if self.procs[name].poll() is not None:
                    raise RuntimeError(f"Apache Fluss {name} exited with {self.procs[name].returncode}")
                try:
                    with socket.create_connection(("127.0.0.1", self.ports[name]), timeout=1):
                        pending.discard(name)
                except OSError:
                    pass
            time.sleep(0.2)
        if pending:
            raise TimeoutError(f"Apache Fluss {sorted(pending)} not listening within {START_TIMEOUT_S}s")
        time.sleep(REGISTER_GRACE_S)

    def __exit__(self, *exc: object) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs.values():
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if self.zookeeper is not None:
            self.zookeeper.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def _run_client(cluster: ApacheFlussCluster, profile: Profile) -> list[Measurement]:
    """Runs ``bench.upstream_client`` in the pyfluss venv, where ``import fluss`` is the official client."""
    with tempfile.TemporaryDirectory(prefix="bench-pyfluss-path-") as path_dir:
        os.symlink(BENCH_DIR, Path(path_dir) / "bench")  # only ``bench`` on the path, not this project's ``fluss``
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env["PYTHONPATH"] = path_dir
        proc = subprocess.run(
            [str(PYFLUSS_VENV / "bin" / "python"), "-P", "-m", "bench.upstream_client",
             "--bootstrap", cluster.bootstrap, "--profile", profile.name, "--pids", json.dumps(cluster.pids())],
            cwd=path_dir, env=env, capture_output=True, text=True, timeout=CLIENT_TIMEOUT_S)
    for line in proc.stdout.splitlines():
        if line.startswith(RESULT_MARK):
            return [Measurement.from_json(d) for d in json.loads(line[len(RESULT_MARK):])]
        print(line, flush=True)
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    raise RuntimeError(f"pyfluss client exited {proc.returncode} without results: {tail[:300]}")


def run(profile: Profile) -> tuple[dict[str, str], list[Measurement]]:
    """Resolves, starts and measures Apache Fluss; returns what resolved and the measurements (or why none)."""
    t0 = time.monotonic()
    err = ensure_apache_fluss()
    jars = sorted(APACHE_FLUSS_LIB.glob("fluss-server-*.jar")) if APACHE_FLUSS_LIB.is_dir() else []
    resolved = {"server": jars[-1].name if jars else "does not resolve", "client": PYFLUSS_REQUIREMENT,
                "python": sys.version.split()[0]}
    if err:
        return resolved, unavailable(SYSTEM, KEYS, NOT_RUN, f"Apache Fluss peer not run: {err}")
    try:
        with ApacheFlussCluster() as cluster:
            out = _run_client(cluster, profile)
    except Exception as e:  # the peer failing must not stop the suite
        out = unavailable(SYSTEM, KEYS, FAILED, f"{type(e).__name__}: {e}")
    print(f"  apache-fluss: {time.monotonic() - t0:.1f}s", flush=True)
    return resolved, out
