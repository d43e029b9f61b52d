"""The throughput curves: append/scan rows/s against the bucket count, and against concurrent client processes.

``buckets``: a log table of N buckets (RF=1, bucket key ``seq`` so every bucket gets rows, ZSTD) over the 3 tablet
servers; per round one ``write_arrow_batch`` of ``bucket_rows`` rows + ``flush`` (rows/s), then a full scan of
everything written so far from the earliest offsets (``to_arrow``, client defaults; rows/s). One warm-up round.

``clients``: a 16-bucket table; K writer processes start at once (``bench.scale.worker``), each appending
``client_rows`` rows; aggregate rows/s = all rows / (last end - first start). Then K reader processes each scan the
whole table (K x its rows read). The CPU seconds of the clients and of the tablet servers per million rows are kept
too (``/proc/<pid>/stat``), which show where the aggregate rate goes when the 2 cores are full.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time

import fluss
from bench.data import SCHEMA, make_batch
from bench.monitor import cpu_seconds
from bench.scale.curve import Curve
from bench.scale.sizes import ScaleProfile

DATABASE = "scale"
CLIENT_BUCKETS = 16
CLIENT_START_TIMEOUT_S = 180.0


async def settle(pids: list[int], busy_share: float = 0.1, timeout_s: float = 60.0) -> None:
    """Waits until the processes ``pids`` together use less than ``busy_share`` of a core (over half a second), so
    one step does not pay for the previous one's leftovers (e.g. tablet servers deleting dropped tables)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        before = sum(cpu_seconds(p) for p in pids)
        await asyncio.sleep(0.5)
        if sum(cpu_seconds(p) for p in pids) - before < 0.5 * busy_share:
            return


async def create_log_table(admin: fluss.FlussAdmin, name: str, buckets: int) -> fluss.TablePath:
    await admin.create_database(DATABASE, ignore_if_exists=True)
    path = fluss.TablePath(DATABASE, name)
    await admin.drop_table(path, ignore_if_not_exists=True)
    await admin.create_table(path, fluss.TableDescriptor(
        fluss.Schema(SCHEMA), bucket_count=buckets, bucket_keys=["seq"],
        properties={"table.replication.factor": "1", "table.log.arrow.compression.type": "ZSTD"}))
    return path


async def _scan_all(conn: fluss.FlussConnection, path: fluss.TablePath, buckets: int) -> int:
    table = await conn.get_table(path)
    scanner = await table.new_scan().create_record_batch_log_scanner()
    scanner.subscribe_buckets(dict.fromkeys(range(buckets), fluss.EARLIEST_OFFSET))
    try:
        result = scanner.to_arrow()
        return (await result if asyncio.iscoroutine(result) else result).num_rows
    finally:
        await scanner.aclose()


async def buckets_curve(bootstrap: str, profile: ScaleProfile, tablet_pids: list[int]) -> Curve:
    curve = Curve("buckets", "Append and scan vs buckets (3 tablet servers, RF=1)", "buckets of the table")
    append, scan = curve.series_of("append", "rows/s"), curve.series_of("scan", "rows/s")
    append_cpu = curve.series_of("server CPU per 1M appended rows", "s")
    n = profile.bucket_rows
    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": bootstrap}))
    try:
        admin = conn.get_admin()
        for buckets in profile.bucket_counts:
            path = await create_log_table(admin, f"buckets_{buckets}", buckets)
            await settle(tablet_pids)
            table = await conn.get_table(path)
            writer = table.new_append().create_writer()
            rates, scans, cpus, written = [], [], [], 0
            for r in range(profile.rounds + 1):
                batch = make_batch(n, seed=r, start_seq=r * n)
                cpu0 = sum(cpu_seconds(p) for p in tablet_pids)
                t0 = time.perf_counter()
                writer.write_arrow_batch(batch)
                await writer.flush()
                dt = time.perf_counter() - t0
                cpu = sum(cpu_seconds(p) for p in tablet_pids) - cpu0
                written += n
                t0 = time.perf_counter()
                got = await _scan_all(conn, path, buckets)
                scan_dt = time.perf_counter() - t0
                if got != written:
                    raise RuntimeError(f"scan of {buckets} buckets read {got} of {written} rows")
                if r:  # round 0 warms up (connections, first segments)
                    rates.append(n / dt)
                    scans.append(got / scan_dt)
                    cpus.append(cpu * 1e6 / n)
            await writer.aclose()
            await admin.drop_table(path)
            curve.x.append(buckets)
            append.add(rates)
            scan.add(scans)
            append_cpu.add(cpus)
            print(f"  buckets {buckets}: append {append.values[-1]:,.0f} rows/s, scan {scan.values[-1]:,.0f} rows/s",
                  flush=True)
    finally:
        await conn.aclose()
    curve.notes.append(f"{n} rows appended per round ({profile.rounds} rounds after a warm-up); the scan reads "
                       "every round written so far (all buckets, earliest offsets)")
    return curve


