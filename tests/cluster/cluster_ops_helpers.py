"""Shared by the cluster-operation tests (replication, reassignment, rebalance): waiting for a state, the placement
of a table's buckets, and an acks=all appender that records what was acknowledged so a test can check that
nothing acknowledged was lost or duplicated."""

from __future__ import annotations

import asyncio
import time

import pyarrow as pa
import pytest

from fluss import EARLIEST_OFFSET, FlussError


async def wait_until(predicate, timeout_s: float, what: str):
    """Polls the coroutine function ``predicate`` every 0.2 s until it returns something true (returned)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = await predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.2)


async def buckets_of(conn, path) -> list:
    """The table's bucket metadata, fresh from the coordinator."""
    return list((await conn.run(conn.cluster.update_metadata([path]))).tables[0].buckets)


async def all_in_sync(conn, path) -> bool:
    """Every bucket has a leader and every replica in its ISR."""
    return all(b.leader_id >= 0 and sorted(b.isr) == sorted(b.replicas) for b in await buckets_of(conn, path))


async def placement(conn, path) -> dict[int, list[int]]:
    return {b.bucket_id: list(b.replicas) for b in await buckets_of(conn, path)}


async def leaders(conn, path) -> dict[int, int]:
    return {b.bucket_id: b.leader_id for b in await buckets_of(conn, path)}


class AckedAppender:
    """Appends ``seq`` (int64) rows in batches of ``batch`` from a background task until :meth:`stop`; remembers the
    acknowledged sequence numbers, each write's latency and every failure."""

    def __init__(self, table, batch: int = 100) -> None:
        self.table = table
        self.writer = table.new_append().create_writer()
        self.batch = batch
        self.acked: list[int] = []
        self.failures: list[str] = []
        self.latencies_ms: list[tuple[float, float]] = []  # (monotonic time, ms)
        self._stop = asyncio.Event()
        self._task: asyncio.Task | None = None

    def start(self) -> AckedAppender:
        self._task = asyncio.create_task(self._loop())
        return self

    async def _loop(self) -> None:
        seq = 0
        while not self._stop.is_set():
            t0 = time.monotonic()
            handle = self.writer.write_arrow_batch(
                pa.record_batch([pa.array(range(seq, seq + self.batch), pa.int64())], names=["seq"]))
            try:
                await handle.wait()
                self.acked.extend(range(seq, seq + self.batch))
                self.latencies_ms.append((t0, (time.monotonic() - t0) * 1000))
            except FlussError as e:
                self.failures.append(str(e))
            seq += self.batch

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            await asyncio.wait_for(self._task, 60)
        await asyncio.wait_for(self.writer.flush(), 60)

    async def check(self, buckets: int, min_acked: int) -> list[int]:
        """No write failed, every acknowledged row is in the table exactly once; returns the rows read."""
        assert not self.failures, self.failures[:3]
        scanner = await self.table.new_scan().create_record_batch_log_scanner()
        scanner.subscribe_buckets({b: EARLIEST_OFFSET for b in range(buckets)})
        seqs = (await scanner.to_arrow()).column("seq").to_pylist()
        assert len(seqs) == len(set(seqs)), "duplicates"
        assert set(self.acked) <= set(seqs), "acknowledged records lost"
        assert len(self.acked) >= min_acked, f"only {len(self.acked)} rows acknowledged"
        return seqs


def restarting_stopped(cluster_fixture: str):
    """An autouse fixture restarting, after each test, the processes the test stopped in the module's cluster
    (``cluster_fixture`` names it): a failing fault test must not leave a server down for the next test."""

    @pytest.fixture(autouse=True)
    def _restart_stopped_processes(request):
        cluster = request.getfixturevalue(cluster_fixture)
        yield
        cluster.restart_stopped()

    return _restart_stopped_processes
