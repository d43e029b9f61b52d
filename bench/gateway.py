"""The REST gateway next to the native client, in the same run on the same cluster (family ``gateway``).

A ``LocalCluster`` of 3 tablet servers and one ``fluss gateway`` process (uvicorn, its own process like a
deployed gateway); the bench rows (``bench.data``) into 3-bucket RF=1 tables:

- ``gateway.append.json``: ``POST .../records`` with FIP-49 JSON entries, ``JSON_ROWS_PER_REQUEST`` rows per
  request, ``JSON_CONCURRENCY`` requests in flight (keep-alive connections); rows/s of acknowledged rows.
- ``gateway.append.arrow``: the same endpoint with Arrow IPC stream bodies of ``ARROW_ROWS_PER_REQUEST`` rows,
  ``ARROW_CONCURRENCY`` in flight; rows/s.
- ``gateway.append.native``: the same rows through ``AppendWriter.write_arrow_batch`` of the same size + flush.
- ``gateway.lookup.p50/p99``: one ``POST .../lookup`` of one existing key at a time; ms.
- ``gateway.lookup.native.p50/p99``: one ``Lookuper.lookup`` at a time (``lookup.batch-timeout`` 1 ms); ms.

The gateway's own writers use ``writer.batch-timeout`` 5 ms and the lookup batch timeout 1 ms (a gateway
serves interactive callers; the client defaults of 100 ms are for streaming writers).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import subprocess
import sys
import time

import httpx
import numpy as np
import orjson
import pyarrow as pa

import fluss
from bench.data import SCHEMA, make_batch
from bench.fluss_kv import SINGLE_LOOKUP, _connect
from bench.model import Measurement, Profile
from bench.monitor import PeakRss

BUCKETS = 3
JSON_ROWS_PER_REQUEST = 2_000
JSON_CONCURRENCY = 4
ARROW_ROWS_PER_REQUEST = 50_000
ARROW_CONCURRENCY = 2
LATENCY_LOOKUPS = 300
LOOKUP_KEYS = 20_000
GATEWAY_OPTIONS = ["writer.batch-timeout=5ms", "lookup.batch-timeout=1ms"]


def _json_bodies(batch: pa.RecordBatch, per_request: int) -> list[bytes]:
    from fluss.gateway.render import rows_to_json

    rows = rows_to_json(batch)
    return [orjson.dumps({"entries": [{"append": r} for r in rows[i:i + per_request]]})
            for i in range(0, len(rows), per_request)]


def _arrow_bodies(batch: pa.RecordBatch, per_request: int) -> list[bytes]:
    out = []
    for i in range(0, batch.num_rows, per_request):
        sink = pa.BufferOutputStream()
        piece = batch.slice(i, per_request)
        with pa.ipc.new_stream(sink, piece.schema) as w:
            w.write_batch(piece)
        out.append(sink.getvalue().to_pybytes())
    return out


async def _post_all(client: httpx.AsyncClient, url: str, bodies: list[bytes], content_type: str,
                    concurrency: int) -> int:
    queue = list(bodies)
    written = 0

    async def worker() -> None:
        nonlocal written
        while queue:
            body = queue.pop()
            r = await client.post(url, content=body, headers={"content-type": content_type})
            if r.status_code != 200:
                raise RuntimeError(f"gateway write failed: {r.status_code} {r.text[:300]}")
            written += r.json()["row_count"]

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return written


async def _create(conn: fluss.FlussConnection, name: str, pk: list[str] | None = None) -> fluss.TablePath:
    admin = conn.get_admin()
    await admin.create_database("bench_gw", ignore_if_exists=True)
    path = fluss.TablePath("bench_gw", name)
    await admin.drop_table(path, ignore_if_not_exists=True)
    await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(SCHEMA, primary_keys=pk), bucket_count=BUCKETS,
                                                         properties={"table.replication.factor": "1"}))
    return path


async def _appends(client: httpx.AsyncClient, conn: fluss.FlussConnection, profile: Profile,
                   pids: dict) -> list[Measurement]:
    n = profile.rows_per_round
    n_json = max(JSON_ROWS_PER_REQUEST * JSON_CONCURRENCY, n // 10)  # JSON is ~10x slower: fewer rows per round
    out = []
    for key, rows, make_bodies, kind, conc in (
            ("gateway.append.json", n_json, lambda b: _json_bodies(b, JSON_ROWS_PER_REQUEST), "application/json",
             JSON_CONCURRENCY),
            ("gateway.append.arrow", n, lambda b: _arrow_bodies(b, ARROW_ROWS_PER_REQUEST),
             "application/vnd.apache.arrow.stream", ARROW_CONCURRENCY)):
        path = await _create(conn, key.replace(".", "_"))
        url = f"/v1/clusters/default/databases/{path.database_name}/tables/{path.table_name}/records"
        per = JSON_ROWS_PER_REQUEST if kind == "application/json" else ARROW_ROWS_PER_REQUEST
        m = Measurement("fluss", key, "rows/s", note=f"{per} rows per request, {conc} in flight, acks=all")
        with PeakRss(pids) as rss:
            for r in range(profile.rounds + 1):
                bodies = make_bodies(make_batch(rows, seed=r, start_seq=r * rows))
                t0 = time.perf_counter()
                written = await _post_all(client, url, bodies, kind, conc)
                if written != rows:
                    raise RuntimeError(f"{key}: {written} of {rows} rows acknowledged")
                if r:
                    m.rounds.append(rows / (time.perf_counter() - t0))
        m.rss_peak_mb = rss.peaks_mb()
        out.append(m)
    path = await _create(conn, "native_append")
    writer = (await conn.get_table(path)).new_append().create_writer()
    native = Measurement("fluss", "gateway.append.native", "rows/s",
                         note=f"AppendWriter.write_arrow_batch of {ARROW_ROWS_PER_REQUEST} rows + flush, same run")
    with PeakRss(pids) as rss:
        for r in range(profile.rounds + 1):
            batch = make_batch(n, seed=r, start_seq=r * n)
            t0 = time.perf_counter()
            for i in range(0, n, ARROW_ROWS_PER_REQUEST):
                writer.write_arrow_batch(batch.slice(i, ARROW_ROWS_PER_REQUEST))
            await writer.flush()
            if r:
                native.rounds.append(n / (time.perf_counter() - t0))
    native.rss_peak_mb = rss.peaks_mb()
    await writer.aclose()
    return [*out, native]


async def _lookups(client: httpx.AsyncClient, bootstrap: str, conn: fluss.FlussConnection, profile: Profile,
                   pids: dict) -> list[Measurement]:
    path = await _create(conn, "kv", pk=["seq"])
    writer = (await conn.get_table(path)).new_upsert().create_writer()
    writer.upsert_arrow_batch(make_batch(LOOKUP_KEYS))
    await writer.flush()
    await writer.aclose()
    rng = np.random.default_rng(5)
    url = f"/v1/clusters/default/databases/{path.database_name}/tables/{path.table_name}/lookup"
    gw50 = Measurement("fluss", "gateway.lookup.p50", "ms", better="lower",
                       note=f"one POST /lookup of one key at a time, {LATENCY_LOOKUPS} per round")
    gw99 = Measurement("fluss", "gateway.lookup.p99", "ms", better="lower", note=gw50.note)
    with PeakRss(pids) as rss:
        for r in range(profile.rounds + 1):
            lat = np.empty(LATENCY_LOOKUPS)
            for i, k in enumerate(rng.integers(0, LOOKUP_KEYS, LATENCY_LOOKUPS).tolist()):
                body = orjson.dumps({"keys": [{"seq": k}]})
                t0 = time.perf_counter()
                resp = await client.post(url, content=body, headers={"content-type": "application/json"})
                lat[i] = (time.perf_counter() - t0) * 1000
                if resp.status_code != 200 or resp.json()["found"] != 1:
                    raise RuntimeError(f"gateway lookup of {k} failed: {resp.status_code} {resp.text[:200]}")
            if r:
                gw50.rounds.append(float(np.percentile(lat, 50)))
                gw99.rounds.append(float(np.percentile(lat, 99)))
    gw50.rss_peak_mb = gw99.rss_peak_mb = rss.peaks_mb()
    single_conn = await _connect(bootstrap, SINGLE_LOOKUP)
    n50 = Measurement("fluss", "gateway.lookup.native.p50", "ms", better="lower",
                      note="one Lookuper.lookup at a time, lookup.batch-timeout 1 ms, same run")
    n99 = Measurement("fluss", "gateway.lookup.native.p99", "ms", better="lower", note=n50.note)
    try:
        lookuper = (await single_conn.get_table(path)).new_lookup().create_lookuper()
        for r in range(profile.rounds + 1):
            lat = np.empty(LATENCY_LOOKUPS)
            for i, k in enumerate(rng.integers(0, LOOKUP_KEYS, LATENCY_LOOKUPS).tolist()):
                t0 = time.perf_counter()
                if await lookuper.lookup({"seq": k}) is None:
                    raise RuntimeError(f"native lookup of {k} found nothing")
                lat[i] = (time.perf_counter() - t0) * 1000
            if r:
                n50.rounds.append(float(np.percentile(lat, 50)))
                n99.rounds.append(float(np.percentile(lat, 99)))
        await lookuper.aclose()
    finally:
        await single_conn.aclose()
    return [gw50, gw99, n50, n99]


async def _wait_ready(port: int, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    async with httpx.AsyncClient() as client:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"the gateway exited with {proc.returncode}")
            with contextlib.suppress(httpx.HTTPError):
                if (await client.get(f"http://127.0.0.1:{port}/ready")).status_code == 200:
                    return
            await asyncio.sleep(0.2)
    raise RuntimeError("the gateway did not become ready in 60 s")


async def _run(profile: Profile) -> list[Measurement]:
    from bench.fluss_log import server_pids
    from fluss.server.cluster import LocalCluster
    from fluss.server.zk.local_server import free_port

    with LocalCluster(tablet_servers=3) as cluster:
        port = free_port()
        cmd = [sys.executable, "-m", "fluss.cli", "gateway", "--bootstrap-servers", cluster.bootstrap_servers,
               "--port", str(port)]
        for option in GATEWAY_OPTIONS:
            cmd += ["--client-option", option]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            await _wait_ready(port, proc)
            pids = {**server_pids(cluster), "gateway": proc.pid}
            conn = await _connect(cluster.bootstrap_servers)
            limits = httpx.Limits(max_connections=8, max_keepalive_connections=8)
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=120, limits=limits) as client:
                try:
                    out = await _appends(client, conn, profile, pids)
                    out += await _lookups(client, cluster.bootstrap_servers, conn, profile, pids)
                finally:
                    await conn.aclose()
            return out
        finally:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def run(profile: Profile) -> list[Measurement]:
    """Starts a cluster and a gateway process, measures the gateway next to the native client, stops both."""
    from bench.fluss_log import _GrpcPollerNoise

    noise = _GrpcPollerNoise()
    logging.getLogger("asyncio").addFilter(noise)
    try:
        return asyncio.run(_run(profile))
    finally:
        logging.getLogger("asyncio").removeFilter(noise)
