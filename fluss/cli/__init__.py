"""The ``fluss`` command: run servers, a local cluster, tables and databases, Flink SQL and the lake tiering job.

    fluss cluster start [--tablet-servers 3] [--config server.yaml] [-D key=value ...]   (also: status, stop)
    fluss database list | create NAME | drop NAME
    fluss table list | describe | create | drop | scan | produce  [DATABASE.TABLE] [options]
    fluss sql [-f script.sql] [--mode streaming|batch] [-D key=value ...] [--verbose]
    fluss tiering start [--once] | status
    fluss gateway --bootstrap-servers HOST:PORT [--port 8080] [--cluster ID=HOST:PORT ...]
    fluss dashboard [--bootstrap-servers HOST:PORT] [--port 8081]
    fluss coordinator | tablet-server --config server.yaml [-D key=value ...]

Commands that talk to a cluster take --bootstrap-servers (default 127.0.0.1:9123, where `fluss cluster start`
puts the coordinator). `fluss COMMAND --help` lists every option with its default.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from fluss.cli.common import HelpFormatter, add_bootstrap, client_properties, parse_overrides, quiet_logging
from fluss.errors import FlussError

__all__ = ["main"]


def _run_server(args: argparse.Namespace) -> int:
    import logging

    from fluss.server.config import ServerConfig
    from fluss.server.logging_setup import configure as configure_logging
    from fluss.server.parent_watch import watch_from_environment

    config = ServerConfig.load(args.config, parse_overrides(args.define))
    configure_logging(config.process_name(args.command), config.as_dict())
    watch_from_environment()
    log = logging.getLogger(f"fluss.server.{args.command}")
    try:
        config.check(log.warning)
    except FlussError as e:
        log.error("invalid server configuration, not starting: %s", e.message)
        return 2
    if args.command == "coordinator":
        from fluss.server.coordinator.server import CoordinatorServer

        server = CoordinatorServer(config)
    else:
        from fluss.server.tablet.server import TabletServer

        server = TabletServer(config)
    asyncio.run(server.run())
    return 0


def _run_sql(args: argparse.Namespace) -> int:
    from fluss.flink.sql import main as sql_main

    props = client_properties(args)
    bootstrap = props.pop("bootstrap.servers", args.bootstrap_servers)
    return sql_main(bootstrap, args.file, args.mode, parse_overrides(args.define), verbose=args.verbose,
                    client_options=props)


def build_parser() -> argparse.ArgumentParser:
    from fluss.cli import cluster_cmd, table_cmd, tiering_cmd
    from fluss.dashboard.command import add_parser as add_dashboard_parser
    from fluss.gateway.command import add_parser as add_gateway_parser

    parser = argparse.ArgumentParser(prog="fluss", description=__doc__, formatter_class=HelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    cluster_cmd.add_parser(sub)
    table_cmd.add_parsers(sub)
    q = sub.add_parser("sql", help="Flink SQL (PyFlink) with the Fluss connector and the catalog fluss_catalog",
                       formatter_class=HelpFormatter,
                       description="Runs Flink SQL statements against a Fluss cluster: a script (-f), statements "
                                   "piped to stdin, or an interactive shell on a terminal (statements end with "
                                   "';', line editing and history in ~/.fluss/sql_history, QUIT; to leave).\n"
                                   "The session uses the catalog fluss_catalog, created for you; a failing "
                                   "statement is shown with its line and its root cause.")
    q.add_argument("-f", "--file", default=None, help="SQL script (statements end with ';'); without it: stdin")
    add_bootstrap(q)
    q.add_argument("--mode", choices=["batch", "streaming"], default="streaming", help="execution.runtime-mode")
    q.add_argument("-D", dest="define", action="append", default=None, metavar="KEY=VALUE",
                   help="a Flink option (repeatable)")
    q.add_argument("--verbose", "-v", action="store_true", help="show the whole Python and Java trace of errors")
    q.set_defaults(run=_run_sql)
    tiering_cmd.add_parser(sub)
    add_gateway_parser(sub)
    add_dashboard_parser(sub)
    _add_server_parsers(sub)
    return parser


SERVER_COMMANDS = ("coordinator", "tablet-server")


def _add_server_parsers(sub) -> None:
    for kind in SERVER_COMMANDS:
        p = sub.add_parser(kind, help=f"run a {kind} in the foreground", formatter_class=HelpFormatter)
        p.add_argument("--config", "-c", default=None, help="server.yaml with Fluss's server options")
        p.add_argument("-D", dest="define", action="append", default=None, metavar="KEY=VALUE",
                       help="a server option (repeatable; wins over --config)")
        p.set_defaults(run=_run_server)


def _server_parser() -> argparse.ArgumentParser:
    """Only the server commands: a server process does not import the client commands' modules (the tiering
    job's PyFlink, the gateway, the dashboard), which would add a good part of a second to its start."""
    parser = argparse.ArgumentParser(prog="fluss", description=__doc__, formatter_class=HelpFormatter)
    _add_server_parsers(parser.add_subparsers(dest="command", required=True, metavar="COMMAND"))
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = _server_parser() if argv[:1] and argv[0] in SERVER_COMMANDS else build_parser()
    args = parser.parse_args(argv)
    if args.command not in SERVER_COMMANDS:
        quiet_logging()
    run = getattr(args, "run", None) or args.handler  # the gateway's parser names it handler
    try:
        return run(args)
    except FlussError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
