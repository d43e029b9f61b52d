"""``python -m bench [--quick | --full] [--only FAMILY,...]``: runs the suite (families: raw, fluss, gateway,
recovery, reassign, remote, tiering, flink, metrics, redis, kafka, kafka3, upstream), prints the table and writes
``bench/results/latest.json``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench import report, runner
from bench.model import FULL, QUICK


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="a few minutes (the default; make bench)")
    mode.add_argument("--full", action="store_true", help="longer rounds and more data (make bench-full)")
    parser.add_argument("--only", default=",".join(runner.FAMILIES),
                        help=f"comma-separated families to run (default: all of {','.join(runner.FAMILIES)})")
    parser.add_argument("--output", default=str(report.RESULTS), help="where to write the JSON results")
    args = parser.parse_args(argv)
    families = tuple(f.strip() for f in args.only.split(",") if f.strip())
    unknown = set(families) - set(runner.FAMILIES)
    if unknown:
        parser.error(f"unknown families: {', '.join(sorted(unknown))}")
    profile = FULL if args.full else QUICK
    doc = runner.run(profile, families)
    path = report.write(doc, Path(args.output))
    runner.print_summary(doc)
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
