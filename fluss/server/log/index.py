"""Sparse per-segment indexes: offset -> file position, and timestamp -> offset.

Both are append-only files of fixed-size little-endian entries next to the segment's ``.log`` file, with offsets
stored relative to the segment's base offset (u32):

* ``.index`` (:class:`OffsetIndex`), 8-byte entries ``(relative_offset u32, position u32)``: the batch whose base
  offset is ``base + relative_offset`` starts at byte ``position`` of the log file. One entry is added before
  a batch once ``index_interval_bytes`` have been appended since the previous entry; both columns strictly
  increase. Lookup: the last entry at or below a target offset; the reader then walks batch headers forward.
* ``.timeindex`` (:class:`TimeIndex`), 12-byte entries ``(timestamp i64, relative_offset u32)``: every batch of
  the segment *before* relative offset ``relative_offset`` has a commit timestamp <= ``timestamp``. Timestamps
  strictly increase, offsets never decrease. An entry ``(max timestamp of the batches before B, B)`` is tried
  whenever an offset-index entry is added for batch B, and kept only if the running maximum has grown. So every
  batch before the last offset-index entry has a timestamp <= the last time-index entry's timestamp, and the
  segment's maximum timestamp is that timestamp or one of the batches from the last offset-index entry on.

Indexes can always be rebuilt from the log (see ``segment.py``). Entries are loaded lazily into NumPy arrays and
searched with ``np.searchsorted``; appends go straight to the file with ``os.write`` (the page cache survives a
killed process; ``flush`` fsyncs).
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np


class _SparseIndex:
    """Two columns of fixed-size entries, on disk and (once loaded) in growable NumPy arrays."""

    _entry: struct.Struct
    _file_dtype: np.dtype
    _key_dtype: type
    _value_dtype: type

    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = Path(path)
        self.base_offset = base_offset
        self._keys = np.empty(0, dtype=self._key_dtype)
        self._values = np.empty(0, dtype=self._value_dtype)
        self._n = 0
        self._loaded = False
        self._fd: int | None = None

    # -- file state (usable without loading) ----------------------------------------------------------------
    @property
    def entry_size(self) -> int:
        return self._entry.size

    def file_problem(self) -> str | None:
        """Why the file cannot be trusted as it is (missing, partial entry), or None."""
        try:
            size = os.stat(self.path).st_size
        except FileNotFoundError:
            return f"index file {self.path.name} is missing"
        if size % self.entry_size:
            return f"index file {self.path.name} has {size} bytes, not a multiple of {self.entry_size}"
        return None

    def _peek_last_raw(self) -> tuple | None:
        if self._loaded:
            return (int(self._keys[self._n - 1]), int(self._values[self._n - 1])) if self._n else None
        try:
            with open(self.path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                usable = size - size % self.entry_size
                if usable == 0:
                    return None
                raw = os.pread(f.fileno(), self.entry_size, usable - self.entry_size)
        except FileNotFoundError:
            return None
        return self._entry.unpack(raw)

    # -- loading and appending ------------------------------------------------------------------------------
    def _ensure_loaded(self) -> None:
        if self._loaded:
            return
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            raw = b""
        count = len(raw) // self.entry_size
        entries = np.frombuffer(raw, dtype=self._file_dtype, count=count)
        self._keys = np.array(entries["k"], dtype=self._key_dtype)
        self._values = np.array(entries["v"], dtype=self._value_dtype)
        self._n = count
        self._loaded = True

    def __len__(self) -> int:
        self._ensure_loaded()
        return self._n

    def _append_raw(self, key: int, value: int) -> None:
        self._ensure_loaded()
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        data = self._entry.pack(key, value)
        written = os.write(self._fd, data)
        if written != len(data):  # a short write of 8-12 bytes only happens on a full disk
            os.ftruncate(self._fd, self._n * self.entry_size)
            raise OSError(f"short write to {self.path}")
        if self._n == len(self._keys):
            capacity = max(16, 2 * self._n)
            self._keys = np.resize(self._keys, capacity)
            self._values = np.resize(self._values, capacity)
        self._keys[self._n] = key
        self._values[self._n] = value
        self._n += 1

    def truncate_entries(self, count: int) -> None:
        """Keep only the first ``count`` entries (creates an empty file if there is none)."""
        self._ensure_loaded()
        count = min(count, self._n)
        with open(self.path, "ab") as f:
            os.ftruncate(f.fileno(), count * self.entry_size)
        self._n = count

    def reset(self) -> None:
        """Drop every entry (and any partial entry on disk)."""
        self._loaded = True
        self._n = 0
        with open(self.path, "ab") as f:
            os.ftruncate(f.fileno(), 0)

    def flush(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def delete(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)
        self._n = 0


class OffsetIndex(_SparseIndex):
    """Sparse ``offset -> position`` index of one segment (see the module docstring)."""

    _entry = struct.Struct("<II")
    _file_dtype = np.dtype([("k", "<u4"), ("v", "<u4")])
    _key_dtype = np.int64
    _value_dtype = np.int64

    def append(self, offset: int, position: int) -> None:
        """Record that the batch with base offset ``offset`` starts at ``position``."""
        rel = offset - self.base_offset
        self._ensure_loaded()
        if self._n and (rel <= self._keys[self._n - 1] or position <= self._values[self._n - 1]):
            raise ValueError(
                f"offset index {self.path.name}: entry ({offset}, {position}) does not follow "
                f"({self.base_offset + int(self._keys[self._n - 1])}, {int(self._values[self._n - 1])})"
            )
        self._append_raw(rel, position)

    def lookup(self, offset: int) -> tuple[int, int]:
        """``(offset, position)`` of the last entry at or below ``offset``, or ``(base_offset, 0)``."""
        self._ensure_loaded()
        i = int(np.searchsorted(self._keys[: self._n], offset - self.base_offset, side="right")) - 1
        if i < 0:
            return self.base_offset, 0
        return self.base_offset + int(self._keys[i]), int(self._values[i])

    def last_entry(self) -> tuple[int, int] | None:
        """``(offset, position)`` of the last entry, read from the file if not loaded."""
        last = self._peek_last_raw()
        return None if last is None else (self.base_offset + last[0], last[1])

    def truncate_to(self, offset: int) -> None:
        """Drop entries for batches at or after ``offset``."""
        self._ensure_loaded()
        rel = offset - self.base_offset
        self.truncate_entries(int(np.searchsorted(self._keys[: self._n], rel, side="left")))

    def truncate_to_position(self, position: int) -> None:
        """Drop entries pointing at or beyond byte ``position``."""
        self._ensure_loaded()
        self.truncate_entries(int(np.searchsorted(self._values[: self._n], position, side="left")))


class TimeIndex(_SparseIndex):
    """Sparse ``timestamp -> offset`` index of one segment (see the module docstring)."""

    _entry = struct.Struct("<qI")
    _file_dtype = np.dtype([("k", "<i8"), ("v", "<u4")])
    _key_dtype = np.int64
    _value_dtype = np.int64

    def maybe_append(self, timestamp: int, offset: int) -> bool:
        """Add ``(timestamp, offset)`` if ``timestamp`` exceeds the last entry's; returns whether it did."""
        self._ensure_loaded()
        rel = offset - self.base_offset
        if self._n:
            if timestamp <= self._keys[self._n - 1]:
                return False
            if rel < self._values[self._n - 1]:
                raise ValueError(
                    f"time index {self.path.name}: offset {offset} is below the last entry's "
                    f"{self.base_offset + int(self._values[self._n - 1])}"
                )
        self._append_raw(timestamp, rel)
        return True

    def lookup(self, timestamp: int) -> int | None:
        """Offset of the last entry whose timestamp is below ``timestamp``: every batch before it is older than
        ``timestamp``, so a search for the first batch at or after ``timestamp`` can start there. None if none."""
        self._ensure_loaded()
        i = int(np.searchsorted(self._keys[: self._n], timestamp, side="left")) - 1
        return None if i < 0 else self.base_offset + int(self._values[i])

    def last_entry(self) -> tuple[int, int] | None:
        """``(timestamp, offset)`` of the last entry, read from the file if not loaded."""
        last = self._peek_last_raw()
        return None if last is None else (last[0], self.base_offset + last[1])

    def truncate_to(self, offset: int) -> None:
        """Drop entries whose offset lies beyond ``offset`` (the new end of the segment)."""
        self._ensure_loaded()
        rel = offset - self.base_offset
        self.truncate_entries(int(np.searchsorted(self._values[: self._n], rel, side="right")))
