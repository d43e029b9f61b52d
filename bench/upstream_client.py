"""This suite's log scenarios driven by the official Python client (``pyfluss``) against Apache Fluss.

``bench.upstream`` starts this module inside the pyfluss venv (``bench/.peers/pyfluss-venv``), where
``import fluss`` is the official client, with only this ``bench`` package on the path. It runs the very code of
``bench.fluss_log.run_scenarios`` and prints the measurements as one JSON line after ``RESULT_MARK``.
"""

from __future__ import annotations

import argparse
import asyncio
import json

from bench import fluss_log
from bench.model import FULL, QUICK

RESULT_MARK = "BENCH-RESULT "


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--profile", choices=["quick", "full"], default="quick")
    parser.add_argument("--pids", default="{}", help="JSON object: server name -> pid, for the memory monitor")
    args = parser.parse_args()
    profile = FULL if args.profile == "full" else QUICK
    pids = {k: int(v) for k, v in json.loads(args.pids).items()}
    measurements = asyncio.run(fluss_log.run_scenarios(args.bootstrap, pids, profile, system="apache-fluss"))
    print(RESULT_MARK + json.dumps([m.to_json() for m in measurements]), flush=True)


if __name__ == "__main__":
    main()
