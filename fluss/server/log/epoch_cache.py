"""Leader-epoch history of a log: for every leader epoch, the first offset written under it.

A new leader records ``(epoch, log end offset)`` when it starts appending; followers record the epoch of each
fetched batch. After a leader change a follower asks the leader for the end offset of its own latest epoch
(``OffsetForLeaderEpoch``) and truncates there, which removes exactly a divergent tail and never a committed
record. Persisted in ``leader-epoch.checkpoint`` (``epoch start_offset`` lines), rewritten on every change.
"""

from __future__ import annotations

import bisect
from pathlib import Path

from fluss.server.log.checkpoint import CheckpointFile

FILE_NAME = "leader-epoch.checkpoint"
UNDEFINED = -1


class LeaderEpochCache:
    def __init__(self, directory: Path) -> None:
        self._file = CheckpointFile(Path(directory) / FILE_NAME)
        stored = self._file.read()
        self._epochs: list[int] = sorted(int(k) for k in stored)
        self._starts: list[int] = [stored[str(e)] for e in self._epochs]

    @property
    def latest_epoch(self) -> int:
        return self._epochs[-1] if self._epochs else UNDEFINED

    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._epochs, self._starts, strict=True))

    def entries_between(self, start_offset: int, end_offset: int) -> list[tuple[int, int]]:
        """The ``(epoch, start)`` entries covering offsets ``[start_offset, end_offset)``: the epoch in force at
        ``start_offset`` (its start clipped to it) and every epoch starting before ``end_offset``."""
        out = []
        for i, (epoch, start) in enumerate(zip(self._epochs, self._starts, strict=True)):
            next_start = self._starts[i + 1] if i + 1 < len(self._starts) else None
            if start >= end_offset or (next_start is not None and next_start <= start_offset):
                continue
            out.append((epoch, max(start, start_offset)))
        return out

    def assign(self, epoch: int, start_offset: int) -> None:
        """Records that ``epoch`` starts at ``start_offset`` (ignored unless it is a newer epoch)."""
        if epoch < 0 or (self._epochs and epoch <= self._epochs[-1]):
            return
        # a newer epoch starting below an older one's start means that older entry never held data
        while self._starts and self._starts[-1] >= start_offset:
            self._epochs.pop()
            self._starts.pop()
        self._epochs.append(epoch)
        self._starts.append(start_offset)
        self._persist()

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """``(largest epoch <= epoch, its end offset)``: where the next epoch starts, or LEO for the latest."""
        if not self._epochs or epoch < self._epochs[0]:
            return UNDEFINED, UNDEFINED
        i = bisect.bisect_right(self._epochs, epoch) - 1
        end = self._starts[i + 1] if i + 1 < len(self._epochs) else log_end_offset
        return self._epochs[i], end

    def truncate_from_end(self, end_offset: int) -> None:
        """Forgets epochs that start at or after ``end_offset`` (the log was truncated there)."""
        changed = False
        while self._starts and self._starts[-1] >= end_offset and len(self._starts) > 0:
            self._epochs.pop()
            self._starts.pop()
            changed = True
        if changed:
            self._persist()

    def truncate_from_start(self, start_offset: int) -> None:
        """Drops history before ``start_offset`` (retention), keeping the epoch that covers it."""
        i = bisect.bisect_right(self._starts, start_offset) - 1
        if i > 0:
            del self._epochs[:i]
            del self._starts[:i]
        if self._starts and self._starts[0] < start_offset:
            self._starts[0] = start_offset
            self._persist()
        elif i > 0:
            self._persist()

    def clear(self) -> None:
        self._epochs.clear()
        self._starts.clear()
        self._persist()

    def _persist(self) -> None:
        self._file.write({str(e): s for e, s in zip(self._epochs, self._starts, strict=True)})