def _start_clients(role: str, count: int, bootstrap: str, table: str, rows: int) -> list[dict]:
    """Starts ``count`` worker processes, releases them together once all are ready; their JSON results."""
    env = {**os.environ, "PYTHONPATH": os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", "")}
    procs = [subprocess.Popen([sys.executable, "-m", "bench.scale.worker", role, bootstrap, table, str(rows), str(i)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
             for i in range(count)]
    try:
        deadline = time.monotonic() + CLIENT_START_TIMEOUT_S
        for p in procs:
            line = p.stdout.readline().strip()
            if line != "ready" or time.monotonic() > deadline:
                raise RuntimeError(f"client {role} not ready: {line!r} (exit {p.poll()})")
        for p in procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        results = []
        for p in procs:
            out, _ = p.communicate(timeout=CLIENT_START_TIMEOUT_S)
            if p.returncode != 0:
                raise RuntimeError(f"client {role} exited with {p.returncode}")
            results.append(json.loads(out.strip().splitlines()[-1]))
        return results
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


async def clients_curve(bootstrap: str, profile: ScaleProfile, tablet_pids: list[int]) -> Curve:
    curve = Curve("clients", f"Concurrent client processes ({CLIENT_BUCKETS}-bucket table, 3 tablet servers)",
                  "concurrent writers / readers (one process each)")
    write, read = curve.series_of("append (aggregate)", "rows/s"), curve.series_of("scan (aggregate)", "rows/s")
    client_cpu = curve.series_of("client CPU per 1M appended rows", "s")
    server_cpu = curve.series_of("server CPU per 1M appended rows", "s")
    rows = profile.client_rows
    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": bootstrap}))
    try:
        admin = conn.get_admin()
        for count in profile.clients:
            path = await create_log_table(admin, f"clients_{count}", CLIENT_BUCKETS)
            await settle(tablet_pids)
            name = f"{DATABASE}.{path.table_name}"
            cpu0 = sum(cpu_seconds(p) for p in tablet_pids)
            writers = await asyncio.to_thread(_start_clients, "writer", count, bootstrap, name, rows)
            cpu = sum(cpu_seconds(p) for p in tablet_pids) - cpu0
            total = sum(r["rows"] for r in writers)
            span = max(r["t1"] for r in writers) - min(r["t0"] for r in writers)
            readers = await asyncio.to_thread(_start_clients, "reader", count, bootstrap, name, rows)
            read_total = sum(r["rows"] for r in readers)
            stored = total + sum(r["warmup_rows"] for r in writers)
            if any(r["rows"] != stored for r in readers):
                raise RuntimeError(f"readers read {[r['rows'] for r in readers]} rows of {stored}")
            read_span = max(r["t1"] for r in readers) - min(r["t0"] for r in readers)
            await admin.drop_table(path)
            curve.x.append(count)
            write.add([total / span])
            read.add([read_total / read_span])
            client_cpu.add([sum(r["cpu_s"] for r in writers) * 1e6 / total])
            server_cpu.add([cpu * 1e6 / total])
            print(f"  clients {count}: append {write.values[-1]:,.0f} rows/s, scan {read.values[-1]:,.0f} rows/s",
                  flush=True)
    finally:
        await conn.aclose()
    curve.notes.append(f"each writer appends {rows} rows (write_arrow_batch of 50k-row batches + flush); each reader "
                       f"scans the whole table (K x {rows} rows); every client is its own Python process, started "
                       "before the clock and released at once")
    return curve
