"""Helpers of the tiered-log tests: writing and reading tables whose values tell their order, waiting, and a TCP
proxy that a test can cut (remote storage unreachable for a while)."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from pathlib import Path

import pyarrow as pa

import fluss
from fluss.fs import remote_log_layout as layout

ROWS = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("score", pa.float64())])


def rows(start: int, n: int) -> pa.RecordBatch:
    ids = list(range(start, start + n))
    return pa.record_batch({"id": pa.array(ids, pa.int64()), "name": [f"name-{i:08d}" for i in ids],
                            "score": [i / 4 for i in ids]}, schema=ROWS)


async def append_rows(conn, path: fluss.TablePath, start: int, n: int, batch: int = 1000) -> None:
    writer = (await conn.get_table(path)).new_append().create_writer()
    for i in range(start, start + n, batch):
        writer.write_arrow_batch(rows(i, min(batch, start + n - i)))
    await writer.flush()


async def scan_ids(conn, path: fluss.TablePath, buckets: int = 1, start=fluss.EARLIEST_OFFSET,
                   projection: list[int] | None = None) -> pa.Table:
    scan = (await conn.get_table(path)).new_scan()
    if projection is not None:
        scan = scan.project(projection)
    scanner = await scan.create_record_batch_log_scanner()
    for b in range(buckets):
        scanner.subscribe(b, start)
    return await scanner.to_arrow()


async def wait_until(predicate, timeout_s: float = 60, what: str = "condition"):
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        value = await predicate()
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        await asyncio.sleep(0.3)


async def describe_log(conn, path: fluss.TablePath, bucket: int = 0):
    """The DescribeLog answer of a bucket's leader (local and remote log offsets and sizes)."""
    from fluss.table_report import log_states

    info = await conn.get_admin().get_table_info(path)
    return {s.bucket: s for s in await log_states(conn, info)}[bucket]


def check_remote_dir(tablet_dir: Path) -> int:
    """The bucket's remote directory holds one manifest and exactly the complete segments it names."""
    manifests = list((tablet_dir / layout.METADATA_DIR).glob("*" + layout.MANIFEST_SUFFIX))
    assert len(manifests) == 1, manifests
    manifest = json.loads(manifests[0].read_text())
    named = {s["segment_id"]: s for s in manifest["segments"]}
    on_disk = {p.name for p in tablet_dir.iterdir() if p.name != layout.METADATA_DIR}
    assert on_disk == set(named)
    for sid, s in named.items():
        for suffix in layout.SEGMENT_FILES:
            assert (tablet_dir / sid / f"{s['start_offset']:020d}{suffix}").exists()
        assert (tablet_dir / sid / f"{s['start_offset']:020d}.log").stat().st_size == s["size_in_bytes"]
    return len(named)


class TcpProxy:
    """Forwards a loopback port to another; ``cut()`` drops every connection and refuses new ones until
    ``restore()`` (a network partition between the servers and the store)."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port = self._listener.getsockname()[1]
        self._open: set[socket.socket] = set()
        self._cut = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True, name="tcp-proxy").start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self._cut.is_set():
                client.close()
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open |= {client, upstream}
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while not self._cut.is_set():
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()
            with self._lock:
                self._open -= {src, dst}

    def cut(self) -> None:
        self._cut.set()
        with self._lock:
            for s in list(self._open):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def restore(self) -> None:
        self._cut.clear()

    def close(self) -> None:
        self._stop.set()
        self.cut()
        self._listener.close()
