"""The ``fluss`` command: run servers, and start/inspect/stop a local cluster.

    fluss coordinator --config server.yaml [-D key=value ...]
    fluss tablet-server --config server.yaml [-D key=value ...]
    fluss cluster start [--tablet-servers N] [--coordinators N] [--dir DIR] [--port P]
    fluss cluster status [--dir DIR]
    fluss cluster stop [--dir DIR]
    fluss tiering start --bootstrap-servers HOST:PORT [--once] [--interval 5s] [--parallelism N]
    fluss tiering status --bootstrap-servers HOST:PORT
    fluss table list [DATABASE] [--bootstrap-servers HOST:PORT]
    fluss table describe DATABASE.TABLE [--bootstrap-servers HOST:PORT]
    fluss sql [-f FILE] [--bootstrap-servers HOST:PORT] [--mode batch|streaming] [-D key=value ...]
    fluss gateway --bootstrap-servers HOST:PORT [--port 8080] [--cluster ID=HOST:PORT ...]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from pathlib import Path

from fluss.errors import FlussError
from fluss.gateway.command import add_parser as add_gateway_parser

DEFAULT_CLUSTER_DIR = Path("/tmp/fluss-local-cluster")


def _overrides(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"-D expects key=value, got {pair!r}")
        out[key.strip()] = value.strip()
    return out


def _setup_logging() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("kazoo").setLevel(logging.WARNING)


def _run_server(kind: str, args: argparse.Namespace) -> int:
    from fluss.server.config import ServerConfig
    from fluss.server.parent_watch import watch_from_environment

    _setup_logging()
    watch_from_environment()
    config = ServerConfig.load(args.config, _overrides(args.define or []))
    if kind == "coordinator":
        from fluss.server.coordinator.server import CoordinatorServer

        server = CoordinatorServer(config)
    else:
        from fluss.server.tablet.server import TabletServer

        server = TabletServer(config)
    asyncio.run(server.run())
    return 0


def _cluster(args: argparse.Namespace) -> int:
    from fluss.server.cluster import LocalCluster, stop_from_state

    directory = Path(args.dir)
    state_file = directory / "cluster.json"
    if args.action == "start":
        if state_file.exists():
            print(f"A cluster is already running in {directory} (see `fluss cluster status --dir {directory}`)")
            return 1
        cluster = LocalCluster(tablet_servers=args.tablet_servers, directory=directory, port=args.port,
                               coordinators=args.coordinators, stop_with_owner=False)
        cluster.start()
        print(f"Local cluster running in {directory}")
        print(f"bootstrap.servers = {cluster.bootstrap_servers}")
        return 0
    if args.action == "status":
        if not state_file.exists():
            print(f"No cluster running in {directory}")
            return 1
        from fluss.server.cluster import _pid_alive

        state = json.loads(state_file.read_text())
        print(f"bootstrap.servers = {state['bootstrap_servers']}")
        zk = state["zookeeper"]
        print(f"zookeeper        127.0.0.1:{zk['port']}  pid {zk['pid']}  {'up' if _pid_alive(zk['pid']) else 'DOWN'}")
        for c in state["coordinators"]:
            print(f"{c['name']:<16} 127.0.0.1:{c['port']}  pid {c['pid']}  {'up' if _pid_alive(c['pid']) else 'DOWN'}")
        for t in state["tablet_servers"]:
            name = f"tablet-server-{t['id']}"
            print(f"{name:<16} 127.0.0.1:{t['port']}  pid {t['pid']}  {'up' if _pid_alive(t['pid']) else 'DOWN'}")
        return 0
    if stop_from_state(directory):
        print(f"Stopped the cluster in {directory}")
        return 0
    print(f"No cluster running in {directory}")
    return 1


def _tiering(args: argparse.Namespace, rest: list[str]) -> int:
    if args.action == "start":  # the job's own options (--once, --interval, --parallelism, --warehouse) pass through
        from tiering_job.job import main as tiering_main

        return tiering_main(["--bootstrap-servers", args.bootstrap_servers, *rest])
    import fluss
    from fluss.lake.status import tiering_status

    async def status() -> None:
        config = fluss.Config({"bootstrap.servers": args.bootstrap_servers})
        async with await fluss.FlussConnection.create(config) as conn:
            for table in await tiering_status(conn):
                print(table.describe())

    asyncio.run(status())
    return 0


def _table(args: argparse.Namespace) -> int:
    import fluss
    from fluss.table_report import describe_table, table_names

    async def run() -> None:
        config = fluss.Config({"bootstrap.servers": args.bootstrap_servers})
        async with await fluss.FlussConnection.create(config) as conn:
            if args.action == "list":
                for name in await table_names(conn, args.name):
                    print(name)
                return
            if args.name is None or args.name.count(".") != 1:
                raise SystemExit(f"fluss table describe expects DATABASE.TABLE, got {args.name!r}")
            print(await describe_table(conn, fluss.TablePath(*args.name.split("."))))

    asyncio.run(run())
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fluss", description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    for kind in ("coordinator", "tablet-server"):
        p = sub.add_parser(kind, help=f"run a {kind}")
        p.add_argument("--config", "-c", help="server.yaml")
        p.add_argument("-D", dest="define", action="append", help="override an option: key=value")
    c = sub.add_parser("cluster", help="a local cluster of separate processes")
    c.add_argument("action", choices=["start", "status", "stop"])
    c.add_argument("--dir", default=str(DEFAULT_CLUSTER_DIR))
    c.add_argument("--tablet-servers", type=int, default=3)
    c.add_argument("--coordinators", type=int, default=1)
    c.add_argument("--port", type=int, default=9123, help="coordinator port (the bootstrap address)")
    t = sub.add_parser("tiering", help="the lake tiering job (PyFlink) and its progress")
    t.add_argument("action", choices=["start", "status"])
    t.add_argument("--bootstrap-servers", required=True)
    tb = sub.add_parser("table", help="list tables, or describe one: definition, buckets (leader, ISR, offsets), rows")
    tb.add_argument("action", choices=["list", "describe"])
    tb.add_argument("name", nargs="?", help="list: a database (default: all); describe: DATABASE.TABLE")
    tb.add_argument("--bootstrap-servers", default="127.0.0.1:9123")
    q = sub.add_parser("sql", help="run Flink SQL (PyFlink) with the Fluss connector and catalog fluss_catalog")
    q.add_argument("-f", "--file", help="SQL script (statements end with ';'); without it, read stdin")
    q.add_argument("--bootstrap-servers", default="127.0.0.1:9123")
    q.add_argument("--mode", choices=["batch", "streaming"], default="streaming", help="execution.runtime-mode")
    q.add_argument("-D", dest="define", action="append", help="a Flink option: key=value")
    add_gateway_parser(sub)
    args, rest = parser.parse_known_args(argv)
    if rest and not (args.command == "tiering" and args.action == "start"):
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    try:
        if getattr(args, "handler", None) is not None:
            return args.handler(args)
        if args.command == "cluster":
            return _cluster(args)
        if args.command == "tiering":
            return _tiering(args, rest)
        if args.command == "table":
            return _table(args)
        if args.command == "sql":
            from fluss.flink.sql import main as sql_main

            return sql_main(args.bootstrap_servers, args.file, args.mode, _overrides(args.define or []))
        return _run_server(args.command, args)
    except FlussError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
