"""Opening a tablet's directory at start-up: find the segments, recover what may be torn, rebuild indexes.

Rules (see ``docs/log-format.md``):

* Segments are the ``{base_offset:020d}.log`` files; index files without a log file and ``*.tmp`` leftovers are
  removed.
* Every segment is first *loaded* (cheap: index files well-formed, the last offset-index entry points at a batch
  with that offset, and a header walk from there reaches exactly the end of the file, with contiguous offsets;
  a sealed segment must end where the next one starts).
* A segment is *recovered* (every batch's CRC checked, file cut after the last good batch, indexes rebuilt) if
  loading found a problem, or if it holds offsets at or beyond the recovery point (data written after the last
  fsync: it may be torn or missing after a crash of the machine, even if it looks whole). If the checkpoint was
  written in the current boot of the machine (its ``boot_id``), only the process stopped and the page cache
  kept every completed write: offsets below the checkpoint's *written point* are trusted too (a write cut
  short by the kill leaves an incomplete tail, which loading detects).
* If recovery cut a segment short of where the next one starts, every later segment is deleted: a log has no
  holes.
* The high watermark and recovery point come from the checkpoint file and are clamped into
  ``[log_start_offset, log_end_offset]``.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from pathlib import Path

from fluss.server.log.checkpoint import CheckpointFile
from fluss.server.log.config import LogConfig
from fluss.server.log.segment import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    LogSegment,
    parse_segment_base_offset,
)

log = logging.getLogger(__name__)

CHECKPOINT_FILE_NAME = "log.checkpoint"
HIGH_WATERMARK_KEY = "high_watermark"
RECOVERY_POINT_KEY = "recovery_point"
WRITTEN_POINT_KEY = "written_point"
BOOT_ID_KEY = "boot_id"
_BOOT_ID_FILE = Path("/proc/sys/kernel/random/boot_id")
_boot_id: int | None = None


def boot_id() -> int:
    """This boot of the machine, as an integer (0 where the kernel does not say): data written to a file before
    a checkpoint taken in the same boot is in the page cache, whatever happened to the process since."""
    global _boot_id
    if _boot_id is None:
        try:
            _boot_id = uuid.UUID(_BOOT_ID_FILE.read_text().strip()).int
        except (OSError, ValueError):
            _boot_id = 0
    return _boot_id


@dataclass
class LoadedLog:
    segments: list[LogSegment]
    high_watermark: int
    recovery_point: int
    checkpoint: CheckpointFile
    checkpoint_found: bool = True  # False: no checkpoint file (a new log): it reads as the log start for both


def load_log(directory: Path, config: LogConfig) -> LoadedLog:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    checkpoint = CheckpointFile(directory / CHECKPOINT_FILE_NAME)
    bases = _clean_directory(directory)
    values = checkpoint.read()
    recovery_point = values.get(RECOVERY_POINT_KEY, 0)
    trusted = recovery_point  # below it everything was fsynced
    if boot_id() and values.get(BOOT_ID_KEY) == boot_id():  # only the process stopped: the page cache is intact
        trusted = max(trusted, values.get(WRITTEN_POINT_KEY, 0))

    segments: list[LogSegment] = []
    try:
        for i, base in enumerate(bases):
            segment = LogSegment.open_existing(directory, base)
            segments.append(segment)
            expected_end = bases[i + 1] if i + 1 < len(bases) else None
            problem = segment.load(expected_end)
            if problem is None and segment.next_offset > trusted:
                problem = f"it holds offsets up to {segment.next_offset} beyond the recovery point {trusted}"
            if problem is None:
                continue
            log.warning("Recovering log segment %s: %s", segment.log_path, problem)
            cut = segment.recover(config.index_interval_bytes)
            if cut:
                log.warning("Cut %d bytes of torn or corrupt data from %s (log now ends at offset %d)",
                            cut, segment.log_path, segment.next_offset)
            if expected_end is not None and segment.next_offset != expected_end:
                for later in reversed(bases[i + 1 :]):
                    log.warning("Deleting log segment %020d in %s: it follows a segment cut short at offset %d",
                                later, directory, segment.next_offset)
                    LogSegment.open_existing(directory, later).delete()
                break
        if not segments:
            segments.append(LogSegment.create(directory, 0))
    except BaseException:
        for segment in segments:
            segment.close()
        raise

    log_start, log_end = segments[0].base_offset, segments[-1].next_offset
    high_watermark = min(max(values.get(HIGH_WATERMARK_KEY, log_start), log_start), log_end)
    recovery_point = min(max(recovery_point, log_start), log_end)
    return LoadedLog(segments, high_watermark, recovery_point, checkpoint, bool(values))


def _clean_directory(directory: Path) -> list[int]:
    """Remove temporary and orphaned files; return the sorted base offsets of the segments."""
    bases: set[int] = set()
    orphans: list[Path] = []
    for path in directory.iterdir():
        if path.name.endswith(".tmp"):
            path.unlink(missing_ok=True)
            continue
        base = parse_segment_base_offset(path)
        if base is None:
            continue
        if path.name.endswith(LOG_SUFFIX):
            bases.add(base)
        elif path.name.endswith((INDEX_SUFFIX, TIME_INDEX_SUFFIX)):
            orphans.append(path)
    for path in orphans:
        if parse_segment_base_offset(path) not in bases:
            log.warning("Deleting index file %s that has no log segment", path)
            path.unlink(missing_ok=True)
    return sorted(bases)
