"""Raw limits: what this machine does with the same rows and no server in between.

- Log append: the round's rows written as Arrow IPC (file format, ZSTD, record batches of ``IPC_BATCH_ROWS``)
  to a local file, then ``fsync``; rows/s over write + fsync.
- Log scan: that file read back into an Arrow table (all columns, and the 2 projected columns); rows/s.
- KV: ``rocksdict`` WriteBatch puts (key = 8-byte sequence number, value = the row's 42 value bytes) and a
  multi-get of every key in batches of ``KV_GET_BATCH``; rows/s: the limits of the primary-key upsert and lookup.
The other raw limits are measured by their scenario's own module, in the same run: KV recovery
(``bench.fluss_recovery``), tiering (``bench.lake_tiering``) and Flink (``bench.flink_sql``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.ipc as ipc

from bench.data import LOGICAL_ROW_BYTES, PROJECTED, arrow_bytes_per_row, make_batch
from bench.model import Measurement, Profile
from bench.monitor import PeakRss

IPC_BATCH_ROWS = 16_384
KV_PUT_BATCH = 10_000
RAW_ROUNDS = 7  # the file rounds take milliseconds and fsync is noisy: more rounds, steadier median
KV_GET_BATCH = 1_000


def write_ipc(path: Path, batch: pa.RecordBatch) -> None:
    """The raw append: ``batch`` as a ZSTD Arrow IPC file at ``path``, flushed and fsync'd."""
    options = ipc.IpcWriteOptions(compression="zstd")
    with open(path, "wb") as f:
        with ipc.new_file(f, batch.schema, options=options) as w:
            w.write_table(pa.Table.from_batches([batch]), max_chunksize=IPC_BATCH_ROWS)
        f.flush()
        os.fsync(f.fileno())


def measure_ipc(profile: Profile, work_dir: Path) -> list[Measurement]:
    """IPC append (+fsync) and read-back (full and projected) of ``rows_per_round`` rows per round."""
    n = profile.rows_per_round
    batch = make_batch(n, seed=1)
    append = Measurement("raw", "log.append", "rows/s", note="pyarrow IPC file, ZSTD, fsync")
    full = Measurement("raw", "log.scan.full", "rows/s", note="pyarrow IPC file read back, 10 columns")
    proj = Measurement("raw", "log.scan.projected", "rows/s", note="pyarrow IPC file read back, 2 of 10 columns")
    path = work_dir / "raw.arrow"
    with PeakRss({}) as rss:
        for r in range(RAW_ROUNDS + 1):  # round 0 warms up
            t0 = time.perf_counter()
            write_ipc(path, batch)
            t_append = time.perf_counter() - t0
            t0 = time.perf_counter()
            t_all = feather.read_table(path, memory_map=False)
            t_full = time.perf_counter() - t0
            t0 = time.perf_counter()
            t_proj = feather.read_table(path, columns=PROJECTED, memory_map=False)
            t_projected = time.perf_counter() - t0
            assert t_all.num_rows == n and t_proj.num_columns == len(PROJECTED)
            if r:
                append.rounds.append(n / t_append)
                full.rounds.append(n / t_full)
                proj.rounds.append(n / t_projected)
    for m in (append, full, proj):
        m.rss_peak_mb = rss.peaks_mb()
    mb = Measurement("raw", "log.append.mb", "MB/s", [v * arrow_bytes_per_row(batch) / 1e6 for v in append.rounds],
                     note="rows/s x Arrow bytes per row", rss_peak_mb=append.rss_peak_mb)
    return [append, mb, full, proj]


def _kv_keys_values(n: int) -> tuple[list[bytes], list[bytes]]:
    keys_buf = np.arange(n, dtype=">u8").tobytes()
    vals_buf = np.random.default_rng(2).integers(0, 256, n * LOGICAL_ROW_BYTES, dtype=np.uint8).tobytes()
    keys = [keys_buf[i * 8:(i + 1) * 8] for i in range(n)]  # one key object per row is the KV API's unit
    vals = [vals_buf[i * LOGICAL_ROW_BYTES:(i + 1) * LOGICAL_ROW_BYTES] for i in range(n)]
    return keys, vals


def measure_rocksdb(profile: Profile, work_dir: Path) -> list[Measurement]:
    """rocksdict WriteBatch put and batched multi-get of ``kv_rows`` rows per round."""
    from rocksdict import Options, Rdict, WriteBatch

    n = profile.kv_rows
    keys, vals = _kv_keys_values(n)
    put = Measurement("raw", "kv.put", "rows/s", note=f"rocksdict WriteBatch of {KV_PUT_BATCH}, WAL on")
    get = Measurement("raw", "kv.multiget", "rows/s", note=f"rocksdict multi-get of {KV_GET_BATCH} keys")
    with PeakRss({}) as rss:
        for r in range(profile.rounds + 1):  # round 0 warms up
            db_dir = work_dir / f"rocks-{r}"
            db = Rdict(str(db_dir), Options(raw_mode=True))
            try:
                t0 = time.perf_counter()
                for start in range(0, n, KV_PUT_BATCH):
                    wb = WriteBatch(raw_mode=True)
                    for i in range(start, min(n, start + KV_PUT_BATCH)):
                        wb.put(keys[i], vals[i])
                    db.write(wb)
                t_put = time.perf_counter() - t0
                t0 = time.perf_counter()
                found = 0
                for start in range(0, n, KV_GET_BATCH):
                    got = db[keys[start:start + KV_GET_BATCH]]
                    found += sum(v is not None for v in got)
                t_get = time.perf_counter() - t0
                assert found == n, f"multi-get found {found} of {n}"
            finally:
                db.close()
                shutil.rmtree(db_dir, ignore_errors=True)
            if r:
                put.rounds.append(n / t_put)
                get.rounds.append(n / t_get)
    put.rss_peak_mb = get.rss_peak_mb = rss.peaks_mb()
    return [put, get]


def run(profile: Profile) -> list[Measurement]:
    """All raw limits, in a temporary directory that is removed afterwards."""
    work_dir = Path(tempfile.mkdtemp(prefix="bench-raw-"))
    try:
        return measure_ipc(profile, work_dir) + measure_rocksdb(profile, work_dir)
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)
