"""Whether a tablet server can write its data directory, and what it does when it cannot.

A full disk (ENOSPC, EDQUOT) or a failing one (EIO, EROFS) makes appends, rolls, checkpoints and RocksDB writes
fail. The first such failure marks the server's storage as failed:

* every write to a bucket it leads is refused at once with ``STORAGE_EXCEPTION`` naming the reason (retriable:
  writers refresh their metadata and follow the leadership when it moves); nothing is acknowledged that was not
  appended (a failed append leaves the segment as it was, see ``segment.py``);
* the coordinator is told (ReportStorageState): it moves the server's leaderships to other in-sync replicas and
  keeps it out of every ISR;
* a probe (a small file written and fsynced in the data directory, and enough free space) runs every
  ``PROBE_INTERVAL_S``; when it succeeds the server reports it can write again, its followers catch up and
  rejoin the ISRs on their fetches.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from fluss.errors import ErrorCode, FlussError

log = logging.getLogger(__name__)

DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS})
_DISK_MESSAGES = ("No space left on device", "Disk quota exceeded", "Read-only file system", "Input/output error")
PROBE_INTERVAL_S = 1.0
PROBE_BYTES = 1 << 20
MIN_FREE_BYTES = 4 << 20  # space needed before the storage counts as writable again


def is_disk_failure(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or what caused it) is the disk refusing a write, as opposed to a bad request or a bug."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, OSError) and exc.errno in DISK_ERRNOS:
            return True
        if not isinstance(exc, FlussError) and any(m in str(exc) for m in _DISK_MESSAGES):
            return True  # RocksDB's errors are plain exceptions with the OS message in their text
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def _reason(exc: BaseException) -> str:
    while exc is not None:
        if isinstance(exc, OSError) and exc.errno in DISK_ERRNOS:
            return exc.strerror or errno.errorcode.get(exc.errno, "I/O error")
        exc = exc.__cause__ or exc.__context__
    return "the disk refused a write"


class DiskHealth:
    def __init__(self, server_id: int, data_dir: Path,
                 report: Callable[[bool, str], Awaitable[None]] | None = None) -> None:
        self.server_id = server_id
        self.data_dir = Path(data_dir)
        self.report = report  # async (writable, reason): tells the coordinator
        self.failure: str | None = None
        self.failed_since = 0.0
        self._task: asyncio.Task | None = None

    def check_writable(self) -> None:
        """Raises ``STORAGE_EXCEPTION`` while the storage is failed."""
        if self.failure is not None:
            raise FlussError(f"Tablet server {self.server_id} cannot write its disk ({self.failure}); writes to it "
                             "are refused until it can, and its leaderships move to other replicas",
                             ErrorCode.STORAGE_EXCEPTION)

    def observe(self, exc: BaseException) -> BaseException:
        """Looks at a write's failure: a disk failure marks the storage failed (and starts the recovery probe)
        and is returned as ``STORAGE_EXCEPTION``; anything else is returned unchanged."""
        if not is_disk_failure(exc):
            return exc
        self.mark_failed(_reason(exc))
        try:
            self.check_writable()
        except FlussError as e:
            return e
        return exc

    def mark_failed(self, reason: str) -> None:
        if self.failure is None:
            self.failure = reason
            self.failed_since = time.monotonic()
            log.error("tablet server %d cannot write its data directory %s: %s; refusing writes until it can",
                      self.server_id, self.data_dir, reason)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # called from a worker thread: the event loop side starts the probe
            return
        if self._task is None or self._task.done():
            self._task = loop.create_task(self._recover(), name="disk-health")

    def start_probe_if_failed(self) -> None:
        if self.failure is not None:
            self.mark_failed(self.failure)

    async def _recover(self) -> None:
        await self._report(False, self.failure or "")
        while self.failure is not None:
            await asyncio.sleep(PROBE_INTERVAL_S)
            if await asyncio.to_thread(self.probe):
                log.info("tablet server %d can write its data directory again (after %.1fs)", self.server_id,
                         time.monotonic() - self.failed_since)
                self.failure = None
                await self._report(True, "")

    async def _report(self, writable: bool, reason: str) -> None:
        if self.report is None:
            return
        for attempt in range(30):
            try:
                await self.report(writable, reason)
                return
            except Exception as e:  # noqa: BLE001 - the coordinator may be failing over: keep trying a while
                log.info("reporting storage state (writable=%s) failed: %s", writable, e)
                await asyncio.sleep(min(2.0, 0.2 * (attempt + 1)))

    def probe(self) -> bool:
        """Whether a small file can be written and fsynced in the data directory, with room to spare."""
        path = self.data_dir / ".disk-probe"
        try:
            stat = os.statvfs(self.data_dir)
            if stat.f_bavail * stat.f_frsize < MIN_FREE_BYTES:
                return False
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                view = memoryview(b"\0" * PROBE_BYTES)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                os.close(fd)
            return True
        except OSError:
            return False
        finally:
            try:
                path.unlink(missing_ok=True)
            except OSError:
                pass
