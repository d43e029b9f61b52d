"""``python -m reliability.fuzz [--requests N] [--seed S] [--out report.json]``: the protocol fuzzer
(``make fuzz``); exits 1 if a server went down, a request got no answer in time, an error named a server path,
or the protected data changed."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from reliability.fuzz import messages
from reliability.fuzz.runner import FuzzConfig, run, summary, write_report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reliability.fuzz", description=__doc__)
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--kinds", default=",".join(messages.KINDS))
    parser.add_argument("--out", type=Path, default=None,
                        help="where to write the JSON report (a file, or a directory to hold report.json)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    kinds = tuple(k.strip() for k in args.kinds.split(",") if k.strip())
    unknown = set(kinds) - set(messages.KINDS)
    if unknown:
        parser.error(f"unknown kinds: {', '.join(sorted(unknown))}")
    report = run(FuzzConfig(requests=args.requests, seed=args.seed, concurrency=args.concurrency, kinds=kinds))
    if args.out:
        write_report(report, args.out)
    print(summary(report))
    if report["violations"]["count"]:
        for v in report["violations"]["examples"]:
            print("  violation:", v)
    return 0 if report["valid"] else 1


if __name__ == "__main__":
    sys.exit(main())
