"""Paired A/B scan throughput of two source trees: ``python -m reliability.scan_ab --a DIR --b DIR``.

Starts one cluster whose servers run tree A and one whose servers run tree B (``PYTHONPATH``, as
``reliability.append_ab``), fills both with the same ``bench`` rows (ZSTD, 3 buckets, RF=1), then alternates
rounds between them; each round is a client process of the same tree (the scanner is client code) that runs a
full and a projected ``to_arrow()`` of the whole table with the client defaults, the ``bench`` scenarios
``log.scan.full`` / ``log.scan.projected``. Per scan it records rows/s, the client's CPU per row
(``time.process_time``) and the tablet servers' CPU per row (``/proc/<pid>/stat``): CPU per row is far steadier
than rows/s on a shared machine. Prints the medians of each side and the B/A ratios.
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

from reliability.trees import cpu_seconds, start_cluster

SCANS = ("full", "projected")


async def _client(bootstrap: str, pids: list[int], scans: int) -> dict[str, list[list[float]]]:
    """Runs in the child: ``scans`` rounds of a full and a projected scan, after one warm-up of each."""
    import fluss
    from bench.data import PROJECTED

    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": bootstrap}))
    table = await conn.get_table(fluss.TablePath("ab", "scan"))
    out: dict[str, list[list[float]]] = {k: [] for k in SCANS}
    try:
        for r in range(scans + 1):
            for kind in SCANS:
                scan = table.new_scan()
                if kind == "projected":
                    scan = scan.project_by_name(PROJECTED)
                scanner = await scan.create_record_batch_log_scanner()
                scanner.subscribe_buckets(dict.fromkeys(range(3), fluss.EARLIEST_OFFSET))
                s0, c0, t0 = cpu_seconds(pids), time.process_time(), time.perf_counter()
                rows = (await scanner.to_arrow()).num_rows
                dt, c1, s1 = time.perf_counter() - t0, time.process_time(), cpu_seconds(pids)
                await scanner.aclose()
                if r:
                    out[kind].append([rows / dt, (c1 - c0) / rows * 1e9, (s1 - s0) / rows * 1e9])
    finally:
        await conn.close()
    return out


async def _fill(bootstrap: str, rows: int) -> None:
    import fluss
    from bench.data import SCHEMA, make_batch

    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": bootstrap}))
    try:
        admin = conn.get_admin()
        await admin.create_database("ab", ignore_if_exists=True)
        path = fluss.TablePath("ab", "scan")
        await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(SCHEMA), bucket_count=3, properties={
            "table.log.arrow.compression.type": "ZSTD"}), ignore_if_exists=True)
        writer = (await conn.get_table(path)).new_append().create_writer()
        per = 250_000
        for r in range(max(1, rows // per)):
            writer.write_arrow_batch(make_batch(per, seed=r, start_seq=r * per))
            await writer.flush()
        await writer.aclose()
    finally:
        await conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--a", type=Path, required=True, help="tree A (e.g. a worktree of main)")
    parser.add_argument("--b", type=Path, default=Path.cwd(), help="tree B (default: this one)")
    parser.add_argument("--rounds", type=int, default=4, help="client processes per tree")
    parser.add_argument("--scans", type=int, default=3, help="counted scans of each kind per client process")
    parser.add_argument("--rows", type=int, default=1_250_000, help="rows in the table (bench quick: 1.25M)")
    parser.add_argument("--child", nargs=3, metavar=("BOOTSTRAP", "PIDS", "SCANS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        bootstrap, pids, scans = args.child
        result = asyncio.run(_client(bootstrap, [int(p) for p in pids.split(",")], int(scans)))
        print("RESULT " + json.dumps(result), flush=True)
        return
    trees = {"A": args.a.resolve(), "B": args.b.resolve()}
    clusters = {k: start_cluster(t) for k, t in trees.items()}
    results: dict[str, dict[str, list[list[float]]]] = {k: {s: [] for s in SCANS} for k in trees}
    try:
        for c in clusters.values():
            asyncio.run(_fill(c.bootstrap_servers, args.rows))
        for r in range(args.rounds):
            for k in ("A", "B") if r % 2 == 0 else ("B", "A"):
                c = clusters[k]
                pids = ",".join(str(c.tablet_server_pid(s)) for s in c.live_tablet_servers())
                env = {**os.environ, "PYTHONPATH": str(trees[k])}
                proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--a", str(trees["A"]), "--child",
                                       c.bootstrap_servers, pids, str(args.scans)], cwd=trees[k], env=env,
                                      capture_output=True, text=True, timeout=600, check=False)
                line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
                if line is None:
                    raise RuntimeError(f"client of tree {k} failed: {proc.stderr[-2000:]}")
                for s, rows in json.loads(line[7:]).items():
                    results[k][s] += rows
                print(f"round {r} {k}: " + ", ".join(f"{s} {statistics.median(x[0] for x in v) / 1e6:.2f}M"
                                                    for s, v in json.loads(line[7:]).items()), flush=True)
    finally:
        for c in clusters.values():
            c.stop()
    print(f"{'':10s} {'A rows/s':>10s} {'B rows/s':>10s} {'B/A':>6s} {'A cli ns':>9s} {'B cli ns':>9s} "
          f"{'A srv ns':>9s} {'B srv ns':>9s}   (medians; ns = CPU per row)")
    for s in SCANS:
        med = {k: [statistics.median(x[i] for x in results[k][s]) for i in range(3)] for k in trees}
        print(f"{s:10s} {med['A'][0] / 1e6:9.2f}M {med['B'][0] / 1e6:9.2f}M {med['B'][0] / med['A'][0]:6.2f} "
              f"{med['A'][1]:9.1f} {med['B'][1]:9.1f} {med['A'][2]:9.1f} {med['B'][2]:9.1f}")
    for k in trees:
        full, proj = (statistics.median(x[0] for x in results[k][s]) for s in SCANS)
        print(f"{k}: projected/full {proj / full:.2f}")


if __name__ == "__main__":
    main()
