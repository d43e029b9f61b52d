"""LocalCluster: a real cluster on this machine (a ZooKeeper server, coordinator(s) and tablet servers as
separate processes on loopback ports), for the CLI (``fluss cluster start``), tests, examples and notebooks.

    with LocalCluster(tablet_servers=3) as cluster:
        conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": cluster.bootstrap_servers}))

Racks: ``LocalCluster(racks={0: "r1", 1: "r2", 2: "r3"})`` sets ``tablet-server.rack`` per server id, and
``add_tablet_server(rack="r1")`` grows a running cluster by one server, returning its id.

A secured cluster: ``LocalCluster(sasl_users={"admin": "admin-secret", "alice": "alice-secret"},
super_users=["admin"])`` gives every server three listeners - ``FLUSS`` (plaintext, ``.bootstrap_servers``),
``CLIENT`` (SASL/PLAIN with those users, ``.sasl_bootstrap_servers``) and ``INTERNAL`` (SASL, for server-to-server
calls, with a generated server password) - and with ``super_users`` the ACL authorizer is on. With ``tls=True``
the CLIENT and INTERNAL listeners are also served over TLS, with certificates of a throw-away CA made in the
cluster's directory (``.tls_ca_path``; ``.tls_config()`` gives a client's TLS properties, ``.sasl_config()``
includes them); ``tls=True`` alone (no ``sasl_users``) makes CLIENT an anonymous TLS listener.

Processes are started by this object and stopped by it; ``kill_*`` sends SIGKILL to the PID it started.
The cluster's state (ports, pids) is written to ``DIR/cluster.json`` so ``fluss cluster status|stop`` work.

With ``metrics=True`` (or ``metrics.reporters: prometheus`` in ``server_config``) every server exports Prometheus
metrics on its own free port (``metrics.reporter.prometheus.port``); :meth:`LocalCluster.metrics_endpoints` lists
them (also in ``cluster.json``). Each server logs to ``DIR/logs/<name>.log`` (``fluss cluster logs`` reads them).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import grpc
import yaml

from fluss.rpc.channels import ChannelFactory
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.rpc.gen import fluss_api_pb2_grpc as rpc
from fluss.server.parent_watch import ENV_VAR
from fluss.server.zk.local_server import PORT_ATTEMPTS, LocalZooKeeper, can_listen, free_port

DEFAULT_PORT = 9123
# what a server logs when a port chosen for it is taken: a listener's (fluss.rpc.server), its metrics' (fluss.metrics)
_PORT_TAKEN_MARKS = ("Cannot bind listener", "Cannot serve Prometheus metrics: no free port")


class ListenerPortTaken(RuntimeError):
    """A server of a starting cluster exited because a port chosen for it was bound by another program."""


@dataclass
class _Proc:
    name: str
    config_path: Path
    port: int
    process: subprocess.Popen | None = None
    sasl_port: int | None = None
    internal_port: int | None = None
    pid: int | None = None
    metrics_port: int | None = None
    host: str = "127.0.0.1"
    kind: str = ""
    index: int = 0

    def alive(self) -> bool:
        if self.process is not None:
            return self.process.poll() is None
        return self.pid is not None and _pid_alive(self.pid)


@dataclass
class LocalCluster:
    tablet_servers: int = 3
    directory: str | Path | None = None
    port: int | None = None
    coordinators: int = 1
    server_config: dict[str, str] = field(default_factory=dict)
    tablet_server_config: dict[int, dict[str, str]] = field(default_factory=dict)  # per server id, over the rest
    racks: dict[int, str] = field(default_factory=dict)  # tablet-server.rack of each server id (absent: no rack)
    # Where processes run (the nemesis suite puts each in its own network namespace): the address a process
    # binds ("coordinator"/"tablet-server", index or id), a command prefix for it (e.g. ``ip netns exec ns``), and
    # the address ZooKeeper listens on.
    host_of: Callable[[str, int], str] | None = None
    command_prefix: Callable[[str, int], list[str]] | None = None
    zookeeper_host: str = "127.0.0.1"
    zookeeper_session_timeout: str = "3s"
    stop_with_owner: bool = True  # processes stop when this Python process dies (False for `fluss cluster start`)
    metrics: bool = False  # every server exports Prometheus metrics on a free port of its own
    sasl_users: dict[str, str] | None = None  # SASL/PLAIN users of the CLIENT listener (None: no SASL listener)
    super_users: list[str] | None = None  # user names; turns the authorizer on
    tls: bool = False  # CLIENT and INTERNAL listeners over TLS (certificates of a CA made for this cluster)

    def __post_init__(self) -> None:
        self._own_dir = self.directory is None
        self.dir = Path(self.directory or tempfile.mkdtemp(prefix="fluss-cluster-"))
        self.zookeeper: LocalZooKeeper | None = None
        self._coordinators: list[_Proc] = []
        self._tablets: dict[int, _Proc] = {}

    # ------------------------------------------------------------ lifecycle

    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, timeout_s: float = 60.0) -> LocalCluster:
        """Starts every process and waits until the cluster is healthy: each process running, a coordinator
        of this cluster answering on its port, every tablet server registered. Raises (after stopping what it
        started) naming the process that failed and its log, e.g. when a port is already in use."""
        if self.port is not None:
            for i in range(self.coordinators):
                _require_free_port(self.port + i)
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "logs").mkdir(exist_ok=True)
        self.zookeeper = LocalZooKeeper(self.dir / "zookeeper", host=self.zookeeper_host,
                                        owner_pid=os.getpid() if self.stop_with_owner else None)
        self.zookeeper.start()
        try:
            for attempt in range(1, PORT_ATTEMPTS + 1):
                self._spawn_servers()
                try:
                    self.wait_until_ready(timeout_s)
                    break
                except ListenerPortTaken:
                    # Another program bound a chosen port before the server did: start again on fresh ports.
                    if self.port is not None or attempt == PORT_ATTEMPTS:
                        raise
                    self._stop_servers()
        except BaseException:
            self.stop()
            raise
        return self

    def _spawn_servers(self) -> None:
        """Writes the configuration of every server (on free ports, or ``port`` onward) and starts them."""
        self._coordinators, self._tablets = [], {}
        for i in range(self.coordinators):
            port = (self.port or DEFAULT_PORT) + i if self.port is not None else free_port()
            self._coordinators.append(self._coordinator_proc(i, port))
            self._spawn(self._coordinators[-1], "coordinator")
        for sid in range(self.tablet_servers):
            self._tablets[sid] = self._tablet_proc(sid, free_port())
            self._spawn(self._tablets[sid], "tablet-server")
        self._save_state()

    def _stop_servers(self) -> None:
        for group in (list(self._tablets.values()), self._coordinators):
            for p in group:
                _terminate(p)
            for p in group:
                _wait_gone(p, 20)

    def stop(self) -> None:
        """Stops tablet servers first (their controlled shutdown needs the coordinator), then coordinators."""
        self._stop_servers()
        if self.zookeeper:
            self.zookeeper.stop()
            self.zookeeper = None
        state = self.dir / "cluster.json"
        if state.exists():
            state.unlink()
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{c.host}:{c.port}" for c in self._coordinators)

    @property
    def metrics_enabled(self) -> bool:
        reporters = str(self.server_config.get("metrics.reporters", "")).lower()
        return self.metrics or "prometheus" in reporters

    def metrics_endpoints(self) -> dict[str, str]:
        """``host:port`` of every server's Prometheus endpoint by process name (``coordinator-0``,
        ``tablet-server-1``), running or not; empty when metrics are off."""
        procs = [*self._coordinators, *(self._tablets[s] for s in sorted(self._tablets))]
        return {p.name: f"127.0.0.1:{p.metrics_port}" for p in procs if p.metrics_port}

    @property
    def logs_dir(self) -> Path:
        return self.dir / "logs"

    @property
    def sasl_bootstrap_servers(self) -> str:
        """The coordinators' CLIENT listener: SASL with ``sasl_users``, TLS with ``tls`` (or both)."""
        if not (self.sasl_users or self.tls):
            raise RuntimeError("this LocalCluster has no SASL listener (start it with sasl_users={...})")
        return ",".join(f"{c.host}:{c.sasl_port}" for c in self._coordinators)

    @property
    def tls_bootstrap_servers(self) -> str:
        """The coordinators' TLS listener (CLIENT; ``tls=True``)."""
        if not self.tls:
            raise RuntimeError("this LocalCluster has no TLS listener (start it with tls=True)")
        return self.sasl_bootstrap_servers

    @property
    def tls_ca_path(self) -> Path:
        """The PEM certificate of the CA that signed the servers' certificates (``tls=True``)."""
        return self.dir / "tls" / "ca.crt"

    def tls_config(self) -> dict[str, str]:
        """Client TLS properties trusting this cluster's CA (empty without ``tls``)."""
        if not self.tls:
            return {}
        return {"client.security.ssl.enabled": "true", "client.security.ssl.truststore.path": str(self.tls_ca_path)}

    def sasl_config(self, username: str, password: str | None = None, **extra: str) -> dict[str, str]:
        """Client properties for the SASL listener as ``username`` (password from ``sasl_users`` by default), with
        the TLS properties when the cluster has TLS."""
        return {"bootstrap.servers": self.sasl_bootstrap_servers, "client.security.protocol": "SASL",
                "client.security.sasl.mechanism": "PLAIN", "client.security.sasl.username": username,
                "client.security.sasl.password": self.sasl_users[username] if password is None else password,
                **self.tls_config(), **extra}

    @property
    def zookeeper_address(self) -> str:
        assert self.zookeeper is not None
        return self.zookeeper.address

    # ------------------------------------------------------------ process hooks (used by fault tests)

    def tablet_server_pid(self, server_id: int) -> int | None:
        p = self._tablets[server_id]
        return p.process.pid if p.process else p.pid

    def kill_tablet_server(self, server_id: int) -> None:
        _kill(self._tablets[server_id])

    def stop_tablet_server(self, server_id: int, timeout_s: float = 30) -> None:
        p = self._tablets[server_id]
        _terminate(p)
        _wait_gone(p, timeout_s)

    def start_tablet_server(self, server_id: int, wait: bool = True) -> None:
        if server_id not in self._tablets:
            self._tablets[server_id] = self._tablet_proc(server_id, free_port())
        p = self._tablets[server_id]
        if p.alive():
            raise RuntimeError(f"tablet server {server_id} is already running")
        self._spawn(p, "tablet-server")
        self._save_state()
        if wait:
            self.wait_until_ready()

    def add_tablet_server(self, rack: str | None = None, wait: bool = True) -> int:
        """Starts a new tablet server (the next free id, in ``rack`` if given) and returns its id; it is stopped
        with the cluster. With ``wait``, returns once the coordinator has registered it."""
        sid = max(self._tablets, default=-1) + 1
        if rack is not None:
            self.racks[sid] = rack
        self.start_tablet_server(sid, wait=wait)
        return sid

    def kill_coordinator(self, index: int = 0) -> None:
        _kill(self._coordinators[index])

    def stop_coordinator(self, index: int = 0) -> None:
        _terminate(self._coordinators[index])
        _wait_gone(self._coordinators[index], 30)

    def start_coordinator(self, index: int = 0, wait: bool = True) -> None:
        p = self._coordinators[index]
        if p.alive():
            raise RuntimeError(f"coordinator {index} is already running")
        self._spawn(p, "coordinator")
        self._save_state()
        if wait:
            self.wait_until_ready()

    def restart_stopped(self) -> None:
        """Starts every process of this cluster that is not running (tests call it after fault injection)."""
        for index, c in enumerate(self._coordinators):
            if not c.alive():
                self.start_coordinator(index, wait=False)
        for sid, t in self._tablets.items():
            if not t.alive():
                self.start_tablet_server(sid, wait=False)
        self.wait_until_ready()

    def live_tablet_servers(self) -> list[int]:
        return sorted(sid for sid, p in self._tablets.items() if p.alive())

    # ------------------------------------------------------------ readiness

    def server_nodes(self) -> list[pb.ServerNodePb] | None:
        """GetServerNodes from whichever coordinator is active, or None if none answers."""
        for c in self._coordinators:
            if not c.alive():
                continue
            try:
                with ChannelFactory().sync_channel(f"{c.host}:{c.port}") as ch:
                    resp = rpc.AdminServiceStub(ch).GetServerNodes(pb.GetServerNodesRequest(), timeout=2)
            except grpc.RpcError:
                continue
            if resp.error.code == 0:
                return list(resp.nodes)
        return None

    def wait_until_ready(self, timeout_s: float = 60.0) -> None:
        """Waits until a coordinator of this cluster is active and every running tablet server is registered
        (by id and port, so another cluster answering on a reused port does not count)."""
        deadline = time.monotonic() + timeout_s
        expected = {(sid, self._tablets[sid].port) for sid in self.live_tablet_servers()}
        while time.monotonic() < deadline:
            for sid, _ in expected:
                if not self._tablets[sid].alive():
                    self._raise_exited(self._tablets[sid])
            if not any(c.alive() for c in self._coordinators):
                self._raise_exited(self._coordinators[0])
            nodes = self.server_nodes()
            if nodes is not None and expected <= {(n.id, n.port) for n in nodes if n.server_type == "TabletServer"}:
                return
            time.sleep(0.1)
        raise TimeoutError(f"cluster in {self.dir} not ready after {timeout_s}s; logs in {self.dir / 'logs'}")

    def _raise_exited(self, p: _Proc) -> NoReturn:
        tail = _log_tail(self._log_path(p))
        error = ListenerPortTaken if any(mark in tail for mark in _PORT_TAKEN_MARKS) else RuntimeError
        raise error(f"{p.name} exited during start-up: {tail}")

    def log_dir(self) -> Path:
        return self.dir / "logs"

    def wait_for_tablet_servers(self, ids: set[int], timeout_s: float = 30.0) -> None:
        """Waits until the registered tablet servers are exactly ``ids``."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            nodes = self.server_nodes()
            if nodes is not None and {n.id for n in nodes if n.server_type == "TabletServer"} == ids:
                return
            time.sleep(0.1)
        raise TimeoutError(f"tablet servers did not become {sorted(ids)} within {timeout_s}s")

    # ------------------------------------------------------------ internals

    def _base_config(self, host: str = "127.0.0.1") -> dict[str, str]:
        assert self.zookeeper is not None
        return {
            "zookeeper.address": self.zookeeper.address,
            "zookeeper.client.session-timeout": self.zookeeper_session_timeout,
            "remote.data.dir": str(self.dir / "remote"),
            **self._security_config(host),
            **self.server_config,
        }

    def _metrics_config(self) -> tuple[dict[str, str], int | None]:
        """The metric options of one server, and its Prometheus port (a free one of its own)."""
        if not self.metrics_enabled:
            return {}, None
        port = free_port()
        reporters = self.server_config.get("metrics.reporters") or "prometheus"
        return {"metrics.reporters": reporters, "metrics.reporter.prometheus.port": str(port)}, port

    def _security_config(self, host: str) -> dict[str, str]:
        cfg = self._tls_server_config(host) if self.tls else {}
        if not self.sasl_users:
            return {"internal.listener.name": "INTERNAL", **cfg} if self.tls else {}
        if not hasattr(self, "_internal_password"):
            self._internal_password = secrets.token_urlsafe(24)
        users = " ".join(f'user_{u}="{p}"' for u, p in self.sasl_users.items())
        module = "org.apache.fluss.security.auth.sasl.plain.PlainLoginModule required"
        cfg |= {"security.protocol.map": "CLIENT:SASL,INTERNAL:SASL", "internal.listener.name": "INTERNAL",
               "security.sasl.enabled.mechanisms": "PLAIN",
               "security.sasl.listener.name.client.plain.jaas.config": f"{module} {users};",
               "security.sasl.listener.name.internal.plain.jaas.config":
                   f'{module} username="fluss-internal" password="{self._internal_password}" '
                   f'user_fluss-internal="{self._internal_password}";'}
        if self.super_users:
            cfg["authorizer.enabled"] = "true"
            cfg["super.users"] = ";".join(f"User:{u}" for u in self.super_users)
        return cfg

    def _tls_server_config(self, host: str) -> dict[str, str]:
        """The CA (made once) and a certificate for ``host`` signed by it (one per host)."""
        from fluss.server.security.self_signed import SelfSignedCa

        tls_dir = self.dir / "tls"
        if not self.tls_ca_path.exists():
            SelfSignedCa.create(tls_dir / "ca", common_name=f"fluss-local-cluster-ca-{secrets.token_hex(4)}")
        ca = SelfSignedCa(self.tls_ca_path, tls_dir / "ca.key")
        prefix = tls_dir / f"server-{host}"
        if not prefix.with_suffix(".crt").exists():
            ca.issue(prefix, hosts=sorted({host, "127.0.0.1", "localhost"}))
        return {"security.ssl.listeners": "CLIENT,INTERNAL",
                "security.ssl.certificate.path": str(prefix.with_suffix(".crt")),
                "security.ssl.key.path": str(prefix.with_suffix(".key")),
                "security.ssl.truststore.path": str(self.tls_ca_path)}

    def _listeners(self, p: _Proc) -> str:
        if not (self.sasl_users or self.tls):
            return f"FLUSS://{p.host}:{p.port}"
        if p.sasl_port is None:
            p.sasl_port, p.internal_port = free_port(), free_port()
        return (f"FLUSS://{p.host}:{p.port},CLIENT://{p.host}:{p.sasl_port},"
                f"INTERNAL://{p.host}:{p.internal_port}")

    def _coordinator_proc(self, index: int, port: int) -> _Proc:
        host = self._host("coordinator", index)
        metrics, metrics_port = self._metrics_config()
        p = _Proc(f"coordinator-{index}", self.dir / f"coordinator-{index}.yaml", port, metrics_port=metrics_port,
                  host=host, kind="coordinator", index=index)
        cfg = {**self._base_config(host), **metrics, "coordinator.id": str(index), "bind.listeners": self._listeners(p)}
        p.config_path.write_text(yaml.safe_dump(cfg))
        return p

    def _tablet_proc(self, sid: int, port: int) -> _Proc:
        host = self._host("tablet-server", sid)
        metrics, metrics_port = self._metrics_config()
        p = _Proc(f"tablet-server-{sid}", self.dir / f"tablet-server-{sid}.yaml", port, metrics_port=metrics_port,
                  host=host, kind="tablet-server", index=sid)
        cfg = {**self._base_config(host), **metrics, "tablet-server.id": str(sid), "bind.listeners": self._listeners(p),
               "data.dir": str(self.dir / f"tablet-server-{sid}" / "data"),
               **({"tablet-server.rack": self.racks[sid]} if sid in self.racks else {}),
               **self.tablet_server_config.get(sid, {})}
        p.config_path.write_text(yaml.safe_dump(cfg))
        return p

    def _host(self, kind: str, index: int) -> str:
        return self.host_of(kind, index) if self.host_of else "127.0.0.1"

    def _log_path(self, p: _Proc) -> Path:
        return self.dir / "logs" / f"{p.name}.log"

    def _spawn(self, p: _Proc, command: str) -> None:
        with open(self._log_path(p), "ab") as log:
            prefix = self.command_prefix(p.kind, p.index) if self.command_prefix else []
            p.process = subprocess.Popen(
                [*prefix, sys.executable, "-m", "fluss.cli", command, "--config", str(p.config_path)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                env=self._child_environment(),
            )
        p.pid = p.process.pid

    def _child_environment(self) -> dict[str, str]:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        env.pop(ENV_VAR, None)
        if self.stop_with_owner:
            env[ENV_VAR] = str(os.getpid())
        return env

    def _save_state(self) -> None:
        state = {
            "zookeeper": {"port": self.zookeeper.port if self.zookeeper else None,
                          "pid": self.zookeeper.process.pid if self.zookeeper and self.zookeeper.process else None},
            "coordinators": [{"name": c.name, "port": c.port, "pid": c.pid, "metrics_port": c.metrics_port}
                             for c in self._coordinators],
            "tablet_servers": [{"id": s, "port": t.port, "pid": t.pid, "metrics_port": t.metrics_port,
                                "rack": self.racks.get(s)} for s, t in self._tablets.items()],
            "bootstrap_servers": self.bootstrap_servers,
            "logs": str(self.dir / "logs"),
            "server_config": dict(self.server_config),
        }
        (self.dir / "cluster.json").write_text(json.dumps(state, indent=2))


def _require_free_port(port: int) -> None:
    """Raises when something already listens on 127.0.0.1:``port`` (another cluster, most likely)."""
    if not can_listen("127.0.0.1", port):
        raise RuntimeError(f"port {port} on 127.0.0.1 is already in use: another Fluss cluster or program "
                           f"listens there; stop it, or choose another port")


def _log_tail(path: Path, lines: int = 3) -> str:
    """The last lines of a server log that say something (for an error message), and where the log is."""
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return f"see {path}"
    tail = [line for line in text if line.strip()][-lines:]
    return (" | ".join(t.strip() for t in tail) + f" (log: {path})") if tail else f"see {path}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill(p: _Proc) -> None:
    if p.alive() and p.pid:
        os.kill(p.pid, signal.SIGKILL)
        _wait_gone(p, 10)


def _terminate(p: _Proc) -> None:
    if p.alive() and p.pid:
        try:
            os.kill(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass


def _wait_gone(p: _Proc, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while p.alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    if p.alive() and p.pid:
        os.kill(p.pid, signal.SIGKILL)
        while p.alive():
            time.sleep(0.02)
    if p.process is not None:
        p.process.wait()


def stop_from_state(directory: Path) -> bool:
    """Stops a cluster started by ``fluss cluster start`` in another process, from its ``cluster.json``."""
    state_file = directory / "cluster.json"
    if not state_file.exists():
        return False
    state = json.loads(state_file.read_text())
    tablets = [_Proc(t["id"], Path(), t["port"], pid=t["pid"]) for t in state["tablet_servers"]]
    coordinators = [_Proc(c["name"], Path(), c["port"], pid=c["pid"]) for c in state["coordinators"]]
    for group in (tablets, coordinators):
        for p in group:
            _terminate(p)
        for p in group:
            _wait_gone(p, 20)
    zk_pid = state["zookeeper"]["pid"]
    if zk_pid:
        zk = _Proc("zookeeper", Path(), 0, pid=zk_pid)
        _terminate(zk)
        _wait_gone(zk, 15)
    state_file.unlink()
    return True
