"""A small named-integer checkpoint file, replaced atomically.

Used for a tablet's high watermark and recovery point. The file is text::

    0                      <- format version
    high_watermark 1234
    recovery_point 1200

A write goes to ``<name>.tmp``, is fsynced, renamed over the file, and the directory is fsynced, so a reader sees
either the old or the new content, never a mix. A leftover ``.tmp`` (crash mid-write) is ignored and replaced.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from fluss.errors import ErrorCode, FlussError

CHECKPOINT_VERSION = 0


def fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class CheckpointFile:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def write(self, values: Mapping[str, int]) -> None:
        lines = [str(CHECKPOINT_VERSION)]
        for key, value in values.items():
            if not key or any(c.isspace() for c in key):
                raise ValueError(f"checkpoint key {key!r} must be a non-empty word")
            lines.append(f"{key} {int(value)}")
        data = ("\n".join(lines) + "\n").encode()
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, self.path)
            fsync_directory(self.path.parent)
        except OSError as e:
            raise FlussError(f"Cannot write checkpoint file {self.path.name}: {e.strerror or type(e).__name__}", ErrorCode.LOG_STORAGE_EXCEPTION) from e

    def read(self) -> dict[str, int]:
        """The stored values, or ``{}`` if the file does not exist."""
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return {}
        except OSError as e:
            raise FlussError(f"Cannot read checkpoint file {self.path.name}: {e.strerror or type(e).__name__}", ErrorCode.LOG_STORAGE_EXCEPTION) from e
        lines = text.splitlines()
        if not lines or lines[0].strip() != str(CHECKPOINT_VERSION):
            raise FlussError(
                f"Checkpoint file {self.path} has unsupported version line {lines[0] if lines else ''!r} "
                f"(expected {CHECKPOINT_VERSION})",
                ErrorCode.LOG_STORAGE_EXCEPTION,
            )
        values: dict[str, int] = {}
        for number, line in enumerate(lines[1:], start=2):
            if not line.strip():
                continue
            parts = line.split()
            try:
                if len(parts) != 2:
                    raise ValueError
                values[parts[0]] = int(parts[1])
            except ValueError:
                raise FlussError(
                    f"Checkpoint file {self.path} line {number} is malformed: {line!r} (expected 'name integer')",
                    ErrorCode.LOG_STORAGE_EXCEPTION,
                ) from None
        return values
