"""One log format for every server process, and log levels per component.

Every line is ``<date> <time>.<ms> <LEVEL> [<server>] <component>: <message>``, e.g.::

    2026-12-01 16:16:28.123 INFO  [tablet-server-1] fluss.server.replica.manager: ...

``<server>`` names the process (``coordinator-0``, ``tablet-server-1``); ``<component>`` is the logger name, so a
component's lines are found by prefix. Lines that follow a line without a timestamp (a traceback) belong to it.
``parse_line`` reads the format back (``fluss cluster logs`` merges the logs of a local cluster with it).

Levels: ``log.level`` is the root level (INFO by default); ``log.level.<logger>`` sets one component and everything
below it (``log.level.fluss.rpc: DEBUG`` turns on the per-request log lines, ``log.level.kazoo: INFO`` shows the
ZooKeeper client's). Without a setting, third-party loggers (``kazoo``, ``grpc``, ...) log at WARNING.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass

LOG_LEVEL = "log.level"
DATE_FORMAT = "%Y-%m-%d %H:%M:%S"
FORMAT = "%(asctime)s.%(msecs)03d %(levelname)-5s [%(server)s] %(name)s: %(message)s"
_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) (DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+\[([^\]]*)\] "
                   r"([^:\s]+): (.*)$")
# third-party loggers at WARNING unless log.level.<name> says otherwise
QUIET_BY_DEFAULT = {name: logging.WARNING for name in ("kazoo", "grpc", "urllib3", "fsspec", "pyarrow", "pypaimon")}


class _ServerLabel(logging.Filter):
    def __init__(self, server: str) -> None:
        super().__init__()
        self.server = server

    def filter(self, record: logging.LogRecord) -> bool:
        record.server = self.server
        return True


def configure(server: str, options: Mapping[str, str], stream=None) -> None:
    """Sets up the root logger of a server process: the format above on ``stream`` (stderr), and the levels."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(logging.Formatter(FORMAT, DATE_FORMAT))
    handler.addFilter(_ServerLabel(server))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    apply_levels(options)


def apply_levels(options: Mapping[str, str]) -> None:
    """``log.level`` on the root logger and every ``log.level.<logger>`` on its logger."""
    logging.getLogger().setLevel(level_of(options.get(LOG_LEVEL) or "INFO", LOG_LEVEL))
    for name, level in QUIET_BY_DEFAULT.items():
        logging.getLogger(name).setLevel(level)
    prefix = LOG_LEVEL + "."
    for key, value in options.items():
        if key.startswith(prefix) and len(key) > len(prefix):
            logging.getLogger(key[len(prefix):]).setLevel(level_of(value, key))


def level_of(text: str, key: str) -> int:
    name = str(text).strip().upper()
    name = "WARNING" if name == "WARN" else name
    level = logging.getLevelName(name)
    if not isinstance(level, int):
        from fluss.errors import ErrorCode, FlussError

        raise FlussError(f"Invalid log level {text!r} for '{key}' (DEBUG, INFO, WARNING, ERROR or CRITICAL)",
                         ErrorCode.INVALID_CONFIG_EXCEPTION)
    return level


@dataclass
class LogLine:
    """One entry of a server log: its first line parsed, continuation lines (a traceback) in ``more``."""

    timestamp: str
    level: str
    server: str
    component: str
    message: str
    more: list[str]

    @property
    def levelno(self) -> int:
        return logging.getLevelName(self.level)

    def text(self) -> str:
        head = f"{self.timestamp} {self.level:<5} [{self.server}] {self.component}: {self.message}"
        return "\n".join([head, *self.more])


def parse_line(line: str) -> LogLine | None:
    """The parts of a line in the format above, or None for a line that is not (a continuation)."""
    m = _LINE.match(line.rstrip("\n"))
    if m is None:
        return None
    return LogLine(m.group(1), m.group(2), m.group(3), m.group(4), m.group(5), [])
