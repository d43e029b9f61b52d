"""Peak resident memory of a set of processes during one scenario, read from ``/proc`` (no psutil).

On entry the kernel's peak counter (``VmHWM``) of each process is reset by writing ``5`` to
``/proc/<pid>/clear_refs`` where allowed; a thread also samples ``VmRSS`` every few milliseconds. On exit the
peak is the larger of the sampled maximum and ``VmHWM`` (the latter only where the reset worked, so it covers
this scenario alone). Processes may be added while the scenario runs (a peer's tool started mid-way).
"""

from __future__ import annotations

import os
import threading
from types import TracebackType

SAMPLE_INTERVAL_S = 0.02


def read_status_kb(pid: int, field: str) -> int | None:
    """A ``kB`` field (``VmRSS``, ``VmHWM``) of ``/proc/<pid>/status``, or None if the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError, PermissionError, ValueError):
        return None
    return None


def _reset_peak(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


class PeakRss:
    """Context manager: ``peaks_mb()`` gives each named process's peak RSS (MiB) over the ``with`` block."""

    def __init__(self, pids: dict[str, int | None], include_self: bool = True) -> None:
        self._pids: dict[str, int] = {n: p for n, p in pids.items() if p}
        if include_self:
            self._pids = {"client": os.getpid(), **self._pids}
        self._peak_kb: dict[str, int] = {}
        self._reset: dict[str, bool] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-rss", daemon=True)

    def add(self, name: str, pid: int) -> None:
        """Starts watching another process (no reset: it was started during the scenario)."""
        with self._lock:
            self._pids[name] = pid

    def __enter__(self) -> PeakRss:
        for name, pid in self._pids.items():
            self._reset[name] = _reset_peak(pid)
        self._thread.start()
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self._sample()
        with self._lock:
            for name, pid in self._pids.items():
                if self._reset.get(name):
                    hwm = read_status_kb(pid, "VmHWM")
                    if hwm is not None:
                        self._peak_kb[name] = max(self._peak_kb.get(name, 0), hwm)
        self._stop.set()
        self._thread.join(timeout=2)

    def _sample(self) -> None:
        with self._lock:
            for name, pid in self._pids.items():
                rss = read_status_kb(pid, "VmRSS")
                if rss is not None:
                    self._peak_kb[name] = max(self._peak_kb.get(name, 0), rss)

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_INTERVAL_S):
            self._sample()

    def peaks_mb(self) -> dict[str, float]:
        return {name: round(kb / 1024, 1) for name, kb in self._peak_kb.items()}
