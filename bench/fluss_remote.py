"""The tiered log (issue 15): scans from remote segments next to a local scan, and upload throughput next to a
plain fsspec copy of the same files, on a local folder and on a real S3 API (moto's server on loopback).

Per store, one cluster (1 tablet server, RF=1, ``log.segment.file-size`` 1 MiB, ``remote.log.task-interval-duration``
1 s) and two tables of the same ``profile.rows_per_round`` benchmark rows in 3 buckets:

- ``tiered``: ``table.log.tiered.local-segments`` 1, so once uploaded all but the active segment leave the tablet
  server; a scan from ``earliest`` reads remote segments (downloaded by the client, prefetch 4, 3 threads) and then
  the active segment: ``remote.scan.<store>`` rows/s.
- ``local``: the same rows, uploaded too, but ``table.log.tiered.local-segments`` high enough that every segment
  stays local: ``remote.scan.local`` rows/s (folder cluster only; the read path is the same on both).

``remote.upload.<store>``: MB/s of the segment uploads (data, index, time index, writer state, leader epochs), as
the tablet server timed each one (its log lines), summed over the run. Its raw limit ``remote.copy.<store>``: the
same segment files (``.log``, ``.index``, ``.timeindex``) copied with ``fs.put_file`` by this process, sequentially.
"""

from __future__ import annotations

import asyncio
import os
import re
import tempfile
import time
import uuid
from pathlib import Path

import pyarrow as pa

import fluss
from bench.data import SCHEMA, make_batch
from bench.model import Measurement, Profile
from bench.monitor import PeakRss

BUCKETS = 3
SEGMENT = "1mb"
_UPLOADED = re.compile(r"uploaded log segment \[\d+, \d+\) of .* \((\d+) bytes\) as \w+ in ([\d.]+)s")


async def _write(conn, path: fluss.TablePath, rows: int) -> None:
    writer = (await conn.get_table(path)).new_append().create_writer()
    step = 50_000
    for start in range(0, rows, step):
        writer.write_arrow_batch(make_batch(min(step, rows - start), seed=start, start_seq=start))
    await writer.flush()


async def _create(conn, name: str, local_segments: int) -> fluss.TablePath:
    path = fluss.TablePath("bench", name)
    await conn.get_admin().create_database("bench", ignore_if_exists=True)
    await conn.get_admin().create_table(path, fluss.TableDescriptor(fluss.Schema(SCHEMA), bucket_count=BUCKETS,
        properties={"table.replication.factor": "1", "table.log.tiered.local-segments": str(local_segments)}))
    return path


async def _wait_tiered(conn, path: fluss.TablePath, keep_local: bool, timeout_s: float = 300) -> list:
    """Waits until every sealed segment of every bucket is uploaded (and, unless ``keep_local``, deleted locally)."""
    from fluss.table_report import log_states

    info = await conn.get_admin().get_table_info(path)
    deadline = time.monotonic() + timeout_s
    while True:
        states = await log_states(conn, info)
        if keep_local:
            done = all(s.local_start == 0 and s.remote_segments == s.local_segments - 1 > 0 for s in states)
        else:
            done = all(s.local_segments == 1 and s.remote_end == s.local_start > 0 for s in states)
        if done:
            return states
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} not tiered after {timeout_s}s: {states}")
        await asyncio.sleep(0.5)


async def _scan(conn, path: fluss.TablePath) -> tuple[int, float]:
    scanner = await (await conn.get_table(path)).new_scan().create_record_batch_log_scanner()
    scanner.subscribe_buckets(dict.fromkeys(range(BUCKETS), fluss.EARLIEST_OFFSET))
    t0 = time.perf_counter()
    table: pa.Table = await scanner.to_arrow()
    dt = time.perf_counter() - t0
    await scanner.aclose()
    return table.num_rows, dt


def _upload_rate(logs: Path) -> tuple[float, int, int]:
    """MB/s over every segment upload the tablet server logged, bytes and segment count."""
    size = seconds = count = 0
    for line in (logs / "tablet-server-0.log").read_text().splitlines():
        m = _UPLOADED.search(line)
        if m:
            size += int(m.group(1))
            seconds += float(m.group(2))
            count += 1
    return (size / 2**20 / seconds if seconds else 0.0), size, count


