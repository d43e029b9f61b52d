"""``fluss gateway``: the command-line entry of the gateway (registered by ``fluss.cli``; imports the web
stack only when the command runs)."""

from __future__ import annotations

import argparse

from fluss.gateway.config import DEFAULT_CLUSTER_ID


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("gateway", help="run the REST gateway (HTTP/JSON and Arrow over the Python client)")
    p.add_argument("--bootstrap-servers", help="the cluster to front (its id is 'default')")
    p.add_argument("--cluster", action="append", default=[], metavar="ID=HOST:PORT[,HOST:PORT]",
                   help="a cluster to front under its own id (repeatable; one gateway may front several)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--client-option", action="append", default=[], metavar="KEY=VALUE",
                   help="a client option, e.g. writer.acks=all or writer.batch-timeout=5ms (repeatable)")
    p.add_argument("--max-body-size", default="64mb", help="largest request body (default 64mb)")
    p.add_argument("--ledger-database", default="fluss_gateway",
                   help="database of the exactly-once write ledger (Idempotency-Key)")
    p.add_argument("--dashboard", nargs="?", const=DEFAULT_CLUSTER_ID, default=None, metavar="CLUSTER_ID",
                   help="also serve the web dashboard of a cluster at /dashboard (default cluster: 'default')")
    p.add_argument("--log-level", default="warning")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from fluss.config_values import parse_memory_size
    from fluss.gateway.app import create_app
    from fluss.gateway.config import DEFAULT_CLUSTER_ID, GatewayConfig, parse_clusters, parse_options

    clusters = parse_clusters(args.cluster)
    if args.bootstrap_servers:
        if DEFAULT_CLUSTER_ID in clusters:
            raise SystemExit(f"--bootstrap-servers names cluster '{DEFAULT_CLUSTER_ID}', also given by --cluster")
        clusters[DEFAULT_CLUSTER_ID] = args.bootstrap_servers
    if not clusters:
        raise SystemExit("fluss gateway needs --bootstrap-servers or at least one --cluster ID=ADDRESSES")
    try:
        config = GatewayConfig(clusters, client_options=parse_options(args.client_option),
                               max_body_bytes=parse_memory_size(args.max_body_size, "--max-body-size"),
                               ledger_database=args.ledger_database, dashboard_cluster=args.dashboard)
    except ValueError as e:
        raise SystemExit(f"fluss gateway: {e}") from None
    uvicorn.run(create_app(config), host=args.host, port=args.port, log_level=args.log_level,
                access_log=args.log_level in ("debug", "info"), timeout_graceful_shutdown=10)
    return 0
