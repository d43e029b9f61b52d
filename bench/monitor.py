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


def cpu_seconds(pid: int | None) -> float:
    """utime + stime of a process (s), 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, TypeError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def steal_and_total(stat: str = "/proc/stat") -> tuple[int, int] | None:
    """Jiffies of CPU time stolen by the hypervisor and of all CPU time, all CPUs together (``/proc/stat``'s
    ``cpu`` line: user nice system idle iowait irq softirq steal ...; guest time is inside user), or None
    where that file is not there."""
    try:
        with open(stat) as f:
            fields = [int(v) for v in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    if len(fields) < 8:
        return None
    return fields[7], sum(fields)


class CpuSteal:
    """The share of the machine's CPU time the hypervisor gave to other guests while a block ran (percent).

    On a shared virtual machine, steal stretches every latency figure and slows every throughput one, for this
    project and its peers alike: an append->poll run on this machine was at p50 7.5 ms in rounds with 0-7% steal
    and 30-33 ms in rounds with 16-48% (docs/benchmarks.md, round five). Each scenario prints it."""

    def __init__(self, stat: str = "/proc/stat") -> None:
        self._stat = stat
        self._start: tuple[int, int] | None = None
        self.percent: float | None = None

    def __enter__(self) -> CpuSteal:
        self._start = steal_and_total(self._stat)
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        end = steal_and_total(self._stat)
        if self._start is not None and end is not None and end[1] > self._start[1]:
            self.percent = round(100 * (end[0] - self._start[0]) / (end[1] - self._start[1]), 1)

    def label(self) -> str:
        return "CPU steal unknown" if self.percent is None else f"CPU steal {self.percent:g}%"


def descendants(pid: int) -> list[int]:
    """Every running process below ``pid`` (children, grandchildren, ...), from the parent ids in ``/proc``."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])  # the name may hold spaces and parentheses
        parents.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def command_name(pid: int) -> str:
    """The process's command name (``/proc/<pid>/comm``: ``java``, ``python3.11``), or ``?`` if it is gone."""
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return "?"


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
        """Starts watching another process (no reset: it was started during the scenario). A name already
        watched moves to the new process (a restarted server) and keeps the peak seen so far."""
        with self._lock:
            self._pids[name] = pid

    def add_descendants(self, prefix: str, pid: int) -> None:
        """Starts watching every process below ``pid``, named ``<prefix>-<command>`` (``-2``, ``-3`` for more
        processes of the same command), e.g. a Flink job's JVM and its Python workers."""
        seen: dict[str, int] = {}
        for child in descendants(pid):
            name = f"{prefix}-{command_name(child)}"
            seen[name] = seen.get(name, 0) + 1
            self.add(name if seen[name] == 1 else f"{name}-{seen[name]}", child)

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
