"""Reading the tiered log: remote log segments downloaded by the client itself, then read like fetched data.

A fetch below a bucket leader's local log start is answered with remote segment descriptors
(``RemoteLogFetchInfoPb``: the bucket's remote directory, segment ids and offsets, and the byte position of the
fetch offset in the first segment) instead of records. The scanner hands them to its :class:`RemoteLogReader`:

* Segment files (``<tablet dir>/<segment id>/<start:020d>.log``, see ``fluss/fs/remote_log_layout.py``) are
  downloaded on the connection's pool of ``remote-file.download-thread-num`` threads, ahead of reading, into a
  private directory under ``scanner.io.tmpdir``; at most ``scanner.remote-log.prefetch-num`` segment files of a
  scanner are on disk at once (the one being read included) and each is deleted once read, so the directory never
  holds more than that many segments. Every download is a file of its own, even of a segment another scanner of
  the connection is reading too: one scanner deleting its copy never takes another's.
* A download that fails on the way (the store unreachable, a connection cut) is tried again with growing waits
  (``fluss.client.retry``) until ``request-timeout`` has passed since its first attempt, then fails with its last
  error, naming the segment. A file that is not there, or that the store refuses to give (permissions), fails at
  once.
* A downloaded file must have the size its descriptor gives, and every batch read from it is CRC-checked; a
  missing file, a short file or a corrupt batch fails the read with ``LOG_STORAGE_EXCEPTION`` naming the segment
  (never skipped data). Batches are read in chunks, from the first segment's start position on, and the scanner
  projects them as the leader would (:func:`project_as_the_leader`, ARROW logs) and decodes them through its
  ``SchemaReader`` as it does fetched batches (any schema id, any log format), dropping records below its
  offset.
* When a bucket's remote segments are read, its offset is the last segment's end and the next fetch goes to the
  leader again: more remote segments, or the local log, so reading continues seamlessly into local data.

Credentials and endpoint options come from the coordinator (GetFileSystemSecurityToken), overridden by the
client's own ``s3.*`` options.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import shutil
import tempfile
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from fluss.client.retry import RetryAction, RetryPolicy
from fluss.errors import ErrorCode, FlussError
from fluss.fs import filesystem
from fluss.fs import remote_log_layout as layout
from fluss.metadata import TableBucket
from fluss.record.log_batch import HEADER_SIZE, LogBatch, iter_batches, project_batch, read_header
from fluss.record.schema_evolution import SchemaHistory

log = logging.getLogger(__name__)

READ_CHUNK_BYTES = 8 << 20  # bytes of a segment file read at a time


@dataclass(frozen=True)
class RemoteSegment:
    tablet_dir: str
    segment_id: str
    start_offset: int
    end_offset: int  # exclusive
    size_in_bytes: int

    @property
    def url(self) -> str:
        return layout.segment_file(self.tablet_dir, self.segment_id, self.start_offset)

    def describe(self) -> str:
        return f"remote log segment {self.segment_id} (offsets [{self.start_offset}, {self.end_offset}), {self.url})"


def _download_file(fs, remote_path: str, local: Path) -> None:
    """One file copy (a module-level seam so tests can interrupt downloads)."""
    fs.get_file(remote_path, str(local))


class RemoteFileDownloader:
    """The connection's download pool and the options to reach remote storage."""

    def __init__(self, threads: int, tmp_root: str | None, options_provider,
                 policy: RetryPolicy | None = None) -> None:
        self._policy = policy or RetryPolicy(deadline_s=30.0)
        self._pool = ThreadPoolExecutor(max(1, threads), thread_name_prefix="fluss-remote-download")
        root = Path(tmp_root) if tmp_root else Path(tempfile.gettempdir()) / "fluss"
        root.mkdir(parents=True, exist_ok=True)
        self.directory = Path(tempfile.mkdtemp(prefix="remote-log-", dir=root))
        self._options_provider = options_provider  # () -> dict of s3.* options (blocking; called once)
        self._options: dict[str, str] | None = None
        self._lock = threading.Lock()
        self._downloads = itertools.count()  # numbers each download's file (next() is atomic under the GIL)

    def options(self) -> dict[str, str]:
        with self._lock:
            if self._options is None:
                self._options = dict(self._options_provider())
            return self._options

    def submit(self, segment: RemoteSegment) -> Future:
        return self._pool.submit(self._download, segment)

    def _download(self, segment: RemoteSegment) -> Path:
        """Downloads one segment file, retrying transient failures until the policy's deadline."""
        state = self._policy.start(f"Downloading the {segment.describe()}")
        while True:
            try:
                return self._download_once(segment)
            except FlussError as e:
                if state.failed(e) is RetryAction.FAIL:
                    raise state.final_error() from None
                log.warning("downloading the %s failed (attempt %d), trying again: %s", segment.describe(),
                            state.attempts, e.message)
            time.sleep(state.delay_s())

    def _download_once(self, segment: RemoteSegment) -> Path:
        local = self.directory / f"{segment.segment_id}-{segment.start_offset:020d}-{next(self._downloads)}.log"
        partial = local.with_suffix(".part")
        try:
            fs, path = filesystem(segment.url, self.options())
            _download_file(fs, path, partial)
        except FileNotFoundError:
            partial.unlink(missing_ok=True)
            raise FlussError(f"The {segment.describe()} does not exist in remote storage",
                             ErrorCode.LOG_STORAGE_EXCEPTION) from None
        except PermissionError as e:
            partial.unlink(missing_ok=True)
            raise FlussError(f"Remote storage refused the {segment.describe()}: {e}",
                             ErrorCode.LOG_STORAGE_EXCEPTION) from None
        except FlussError:
            partial.unlink(missing_ok=True)
            raise
        except Exception as e:  # noqa: BLE001 - the store unreachable, a connection cut: retried by _download
            partial.unlink(missing_ok=True)
            raise FlussError(f"Downloading the {segment.describe()} failed: {type(e).__name__}: {e}",
                             ErrorCode.NETWORK_EXCEPTION) from e
        size = partial.stat().st_size
        if size != segment.size_in_bytes:
            partial.unlink(missing_ok=True)
            raise FlussError(f"The {segment.describe()} has {size} bytes, the remote log manifest says "
                             f"{segment.size_in_bytes}: the file is damaged", ErrorCode.LOG_STORAGE_EXCEPTION)
        partial.rename(local)
        return local

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        shutil.rmtree(self.directory, ignore_errors=True)


