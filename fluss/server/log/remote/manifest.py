"""The remote log manifest of one bucket: which uploaded segments make up its remote (tiered) log.

A manifest is an immutable JSON file in remote storage (``<tablet dir>/metadata/<uuid>.manifest``); ZooKeeper
records which one is committed, with its start and end offsets (``RemoteLogManifestRecord``), through the
coordinator. Each upload round writes a new manifest and commits it with a compare-and-set on the previous
manifest's path, so there is exactly one chain of manifests per bucket and a fenced (old) leader cannot commit.

::

    {"format": 1, "table_id": 7, "partition_id": -1, "bucket_id": 0, "end_offset": 2400,
     "segments": [{"segment_id": "...", "start_offset": 0, "end_offset": 1200, "max_timestamp": ...,
                   "size_in_bytes": 1048576, "leader_epoch": 3}, ...]}

Segments are sorted by start offset; ``end_offset`` is exclusive. Consecutive segments may overlap (a new leader
whose local segment boundaries differ from its predecessor's uploads its first segment whole, even when it starts
below the committed end), but never leave a gap: every segment starts at or below the previous one's end and
ends above it. A reader asks for the segment holding an offset and skips records below it, so an overlap never
yields a record twice. The remote log holds ``[start_offset, end_offset)`` (first segment's start, last segment's
end); ``end_offset`` is also where the next upload continues, and is kept when TTL has removed every segment.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from fluss.errors import ErrorCode, FlussError

FORMAT_VERSION = 1


@dataclass(frozen=True)
class RemoteLogSegment:
    segment_id: str
    start_offset: int
    end_offset: int  # exclusive
    max_timestamp: int
    size_in_bytes: int
    leader_epoch: int = -1  # the epoch of the leader that uploaded it

    def to_json(self) -> dict:
        return {"segment_id": self.segment_id, "start_offset": self.start_offset, "end_offset": self.end_offset,
                "max_timestamp": self.max_timestamp, "size_in_bytes": self.size_in_bytes,
                "leader_epoch": self.leader_epoch}

    @classmethod
    def from_json(cls, d: dict) -> RemoteLogSegment:
        return cls(str(d["segment_id"]), int(d["start_offset"]), int(d["end_offset"]), int(d["max_timestamp"]),
                   int(d["size_in_bytes"]), int(d.get("leader_epoch", -1)))


@dataclass(frozen=True)
class RemoteLogManifest:
    table_id: int
    partition_id: int  # -1: not partitioned
    bucket_id: int
    segments: tuple[RemoteLogSegment, ...] = field(default_factory=tuple)
    uploaded_end_offset: int = -1  # where uploads continue when every segment has expired (else the last end)

    def __post_init__(self) -> None:
        for prev, seg in zip(self.segments, self.segments[1:], strict=False):
            if seg.start_offset > prev.end_offset or seg.end_offset <= prev.end_offset:
                raise FlussError(f"Remote log manifest of bucket {self.bucket_id} of table {self.table_id}: segment "
                                 f"[{seg.start_offset}, {seg.end_offset}) does not continue "
                                 f"[{prev.start_offset}, {prev.end_offset})", ErrorCode.LOG_STORAGE_EXCEPTION)
        for seg in self.segments:
            if seg.end_offset <= seg.start_offset:
                raise FlussError(f"Remote log segment {seg.segment_id} has an empty offset range "
                                 f"[{seg.start_offset}, {seg.end_offset})", ErrorCode.LOG_STORAGE_EXCEPTION)

    # -- offsets ------------------------------------------------------------------------------------------------
    @property
    def is_empty(self) -> bool:
        return not self.segments

    @property
    def start_offset(self) -> int:
        """The first offset in remote storage (-1 if none)."""
        return self.segments[0].start_offset if self.segments else -1

    @property
    def end_offset(self) -> int:
        """The offset after the last record uploaded (-1 if nothing was ever uploaded): uploads continue here.
        It stays when TTL has removed every segment."""
        return self.segments[-1].end_offset if self.segments else self.uploaded_end_offset

    @property
    def size_in_bytes(self) -> int:
        return sum(s.size_in_bytes for s in self.segments)

    def segments_from(self, offset: int) -> list[RemoteLogSegment]:
        """The segment holding ``offset`` and every later one; empty if ``offset`` is outside the remote log.

        With overlaps, the segment holding ``offset`` is the one with the largest start <= offset (its end is
        above ``offset`` whenever a later segment's is)."""
        if not self.segments or offset < self.start_offset or offset >= self.segments[-1].end_offset:
            return []
        starts = [s.start_offset for s in self.segments]
        i = bisect.bisect_right(starts, offset) - 1
        while self.segments[i].end_offset <= offset:  # an earlier, overlapped segment: move on
            i += 1
        return list(self.segments[i:])

    # -- changes (each returns a new manifest) --------------------------------------------------------------------
    def with_segments(self, added: Iterable[RemoteLogSegment]) -> RemoteLogManifest:
        return replace(self, segments=self.segments + tuple(added))

    def without_expired(self, deadline_ms: int) -> tuple[RemoteLogManifest, list[RemoteLogSegment]]:
        """Drops segments from the start whose max timestamp is older than ``deadline_ms`` (TTL); returns the new
        manifest (whose end offset, where uploads continue, is unchanged) and the dropped segments."""
        n = 0
        while n < len(self.segments) and self.segments[n].max_timestamp < deadline_ms:
            n += 1
        if n == 0:
            return self, []
        return replace(self, segments=self.segments[n:], uploaded_end_offset=self.end_offset), \
            list(self.segments[:n])

    # -- JSON ---------------------------------------------------------------------------------------------------
    def to_json(self) -> dict:
        return {"format": FORMAT_VERSION, "table_id": self.table_id, "partition_id": self.partition_id,
                "bucket_id": self.bucket_id, "end_offset": self.end_offset,
                "segments": [s.to_json() for s in self.segments]}

    def to_bytes(self) -> bytes:
        return json.dumps(self.to_json(), indent=1).encode()

    @classmethod
    def from_bytes(cls, data: bytes, where: str) -> RemoteLogManifest:
        try:
            d = json.loads(data)
            if d.get("format") != FORMAT_VERSION:
                raise ValueError(f"unsupported format {d.get('format')!r}")
            return cls(int(d["table_id"]), int(d["partition_id"]), int(d["bucket_id"]),
                       tuple(RemoteLogSegment.from_json(s) for s in d["segments"]), int(d.get("end_offset", -1)))
        except (ValueError, KeyError, TypeError) as e:
            raise FlussError(f"Remote log manifest {where} is unreadable: {e}", ErrorCode.LOG_STORAGE_EXCEPTION) from e