def _copy_rate(files: list[Path], target: str, options: dict[str, str]) -> float:
    """MB/s of ``fs.put_file`` of ``files`` under ``target``, one after another."""
    from fluss.fs import filesystem

    fs, root = filesystem(target, options)
    size = sum(f.stat().st_size for f in files)
    t0 = time.perf_counter()
    for i, f in enumerate(files):
        dest = f"{root}/{i:05d}-{f.name}"
        fs.makedirs(dest.rsplit("/", 1)[0], exist_ok=True)
        fs.put_file(str(f), dest)
    return size / 2**20 / (time.perf_counter() - t0)


async def _store(profile: Profile, store: str, remote: str, options: dict[str, str], directory: Path,
                 measure_local: bool) -> list[Measurement]:
    from fluss.server.cluster import LocalCluster

    config = {"remote.data.dir": remote, **options, "log.segment.file-size": SEGMENT,
              "remote.log.task-interval-duration": "1s"}
    scan_remote = Measurement("fluss", f"remote.scan.{store}", "rows/s")
    scan_local = Measurement("fluss", "remote.scan.local", "rows/s")
    upload = Measurement("fluss", f"remote.upload.{store}", "MB/s")
    copy = Measurement("raw", f"remote.copy.{store}", "MB/s")
    with LocalCluster(tablet_servers=1, server_config=config, directory=directory / store) as cluster:
        conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": cluster.bootstrap_servers}))
        try:
            tiered = await _create(conn, "tiered", 1)
            local = await _create(conn, "local", 1_000_000)
            rows = profile.rows_per_round
            await _write(conn, tiered, rows)
            await _write(conn, local, rows)
            states = await _wait_tiered(conn, tiered, keep_local=False)
            await _wait_tiered(conn, local, keep_local=True)
            remote_rows = sum(s.local_start for s in states)
            pids = {"tablet-server-0": cluster.tablet_server_pid(0)}
            rss: dict[str, float] = {}
            for r in range(profile.rounds + 1):
                with PeakRss(pids) as peak:
                    n, dt = await _scan(conn, tiered)
                assert n == rows, (n, rows)
                if r:
                    scan_remote.rounds.append(n / dt)
                    rss = {k: max(v, rss.get(k, 0.0)) for k, v in peak.peaks_mb().items()}
                if measure_local:
                    n, dt = await _scan(conn, local)
                    assert n == rows, (n, rows)
                    if r:
                        scan_local.rounds.append(n / dt)
            scan_remote.rss_peak_mb = rss
            scan_remote.note = (f"{rows} rows in {BUCKETS} buckets, {remote_rows} of them in remote segments "
                                f"({SEGMENT} segments), then the active segments; client defaults")
            scan_local.note = f"the same {rows} rows, every segment kept local (table.log.tiered.local-segments)"
            rate, size, count = _upload_rate(cluster.dir / "logs")
            upload.rounds.append(rate)
            upload.note = f"{count} segment uploads, {size / 2**20:.1f} MiB, as timed by the tablet server"
            data = cluster.dir / "tablet-server-0" / "data" / "bench"
            files = sorted(p for p in data.glob("local-*/bucket-*/*") if p.suffix in (".log", ".index", ".timeindex"))
            for _ in range(max(1, profile.rounds)):
                copy.rounds.append(_copy_rate(files, f"{remote.rstrip('/')}/copy-{uuid.uuid4().hex}", options))
            total = sum(f.stat().st_size for f in files) / 2**20
            copy.note = f"fs.put_file of {len(files)} local segment files ({total:.1f} MiB), one after another"
        finally:
            await conn.aclose()
    out = [scan_remote, upload, copy]
    return out + [scan_local] if measure_local else out


async def _run(profile: Profile) -> list[Measurement]:
    from fluss.fs.local_s3 import LocalS3Server

    directory = Path(tempfile.mkdtemp(prefix="bench-remote-"))
    out = await _store(profile, "folder", str(directory / "remote"), {}, directory, measure_local=True)
    with LocalS3Server(log_path=directory / "moto.log", owner_pid=os.getpid()) as s3:
        s3.create_bucket("bench")
        out += await _store(profile, "s3", "s3://bench/remote", s3.options(), directory, measure_local=False)
    return out


def run(profile: Profile) -> list[Measurement]:
    return asyncio.run(_run(profile))