def token_options(schema: str, token: bytes, addition_info) -> dict[str, str]:
    """The ``s3.*`` options in a GetFileSystemSecurityToken answer."""
    options = {kv.key: kv.value for kv in addition_info}
    if schema in ("s3", "s3a") and token:
        creds = json.loads(token)
        for key, name in (("s3.access-key", "access_key"), ("s3.secret-key", "secret_key"),
                          ("s3.session-token", "session_token")):
            if creds.get(name):
                options[key] = creds[name]
    return options


@dataclass
class _Download:
    segment: RemoteSegment
    future: Future
    position: int  # where reading starts (the first segment: the fetch offset's indexed batch)


@dataclass
class _BucketReads:
    waiting: deque[tuple[RemoteSegment, int]] = field(default_factory=deque)  # not yet downloading
    downloads: deque[_Download] = field(default_factory=deque)  # downloading or downloaded, in offset order


@dataclass
class RemoteChunk:
    """Batches read from a remote segment of one bucket; ``segment_end`` is set when the segment is done."""

    bucket: TableBucket
    batches: list[LogBatch]
    segment_end: int | None


class RemoteLogReader:
    """One scanner's remote reads (see the module docstring)."""

    def __init__(self, downloader: RemoteFileDownloader, prefetch: int) -> None:
        self.downloader = downloader
        self.prefetch = max(1, prefetch)
        self._buckets: dict[TableBucket, _BucketReads] = {}

    def buckets(self) -> set[TableBucket]:
        return set(self._buckets)

    def add(self, tb: TableBucket, info) -> None:
        """Queues the segments of a fetch answer (a ``RemoteLogFetchInfoPb``) for a bucket."""
        self.drop(tb)
        reads = _BucketReads()
        for i, s in enumerate(info.remote_log_segments):
            segment = RemoteSegment(info.remote_log_tablet_dir, s.remote_log_segment_id, s.remote_log_start_offset,
                                    s.remote_log_end_offset, s.segment_size_in_bytes)
            reads.waiting.append((segment, info.first_start_pos if i == 0 else 0))
        if reads.waiting:
            self._buckets[tb] = reads
            self._schedule()

    def drop(self, tb: TableBucket) -> None:
        reads = self._buckets.pop(tb, None)
        if reads is not None:
            for d in reads.downloads:
                self._discard(d)

    def _on_disk(self) -> int:
        return sum(len(r.downloads) for r in self._buckets.values())

    def _schedule(self) -> None:
        """Starts downloads, round-robin over buckets, while fewer than ``prefetch`` files are on disk."""
        progress = True
        while progress and self._on_disk() < self.prefetch:
            progress = False
            for reads in self._buckets.values():
                if reads.waiting and self._on_disk() < self.prefetch:
                    segment, position = reads.waiting.popleft()
                    reads.downloads.append(_Download(segment, self.downloader.submit(segment), position))
                    progress = True

    async def read(self, buckets: set[TableBucket], timeout_s: float) -> list[RemoteChunk]:
        """Up to one chunk per bucket whose current segment is downloaded, waiting up to ``timeout_s`` for the
        first download to finish; raises the error of a failed download."""
        self._schedule()
        heads = {tb: r.downloads[0] for tb, r in self._buckets.items() if tb in buckets and r.downloads}
        if not heads:
            return []
        pending = [asyncio.wrap_future(d.future) for d in heads.values() if not d.future.done()]
        for waiter in pending:  # a failed download is raised below from its own future, not from this wrapper
            waiter.add_done_callback(lambda f: f.cancelled() or f.exception())
        if len(pending) == len(heads):
            await asyncio.wait(pending, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
        out = []
        for tb, head in heads.items():
            if not head.future.done():
                continue
            path = head.future.result()  # raises the download's FlussError
            batches, position, done = await asyncio.to_thread(_read_chunk, path, head.position, head.segment)
            head.position = position
            end = None
            if done:
                end = head.segment.end_offset
                reads = self._buckets[tb]
                reads.downloads.popleft()
                self._discard(head)
                if not reads.downloads and not reads.waiting:
                    del self._buckets[tb]
            out.append(RemoteChunk(tb, batches, end))
        self._schedule()
        return out

    @staticmethod
    def _discard(d: _Download) -> None:
        if not d.future.done():
            d.future.cancel()
            d.future.add_done_callback(lambda f: _unlink_result(f))
        else:
            _unlink_result(d.future)

    def close(self) -> None:
        for tb in list(self._buckets):
            self.drop(tb)


def project_as_the_leader(batches: list[LogBatch], history: SchemaHistory, projection: list[int]) -> list[LogBatch]:
    """Remote batches of an ARROW log projected for ``projection`` (indexes into the latest schema) as the tablet
    server projects a fetch: each keeps the projected columns its own schema id holds (column 0 alone when none),
    so the scanner's ``SchemaReader`` decodes them like fetched batches. ``history`` must know every batch's id."""
    return [next(iter_batches(project_batch(b, history.schema_of(b.schema_id),
                                            history.body_columns(b.schema_id, projection))))
            for b in batches]


def _unlink_result(f: Future) -> None:
    if f.cancelled() or f.exception() is not None:
        return
    try:
        os.unlink(f.result())
    except OSError:
        pass


def _read_chunk(path: Path, position: int, segment: RemoteSegment) -> tuple[list[LogBatch], int, bool]:
    """Whole, CRC-checked batches from ``position`` (about READ_CHUNK_BYTES); returns them, the next position,
    and whether the file is read to its end."""
    size = segment.size_in_bytes
    with open(path, "rb") as f:
        f.seek(position)
        data = f.read(min(READ_CHUNK_BYTES, size - position))
        if len(data) >= HEADER_SIZE:
            first = read_header(data)
            if HEADER_SIZE <= first.batch_length <= size - position and first.batch_length > len(data):
                f.seek(position)
                data = f.read(first.batch_length)
    try:
        batches = list(iter_batches(data, validate=True))
    except FlussError as e:
        raise FlussError(f"The {segment.describe()} is corrupt at byte {position}: {e.message}",
                         ErrorCode.LOG_STORAGE_EXCEPTION) from None
    consumed = sum(b.size_in_bytes for b in batches)
    position += consumed
    if not batches and position < size:
        raise FlussError(f"The {segment.describe()} is corrupt at byte {position}: no whole log batch there",
                         ErrorCode.LOG_STORAGE_EXCEPTION)
    if batches and batches[-1].next_offset > segment.end_offset:
        raise FlussError(f"The {segment.describe()} holds offset {batches[-1].next_offset - 1}, beyond its end",
                         ErrorCode.LOG_STORAGE_EXCEPTION)
    done = position >= size
    if done and batches and batches[-1].next_offset != segment.end_offset:
        raise FlussError(f"The {segment.describe()} ends at offset {batches[-1].next_offset}, the remote log "
                         f"manifest says {segment.end_offset}", ErrorCode.LOG_STORAGE_EXCEPTION)
    return batches, position, done
