"""Paired A/B lookups of two source trees: ``python -m reliability.lookup_ab --a DIR --b DIR``.

The lookup path is client and server code, so each variant runs in a child process of its own tree
(``PYTHONPATH`` and working directory = the tree): the child starts a ``LocalCluster`` of 3 tablet servers (which
run the same tree), fills a 3-bucket primary-key table with the ``bench`` rows (key ``seq``) and then runs one
round per line it reads. The parent alternates the rounds between the two children (order flipped every round), so
both see the same neighbours. A round is what ``bench/fluss_kv.py`` measures: batched lookups (``asyncio.gather``
of 1,000 keys at a time, client defaults) and single lookups one at a time (``lookup.batch-timeout`` 1 ms), with
the CPU time per lookup of the client process and of the tablet servers. With ``--redis`` each round also runs
the Redis peer of ``bench/redis_peer.py`` over the same rows (pipelined ``HGETALL`` 1,000 at a time, one ``HGETALL``
at a time), so the goal's comparison is made in the same run. The parent prints the medians and ratios.
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

import numpy as np

from reliability.trees import cpu_seconds, tablet_server_pids

KEYS = 150_000
CONCURRENCY = 1_000


# ---------------------------------------------------------------- child (one tree)


async def _child(batched_keys: int, single_keys: int) -> None:
    import fluss
    from bench.data import SCHEMA, make_batch
    from fluss.server.cluster import LocalCluster

    with LocalCluster(tablet_servers=3) as cluster:
        config = fluss.Config({"bootstrap.servers": cluster.bootstrap_servers})
        conn = await fluss.FlussConnection.create(config)
        single_config = fluss.Config({"bootstrap.servers": cluster.bootstrap_servers})
        single_config.lookup_batch_timeout_ms = 1
        single_conn = await fluss.FlussConnection.create(single_config)
        admin = conn.get_admin()
        await admin.create_database("ab", ignore_if_exists=True)
        path = fluss.TablePath("ab", "kv")
        await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(SCHEMA, primary_keys=["seq"]),
                                                             bucket_count=3), ignore_if_exists=True)
        table = await conn.get_table(path)
        writer = table.new_upsert().create_writer()
        for start in range(0, KEYS, 10_000):
            writer.upsert_arrow_batch(make_batch(10_000, seed=start, start_seq=start))
        await writer.flush()
        lookuper = table.new_lookup().create_lookuper()
        single = (await single_conn.get_table(path)).new_lookup().create_lookuper()
        rng = np.random.default_rng(3)
        print(json.dumps({"ready": True, "client_pid": os.getpid(),
                          "servers": [cluster.tablet_server_pid(s) for s in cluster.live_tablet_servers()]}),
              flush=True)
        for line in sys.stdin:
            if line.strip() != "round":
                break
            sample = rng.integers(0, KEYS, batched_keys).tolist()
            s0, c0, t0 = cpu_seconds(tablet_server_pids(cluster)), time.process_time(), time.perf_counter()
            found = 0
            for lo in range(0, batched_keys, CONCURRENCY):
                got = await asyncio.gather(*(lookuper.lookup({"seq": k}) for k in sample[lo:lo + CONCURRENCY]))
                found += sum(g is not None for g in got)
            dt = time.perf_counter() - t0
            batched = {"rate": batched_keys / dt, "client_us": (time.process_time() - c0) / batched_keys * 1e6,
                       "server_us": (cpu_seconds(tablet_server_pids(cluster)) - s0) / batched_keys * 1e6}
            if found != batched_keys:
                raise RuntimeError(f"batched lookups found {found} of {batched_keys}")
            lat = np.empty(single_keys)
            s0, c0 = cpu_seconds(tablet_server_pids(cluster)), time.process_time()
            for i, k in enumerate(rng.integers(0, KEYS, single_keys).tolist()):
                t0 = time.perf_counter()
                if await single.lookup({"seq": k}) is None:
                    raise RuntimeError(f"lookup of existing key {k} found nothing")
                lat[i] = (time.perf_counter() - t0) * 1000
            out = {"batched": batched, "p50": float(np.percentile(lat, 50)), "p99": float(np.percentile(lat, 99)),
                   "single_client_us": (time.process_time() - c0) / single_keys * 1e6,
                   "single_server_us": (cpu_seconds(tablet_server_pids(cluster)) - s0) / single_keys * 1e6}
            print(json.dumps(out), flush=True)
        await lookuper.aclose()
        await single.aclose()
        await single_conn.aclose()
        await conn.aclose()


# ---------------------------------------------------------------- parent


def _spawn(tree: Path, batched_keys: int, single_keys: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.Popen([sys.executable, "-m", "reliability.lookup_ab", "--child", "--batched", str(batched_keys),
                             "--single", str(single_keys)], cwd=tree, env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    return proc


def _read(proc: subprocess.Popen) -> dict:
    line = proc.stdout.readline()
    if not line:
        raise RuntimeError(f"child {proc.pid} ended (exit code {proc.wait()})")
    return json.loads(line)


class _Redis:
    """The Redis peer: ``bench.redis_peer.RedisServer`` holding the same rows as hashes, one round at a time."""

    def __init__(self, batched_keys: int, single_keys: int) -> None:
        import redis

        from bench.data import make_batch
        from bench.redis_peer import RedisServer

        self.server = RedisServer().__enter__()
        self.client = redis.Redis(port=self.server.port)
        self.batched_keys, self.single_keys = batched_keys, single_keys
        self.rng = np.random.default_rng(3)
        pipe = self.client.pipeline(transaction=False)
        for start in range(0, KEYS, 10_000):
            for row in make_batch(10_000, seed=start, start_seq=start).to_pylist():
                pipe.hset(f"kv:{row['seq']}", mapping=row)
            pipe.execute()

    def round(self) -> dict:
        sample = self.rng.integers(0, KEYS, self.batched_keys).tolist()
        t0 = time.perf_counter()
        found = 0
        for lo in range(0, len(sample), CONCURRENCY):
            pipe = self.client.pipeline(transaction=False)
            for k in sample[lo:lo + CONCURRENCY]:
                pipe.hgetall(f"kv:{k}")
            found += sum(bool(v) for v in pipe.execute())
        rate = len(sample) / (time.perf_counter() - t0)
        if found != len(sample):
            raise RuntimeError(f"HGETALL found {found} of {len(sample)} keys")
        lat = np.empty(self.single_keys)
        for i, k in enumerate(self.rng.integers(0, KEYS, self.single_keys).tolist()):
            t0 = time.perf_counter()
            self.client.hgetall(f"kv:{k}")
            lat[i] = (time.perf_counter() - t0) * 1000
        return {"batched": rate, "p50": float(np.percentile(lat, 50)), "p99": float(np.percentile(lat, 99))}

    def close(self) -> None:
        self.client.close()
        self.server.__exit__(None, None, None)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m reliability.lookup_ab", description=__doc__)
    parser.add_argument("--a", type=Path, help="source tree of variant A (e.g. main)")
    parser.add_argument("--b", type=Path, help="source tree of variant B")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--batched", type=int, default=5_000, help="keys per batched round")
    parser.add_argument("--single", type=int, default=300, help="single lookups per round")
    parser.add_argument("--redis", action="store_true", help="also a Redis round per round (bench/redis_peer.py)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        asyncio.run(_child(args.batched, args.single))
        return
    if args.a is None or args.b is None:
        parser.error("--a and --b are required")
    trees = {"A": args.a.resolve(), "B": args.b.resolve()}
    procs = {k: _spawn(t, args.batched, args.single) for k, t in trees.items()}
    results: dict[str, list[dict]] = {"A": [], "B": []}
    peer = _Redis(args.batched, args.single) if args.redis else None
    redis_rounds: list[dict] = []
    try:
        for k, p in procs.items():
            ready = _read(p)
            print(f"{k} ({trees[k]}): client pid {ready['client_pid']}, tablet servers {ready['servers']}", flush=True)
        for r in range(args.rounds + 1):
            for k in (("A", "B") if r % 2 == 0 else ("B", "A")):
                procs[k].stdin.write("round\n")
                procs[k].stdin.flush()
                got = _read(procs[k])
                if r:  # the first round warms up
                    results[k].append(got)
            if peer is not None:
                got = peer.round()
                if r:
                    redis_rounds.append(got)
    finally:
        if peer is not None:
            peer.close()
        for p in procs.values():
            if p.poll() is None:
                p.stdin.close()
        for p in procs.values():
            p.wait(timeout=60)

    def med(k: str, get) -> float:
        return statistics.median(get(x) for x in results[k])

    figures = [("single p50 ms", lambda x: x["p50"]), ("single p99 ms", lambda x: x["p99"]),
               ("single client CPU us/lookup", lambda x: x["single_client_us"]),
               ("single server CPU us/lookup", lambda x: x["single_server_us"]),
               ("batched rows/s", lambda x: x["batched"]["rate"]),
               ("batched client CPU us/key", lambda x: x["batched"]["client_us"]),
               ("batched server CPU us/key", lambda x: x["batched"]["server_us"])]
    print(f"medians of {args.rounds} paired rounds (A = {trees['A']}, B = {trees['B']}):")
    for name, get in figures:
        a, b = med("A", get), med("B", get)
        print(f"  {name:30s} A {a:10.3f}  B {b:10.3f}  B/A {b / a:6.3f}   "
              f"(A {min(map(get, results['A'])):.3f}-{max(map(get, results['A'])):.3f}, "
              f"B {min(map(get, results['B'])):.3f}-{max(map(get, results['B'])):.3f})")

    if redis_rounds:
        print("  redis (same rounds): " + ", ".join(
            f"{name} {statistics.median(x[key] for x in redis_rounds):.3f} "
            f"({min(x[key] for x in redis_rounds):.3f}-{max(x[key] for x in redis_rounds):.3f})"
            for name, key in (("single p50 ms", "p50"), ("single p99 ms", "p99"), ("batched rows/s", "batched"))))


if __name__ == "__main__":
    main()
