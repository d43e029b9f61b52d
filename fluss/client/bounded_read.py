"""Bounded reads (``to_arrow``, ``to_arrow_batch_reader``): every leader fetched at once, ahead of the reader.

A bounded read knows where it ends (each bucket's latest offset when it starts), so it gains nothing by waiting
for its caller before asking for more. A driver on the client's I/O loop keeps one FetchLog in flight to every
leader that holds unread buckets (and one read of downloaded remote segments): as soon as a leader answers, its
response is decoded (on the decode pool when large, ``batch_decode``), handed to the reader, and the next fetch
goes to that leader, without waiting for the other leaders or for the reader. Tablet servers read and send while
the client decodes, and the responses of several servers decode at the same time.

A leader's next fetch does not wait for the decoding of its previous answer either: the batch headers say where
each bucket's next fetch starts, so the fetch goes out as soon as an answer arrives and the answer decodes while
the leader reads and sends the next one (servers idled for the client's decompression before). Decodes of a
bucket's answers hand over in fetch order (each waits for the bucket's previous one), and an answer that no longer
starts at the bucket's offset when its turn comes is dropped and the bucket fetched again from its offset.

Fetching stays bounded: one fetch per leader in flight, at most ``MAX_UNDECODED`` fetched answers per leader
waiting to be decoded, and at most ``max_queued`` responses fetched and not yet taken by the reader
(``to_arrow_batch_reader`` is lazy: a slow reader holds the fetching back). A reader that stops early (closed,
dropped) stops the driver; an error of the driver (a bucket failing for longer than ``request-timeout``, a corrupt
batch, ...) is raised to the reader. Each response's batches come in offset order per bucket, so every bucket's
rows reach the reader in log order (buckets interleave by arrival).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from fluss.errors import ErrorCode, FlussError
from fluss.metadata import TableBucket

if TYPE_CHECKING:
    from fluss.client.scanner import LogScanner, RecordBatch

REMOTE = "<remote segments>"  # the key of the remote-segment reads among the per-leader fetches
NO_LEADER_WAIT_S = 0.1
STOP_WAIT_S = 10.0
MAX_UNDECODED = 2  # fetched answers of one leader not decoded yet: a fetch starts only while fewer are pending
_END = object()


class BoundedRead:
    """One bounded read of ``scanner`` up to ``ends`` (exclusive end offsets); iterate it for ``RecordBatch``
    chunks (each the batches of one response). ``close()`` stops the driver."""

    def __init__(self, scanner: LogScanner, ends: dict[TableBucket, int], max_queued: int | None = None) -> None:
        self._scanner = scanner
        self._ends = dict(ends)
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._queued = 0  # chunks handed over and not taken yet (changed under _lock)
        self._lock = threading.Lock()
        self._max_queued = max_queued or max(4, 2 * len(ends))
        self._loop = scanner._io.loop  # noqa: SLF001
        self._space: asyncio.Event | None = None  # set on the loop when the reader took a chunk
        self._done = False
        self._task: asyncio.Task | None = None
        self._stopped = False  # closed: a driver that has not started yet does not start
        self._fetched: dict[TableBucket, int] = {}  # where a bucket's next fetch starts, ahead of its decoding
        self._decodes: dict[TableBucket, asyncio.Task] = {}  # a bucket's latest decode (the next one waits for it)
        self._undecoded: dict[str, int] = {}  # per leader: its fetched answers not decoded yet
        self._future: concurrent.futures.Future = scanner._io.submit(self._drive())  # noqa: SLF001

    # ------------------------------------------------------------ reader side

    def __iter__(self) -> Iterator[list[RecordBatch]]:
        while not self._done:
            item = self._queue.get()
            if item is _END:
                self._done = True
                return
            if isinstance(item, BaseException):
                self._done = True
                raise item
            with self._lock:
                self._queued -= 1
            self._loop.call_soon_threadsafe(self._wake)
            yield item

    def close(self) -> None:
        """Stops the driver and waits (off the I/O thread) until it has stopped changing the scanner."""
        self._done = self._stopped = True
        if self._future.done():
            return
        self._loop.call_soon_threadsafe(self._cancel)
        if threading.current_thread() is not self._scanner._io._thread:  # noqa: SLF001
            try:
                self._future.result(STOP_WAIT_S)
            except BaseException:  # noqa: BLE001 - cancelled, or the error the reader no longer wants
                pass

    # ------------------------------------------------------------ I/O loop side

    def _cancel(self) -> None:
        if self._task is not None:
            self._task.cancel()

    def _wake(self) -> None:
        if self._space is not None:
            self._space.set()

    def _hand_over(self, chunk: list[RecordBatch]) -> None:
        if chunk:
            with self._lock:
                self._queued += 1
            self._queue.put(chunk)

    async def _drive(self) -> None:
        self._task = asyncio.current_task()
        if self._stopped:
            return
        try:
            await self._fetch_all()
        except asyncio.CancelledError:
            raise
        except BaseException as e:  # noqa: BLE001 - raised to the reader
            self._queue.put(e)
            return
        self._queue.put(_END)

    def _position(self, tb: TableBucket) -> int:
        """Where ``tb``'s next fetch starts: its offset, or past the answers fetched and not decoded yet."""
        offset = self._scanner._offsets[tb]  # noqa: SLF001
        return max(offset, self._fetched.get(tb, offset))

    def _unread(self) -> list[TableBucket]:
        offsets = self._scanner._offsets  # noqa: SLF001
        return [tb for tb, end in self._ends.items() if tb in offsets and self._position(tb) < end]

    async def _fetch_all(self) -> None:
        scanner = self._scanner
        self._space = asyncio.Event()
        await scanner._resolve_offsets()  # noqa: SLF001
        inflight: dict[asyncio.Task, tuple[str, set[TableBucket]]] = {}
        try:
            while True:
                self._space.clear()  # before reading _queued: a chunk taken after this sets it again
                busy = {tb for _, tbs in inflight.values() for tb in tbs}
                todo = [tb for tb in self._unread() if tb not in busy]
                if not todo and not inflight and not self._decodes:
                    return
                room = self._queued + sum(self._undecoded.values()) < self._max_queued
                if todo and room:
                    await self._start(todo, inflight)
                waits = set(inflight) | set(self._decodes.values())
                space = None
                if todo and not room:  # the reader is behind: wait for it (or for a fetch in flight)
                    space = asyncio.ensure_future(self._space.wait())
                    waits.add(space)
                if not waits:  # no leader for any unread bucket yet (``_failed`` raises after the timeout)
                    await asyncio.sleep(NO_LEADER_WAIT_S)
                    continue
                done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                if space is not None and not space.done():
                    space.cancel()
                for task in done:
                    if task is not space:
                        inflight.pop(task, None)
                        task.result()  # a fetch's or a decode's error ends the read
        finally:
            tasks = [*inflight, *self._decodes.values()]
            for task in tasks:
                task.cancel()
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)

    async def _fetch_ahead(self, addr: str, tbs: list[TableBucket], wait_ms: int) -> None:
        """One FetchLog to ``addr`` from each bucket's position; its answer decodes in a task of its own, after
        the previous answers of the same buckets, so the leader's next fetch can start right away."""
        scanner = self._scanner
        answer = await scanner._fetch(addr, {tb: self._position(tb) for tb in tbs}, wait_ms)  # noqa: SLF001
        for tb, info in answer.remote:
            if scanner._offsets.get(tb) == answer.offsets[tb]:  # noqa: SLF001
                scanner._remote_reader().add(tb, info)  # noqa: SLF001
        fetched = [(tb, offset, batches) for tb, offset, batches in answer.fetched if batches]
        if not fetched:
            return
        before = {self._decodes[tb] for tb, _, _ in fetched if tb in self._decodes}
        ends = {tb: batches[-1].next_offset for tb, _, batches in fetched}
        self._fetched.update(ends)
        self._undecoded[addr] = self._undecoded.get(addr, 0) + 1
        task = asyncio.ensure_future(self._decode_after(before, fetched, ends, addr))
        for tb in ends:
            self._decodes[tb] = task

    async def _decode_after(self, before: set[asyncio.Task], fetched: list, ends: dict[TableBucket, int],
                            addr: str) -> None:
        try:
            if before:
                await asyncio.wait(before)
                for task in before:
                    task.result()  # an earlier decode failed: the read ends with its error
            await self._scanner._decode(fetched, self._hand_over)  # noqa: SLF001
        finally:
            self._undecoded[addr] -= 1
            me = asyncio.current_task()
            offsets = self._scanner._offsets  # noqa: SLF001
            for tb, end in ends.items():
                if offsets.get(tb, end) < end and self._fetched.get(tb) == end:
                    del self._fetched[tb]  # dropped (the bucket was not at this answer's offset): fetch again
                if self._decodes.get(tb) is me:
                    del self._decodes[tb]

    async def _start(self, todo: list[TableBucket], inflight: dict[asyncio.Task, tuple[str, set[TableBucket]]]
                     ) -> None:
        """A fetch to every leader of ``todo`` that has none in flight (and a remote read, if needed)."""
        scanner = self._scanner
        remote = scanner._remote.buckets() & set(todo) if scanner._remote is not None else set()  # noqa: SLF001
        local = [tb for tb in todo if tb not in remote]
        leaders = await scanner._leaders(local) if local else {}  # noqa: SLF001
        led = {tb for tbs in leaders.values() for tb in tbs}
        for tb in local:
            if tb not in led:
                scanner._failed(tb, FlussError(  # noqa: SLF001
                    f"Bucket {tb.bucket_id} of table '{scanner._table.table_path}' has no leader",  # noqa: SLF001
                    ErrorCode.LEADER_NOT_AVAILABLE_EXCEPTION))
        running = {key for key, _ in inflight.values()}
        running |= {addr for addr, n in self._undecoded.items() if n >= MAX_UNDECODED}
        wait_ms = scanner._wait_ms  # noqa: SLF001
        jobs: list[tuple[str, list[TableBucket], Callable]] = []
        for addr, tbs in leaders.items():
            if addr not in running:
                jobs.append((addr, tbs, lambda a=addr, t=tbs: self._fetch_ahead(a, t, wait_ms)))
        if remote and REMOTE not in running:
            jobs.append((REMOTE, sorted(remote, key=_order),
                         lambda r=remote: scanner._read_remote(r, max(wait_ms, 1000), self._hand_over)))  # noqa: SLF001
        for key, tbs, job in jobs:
            inflight[asyncio.ensure_future(job())] = (key, set(tbs))


def _order(tb: TableBucket) -> tuple[int, int]:
    return tb.partition_id_or_none_value, tb.bucket_id


__all__ = ["BoundedRead"]
