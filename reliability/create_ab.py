"""Paired A/B of CREATE TABLE at scale for two source trees: ``python -m reliability.create_ab --a DIR --b DIR``.

The scale suite's ``create`` scenario (``bench.scale.ddl``: a log table of N buckets, RF=1, and an auto-partitioned
table with P partitions of one bucket created inside the CREATE TABLE) against two clusters of 3 tablet servers,
one whose servers run tree A and one tree B (``PYTHONPATH``), rounds alternating between them. Each create is
timed until the call returns and until the table is usable (every bucket's leader answers ``ListOffsets``); the
tablet servers' CPU seconds of the create are read from ``/proc``, until usable and until the servers are idle again
(what the create left for later: e.g. remote-log loads and first checkpoints). A create that fails (e.g. ``ConnectionLoss``
of an overloaded ZooKeeper) is counted, not retried. ``--session-timeout``: the servers' ZooKeeper session
(LocalCluster's 3 s by default, whose 2 s read timeout a 2,050-node transaction outlasted on a loaded machine).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path

import fluss
from bench.data import SCHEMA
from bench.scale.ddl import PARTITION_SCHEMA, _timed_create
from bench.scale.throughput import DATABASE, settle


def _descriptors(buckets: int, partitions: int) -> dict[str, tuple[fluss.TableDescriptor, int, int]]:
    return {
        f"{buckets} buckets": (fluss.TableDescriptor(fluss.Schema(SCHEMA), bucket_count=buckets,
                                                     properties={"table.replication.factor": "1"}), buckets, 0),
        f"{partitions} partitions": (fluss.TableDescriptor(PARTITION_SCHEMA, partition_keys=["dt"], bucket_count=1,
                                                           properties={
            "table.replication.factor": "1", "table.auto-partition.enabled": "true",
            "table.auto-partition.time-unit": "DAY", "table.auto-partition.num-precreate": str(partitions),
            "table.auto-partition.num-retention": "1"}), 1, partitions),
    }


async def _one(bootstrap: str, name: str, desc: fluss.TableDescriptor, buckets: int, partitions: int,
               tablets: list[int]) -> dict:
    from reliability.trees import cpu_seconds

    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": bootstrap}))
    try:
        admin = conn.get_admin()
        await admin.create_database(DATABASE, ignore_if_exists=True)
        path = fluss.TablePath(DATABASE, "ab_" + name.replace(" ", "_"))
        await admin.drop_table(path, ignore_if_not_exists=True)
        await settle(tablets)
        cpu0 = cpu_seconds(tablets)
        try:
            returned, usable = await _timed_create(conn, path, desc, buckets, partitions)
        except Exception as e:  # noqa: BLE001 - counted
            return {"error": f"{type(e).__name__}: {e}"[:200]}
        cpu = cpu_seconds(tablets) - cpu0
        await settle(tablets)  # what the create left for later (e.g. remote-log loads, first checkpoints)
        settled = cpu_seconds(tablets) - cpu0
        await admin.drop_table(path)
        await settle(tablets)  # the drop's file deletions run here, not during the other tree's next create
        return {"returned_ms": returned * 1000, "usable_ms": usable * 1000, "tablet_cpu_s": cpu,
                "tablet_cpu_settled_s": settled}
    finally:
        await conn.aclose()


def run(a: Path, b: Path, rounds: int, buckets: int, partitions: int, session_timeout: str) -> dict:
    from fluss.server.cluster import LocalCluster
    from reliability.trees import start_cluster, tablet_server_pids

    clusters = {}
    for label, tree in (("A", a), ("B", b)):
        clusters[label] = start_cluster(tree, session_timeout=session_timeout)
    results: dict[str, dict[str, list[dict]]] = {"A": {}, "B": {}}
    try:
        for r in range(rounds):
            order = ("A", "B") if r % 2 == 0 else ("B", "A")
            for name, (desc, nb, np_) in _descriptors(buckets, partitions).items():
                for label in order:
                    cluster: LocalCluster = clusters[label]
                    got = asyncio.run(_one(cluster.bootstrap_servers, name, desc, nb, np_,
                                           tablet_server_pids(cluster)))
                    results[label].setdefault(name, []).append(got)
                    print(f"round {r} {label} {name}: {got}", flush=True)
    finally:
        for cluster in clusters.values():
            cluster.stop()
    return results


def report(results: dict) -> str:
    lines = []
    for name in results["A"]:
        for label in ("A", "B"):
            rs = results[label][name]
            ok = [x for x in rs if "error" not in x]
            failed = len(rs) - len(ok)
            if not ok:
                lines.append(f"{name} {label}: all {failed} failed")
                continue
            each = ", ".join(f"{x['usable_ms']:.0f}" for x in ok)
            med = {k: statistics.median(x[k] for x in ok)
                   for k in ("returned_ms", "usable_ms", "tablet_cpu_s", "tablet_cpu_settled_s")}
            lines.append(f"{name} {label}: returned {med['returned_ms']:.0f} ms, usable {med['usable_ms']:.0f} ms, "
                         f"tablet servers' CPU {med['tablet_cpu_s']:.2f} s until usable, "
                         f"{med['tablet_cpu_settled_s']:.2f} s until idle (median of {len(ok)}; {failed} failed; "
                         f"usable each: {each})")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--a", type=Path, required=True, help="tree A (e.g. a worktree of main)")
    parser.add_argument("--b", type=Path, required=True, help="tree B (e.g. this branch)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--buckets", type=int, default=1024)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--session-timeout", default="3s")
    args = parser.parse_args()
    t0 = time.monotonic()
    results = run(args.a.resolve(), args.b.resolve(), args.rounds, args.buckets, args.partitions,
                  args.session_timeout)
    print(report(results))
    print(f"took {time.monotonic() - t0:.0f}s")


if __name__ == "__main__":
    main()
