"""``fluss dashboard --bootstrap-servers HOST:PORT [--port 8081] [--host 127.0.0.1] [--interval 2]``: serves the web
dashboard of a cluster with uvicorn until interrupted."""

from __future__ import annotations

import argparse

from fluss.cli.common import HelpFormatter, add_bootstrap


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("dashboard", help="web dashboard of a cluster: servers, tables, buckets, live charts",
                       description=__doc__, formatter_class=HelpFormatter)
    add_bootstrap(p)
    p.add_argument("--port", type=int, default=8081, help="HTTP port of the dashboard")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (0.0.0.0: every interface)")
    p.add_argument("--interval", type=float, default=2.0, help="seconds between two scrapes of the servers' metrics")
    p.set_defaults(run=run)
    return p


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from fluss.dashboard.app import create_app

    app = create_app(args.bootstrap_servers, args.interval)
    print(f"Fluss dashboard on http://{args.host}:{args.port}/ (cluster {args.bootstrap_servers})", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0
