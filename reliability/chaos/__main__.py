"""``python -m reliability.chaos [--duration S] [--faults a,b] [--seed N] [--out DIR]``: one nemesis run
(``make chaos``); exits 1 if the checker found an anomaly."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from reliability.chaos import nemesis
from reliability.chaos.runner import RunConfig, run, summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reliability.chaos", description=__doc__)
    parser.add_argument("--duration", type=float, default=300.0, help="seconds of faults (default 300)")
    parser.add_argument("--faults", default="all", help=f"comma-separated, or 'all': {','.join(nemesis.FAULTS)}")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="directory for history.jsonl and report.json")
    parser.add_argument("--no-network", action="store_true", help="no network namespaces (no network faults)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    faults = list(nemesis.FAULTS) if args.faults == "all" else [f.strip() for f in args.faults.split(",") if f]
    unknown = set(faults) - set(nemesis.FAULTS)
    if unknown:
        parser.error(f"unknown faults: {', '.join(sorted(unknown))}")
    report = run(RunConfig(duration_s=args.duration, faults=faults, seed=args.seed, output=args.out,
                           use_network=not args.no_network))
    print(summary(report))
    return 0 if report["valid"] else 1


if __name__ == "__main__":
    sys.exit(main())
