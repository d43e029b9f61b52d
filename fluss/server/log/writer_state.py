"""Idempotent writers: per writer id, the last batches appended, so a retried batch is never written twice.

Each client batch carries ``writer_id`` and a per-bucket ``batch_sequence`` (0, 1, 2, ...). The leader accepts
the next sequence, answers a resend of one of the last ``RETAINED_BATCHES`` with the offset it already has, and
rejects any other sequence with OUT_OF_ORDER_SEQUENCE_EXCEPTION; a writer it has no history of starts at
sequence 0 (any other: UNKNOWN_WRITER_ID_EXCEPTION, see ``check``). The state is rebuilt from the batch headers of
the log when a replica opens, and kept up to date on followers too, so a new leader deduplicates retries of
batches its predecessor appended.

A log restarted at an offset whose earlier batches are only in remote storage keeps the writer state as of its
start as a *base* (``BASE_FILE`` in the log directory, JSON ``{"offset": log start, "writers": to_json()}``, written
atomically), so a rebuild after a truncation or a server restart starts from it instead of from nothing.
"""

from __future__ import annotations

import json
import logging
import os
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from fluss.errors import ErrorCode, FlussError

RETAINED_BATCHES = 5
NO_WRITER = -1
BASE_FILE = "writer-state.base"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AppendedBatch:
    sequence: int
    base_offset: int
    last_offset: int


class WriterStateManager:
    def __init__(self) -> None:
        self._writers: dict[int, deque[AppendedBatch]] = {}

    def check(self, writer_id: int, sequence: int, where: str, allow_gap: bool = False) -> AppendedBatch | None:
        """The earlier append of this batch if it is a duplicate; None if it is the next one; raises otherwise.

        A writer the bucket has no history of must start at sequence 0: a later sequence may be a batch that
        overtook the writer's first ones (several requests in flight), and taking it would start the history
        past them and refuse them for good. It gets UNKNOWN_WRITER_ID_EXCEPTION, which the writer retries while
        an earlier batch of the bucket is unacknowledged and otherwise answers by restarting the bucket's
        sequence at 0 (the bucket forgot it: its batches expired from the log), as Fluss's leader requires
        sequence 0 of a writer it does not know.

        ``allow_gap``: a sequence past the next one is taken too. PutKv uses it: its writers keep one request per
        bucket in flight, so a gap can only be batches that changed nothing (a delete of an absent key, a row
        the merge engine ignored), which leave no batch in the log; a new leader rebuilt from the log does not
        know their sequences, and must not refuse the writer's next batch for good."""
        if writer_id == NO_WRITER or sequence < 0:
            return None
        history = self._writers.get(writer_id)
        if not history:
            if sequence == 0 or allow_gap:
                return None  # a new writer (or one whose batches all expired)
            raise FlussError(f"Unknown writer {writer_id} for {where}: its first batch here has sequence "
                             f"{sequence}, not 0 (an earlier batch of it has not arrived yet, or the writer's "
                             "batches expired from this bucket's log; the writer retries, or restarts the "
                             "bucket's sequence at 0)", ErrorCode.UNKNOWN_WRITER_ID_EXCEPTION)
        last = history[-1].sequence
        if sequence == last + 1 or (allow_gap and sequence > last):
            return None
        for batch in history:
            if batch.sequence == sequence:
                return batch
        raise FlussError(f"Out-of-order batch sequence {sequence} from writer {writer_id} for {where}: the last "
                         f"appended sequence is {last}", ErrorCode.OUT_OF_ORDER_SEQUENCE_EXCEPTION)

    def is_gap(self, writer_id: int, sequence: int) -> bool:
        """Whether batches of this writer before ``sequence`` are missing: it cannot be appended yet (a writer
        with several requests in flight per bucket can have a later one arrive first)."""
        if writer_id == NO_WRITER or sequence < 0:
            return False
        history = self._writers.get(writer_id)
        return sequence > (history[-1].sequence if history else -1) + 1

    def update(self, writer_id: int, sequence: int, base_offset: int, last_offset: int) -> None:
        if writer_id == NO_WRITER or sequence < 0:
            return
        history = self._writers.setdefault(writer_id, deque(maxlen=RETAINED_BATCHES))
        history.append(AppendedBatch(sequence, base_offset, last_offset))

    def clear(self) -> None:
        self._writers.clear()

    def to_json(self) -> dict[str, list[list[int]]]:
        """``{writer_id: [[sequence, base_offset, last_offset], ...]}`` (a snapshot, e.g. of a remote segment)."""
        return {str(w): [[b.sequence, b.base_offset, b.last_offset] for b in h] for w, h in self._writers.items()}

    @classmethod
    def from_json(cls, data: dict) -> WriterStateManager:
        state = cls()
        for writer_id, batches in data.items():
            for sequence, base_offset, last_offset in batches:
                state.update(int(writer_id), int(sequence), int(base_offset), int(last_offset))
        return state

    def __len__(self) -> int:
        return len(self._writers)


def write_base(directory: Path, offset: int, writers: WriterStateManager | None) -> None:
    """Persist the writer state as of the log start ``offset`` (None: remove it). Raises OSError."""
    from fluss.server.log.checkpoint import fsync_directory

    path = Path(directory) / BASE_FILE
    if writers is None:
        path.unlink(missing_ok=True)
        return
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        json.dump({"offset": offset, "writers": writers.to_json()}, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_directory(path.parent)


def read_base(directory: Path, log_start_offset: int) -> WriterStateManager | None:
    """The persisted writer state as of ``log_start_offset`` (None when there is none, or it is for another
    offset or unreadable: then the state is rebuilt from the local log alone, as without a base)."""
    path = Path(directory) / BASE_FILE
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
        if int(data["offset"]) != log_start_offset:
            log.warning("ignoring %s: it is for offset %s, the log starts at %d", path, data["offset"],
                        log_start_offset)
            return None
        return WriterStateManager.from_json(data["writers"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        log.warning("ignoring unreadable %s: %s", path, e)
        return None
