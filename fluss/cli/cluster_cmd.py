"""``fluss cluster start|status|stop|logs``: a local cluster of separate processes kept in a directory;
``fluss cluster rebalance [start|list|cancel]`` rebalances any cluster (``fluss/cli/rebalance_cmd.py``).

``start`` takes server options as Fluss's ``server.yaml`` (``--config``) and ``-D key=value`` (which win), starts
ZooKeeper, the coordinator(s) and the tablet servers, and returns once the cluster is healthy (each process up,
a coordinator of this cluster answering, every tablet server registered); otherwise it stops what it started
and fails naming the process, the cause and its log. A port already in use is refused before anything starts.
State from a cluster whose processes are all gone (a crash, a reboot) is stale: ``start`` clears it itself.

``status`` prints each process, its pid and whether it is up, plus where the logs are and the default
replication factor; it exits 0 only when everything is up and registered (1 otherwise, 3 when stale). With
``--json`` it prints one JSON object instead: the processes, the registered servers (with their racks) and every
table's buckets (leader, replicas, ISR, offsets), for scripts (same exit codes).

``config get [KEY ...]`` prints the cluster's server options with their source (every one, or the keys given),
``config set KEY=VALUE ...`` changes dynamic options of the running cluster (``admin.alter_cluster_configs``: no
restart; a key that is not dynamic or a bad value is refused naming it) and ``config reset KEY ...`` drops their
overrides (connects to ``--bootstrap-servers``).

``logs`` prints the servers' logs merged by time (``fluss.server.cluster_logs``), filtered by server, level,
component and text, the last N entries (``--tail``), and follows them (``--follow``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from fluss.cli.common import (
    HelpFormatter,
    add_bootstrap,
    client_properties,
    load_server_yaml,
    parse_overrides,
    progress,
    run_client,
)

DIR_ENV, PORT_ENV = "FLUSS_CLUSTER_DIR", "FLUSS_CLUSTER_PORT"
DEFAULT_CLUSTER_DIR = Path(os.environ.get(DIR_ENV) or "/tmp/fluss-local-cluster")
DEFAULT_PORT = int(os.environ.get(PORT_ENV) or 9123)
REPLICATION_FACTOR = "default.replication.factor"
EXIT_STALE = 3
#: Options a local cluster sets for each process itself (from a full server.yaml they are ignored).
MANAGED_KEYS = ("zookeeper.address", "bind.listeners", "advertised.listeners", "data.dir", "tablet-server.id",
                "coordinator.id")


def add_parser(sub) -> None:
    c = sub.add_parser("cluster", help="start, inspect or stop a local cluster of separate processes",
                       description=__doc__, formatter_class=HelpFormatter)
    c.add_argument("action", choices=["start", "status", "stop", "logs", "config", "rebalance"], help="what to do")
    c.add_argument("items", nargs="*", metavar="ARG",
                   help="config: get [KEY ...] | set KEY=VALUE ... | reset KEY ...; rebalance: [start] | list | cancel")
    c.add_argument("--dir", default=str(DEFAULT_CLUSTER_DIR),
                   help=f"where the cluster keeps its state, data and logs (env {DIR_ENV})")
    c.add_argument("--tablet-servers", type=int, default=3, help="start: number of tablet servers")
    c.add_argument("--coordinators", type=int, default=1, help="start: coordinators (more than one: standbys)")
    c.add_argument("--port", type=int, default=DEFAULT_PORT,
                   help=f"start: coordinator port, the bootstrap address (env {PORT_ENV})")
    c.add_argument("--config", "-c", metavar="SERVER_YAML", default=None,
                   help="start: server options in Fluss's server.yaml form (e.g. conf/server.yaml: Paimon lake)")
    c.add_argument("-D", dest="define", action="append", metavar="KEY=VALUE", default=None,
                   help="start: a server option (repeatable; wins over --config)")
    c.add_argument("--timeout", type=float, default=90.0, help="start: seconds to wait for a healthy cluster")
    c.add_argument("--json", action="store_true",
                   help="status: one JSON object (processes, servers and racks, every table's buckets)")
    c.add_argument("--server", action="append", default=None,
                   help="logs: only this server (coordinator-0, tablet-server-1; repeatable)")
    c.add_argument("--level", default="DEBUG", help="logs: entries at this level or above")
    c.add_argument("--component", action="append", default=None,
                   help="logs: only this logger and below (e.g. fluss.server.replica; repeatable)")
    c.add_argument("--grep", default=None, help="logs: only entries containing this text")
    c.add_argument("--tail", type=int, default=0, help="logs: the last N entries (0: all)")
    c.add_argument("--follow", "-f", action="store_true", help="logs: keep printing new entries")
    c.add_argument("--goals", default=None, metavar="GOAL[,GOAL...]",
                   help="rebalance start: RACK_AWARE, REPLICA_DISTRIBUTION, LEADER_DISTRIBUTION in priority order "
                        "(default: all three, in that order)")
    c.add_argument("--wait", action="store_true", help="rebalance start: print the progress until it ends")
    c.add_argument("--poll-interval", type=float, default=1.0, help="rebalance start --wait: seconds between looks")
    c.add_argument("--id", default=None, help="rebalance list/cancel: the rebalance (default: the most recent)")
    add_bootstrap(c)
    c.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    directory = Path(args.dir)
    if args.action == "start":
        return _start(directory, args)
    if args.action == "status":
        return _status_json(directory) if args.json else _status(directory)
    if args.action == "config":
        return _config(args)
    if args.action == "rebalance":
        from fluss.cli.rebalance_cmd import run as run_rebalance

        return run_rebalance(args)
    if args.items:
        print(f"fluss cluster {args.action} takes no positional arguments: {' '.join(args.items)}", file=sys.stderr)
        return 2
    if args.action == "logs":
        from fluss.server.cluster_logs import show

        return show(directory, args.server, args.level, args.component, args.grep, args.tail, args.follow)
    return _stop(directory)


def _state(directory: Path) -> dict | None:
    state_file = directory / "cluster.json"
    if not state_file.exists():
        return None
    return json.loads(state_file.read_text())


def _processes(state: dict) -> list[tuple[str, int | None, int | None]]:
    """(name, port, pid) of every process of a saved cluster."""
    zk = state["zookeeper"]
    out = [("zookeeper", zk["port"], zk["pid"])]
    out += [(c["name"], c["port"], c["pid"]) for c in state["coordinators"]]
    out += [(f"tablet-server-{t['id']}", t["port"], t["pid"]) for t in state["tablet_servers"]]
    return out


def _start(directory: Path, args: argparse.Namespace) -> int:
    from fluss.server.cluster import LocalCluster, _pid_alive

    state = _state(directory)
    if state is not None:
        alive = [name for name, _, pid in _processes(state) if pid and _pid_alive(pid)]
        if alive:
            print(f"A cluster is already running in {directory} ({', '.join(alive)} up): "
                  f"see `fluss cluster status --dir {directory}`, or `fluss cluster stop --dir {directory}` first")
            return 1
        (directory / "cluster.json").unlink()
        print(f"Cleared the stale state of a cluster whose processes are all gone in {directory}")
    server_config = {**load_server_yaml(args.config), **parse_overrides(args.define)}
    for key in MANAGED_KEYS:
        if server_config.pop(key, None) is not None:
            print(f"Note: ignoring {key} (the local cluster sets it for each process)")
    cluster = LocalCluster(tablet_servers=args.tablet_servers, directory=directory, port=args.port,
                           coordinators=args.coordinators, stop_with_owner=False, server_config=server_config)
    try:
        with progress() as bar:
            bar.add_task(f"starting ZooKeeper, {args.coordinators} coordinator(s), "
                         f"{args.tablet_servers} tablet server(s)", total=None)
            cluster.start(timeout_s=args.timeout)
    except (RuntimeError, TimeoutError) as e:
        print(f"error: the cluster did not start: {e}", file=sys.stderr)
        return 1
    print(f"Local cluster running in {directory}")
    print(f"bootstrap.servers = {cluster.bootstrap_servers}")
    _print_settings(directory, server_config, args.tablet_servers)
    return 0


def _print_settings(directory: Path, server_config: dict[str, str], tablet_servers: int) -> None:
    replication = server_config.get(REPLICATION_FACTOR, "1")
    hint = ""
    if replication == "1" and tablet_servers > 1:
        hint = (f" (tables keep one copy unless they set table.replication.factor; "
                f"start with -D {REPLICATION_FACTOR}={min(3, tablet_servers)} for more)")
    print(f"{REPLICATION_FACTOR} = {replication}{hint}")
    lake = server_config.get("datalake.format")
    if lake:
        print(f"datalake.format = {lake}, warehouse {server_config.get('datalake.paimon.warehouse', '(default)')}")
    else:
        print("lake: off (start with --config conf/server.yaml to tier tables into Paimon)")
    print(f"logs: {directory / 'logs'}")


def _status(directory: Path) -> int:
    from fluss.server.cluster import _pid_alive

    state = _state(directory)
    if state is None:
        print(f"No cluster running in {directory}")
        return 1
    print(f"bootstrap.servers = {state['bootstrap_servers']}")
    processes = _processes(state)
    up = {name: bool(pid and _pid_alive(pid)) for name, _, pid in processes}
    registered = _registered_tablet_servers(state["bootstrap_servers"]) if any(up.values()) else None
    racks = {f"tablet-server-{t['id']}": t.get("rack") for t in state["tablet_servers"]}
    for name, port, pid in processes:
        flag = "up" if up[name] else "DOWN"
        if up[name] and name.startswith("tablet-server-") and registered is not None:
            sid = int(name.rsplit("-", 1)[1])
            flag = "up" if sid in registered else "up, NOT REGISTERED"
        rack = racks.get(name)
        print(f"{name:<16} 127.0.0.1:{port}  pid {pid}  {flag}" + (f"  rack {rack}" if rack else ""))
    _print_settings(directory, state.get("server_config", {}), len(state["tablet_servers"]))
    if not any(up.values()):
        print(f"STALE: every process of this cluster is gone; `fluss cluster start --dir {directory}` clears "
              f"it and starts a new one")
        return EXIT_STALE
    if not all(up.values()) or (registered is not None and
                                 any(t["id"] not in registered for t in state["tablet_servers"])):
        print(f"DEGRADED: see the logs in {directory / 'logs'}")
        return 1
    if registered is None:
        print("DEGRADED: no coordinator answers")
        return 1
    return 0


def _status_json(directory: Path) -> int:
    from fluss.server.cluster import _pid_alive

    state = _state(directory)
    if state is None:
        print(json.dumps({"directory": str(directory), "status": "not_running"}))
        return 1
    processes = [{"name": name, "port": port, "pid": pid, "up": bool(pid and _pid_alive(pid))}
                 for name, port, pid in _processes(state)]
    out: dict = {"directory": str(directory), "bootstrap_servers": state["bootstrap_servers"],
                 "processes": processes, "servers": None, "tables": None}
    if any(p["up"] for p in processes):
        try:
            out.update(_live_state(state["bootstrap_servers"]))
        except Exception as e:  # noqa: BLE001 - reported in the JSON: the processes' state is still worth printing
            out["error"] = str(e)
    registered = {s["id"] for s in out["servers"] or [] if s["type"] == "TabletServer"}
    if not any(p["up"] for p in processes):
        out["status"], code = "stale", EXIT_STALE
    elif out["servers"] is None or not all(p["up"] for p in processes) or \
            any(t["id"] not in registered for t in state["tablet_servers"]):
        out["status"], code = "degraded", 1
    else:
        out["status"], code = "ok", 0
    print(json.dumps(out, indent=2))
    return code


def _config(args: argparse.Namespace) -> int:
    """``config get|set|reset``: the cluster's options through the admin API (see the module docstring)."""
    from fluss.metadata import AlterConfig, AlterConfigOpType

    what, items = (args.items[0], args.items[1:]) if args.items else ("get", [])
    changes: list[AlterConfig] = []
    if what == "set":
        for item in items:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                print(f"config set takes KEY=VALUE, not {item!r}", file=sys.stderr)
                return 2
            changes.append(AlterConfig(key.strip(), value.strip(), AlterConfigOpType.SET))
    elif what == "reset":
        changes = [AlterConfig(k.strip(), None, AlterConfigOpType.DELETE) for k in items]
    elif what != "get":
        print(f"config takes get, set or reset, not {what!r}", file=sys.stderr)
        return 2
    if what != "get" and not changes:
        print(f"config {what} needs at least one key", file=sys.stderr)
        return 2

    async def work(conn) -> int:
        admin = conn.get_admin()
        if changes:
            await admin.alter_cluster_configs(changes)
            for c in changes:
                print(f"{c.key}: {'set to ' + repr(c.value) if c.op_type == AlterConfigOpType.SET else 'reset'}")
            return 0
        entries = await admin.describe_cluster_configs()
        wanted = set(items)
        shown = [e for e in entries if not wanted or e.key in wanted]
        for missing in sorted(wanted - {e.key for e in shown}):
            print(f"{missing}: (no value)")
        width = max((len(e.key) for e in shown), default=0)
        for e in shown:
            print(f"{e.key:<{width}}  {e.value if e.value is not None else ''}  [{e.source}]")
        return 0

    from fluss.errors import FlussError

    try:
        return run_client(client_properties(args), work)
    except FlussError as e:
        print(f"error: {e.message}", file=sys.stderr)
        return 1


