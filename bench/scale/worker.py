"""One concurrent client of the ``clients`` curve, in a process of its own (so the GIL of one Python process is not
what is measured): ``python -m bench.scale.worker writer|reader BOOTSTRAP DATABASE.TABLE ROWS SEED``.

It connects and prepares its rows, prints ``ready``, waits for a line on stdin (the parent starts every client at
once), then works: a writer appends ROWS rows (``write_arrow_batch`` of 50,000-row batches, then ``flush``), a
reader scans the whole table from the earliest offsets (``to_arrow``). It prints one JSON line: rows, wall-clock
start and end (``time.time()``, comparable across processes) and its own CPU seconds.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import sys
import time

import fluss
from bench.data import make_batch

BATCH_ROWS = 50_000
WARMUP_ROWS = 1000  # written before the clock: the writer's connections to every leader


async def _main(role: str, bootstrap: str, table_name: str, rows: int, seed: int) -> dict:
    database, table = table_name.split(".", 1)
    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": bootstrap}))
    try:
        t = await conn.get_table(fluss.TablePath(database, table))
        if role == "writer":
            batches = [make_batch(min(BATCH_ROWS, rows - s), seed=seed * 1000 + s // BATCH_ROWS,
                                  start_seq=seed * 10**9 + s) for s in range(0, rows, BATCH_ROWS)]
            writer = t.new_append().create_writer()
            writer.write_arrow_batch(make_batch(WARMUP_ROWS, seed=seed, start_seq=-(seed + 1) * 10**6))
            await writer.flush()
        else:
            scanner = await t.new_scan().create_record_batch_log_scanner()
            scanner.subscribe_buckets(dict.fromkeys(range(t.get_table_info().num_buckets), fluss.EARLIEST_OFFSET))
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        cpu0, t0 = time.process_time(), time.time()
        if role == "writer":
            for b in batches:
                writer.write_arrow_batch(b)
            await writer.flush()
            done = rows
            await writer.aclose()
        else:
            result = scanner.to_arrow()
            done = (await result if inspect.isawaitable(result) else result).num_rows
            t1 = time.time()
            await scanner.aclose()
        t1 = time.time() if role == "writer" else t1
        return {"role": role, "rows": done, "warmup_rows": WARMUP_ROWS if role == "writer" else 0, "t0": t0, "t1": t1, "cpu_s": time.process_time() - cpu0}
    finally:
        await conn.aclose()


if __name__ == "__main__":
    role, bootstrap, table_name, rows, seed = sys.argv[1:6]
    print(json.dumps(asyncio.run(_main(role, bootstrap, table_name, int(rows), int(seed)))), flush=True)
