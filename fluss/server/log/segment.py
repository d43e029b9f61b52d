"""One log segment: a ``.log`` file of concatenated batches plus its offset and time indexes.

Files are named after the segment's base offset, zero-padded to 20 digits: ``00000000000000001234.log``,
``...1234.index``, ``...1234.timeindex``. Batches are written with ``os.pwrite`` at the end of the file (the
page cache survives a killed process) and fsynced by :meth:`LogSegment.flush`. Reads use ``os.pread`` from a
position found through the offset index, so serving a fetch never loads a whole segment.

A segment opened from disk is either *loaded* (:meth:`load`: cheap checks of the indexes and a header walk from
the last offset-index entry to the end of the file) or *recovered* (:meth:`recover`: every batch is read and
its CRC checked, the file is cut after the last good batch, and both indexes are rebuilt).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import crc32c

from fluss.errors import ErrorCode, FlussError
from fluss.record.log_batch import CRC_LENGTH, HEADER_SIZE, BatchHeader, Buffer, check_header, read_header
from fluss.server.log.index import OffsetIndex, TimeIndex

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"

NO_TIMESTAMP = -1
_WALK_CHUNK = 8 << 10  # bytes read at a time when only batch headers are needed
_SCAN_CHUNK = 1 << 20  # bytes read at a time when whole batches are needed (recovery)
_IOV_MAX = 1024  # buffers per pwritev (Linux's UIO_MAXIOV)


def segment_file_stem(base_offset: int) -> str:
    return f"{base_offset:020d}"


def parse_segment_base_offset(path: Path) -> int | None:
    """The base offset in a segment file name, or None if the name is not one."""
    stem = path.name.split(".", 1)[0]
    return int(stem) if len(stem) == 20 and stem.isdigit() else None


class LogSegment:
    """State: ``base_offset``, ``size`` (bytes), ``next_offset`` (end offset), ``max_timestamp``."""

    def __init__(self, directory: Path, base_offset: int, fd: int) -> None:
        self.directory = Path(directory)
        self.base_offset = base_offset
        stem = segment_file_stem(base_offset)
        self.log_path = self.directory / (stem + LOG_SUFFIX)
        self.offset_index = OffsetIndex(self.directory / (stem + INDEX_SUFFIX), base_offset)
        self.time_index = TimeIndex(self.directory / (stem + TIME_INDEX_SUFFIX), base_offset)
        self._fd: int | None = fd
        self.size = os.fstat(fd).st_size
        self.next_offset = base_offset
        self.max_timestamp = NO_TIMESTAMP
        self._bytes_since_index_entry = 0

    @classmethod
    def create(cls, directory: Path, base_offset: int) -> LogSegment:
        """A new, empty segment (any stale files of the same name are emptied)."""
        path = Path(directory) / (segment_file_stem(base_offset) + LOG_SUFFIX)
        segment = cls(directory, base_offset, os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644))
        segment.offset_index.reset()
        segment.time_index.reset()
        return segment

    @classmethod
    def open_existing(cls, directory: Path, base_offset: int) -> LogSegment:
        """Open the files; call :meth:`load` or :meth:`recover` before using the segment."""
        path = Path(directory) / (segment_file_stem(base_offset) + LOG_SUFFIX)
        return cls(directory, base_offset, os.open(path, os.O_RDWR))

    @property
    def fd(self) -> int:
        if self._fd is None:
            raise FlussError(f"Log segment {self.log_path.name} is closed", ErrorCode.LOG_STORAGE_EXCEPTION)
        return self._fd

    @property
    def is_empty(self) -> bool:
        return self.next_offset == self.base_offset

    def __repr__(self) -> str:
        return f"LogSegment({self.log_path.name}, offsets [{self.base_offset}, {self.next_offset}), {self.size} bytes)"

    # -- low-level I/O ----------------------------------------------------------------------------------------
    def _pread(self, length: int, position: int) -> bytes:
        data = os.pread(self.fd, length, position)
        if len(data) == length or not data:
            return data
        parts = [data]  # short read: keep reading until length bytes or end of file
        got = len(data)
        while got < length:
            more = os.pread(self.fd, length - got, position + got)
            if not more:
                break
            parts.append(more)
            got += len(more)
        return b"".join(parts)

    def read_header_at(self, position: int) -> BatchHeader | None:
        raw = self._pread(HEADER_SIZE, position)
        return read_header(raw) if len(raw) == HEADER_SIZE else None

    def walk(self, position: int, end: int | None = None, *, payload: bool = False
             ) -> Iterator[tuple[int, BatchHeader, memoryview | None]]:
        """``(position, header, raw batch or None)`` for each complete batch from ``position``.

        Stops before ``end`` (default: the file size), before an incomplete batch, or before a header whose
        length is impossible; the caller compares where it stopped with where it expected to stop. The raw view
        is only valid until the next iteration.
        """
        end = self.size if end is None else end
        chunk_size = _SCAN_CHUNK if payload else _WALK_CHUNK
        chunk = b""
        chunk_start = position
        while position + HEADER_SIZE <= end:
            rel = position - chunk_start
            if len(chunk) - rel < HEADER_SIZE:
                chunk, chunk_start, rel = self._pread(min(chunk_size, end - position), position), position, 0
                if len(chunk) < HEADER_SIZE:
                    return
            header = read_header(chunk, rel)
            length = header.batch_length
            if length < HEADER_SIZE or position + length > end:
                return
            raw = None
            if payload:
                if len(chunk) - rel < length:
                    chunk, chunk_start, rel = self._pread(max(chunk_size, length), position), position, 0
                    if len(chunk) < length:
                        return
                raw = memoryview(chunk)[rel : rel + length]
            yield position, header, raw
            position += length

    # -- appending ---------------------------------------------------------------------------------------------
    def _track(self, position: int, header: BatchHeader, index_interval_bytes: int) -> None:
        """Update indexes and state for a batch now stored at ``position`` (same rule for append and rebuild)."""
        if position > 0 and self._bytes_since_index_entry >= index_interval_bytes:
            self.offset_index.append(header.base_offset, position)
            self.time_index.maybe_append(self.max_timestamp, header.base_offset)
            self._bytes_since_index_entry = 0
        self._bytes_since_index_entry += header.batch_length
        self.max_timestamp = max(self.max_timestamp, header.commit_timestamp)
        self.next_offset = header.next_offset

    def append(self, data: Buffer | list[Buffer], headers: list[BatchHeader], index_interval_bytes: int) -> None:
        """Write ``data`` (the concatenation of batches described by ``headers``, as one buffer or as a list of
        consecutive parts) at the end of the file, with as few system calls as the parts allow."""
        start = self.size
        before = (self.next_offset, self.max_timestamp, self._bytes_since_index_entry, len(self.offset_index),
                  len(self.time_index))
        try:
            _pwrite_all(self.fd, data if isinstance(data, list) else [data], start)
            position = start
            for header in headers:
                self._track(position, header, index_interval_bytes)
                position += header.batch_length
        except OSError:  # e.g. a full disk: the segment is left exactly as it was (nothing half-appended)
            os.ftruncate(self.fd, start)
            self.next_offset, self.max_timestamp, self._bytes_since_index_entry = before[:3]
            self.offset_index.truncate_entries(before[3])
            self.time_index.truncate_entries(before[4])
            raise
        self.size = position

    # -- reading -----------------------------------------------------------------------------------------------
    def find_batch(self, offset: int) -> tuple[int, BatchHeader] | None:
        """``(position, header)`` of the batch containing ``offset``, or None if it is past this segment."""
        if offset >= self.next_offset:
            return None
        indexed_offset, position = self.offset_index.lookup(offset)
        expected = indexed_offset
        for pos, header, _ in self.walk(position):
            if header.base_offset != expected:
                raise FlussError(
                    f"Log segment {self.log_path.name} is inconsistent: batch at byte {pos} has base offset "
                    f"{header.base_offset}, expected {expected} (offset index entry ({indexed_offset}, {position}))",
                    ErrorCode.LOG_STORAGE_EXCEPTION,
                )
            if header.next_offset > offset:
                return pos, header
            expected = header.next_offset
        return None

    def read(self, position: int, max_bytes: int, max_offset: int | None, min_one_batch: bool
             ) -> tuple[bytes | memoryview, int]:
        """Whole batches from ``position``: at most ``max_bytes`` (but one batch if ``min_one_batch``), none
        reaching ``max_offset`` or beyond. Returns ``(data, next_offset)``; next_offset is -1 if nothing was read.

        One read of the file (plus a header read when a whole first batch is promised, so a batch larger than
        ``max_bytes`` is read once, at its size); batches cut off at the end of the read are dropped from a view
        of it, not copied out."""
        available = self.size - position
        want = min(max_bytes, available) if max_bytes >= HEADER_SIZE else 0
        if min_one_batch:
            first = self.read_header_at(position)
            if first is None or (max_offset is not None and first.next_offset > max_offset):
                return b"", -1
            want = max(want, min(first.batch_length, available))
        chunk = self._pread(want, position) if want else b""
        used = 0
        next_offset = -1
        while len(chunk) - used >= HEADER_SIZE:
            header = read_header(chunk, used)
            if header.batch_length < HEADER_SIZE or used + header.batch_length > len(chunk):
                break
            if max_offset is not None and header.next_offset > max_offset:
                break
            used += header.batch_length
            next_offset = header.next_offset
        if used == 0:
            return b"", -1
        return (chunk if used == len(chunk) else memoryview(chunk)[:used]), next_offset

    def find_offset_by_timestamp(self, timestamp: int) -> int | None:
        """Base offset of the first batch with ``commit_timestamp >= timestamp``, or None."""
        if self.is_empty or self.max_timestamp < timestamp:
            return None
        start = self.time_index.lookup(timestamp)
        _, position = self.offset_index.lookup(self.base_offset if start is None else start)
        for _, header, _ in self.walk(position):
            if header.commit_timestamp >= timestamp:
                return header.base_offset
        return None

    # -- loading and recovery -----------------------------------------------------------------------------------
    def load(self, expected_end: int | None) -> str | None:
        """Trust the files after cheap checks; returns why the segment must be recovered, or None if loaded.

        ``expected_end`` is the next segment's base offset (None for the last segment).
        """
        problem = self.offset_index.file_problem() or self.time_index.file_problem()
        if problem:
            return problem
        last = self.offset_index.last_entry()
        start_offset, start_position = last if last is not None else (self.base_offset, 0)
        if last is not None:
            header = self.read_header_at(start_position)
            if header is None or header.base_offset != start_offset:
                return (f"last offset index entry ({start_offset}, byte {start_position}) does not point at a "
                        f"batch of {self.log_path.name}")
        last_time = self.time_index.last_entry()
        max_timestamp = last_time[0] if last_time is not None else NO_TIMESTAMP
        next_offset, end = start_offset, start_position
        for position, header, _ in self.walk(start_position):
            problem = _header_problem(header, next_offset)
            if problem:
                return f"{problem} at byte {position}"
            max_timestamp = max(max_timestamp, header.commit_timestamp)
            next_offset, end = header.next_offset, position + header.batch_length
        if end != self.size:
            return f"{self.size - end} bytes of incomplete or unreadable data at byte {end}"
        if last_time is not None and last_time[1] > next_offset:
            return f"time index entry at offset {last_time[1]} is beyond the segment end {next_offset}"
        if expected_end is not None and next_offset != expected_end:
            return f"segment ends at offset {next_offset} but the next segment starts at {expected_end}"
        self.next_offset = next_offset
        self.max_timestamp = max_timestamp
        self._bytes_since_index_entry = self.size - start_position
        return None

    def recover(self, index_interval_bytes: int) -> int:
        """Validate every batch (structure, offsets, CRC), cut the file after the last good one and rebuild
        both indexes. Returns the number of bytes cut off."""
        self.offset_index.reset()
        self.time_index.reset()
        self.next_offset = self.base_offset
        self.max_timestamp = NO_TIMESTAMP
        self._bytes_since_index_entry = 0
        valid_end = 0
        for position, header, raw in self.walk(0, payload=True):
            if _header_problem(header, self.next_offset) or crc32c.crc32c(raw[CRC_LENGTH:]) != header.crc:
                break
            self._track(position, header, index_interval_bytes)
            valid_end = position + header.batch_length
        cut = self.size - valid_end
        if cut:
            os.ftruncate(self.fd, valid_end)
            self.size = valid_end
        return cut

    def truncate_to(self, offset: int, index_interval_bytes: int) -> int:
        """Drop the batch containing ``offset`` and everything after it; returns the bytes removed."""
        found = self.find_batch(offset)
        if found is None:
            return 0
        position, header = found
        removed = self.size - position
        os.ftruncate(self.fd, position)
        self.size = position
        self.offset_index.truncate_to_position(position)
        self.time_index.truncate_to(header.base_offset)
        if self.load(None) is not None:
            self.recover(index_interval_bytes)
        return removed

    # -- lifecycle ---------------------------------------------------------------------------------------------
    def flush(self) -> None:
        os.fsync(self.fd)
        self.offset_index.flush()
        self.time_index.flush()

    def close(self) -> None:
        self.offset_index.close()
        self.time_index.close()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def delete(self) -> None:
        """Close and remove the files (the log file first, so a crash never leaves a log without its base)."""
        self.close()
        self.log_path.unlink(missing_ok=True)
        self.offset_index.delete()
        self.time_index.delete()


def _pwrite_all(fd: int, parts: list[Buffer], position: int) -> None:
    """Writes the buffers one after the other from ``position`` (``os.pwritev``, resuming after short writes)."""
    views = [v for v in (memoryview(p).cast("B") for p in parts) if len(v)]
    i = 0
    while i < len(views):
        written = os.pwritev(fd, views[i:i + _IOV_MAX], position)
        if written <= 0:
            raise OSError(f"pwritev wrote nothing at byte {position}")
        position += written
        while i < len(views) and written >= len(views[i]):  # skip what was written, keep a partial buffer's rest
            written -= len(views[i])
            i += 1
        if written:
            views[i] = views[i][written:]


def _header_problem(header: BatchHeader, expected_base_offset: int) -> str | None:
    try:
        check_header(header)
    except FlussError as e:
        return e.message
    if header.base_offset != expected_base_offset:
        return f"batch base offset {header.base_offset} where offset {expected_base_offset} was expected"
    if header.record_count <= 0:
        return f"batch at offset {header.base_offset} has {header.record_count} records"
    return None
