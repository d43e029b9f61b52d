"""The workload of a nemesis run: writers and readers on a log table and a primary-key table, all recorded.

* **Log writers** (``log-w{n}``): each appends batches of ``LOG_BATCH_ROWS`` rows ``(writer, seq, pad)`` with
  consecutive ``seq``, one batch at a time, and waits for the acknowledgement (acks=all, idempotent writer, the
  client's default unbounded retries). The bucket key is ``writer``, so a writer's rows share one bucket and
  their order in it is the acknowledgement order.
* **KV writers** (``kv-w{n}``): each owns the keys ``[n*KEYS_PER_WRITER, (n+1)*KEYS_PER_WRITER)`` and upserts
  ``(k, writer, seq)`` for a few of them per operation (sometimes deletes them), ``seq`` growing per writer.
* **Log reader** (``log-r``): a record-batch scanner from the earliest offset of every bucket; records the
  offset and ``(writer, seq)`` of every row it sees.
* **Lookups** (``kv-r``): point lookups of random keys; records what each returned.

Every operation goes through :class:`~reliability.chaos.history.History`.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time

import numpy as np
import pyarrow as pa

import fluss
from fluss import EARLIEST_OFFSET
from reliability.chaos.history import History

log = logging.getLogger(__name__)

DATABASE = "chaos"
LOG_TABLE = "events"
KV_TABLE = "state"
BUCKETS = 3
LOG_SCHEMA = pa.schema([("writer", pa.int32()), ("seq", pa.int64()), ("pad", pa.string())])
KV_SCHEMA = pa.schema([pa.field("k", pa.int32(), nullable=False), ("writer", pa.int32()), ("seq", pa.int64())])
LOG_BATCH_ROWS = 20
KEYS_PER_WRITER = 40
KV_KEYS_PER_OP = 4
OP_TIMEOUT_S = 180.0


async def create_tables(admin, replication: int) -> None:
    await admin.create_database(DATABASE, ignore_if_exists=True)
    props = {"table.replication.factor": str(replication)}
    await admin.create_table(fluss.TablePath(DATABASE, LOG_TABLE), fluss.TableDescriptor(
        fluss.Schema(LOG_SCHEMA), bucket_count=BUCKETS, bucket_keys=["writer"], properties=props),
        ignore_if_exists=True)
    await admin.create_table(fluss.TablePath(DATABASE, KV_TABLE), fluss.TableDescriptor(
        fluss.Schema(KV_SCHEMA, primary_keys=["k"]), bucket_count=BUCKETS, properties=props), ignore_if_exists=True)


def _error(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"[:300]


class Workload:
    def __init__(self, conn: fluss.FlussConnection, history: History, log_writers: int = 4, kv_writers: int = 3,
                 seed: int = 0) -> None:
        self.conn = conn
        self.history = history
        self.log_writers = log_writers
        self.kv_writers = kv_writers
        self.rng = random.Random(seed)
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task] = []

    async def start(self) -> None:
        log_table = await self.conn.get_table(fluss.TablePath(DATABASE, LOG_TABLE))
        kv_table = await self.conn.get_table(fluss.TablePath(DATABASE, KV_TABLE))
        for w in range(self.log_writers):
            self._tasks.append(asyncio.create_task(self._log_writer(log_table, w), name=f"log-w{w}"))
        for w in range(self.kv_writers):
            self._tasks.append(asyncio.create_task(self._kv_writer(kv_table, w), name=f"kv-w{w}"))
        self._tasks.append(asyncio.create_task(self._log_reader(log_table), name="log-r"))
        self._tasks.append(asyncio.create_task(self._lookups(kv_table), name="kv-r"))

    async def stop(self, grace_s: float = 60.0) -> None:
        """Stops invoking new operations and waits (up to ``grace_s``) for those in flight."""
        self._stop.set()
        done, pending = await asyncio.wait(self._tasks, timeout=grace_s)
        for t in pending:
            t.cancel()
        for t in done:
            if t.exception() is not None:
                log.error("workload task %s failed", t.get_name(), exc_info=t.exception())

    # ------------------------------------------------------------ writers

    async def _log_writer(self, table, w: int) -> None:
        process = f"log-w{w}"
        writer = table.new_append().create_writer()
        seq = 0
        pad = pa.array(["x" * 40] * LOG_BATCH_ROWS)
        while not self._stop.is_set():
            seqs = list(range(seq, seq + LOG_BATCH_ROWS))
            batch = pa.record_batch([pa.array([w] * LOG_BATCH_ROWS, pa.int32()), pa.array(seqs, pa.int64()), pad],
                                    schema=LOG_SCHEMA)
            op = self.history.invoke(process, "append", writer=w, first=seq, count=LOG_BATCH_ROWS)
            try:
                handle = writer.write_arrow_batch(batch)
                await asyncio.wait_for(handle.wait(), OP_TIMEOUT_S)
                self.history.complete(op, process, "append", True, writer=w, first=seq, count=LOG_BATCH_ROWS)
            except Exception as e:  # noqa: BLE001 - every outcome is history
                self.history.complete(op, process, "append", False, writer=w, first=seq, count=LOG_BATCH_ROWS,
                                      error=_error(e))
                await asyncio.sleep(0.2)
            seq += LOG_BATCH_ROWS

    async def _kv_writer(self, table, w: int) -> None:
        process = f"kv-w{w}"
        writer = table.new_upsert().create_writer()
        keys_of_writer = range(w * KEYS_PER_WRITER, (w + 1) * KEYS_PER_WRITER)
        seq = 0
        while not self._stop.is_set():
            seq += 1
            keys = sorted(self.rng.sample(keys_of_writer, KV_KEYS_PER_OP))
            kind = "delete" if self.rng.random() < 0.1 else "upsert"
            op = self.history.invoke(process, kind, writer=w, seq=seq, keys=keys)
            rows = pa.record_batch([pa.array(keys, pa.int32()), pa.array([w] * len(keys), pa.int32()),
                                    pa.array([seq] * len(keys), pa.int64())], schema=KV_SCHEMA)
            try:
                handle = writer.delete_arrow_batch(rows) if kind == "delete" else writer.upsert_arrow_batch(rows)
                await asyncio.wait_for(handle.wait(), OP_TIMEOUT_S)
                self.history.complete(op, process, kind, True, writer=w, seq=seq, keys=keys)
            except Exception as e:  # noqa: BLE001
                self.history.complete(op, process, kind, False, writer=w, seq=seq, keys=keys, error=_error(e))
                await asyncio.sleep(0.2)

    # ------------------------------------------------------------ readers

    async def _log_reader(self, table) -> None:
        process = "log-r"
        next_offsets = dict.fromkeys(range(BUCKETS), EARLIEST_OFFSET)
        scanner = None
        while not self._stop.is_set():
            try:
                if scanner is None:
                    scanner = await table.new_scan().create_record_batch_log_scanner()
                    scanner.subscribe_buckets(dict(next_offsets))
                batches = await asyncio.wait_for(scanner.poll_record_batch(500), 60)
            except Exception as e:  # noqa: BLE001 - a reader keeps reading through faults
                self.history.record(type="fail", process=process, f="read", error=_error(e))
                scanner = None
                await asyncio.sleep(0.5)
                continue
            for b in batches:
                writers = b.batch.column("writer").to_numpy(zero_copy_only=False)
                seqs = b.batch.column("seq").to_numpy(zero_copy_only=False)
                self.history.record(type="ok", process=process, f="read", bucket=b.bucket.bucket_id,
                                    first_offset=b.base_offset, writers=writers.tolist(), seqs=seqs.tolist())
                next_offsets[b.bucket.bucket_id] = b.base_offset + b.batch.num_rows

    async def _lookups(self, table) -> None:
        process = "kv-r"
        lookuper = table.new_lookup().create_lookuper()
        all_keys = self.kv_writers * KEYS_PER_WRITER
        while not self._stop.is_set():
            k = self.rng.randrange(all_keys)
            op = self.history.invoke(process, "lookup", key=k)
            try:
                row = await asyncio.wait_for(lookuper.lookup({"k": k}), 30)
                found = row is not None
                self.history.complete(op, process, "lookup", True, key=k, found=found,
                                      writer=row["writer"] if found else None, seq=row["seq"] if found else None)
            except Exception as e:  # noqa: BLE001
                self.history.complete(op, process, "lookup", False, key=k, error=_error(e))
                await asyncio.sleep(0.2)
            await asyncio.sleep(0.02)


async def read_final_state(conn: fluss.FlussConnection, kv_writers: int, timeout_s: float = 120.0) -> dict:
    """Everything the cluster holds at the end: per log bucket the ``(offset, writer, seq)`` of every row up to
    the latest offset, and every key's row."""
    deadline = time.monotonic() + timeout_s
    admin = conn.get_admin()
    log_path = fluss.TablePath(DATABASE, LOG_TABLE)
    log_table = await conn.get_table(log_path)
    ends = await admin.list_offsets(log_path, list(range(BUCKETS)), fluss.OffsetSpec.latest())
    starts = await admin.list_offsets(log_path, list(range(BUCKETS)), fluss.OffsetSpec.earliest())
    scanner = await log_table.new_scan().create_record_batch_log_scanner()
    scanner.subscribe_buckets({b: starts[b] for b in range(BUCKETS) if ends[b] > starts[b]})
    rows: dict[int, list[tuple[int, int, int]]] = {b: [] for b in range(BUCKETS)}
    next_offset = dict(starts)
    while any(next_offset[b] < ends[b] for b in range(BUCKETS)):
        if time.monotonic() > deadline:
            raise TimeoutError(f"final read did not reach the end offsets {ends} (at {next_offset})")
        for batch in await scanner.poll_record_batch(1000):
            b = batch.bucket.bucket_id
            writers = batch.batch.column("writer").to_numpy(zero_copy_only=False)
            seqs = batch.batch.column("seq").to_numpy(zero_copy_only=False)
            offsets = np.arange(batch.base_offset, batch.base_offset + batch.batch.num_rows)
            keep = offsets < ends[b]
            rows[b].extend(zip(offsets[keep].tolist(), writers[keep].tolist(), seqs[keep].tolist(), strict=True))
            next_offset[b] = max(next_offset[b], batch.base_offset + batch.batch.num_rows)
    await scanner.aclose()
    kv_table = await conn.get_table(fluss.TablePath(DATABASE, KV_TABLE))
    lookuper = kv_table.new_lookup().create_lookuper()
    keys = list(range(kv_writers * KEYS_PER_WRITER))
    found = await asyncio.gather(*(lookuper.lookup({"k": k}) for k in keys))
    kv = {k: (r["writer"], r["seq"]) if r is not None else None for k, r in zip(keys, found, strict=True)}
    return {"log": rows, "log_starts": starts, "log_ends": ends, "kv": kv}
