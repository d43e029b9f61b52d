"""A small disk for a tablet server's data directory, which a test or the nemesis can fill and free.

A tmpfs of a fixed size is mounted on an empty directory (root is needed; :func:`can_mount` says whether this
machine allows it). ``fill()`` writes a filler file until the file system is full, ``free()`` removes it.
"""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

_CHUNK = 1 << 20


def can_mount() -> bool:
    return os.geteuid() == 0 and Path("/proc/filesystems").read_text().find("tmpfs") >= 0


class SmallDisk:
    def __init__(self, mount_point: Path, size_mb: int) -> None:
        self.mount_point = Path(mount_point)
        self.size_mb = size_mb
        self.mounted = False

    @property
    def filler(self) -> Path:
        return self.mount_point / "nemesis-filler"

    def mount(self) -> SmallDisk:
        self.mount_point.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={self.size_mb}m", "tmpfs", str(self.mount_point)],
                       check=True, capture_output=True)
        self.mounted = True
        return self

    def unmount(self) -> None:
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.mount_point)], check=False, capture_output=True)
            self.mounted = False

    def __enter__(self) -> SmallDisk:
        return self.mount()

    def __exit__(self, *exc: object) -> None:
        self.unmount()

    def free_bytes(self) -> int:
        st = os.statvfs(self.mount_point)
        return st.f_bavail * st.f_frsize

    def fill(self) -> int:
        """Writes the filler file until the disk is full; returns the bytes written."""
        written = 0
        size = _CHUNK
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            while size >= 512:  # smaller and smaller writes fill the last pages too
                try:
                    written += os.write(fd, b"\0" * size)
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        raise
                    size //= 2
        finally:
            os.close(fd)
        return written

    def free(self) -> None:
        self.filler.unlink(missing_ok=True)
