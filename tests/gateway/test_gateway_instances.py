"""Two gateway processes behind a round-robin balancer on loopback: any instance serves any request, and a
gateway killed in the middle of a write loses nothing and duplicates nothing when the client retries the
request (same Idempotency-Key) on the other instance."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid

import httpx
import pytest

import fluss
from fluss.server.zk.local_server import free_port

pytestmark = pytest.mark.timeout(300)

REQUESTS = 24
ROWS_PER_REQUEST = 200
CONCURRENCY = 4


class RoundRobin:
    """A TCP balancer: each new connection goes to the next live backend (a backend whose connect fails is
    skipped, like a load balancer's passive health check). ``on_forward(index)`` runs once a connection's
    first bytes went to backend ``index``."""

    def __init__(self, backends: list[int]) -> None:
        self.backends = backends
        self.next = 0
        self.forwarded = [0] * len(backends)
        self.on_forward = None
        self.server: asyncio.base_events.Server | None = None
        self.port = 0

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream = None
        first_choice = self.next
        self.next += 1
        for step in range(len(self.backends)):  # the next backend in turn, then the others
            index = (first_choice + step) % len(self.backends)
            try:
                upstream = await asyncio.open_connection("127.0.0.1", self.backends[index])
                break
            except OSError:
                continue
        if upstream is None:
            writer.close()
            return
        up_reader, up_writer = upstream

        async def pipe(src, dst, first: bool) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
                    if first:
                        first = False
                        self.forwarded[index] += 1
                        if self.on_forward:
                            self.on_forward(index)
            except (ConnectionError, OSError):
                pass
            finally:
                with contextlib.suppress(Exception):
                    dst.close()

        await asyncio.gather(pipe(reader, up_writer, True), pipe(up_reader, writer, False))

    async def close(self) -> None:
        self.server.close()
        await self.server.wait_closed()


async def row_count(conn, db: str) -> int:
    return (await conn.get_admin().get_table_stats(fluss.TablePath(db, "events"))).row_count


def start_gateway(bootstrap: str, port: int, log_path) -> subprocess.Popen:
    with open(log_path, "wb") as log:
        return subprocess.Popen([sys.executable, "-m", "fluss.cli", "gateway", "--bootstrap-servers", bootstrap,
                                 "--port", str(port), "--ledger-database", "gw_instances_ledger"],
                                stdout=log, stderr=subprocess.STDOUT, env={**os.environ})


async def wait_ready(port: int, proc: subprocess.Popen, log_path) -> None:
    deadline = time.monotonic() + 60
    async with httpx.AsyncClient() as client:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise AssertionError(f"gateway exited: {log_path.read_text()[-2000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if (await client.get(f"http://127.0.0.1:{port}/ready")).status_code == 200:
                    return
            await asyncio.sleep(0.2)
    raise AssertionError("gateway did not become ready")


async def test_killed_gateway_mid_write_retried_elsewhere_writes_once(cluster, conn, tmp_path):
    db = f"gwi_{uuid.uuid4().hex[:8]}"
    ports = [free_port(), free_port()]
    logs = [tmp_path / f"gateway-{i}.log" for i in range(2)]
    procs = [start_gateway(cluster.bootstrap_servers, p, log) for p, log in zip(ports, logs, strict=True)]
    balancer = RoundRobin(ports)
    try:
        await asyncio.gather(*(wait_ready(p, proc, log) for p, proc, log in zip(ports, procs, logs, strict=True)))
        await balancer.start()
        base = f"http://127.0.0.1:{balancer.port}/v1/clusters/default"
        # a new connection per request, so the balancer alternates between the instances
        client = httpx.AsyncClient(base_url=base, timeout=60, limits=httpx.Limits(max_keepalive_connections=0))
        r = await client.post("/databases", json={"database": db})
        assert r.status_code == 201, r.text
        r = await client.post(f"/databases/{db}/tables", json={
            "table_name": "events", "columns": [{"name": "req", "data_type": {"type": "INTEGER"}},
                                                {"name": "i", "data_type": {"type": "INTEGER"}}],
            "distribution": {"bucket_count": 3}})
        assert r.status_code == 201, r.text

        retries = {"n": 0}

        async def write(req: int, rows: int = ROWS_PER_REQUEST) -> dict:
            body = {"entries": [{"append": {"req": req, "i": i}} for i in range(rows)]}
            for _ in range(20):
                try:
                    r = await client.post(f"/databases/{db}/tables/events/records", json=body,
                                          headers={"Idempotency-Key": f"{db}-req-{req}"})
                    if r.status_code == 200:
                        assert r.json()["row_count"] == rows
                        return r.json()
                    assert r.status_code in (502, 503, 504), r.text
                except httpx.TransportError:
                    pass
                retries["n"] += 1
                await asyncio.sleep(0.1)
            raise AssertionError(f"request {req} never succeeded")

        async def describe() -> None:  # interleaved metadata reads on the same instances
            r = await client.get(f"/databases/{db}/tables/events")
            assert r.status_code == 200 and r.json()["distribution"]["bucket_count"] == 3

        async def interleaved(requests: list[int]) -> None:
            queue = list(requests)

            async def worker() -> None:
                while queue:
                    req = queue.pop(0)
                    await write(req)
                    await describe()

            await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))

        # 1. both instances serve one client's interleaved requests
        await interleaved(list(range(REQUESTS)))
        assert min(balancer.forwarded) >= REQUESTS // 2, f"requests per instance: {balancer.forwarded}"
        assert retries["n"] == 0

        # 2. kill instance 0 after its write reached the cluster but before it answered; the client retries the
        # same request (same Idempotency-Key) and the balancer sends it to instance 1. (Should instance 0 answer
        # first - it has only an outcome row and the answer left to do - try again with the next request.)
        big_rows = 10_000
        big_requests = []
        for big in range(REQUESTS, REQUESTS + 3):
            big_requests.append(big)
            before = await row_count(conn, db)
            balancer.next = 0  # the next connection goes to instance 0
            attempt = asyncio.create_task(client.post(
                f"/databases/{db}/tables/events/records", headers={"Idempotency-Key": f"{db}-req-{big}"},
                json={"entries": [{"append": {"req": big, "i": i}} for i in range(big_rows)]}))
            deadline = time.monotonic() + 60
            while await row_count(conn, db) < before + big_rows and not attempt.done():
                assert time.monotonic() < deadline, "the big write never became visible"
                await asyncio.sleep(0.002)
            if attempt.done():
                assert (await attempt).status_code == 200
                continue
            procs[0].send_signal(signal.SIGKILL)
            with contextlib.suppress(httpx.TransportError):
                answer = await attempt
                assert answer.status_code == 200  # answered between our look and the kill: try again
                continue
            break
        assert procs[0].wait(10) == -signal.SIGKILL, "instance 0 answered every big write before the kill"
        forwarded_before = balancer.forwarded[1]
        retried = await write(big, big_rows)
        # replayed: instance 0 had recorded the outcome before it died; else instance 1 completed the write,
        # its batches answered as duplicates where instance 0 had appended them
        assert balancer.forwarded[1] > forwarded_before and retried["row_count"] == big_rows

        # 3. the surviving instance serves everything after
        later = list(range(REQUESTS + 3, 2 * REQUESTS + 3))
        await interleaved(later)
        await client.aclose()

        table = await conn.get_table(fluss.TablePath(db, "events"))
        scanner = await table.new_scan().create_record_batch_log_scanner()
        for b in range(3):
            scanner.subscribe(b, fluss.EARLIEST_OFFSET)
        rows = (await scanner.to_arrow()).to_pylist()
        pairs = [(r["req"], r["i"]) for r in rows]
        assert len(pairs) == len(set(pairs)), f"{len(pairs) - len(set(pairs))} rows were written twice"
        expected = {(q, i) for q in [*range(REQUESTS), *later] for i in range(ROWS_PER_REQUEST)}
        expected |= {(q, i) for q in big_requests for i in range(big_rows)}
        assert set(pairs) == expected
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        if balancer.server is not None:
            await balancer.close()
        with contextlib.suppress(Exception):
            await conn.get_admin().drop_database(db, ignore_if_not_exists=True, cascade=True)
