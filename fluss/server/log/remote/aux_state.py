"""Auxiliary state of a follower that restarts its log at the leader's local log start (``fetcher.py``).

The offsets below the restart offset ``R`` are only in remote storage, so the restarted log cannot rebuild from
its own batches what a leader needs of them: the leader-epoch history and the idempotent writers' last batches.
Both were uploaded with every remote segment (``remote_log_layout``: ``.writer_state`` is the writer state at the
segment's end, ``.leader_epoch`` the epochs of the segment's offsets), and are loaded from the bucket's committed
manifest before the log restarts:

* **Writer state**: the snapshot of the *state segment*, the segment whose end offset is ``R`` exactly or, when no
  segment ends there (a leader whose local segment boundaries differ from the uploader's, or local segments that
  ``table.log.ttl`` removed before their upload), the one with the largest end offset below ``R`` (ends strictly
  increase along a manifest, so it is unique). Its state is as of that end; batches between it and ``R`` are not
  known (logged). A segment ending past ``R`` is never used: its state would be ahead of the log.
* **Leader epochs**: the entries of every remote segment starting below ``R``, merged (each epoch at its smallest
  start; an epoch that a later segment shows starting earlier than an older epoch drops the older one, as the
  epoch cache does), restricted to starts below ``R``.

Nothing is loaded (the log restarts empty as before) when the bucket has no committed manifest or no segment
starts below ``R``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from fluss.errors import ErrorCode, FlussError
from fluss.fs import remote_log_layout as layout
from fluss.server.log.remote.manifest import RemoteLogManifest, RemoteLogSegment
from fluss.server.log.remote.storage import RemoteLogStorage
from fluss.server.log.writer_state import WriterStateManager


@dataclass
class AuxState:
    restart_offset: int
    epochs: list[tuple[int, int]]  # (epoch, start offset), starts below restart_offset, ascending
    writers: WriterStateManager | None  # as of ``writers_offset`` (None: no segment ends at or below the restart)
    writers_offset: int = -1
    state_segment: RemoteLogSegment | None = None

    def describe(self) -> str:
        writers = (f"{len(self.writers)} writer(s) as of offset {self.writers_offset} (segment "
                   f"{self.state_segment.segment_id})" if self.writers is not None and self.state_segment else
                   "no writer state")
        return f"leader epochs {self.epochs}, {writers}"


def state_segment(manifest: RemoteLogManifest, restart_offset: int) -> RemoteLogSegment | None:
    """The segment whose writer-state snapshot a log restarting at ``restart_offset`` loads (see the module doc)."""
    best: RemoteLogSegment | None = None
    for segment in manifest.segments:  # sorted by start; ends strictly increase
        if segment.end_offset > restart_offset:
            break
        best = segment
    return best


def epoch_segments(manifest: RemoteLogManifest, restart_offset: int) -> list[RemoteLogSegment]:
    """The segments whose leader-epoch entries are loaded: every one starting below ``restart_offset``."""
    return [s for s in manifest.segments if s.start_offset < restart_offset]


def merge_epochs(entry_lists: Iterable[Iterable[tuple[int, int]]], restart_offset: int) -> list[tuple[int, int]]:
    """One epoch history from the per-segment entries: each epoch at its smallest start below ``restart_offset``;
    epochs ascending with strictly ascending starts (an older epoch starting at or after a newer one's start never
    held data and is dropped)."""
    starts: dict[int, int] = {}
    for entries in entry_lists:
        for epoch, start in entries:
            if epoch >= 0 and start < restart_offset:
                starts[epoch] = min(start, starts.get(epoch, start))
    out: list[tuple[int, int]] = []
    for epoch in sorted(starts):
        while out and out[-1][1] >= starts[epoch]:
            out.pop()
        out.append((epoch, starts[epoch]))
    return out


def parse_epochs(raw: bytes, where: str) -> list[tuple[int, int]]:
    try:
        return [(int(e), int(s)) for e, s in json.loads(raw)]
    except (ValueError, TypeError) as e:
        raise FlussError(f"Leader-epoch file {where} is unreadable: {e}", ErrorCode.LOG_STORAGE_EXCEPTION) from e


def parse_writers(raw: bytes, where: str) -> WriterStateManager:
    try:
        return WriterStateManager.from_json(json.loads(raw))
    except (ValueError, TypeError, AttributeError) as e:
        raise FlussError(f"Writer-state file {where} is unreadable: {e}", ErrorCode.LOG_STORAGE_EXCEPTION) from e


def load_aux_state(storage: RemoteLogStorage, tablet_dir: str, manifest: RemoteLogManifest,
                   restart_offset: int) -> AuxState | None:
    """Reads the auxiliary state for a log restarting at ``restart_offset`` (blocking; raises FlussError when the
    store fails). None when the remote log has nothing below the restart offset."""
    segments = epoch_segments(manifest, restart_offset)
    if not segments:
        return None
    entry_lists = []
    for s in segments:
        url = layout.segment_file(tablet_dir, s.segment_id, s.start_offset, layout.LEADER_EPOCH_FILE)
        entry_lists.append(parse_epochs(storage.read_bytes(url), url))
    chosen = state_segment(manifest, restart_offset)
    writers = None
    if chosen is not None:
        url = layout.segment_file(tablet_dir, chosen.segment_id, chosen.start_offset, layout.WRITER_STATE_FILE)
        writers = parse_writers(storage.read_bytes(url), url)
    return AuxState(restart_offset, merge_epochs(entry_lists, restart_offset), writers,
                    chosen.end_offset if chosen is not None else -1, chosen)
