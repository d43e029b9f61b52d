"""Reading the logs of a local cluster (``fluss cluster logs``): every server's ``DIR/logs/<server>.log`` merged into
one stream by time, filtered by server, level, component and text, the last N entries, or followed as they grow.

Entries are parsed with the servers' log format (``fluss.server.logging_setup``); lines that do not start with a
timestamp (a traceback, something printed by a library) belong to the entry before them. ZooKeeper's own log is
``DIR/zookeeper/zookeeper.log`` (log4j's format) and is not merged.
"""

from __future__ import annotations

import heapq
import logging
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from fluss.server.logging_setup import LogLine, level_of, parse_line


@dataclass
class LogFilter:
    servers: set[str] | None = None  # process names (coordinator-0, tablet-server-1); None: all
    min_level: int = logging.DEBUG
    components: list[str] = field(default_factory=list)  # logger name prefixes; empty: all
    text: str | None = None  # a substring of the entry (first line or traceback)

    def accepts(self, entry: LogLine) -> bool:
        if self.servers is not None and entry.server not in self.servers:
            return False
        if entry.level and entry.levelno < self.min_level:
            return False
        if self.components and not any(entry.component == c or entry.component.startswith(c + ".")
                                       for c in self.components):
            return False
        return self.text is None or self.text in entry.text()


def log_files(directory: Path) -> dict[str, Path]:
    """``{server name: log file}`` of a local cluster directory (``DIR/logs/*.log``)."""
    logs = Path(directory) / "logs"
    return {p.stem: p for p in sorted(logs.glob("*.log"))} if logs.is_dir() else {}


def parse_entries(lines: Iterable[str], server: str) -> Iterator[LogLine]:
    """Entries of one server's log, continuation lines attached to the entry they follow."""
    current: LogLine | None = None
    for raw in lines:
        line = raw.rstrip("\n")
        entry = parse_line(line)
        if entry is not None:
            if current is not None:
                yield current
            current = entry
        elif current is not None:
            current.more.append(line)
        elif line.strip():  # text before the first entry (the interpreter's own output)
            current = LogLine("", "", server, "-", line, [])
    if current is not None:
        yield current


def read_entries(path: Path, server: str) -> list[LogLine]:
    with open(path, errors="replace") as f:
        return list(parse_entries(f, server))


def merged(directory: Path, flt: LogFilter | None = None) -> Iterator[LogLine]:
    """Every entry of every server log of ``directory``, by time (stable per file), filtered."""
    flt = flt or LogFilter()
    files = {name: path for name, path in log_files(directory).items()
             if flt.servers is None or name in flt.servers}
    streams = [read_entries(path, name) for name, path in files.items()]
    for entry in heapq.merge(*streams, key=lambda e: e.timestamp):
        if flt.accepts(entry):
            yield entry


def last(entries: Iterable[LogLine], n: int) -> list[LogLine]:
    return list(deque(entries, maxlen=n)) if n > 0 else list(entries)


def follow(directory: Path, flt: LogFilter, emit: Callable[[LogLine], None], poll_s: float = 0.5,
           stop: Callable[[], bool] = lambda: False) -> None:
    """Emits entries appended to the logs from now on (``tail -f``) until ``stop()``; a complete entry is emitted
    once the next one has started in its file (or after ``poll_s`` without more lines)."""
    offsets = {name: path.stat().st_size for name, path in log_files(directory).items()}
    pending: dict[str, list[str]] = {}
    while not stop():
        ready: list[LogLine] = []
        for name, path in log_files(directory).items():
            try:
                size = path.stat().st_size
            except OSError:
                continue
            start = offsets.get(name, 0)
            if size < start:  # the file was truncated or replaced
                start = 0
            if size == start:
                if pending.get(name):
                    ready += list(parse_entries(pending.pop(name), name))
                continue
            with open(path, "rb") as f:
                f.seek(start)
                data = f.read()
            complete = data.rfind(b"\n") + 1  # a line still being written is read next time
            offsets[name] = start + complete
            lines = pending.pop(name, []) + data[:complete].decode(errors="replace").splitlines()
            entries = list(parse_entries(lines, name))
            if entries:  # the last entry may still get continuation lines: keep it back
                tail = entries.pop()
                pending[name] = tail.text().splitlines()
                ready += entries
        for entry in sorted(ready, key=lambda e: e.timestamp):
            if flt.accepts(entry):
                emit(entry)
        time.sleep(poll_s)


def parse_level(text: str) -> int:
    return level_of(text, "--level")


def show(directory: Path, servers: list[str] | None = None, level: str = "DEBUG", components: list[str] | None = None,
         text: str | None = None, tail: int = 0, keep_following: bool = False, out=print) -> int:
    """What ``fluss cluster logs`` does: prints the merged entries (the last ``tail`` ones), then follows."""
    directory = Path(directory)
    known = log_files(directory)
    if not known:
        out(f"No server logs in {directory / 'logs'}")
        return 1
    unknown = sorted(set(servers or ()) - set(known))
    if unknown:
        out(f"No log of {', '.join(unknown)} in {directory / 'logs'} (there are: {', '.join(sorted(known))})")
        return 1
    flt = LogFilter(set(servers) if servers else None, parse_level(level), list(components or []), text)
    for entry in last(merged(directory, flt), tail):
        out(entry.text())
    if keep_following:
        try:
            follow(directory, flt, lambda e: out(e.text()))
        except KeyboardInterrupt:
            pass
    return 0
