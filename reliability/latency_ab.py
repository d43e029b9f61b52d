"""Paired A/B append→poll latency of two source trees: ``python -m reliability.latency_ab --a DIR --b DIR``.

The benchmark's ``log.latency`` scenario (``bench.fluss_log.measure_latency``: 100 rows every 10 ms, a consumer
polling with ``poll_arrow``) of two trees on the same machine at the same time of day: one cluster whose servers
run tree A and one whose servers run tree B (``PYTHONPATH``), and rounds alternating between them, each round a
fresh client process running that tree's client and scenario code (``--child``). It reports the median p50/p99
of each tree and the CPU per row of the client process (producer and consumer) and of the tablet servers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


async def _child(bootstrap: str, table: str, seconds: float) -> dict:
    """One round in this process (run with the tree under test on ``PYTHONPATH``)."""
    from dataclasses import replace

    from bench import fluss_log
    from bench.model import QUICK

    conn = await fluss_log._connect(bootstrap)
    try:
        path = await fluss_log._create_table(conn, table, 1)
    finally:
        await fluss_log._close(conn)
    profile = replace(QUICK, rounds=1, latency_round_s=seconds)
    p0 = time.process_time()
    p50, p99 = await fluss_log.measure_latency(bootstrap, path, profile, {})
    rows = round((fluss_log.LATENCY_WARMUP_S + seconds) / fluss_log.TICK_S) * round(profile.latency_rate * 0.01)
    return {"p50": p50.rounds[0], "p99": p99.rounds[0], "client_cpu_s": time.process_time() - p0, "rows": rows}


def _round(tree: Path, bootstrap: str, table: str, seconds: float) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", "--bootstrap", bootstrap,
                          "--table", table, "--seconds", str(seconds)], cwd=tree, env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def run(a: Path, b: Path, rounds: int, seconds: float) -> dict[str, list[dict]]:
    from reliability.trees import (  # here: a --child runs another tree
        cpu_seconds,
        start_cluster,
        tablet_server_pids,
    )

    clusters = {"A": start_cluster(a), "B": start_cluster(b)}
    results: dict[str, list[dict]] = {"A": [], "B": []}
    try:
        for r in range(rounds):
            for k in (("A", "B") if r % 2 == 0 else ("B", "A")):
                c = clusters[k]
                pids = tablet_server_pids(c)
                s0 = cpu_seconds(pids)
                res = _round(a if k == "A" else b, c.bootstrap_servers, f"lat{r}", seconds)
                res["server_cpu_s"] = cpu_seconds(pids) - s0
                results[k].append(res)
                print(f"round {r} {k}: p50 {res['p50']:.2f} ms, p99 {res['p99']:.2f} ms, client CPU "
                      f"{res['client_cpu_s'] / res['rows'] * 1e6:.1f} us/row, servers "
                      f"{res['server_cpu_s'] / res['rows'] * 1e6:.1f} us/row", flush=True)
    finally:
        for c in clusters.values():
            c.stop()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m reliability.latency_ab", description=__doc__)
    parser.add_argument("--a", type=Path, help="source tree of variant A (e.g. main)")
    parser.add_argument("--b", type=Path, help="source tree of variant B")
    parser.add_argument("--rounds", type=int, default=6, help="rounds per tree")
    parser.add_argument("--seconds", type=float, default=5.0, help="measured seconds per round (after 1 s warm-up)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    parser.add_argument("--table", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(_child(args.bootstrap, args.table, args.seconds))))
        return
    if args.a is None or args.b is None:
        parser.error("--a and --b are required")
    results = run(args.a.resolve(), args.b.resolve(), args.rounds, args.seconds)
    for k, tree in (("A", args.a), ("B", args.b)):
        rs = results[k]
        med = {m: statistics.median(r[m] for r in rs) for m in ("p50", "p99")}
        cpu = statistics.median(r["client_cpu_s"] / r["rows"] * 1e6 for r in rs)
        srv = statistics.median(r["server_cpu_s"] / r["rows"] * 1e6 for r in rs)
        print(f"{k} {tree}: p50 {med['p50']:.2f} ms (min {min(r['p50'] for r in rs):.2f}, max "
              f"{max(r['p50'] for r in rs):.2f}), p99 {med['p99']:.2f} ms (min {min(r['p99'] for r in rs):.2f}, "
              f"max {max(r['p99'] for r in rs):.2f}); CPU per row: client {cpu:.1f} us, tablet servers {srv:.1f} us")


if __name__ == "__main__":
    main()