def _live_state(bootstrap: str) -> dict:
    """The registered servers and every table's buckets, from the cluster itself."""
    from fluss.metadata import TablePath
    from fluss.table_report import bucket_json, bucket_states, table_names

    out: dict = {}

    async def work(conn) -> int:
        admin = conn.get_admin()
        out["servers"] = [{"id": n.id, "type": n.server_type, "host": n.host, "port": n.port, "rack": n.rack}
                          for n in sorted(await admin.get_server_nodes(), key=lambda n: (n.server_type, n.id))]
        tables = []
        for name in await table_names(conn):
            db, _, table = name.partition(".")
            info = await admin.get_table_info(TablePath(db, table))
            tables.append({"table": name, "table_id": info.table_id,
                           "buckets": [bucket_json(s) for s in await bucket_states(conn, info)]})
        out["tables"] = tables
        return 0

    run_client(bootstrap, work)
    return out


def _registered_tablet_servers(bootstrap: str) -> set[int] | None:
    """Ids of the tablet servers registered with the active coordinator, or None if none answers."""
    import grpc

    from fluss.rpc.channels import GRPC_CHANNEL_OPTIONS
    from fluss.rpc.gen import fluss_api_pb2 as pb
    from fluss.rpc.gen import fluss_api_pb2_grpc as rpc

    for address in bootstrap.split(","):
        try:
            with grpc.insecure_channel(address, options=GRPC_CHANNEL_OPTIONS) as ch:
                resp = rpc.AdminServiceStub(ch).GetServerNodes(pb.GetServerNodesRequest(), timeout=3)
        except grpc.RpcError:
            continue
        if resp.error.code == 0:
            return {n.id for n in resp.nodes if n.server_type == "TabletServer"}
    return None


def _stop(directory: Path) -> int:
    from fluss.server.cluster import stop_from_state

    if stop_from_state(directory):
        print(f"Stopped the cluster in {directory}")
        return 0
    print(f"No cluster running in {directory}")
    return 1
