"""RemoteIndexCache: offset indexes of remote log segments, kept in memory up to ``remote.log.index-file-cache-size``.

A fetch below the local log start answers with remote segment descriptors and ``first_start_pos``, the byte
position in the first segment of the batch nearest below the fetch offset, from that segment's offset index
(``.index``, 8-byte entries ``(relative_offset u32, position u32)``; see ``docs/log-format.md``). Indexes are
immutable once uploaded, so a cached copy never goes stale; the least recently used ones are evicted first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

_ENTRY = np.dtype([("relative_offset", "<u4"), ("position", "<u4")])


class RemoteIndexCache:
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[str, np.ndarray] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def position(self, key: str, base_offset: int, offset: int, load: Callable[[], bytes]) -> int:
        """Byte position of the indexed batch at or below ``offset`` in the segment (0 if none); ``load`` reads
        the index file when it is not cached."""
        entries = self._get(key, load)
        if offset <= base_offset or len(entries) == 0:
            return 0
        i = int(np.searchsorted(entries["relative_offset"], offset - base_offset, side="right")) - 1
        return int(entries["position"][i]) if i >= 0 else 0

    def _get(self, key: str, load: Callable[[], bytes]) -> np.ndarray:
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                return found
        raw = load()
        entries = np.frombuffer(raw[: len(raw) - len(raw) % _ENTRY.itemsize], dtype=_ENTRY)
        with self._lock:
            if key not in self._entries and entries.nbytes <= self.max_bytes:
                self._entries[key] = entries
                self._bytes += entries.nbytes
                while self._bytes > self.max_bytes and self._entries:
                    _, evicted = self._entries.popitem(last=False)
                    self._bytes -= evicted.nbytes
        return entries

    @property
    def cached_bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)
