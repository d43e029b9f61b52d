"""Starts a real ZooKeeper server process from Debian's ``zookeeper`` package for local clusters and tests.

Loopback only, admin server off, its own data directory. ``LocalZooKeeper.start()`` returns once the server
answers ``ruok``/a session can be opened.
"""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ZOOKEEPER_JARS = Path("/usr/share/java")


def zookeeper_classpath() -> str:
    names = ["zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar", "slf4j-simple.jar", "netty-handler.jar",
             "netty-transport.jar", "netty-common.jar", "netty-buffer.jar", "netty-resolver.jar",
             "netty-codec.jar", "netty-transport-native-unix-common.jar", "netty-transport-native-epoll.jar",
             "log4j-1.2.jar", "commons-cli.jar", "jline.jar", "audience-annotations.jar", "metrics-core.jar",
             "snappy-java.jar", "commons-io.jar", "jackson-databind.jar", "jackson-core.jar",
             "jackson-annotations.jar"]
    jars = [ZOOKEEPER_JARS / n for n in names if (ZOOKEEPER_JARS / n).exists()]
    if not jars or not (ZOOKEEPER_JARS / "zookeeper.jar").exists():
        raise RuntimeError("ZooKeeper is not installed: run `make setup` (apt-get install zookeeper)")
    return ":".join(map(str, jars))


_LOWEST_PORT = 10000
PORT_ATTEMPTS = 3  # starts of a server on a port it chose, when another program took the port first
_handed_out: set[int] = set()
_handed_out_lock = threading.Lock()
_port_random = random.Random()  # its own, so a test seeding `random` neither fixes nor shifts the ports
os.register_at_fork(after_in_child=_port_random.seed)  # a forked child must not pick its parent's next ports


def _ephemeral_port_range() -> tuple[int, int]:
    """The ports the kernel gives outgoing connections (and ``bind(0)``)."""
    try:
        low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
        return low, high
    except (OSError, ValueError):
        return 32768, 60999


def can_listen(host: str, port: int) -> bool:
    """Whether nothing is bound to ``host:port`` (a bind on it succeeds)."""
    with socket.socket() as s:
        try:
            s.bind((host, port))
            return True
        except OSError:
            return False


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing is bound to, for a server this process is about to start.

    Chosen outside the kernel's ephemeral range, so that no outgoing connection (of any process) can take it as
    its source port between now and the server's bind, and never the same port twice in this process. Where the
    ephemeral range leaves too little room, falls back to a port the kernel picks."""
    low, high = _ephemeral_port_range()
    spans = [(a, b) for a, b in ((_LOWEST_PORT, low - 1), (high + 1, 65535)) if b - a >= 1000]
    with _handed_out_lock:
        for _ in range(200 if spans else 0):
            a, b = _port_random.choice(spans)
            port = _port_random.randint(a, b)
            if port not in _handed_out and can_listen(host, port):
                _handed_out.add(port)
                return port
        with socket.socket() as s:
            s.bind((host, 0))
            port = s.getsockname()[1]
        _handed_out.add(port)
        return port


class LocalZooKeeper:
    def __init__(self, directory: Path, port: int | None = None, host: str = "127.0.0.1", tick_time_ms: int = 200,
                 owner_pid: int | None = None):
        self.directory = Path(directory)
        self.host = host
        self._port_chosen_here = not port
        self.port = port or free_port(host)
        self.tick_time_ms = tick_time_ms
        self.process: subprocess.Popen | None = None
        self.owner_pid = owner_pid  # if set, the JVM runs under a supervisor that stops it when this pid dies

    @property
    def _log_path(self) -> Path:
        return self.directory / "zookeeper.log"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def write_config(self) -> Path:
        data_dir = self.directory / "data"
        data_dir.mkdir(parents=True, exist_ok=True)
        cfg = self.directory / "zoo.cfg"
        cfg.write_text(
            f"tickTime={self.tick_time_ms}\n"
            f"dataDir={data_dir}\n"
            f"clientPort={self.port}\n"
            f"clientPortAddress={self.host}\n"
            "admin.enableServer=false\n"
            "forceSync=no\n"
            "maxClientCnxns=0\n"
            "4lw.commands.whitelist=ruok,stat,srvr\n"
            # generous session bounds: clients choose their own timeout within them
            f"minSessionTimeout={2 * self.tick_time_ms}\n"
            f"maxSessionTimeout={300 * self.tick_time_ms}\n"
        )
        return cfg

    def start(self, timeout_s: float = 30.0) -> None:
        """Starts the server and returns once it answers; on a port it chose itself and lost to another program
        before the server bound it, starts again on a fresh port (up to ``PORT_ATTEMPTS`` times)."""
        for attempt in range(1, PORT_ATTEMPTS + 1):
            try:
                self._start_once(timeout_s)
                return
            except RuntimeError:
                if not (self._port_chosen_here and attempt < PORT_ATTEMPTS and self._lost_its_port()):
                    raise
                self.stop()
                self.port = free_port(self.host)

    def _lost_its_port(self) -> bool:
        """Whether the last attempt's log says its port was taken."""
        with open(self._log_path, "rb") as log:
            log.seek(self._attempt_log_offset)
            return b"Address already in use" in log.read()

    def _start_once(self, timeout_s: float) -> None:
        cfg = self.write_config()
        self._attempt_log_offset = self._log_path.stat().st_size if self._log_path.exists() else 0
        log = open(self._log_path, "ab")  # noqa: SIM115 - owned by the child process
        command = ["java", "-Xmx256m", "-cp", zookeeper_classpath(), "-Dzookeeper.log.dir=" + str(self.directory),
                   "org.apache.zookeeper.server.ZooKeeperServerMain", str(cfg)]
        if self.owner_pid is not None:
            command = [sys.executable, "-m", "fluss.server.parent_watch", str(self.owner_pid), "--", *command]
        self.process = subprocess.Popen(
            command,
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )
        log.close()
        (self.directory / "zookeeper.pid").write_text(str(self.process.pid))
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"ZooKeeper exited with {self.process.returncode}; see {self._log_path}")
            if self.is_ok():
                return
            time.sleep(0.05)
        raise RuntimeError(f"ZooKeeper did not start on {self.address} within {timeout_s}s")

    def is_ok(self) -> bool:
        try:
            with socket.create_connection((self.host, self.port), timeout=0.5) as s:
                s.sendall(b"ruok")
                return s.recv(4) == b"imok"
        except OSError:
            return False

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    @staticmethod
    def stop_pid(pid: int) -> None:
        try:
            os.kill(pid, 15)
        except ProcessLookupError:
            pass
