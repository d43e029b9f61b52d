"""``fluss tiering start|status``: the lake tiering job (PyFlink, ``tiering_job/``) and its progress.

``start --once`` tiers every lake-enabled table once and prints a line per table; without ``--once`` the job
runs continuously, tiering each table when its ``table.datalake.freshness`` has passed. With no lake-enabled
table there is nothing to tier: it says so (and how to enable the lake) and exits 1.
"""

from __future__ import annotations

import argparse
import json
import sys

from fluss.cli.common import HelpFormatter, add_bootstrap, client_properties, progress, run_client

LAKE_HINT = ("no table has table.datalake.enabled = true. The lake needs the cluster started with "
             "datalake.format = paimon (`fluss cluster start --config conf/server.yaml`) and tables created "
             "with 'table.datalake.enabled' = 'true'")


def add_parser(sub) -> None:
    from tiering_job.job import DEFAULT_PARALLELISM

    t = sub.add_parser("tiering", help="the lake tiering job (PyFlink) and its progress", description=__doc__,
                       formatter_class=HelpFormatter)
    t.add_argument("action", choices=["start", "status"], help="start the job, or show each lake table's progress")
    add_bootstrap(t)
    t.add_argument("--once", action="store_true", help="start: tier every lake table once, then exit")
    t.add_argument("--interval", default="5s", help="start (continuous): how often to look for tables to tier")
    t.add_argument("--parallelism", type=int, default=DEFAULT_PARALLELISM, help="start: tables tiered at once")
    t.add_argument("--warehouse", default=None,
                   help="start: Paimon warehouse (default: the one recorded in each table's properties)")
    t.add_argument("--json", action="store_true", help="start --once: print each table's result as JSON")
    t.set_defaults(run=run)


async def _lake_tables(conn) -> list:
    from fluss.lake.status import tiering_status

    return await tiering_status(conn)


def run(args: argparse.Namespace) -> int:
    tables = []

    async def status(conn) -> int:
        tables.extend(await _lake_tables(conn))
        return 0

    client = client_properties(args)
    run_client(client, status)
    if not tables:
        print(f"Nothing to tier at {args.bootstrap_servers}: {LAKE_HINT}", file=sys.stderr)
        return 1
    if args.action == "status":
        for table in tables:
            print(table.describe())
        return 0
    from fluss.flink.jvm_output import drain_gateway_stderr
    from tiering_job.job import parse_duration_s, run_continuous, run_once

    drain_gateway_stderr()  # the job's JVM: warnings to a log file, Hadoop INFO lines off the console

    if not args.once:
        print(f"Tiering {len(tables)} lake table(s) continuously (every {args.interval}); Ctrl-C stops",
              file=sys.stderr)
        run_continuous(client, args.warehouse, args.parallelism, parse_duration_s(args.interval))
        return 0
    with progress() as bar:
        bar.add_task(f"tiering {len(tables)} lake table(s) once (a PyFlink job)", total=None)
        results = run_once(client, args.warehouse, args.parallelism)
    for r in results:
        print(json.dumps(r) if args.json else describe_result(r), flush=True)
    return 1 if any("error" in r for r in results) else 0


def describe_result(r: dict) -> str:
    """One line for a table's tiering result."""
    if "error" in r:
        return f"{r.get('table', '?')}: FAILED: {r['error']}"
    if r.get("skipped"):
        return f"{r['table']}: nothing new to tier"
    return (f"{r['table']}: {r.get('rows', 0)} row(s) into lake snapshot {r.get('snapshot_id')} "
            f"over {len(r.get('ranges', {}))} bucket(s) in {r.get('seconds', 0)}s")
