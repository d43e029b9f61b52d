"""Paired A/B append throughput of two source trees: ``python -m reliability.append_ab --a DIR --b DIR``.

On a shared, noisy machine two benchmark runs minutes apart measure the neighbours as much as the code. This
starts one cluster whose servers run tree A and one whose servers run tree B (``PYTHONPATH``), and alternates
rounds between them: each round writes the same ``bench`` rows (``write_arrow_batch`` + ``flush``, acks=all,
ZSTD, 3 buckets) to one cluster, then the other, so both see the same load. It reports the median rows/s of
each and their ratio. Used to measure the cost of the leader's batch validation (docs/reliability.md).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from pathlib import Path

import fluss
from bench.data import SCHEMA, make_batch
from fluss.server.cluster import LocalCluster
from reliability.trees import cpu_seconds, start_cluster, tablet_server_pids


def _replication(factor: int) -> dict[str, str]:
    return {"default.replication.factor": str(factor)}


def _split_cpus() -> tuple[set[int], set[int]]:
    """The servers' CPUs and the client's: the upper half and the lower half of this process's CPUs."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        raise SystemExit("--pin needs at least 2 CPUs")
    half = len(cpus) // 2
    return set(cpus[half:]), set(cpus[:half])


async def _writer(cluster: LocalCluster, name: str):
    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": cluster.bootstrap_servers}))
    admin = conn.get_admin()
    await admin.create_database("ab", ignore_if_exists=True)
    path = fluss.TablePath("ab", name)
    await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(SCHEMA), bucket_count=3), ignore_if_exists=True)
    table = await conn.get_table(path)
    return conn, table.new_append().create_writer()


async def run(a: Path, b: Path, rounds: int, rows: int, replication: int, a_config: dict[str, str],
              b_config: dict[str, str], pin: bool = False) -> tuple[dict[str, list[float]], ...]:
    server_cpus, client_cpus = _split_cpus() if pin else (None, None)
    clusters = {"A": start_cluster(a, {**_replication(replication), **a_config}, server_cpus),
                "B": start_cluster(b, {**_replication(replication), **b_config}, server_cpus)}
    if client_cpus:
        os.sched_setaffinity(0, client_cpus)
    rates: dict[str, list[float]] = {"A": [], "B": []}
    cpu: dict[str, list[float]] = {"A": [], "B": []}  # tablet-server CPU microseconds per row, per round
    client_cpu: dict[str, list[float]] = {"A": [], "B": []}  # this process's (the client's), the same way
    try:
        writers = {k: await _writer(c, f"t{k}") for k, c in clusters.items()}
        batches = [make_batch(rows, seed=r, start_seq=r * rows) for r in range(rounds + 2)]
        for r, batch in enumerate(batches):
            order = ("A", "B") if r % 2 == 0 else ("B", "A")
            for k in order:
                writer = writers[k][1]
                c0, p0, t0 = cpu_seconds(tablet_server_pids(clusters[k])), time.process_time(), time.perf_counter()
                writer.write_arrow_batch(batch)
                await writer.flush()
                if r >= 2:  # warm-up rounds not counted
                    rates[k].append(rows / (time.perf_counter() - t0))
                    cpu[k].append((cpu_seconds(tablet_server_pids(clusters[k])) - c0) / rows * 1e6)
                    client_cpu[k].append((time.process_time() - p0) / rows * 1e6)
        for k, c in clusters.items():
            print(f"{k}: the leader {'refuses' if _refuses_contradicting_batch(c, f't{k}') else 'ACCEPTS'} a CRC-valid "
                  "batch whose header contradicts its body")
        for conn, writer in writers.values():
            close = getattr(writer, "aclose", None) or writer.close
            result = close()
            if asyncio.iscoroutine(result):
                await result
            await conn.aclose()
    finally:
        for c in clusters.values():
            c.stop()
    return rates, cpu, client_cpu


def _refuses_contradicting_batch(cluster: LocalCluster, table: str) -> bool:
    import struct

    import crc32c

    from fluss.record.log_batch import build_batch
    from reliability.raw import RawRpc

    raw_batch = bytearray(build_batch(make_batch(5), schema_id=1))
    struct.pack_into("<i", raw_batch, 20, 10)  # record count 10, body of 5
    struct.pack_into("<I", raw_batch, 0, crc32c.crc32c(bytes(raw_batch[4:])))
    with RawRpc(cluster.bootstrap_servers) as rpc:
        table_id = rpc.table_info("ab", table).table_id
        leader = rpc.buckets("ab", table)[0].leader_id
        return rpc.produce(leader, table_id, bytes(raw_batch)).error.code != 0


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m reliability.append_ab", description=__doc__)
    parser.add_argument("--a", type=Path, required=True, help="source tree of variant A (e.g. main)")
    parser.add_argument("--b", type=Path, required=True, help="source tree of variant B")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--replication", type=int, default=1)
    parser.add_argument("--pin", action="store_true",
                        help="run the servers of both clusters on one half of the CPUs and this client on the other "
                             "(the load generator does not compete with the servers it measures)")
    parser.add_argument("--a-config", action="append", default=[], metavar="KEY=VALUE", help="server option of A")
    parser.add_argument("--b-config", action="append", default=[], metavar="KEY=VALUE", help="server option of B")
    args = parser.parse_args()
    configs = [dict(kv.split("=", 1) for kv in opts) for opts in (args.a_config, args.b_config)]
    rates, cpu, client_cpu = asyncio.run(run(args.a.resolve(), args.b.resolve(), args.rounds, args.rows,
                                             args.replication, *configs, pin=args.pin))
    med = {k: statistics.median(v) for k, v in rates.items()}
    cpu_med = {k: statistics.median(v) for k, v in cpu.items()}
    client_med = {k: statistics.median(v) for k, v in client_cpu.items()}
    for k, tree in (("A", args.a), ("B", args.b)):
        print(f"{k} {tree}: median {med[k] / 1e6:.3f}M rows/s over {len(rates[k])} rounds "
              f"(min {min(rates[k]) / 1e6:.3f}M, max {max(rates[k]) / 1e6:.3f}M); CPU per row: tablet servers "
              f"{cpu_med[k]:.3f} us, client {client_med[k]:.3f} us")
    total = {k: cpu_med[k] + client_med[k] for k in cpu_med}
    print(f"tablet-server CPU per row B/A = {cpu_med['B'] / cpu_med['A']:.3f}; servers + client B/A = "
          f"{total['B'] / total['A']:.3f}")
    wins = sum(rb >= ra for ra, rb in zip(rates["A"], rates["B"], strict=True))
    print(f"B/A = {med['B'] / med['A']:.3f}; B was at least as fast as A in {wins} of {len(rates['A'])} paired rounds")


if __name__ == "__main__":
    main()
