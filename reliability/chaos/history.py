"""The history of a nemesis run: every operation the workload invoked and how it ended, every fault, as JSON lines.

An operation is recorded twice, Jepsen-style: ``invoke`` when it starts and ``ok`` (acknowledged), ``fail`` (the
client gave up: it may or may not have taken effect) when it ends. Faults are recorded with ``start``/``end``.
Times are seconds since the run started (monotonic clock). The checker reads only this history and the final
state read back from the cluster; it knows nothing about how the workload ran.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any


class History:
    def __init__(self, path: Path | None = None) -> None:
        self.events: list[dict[str, Any]] = []
        self._t0 = time.monotonic()
        self._lock = threading.Lock()
        self._file = open(path, "w") if path else None  # noqa: SIM115 - closed by close()
        self._next_id = 0

    def now(self) -> float:
        return round(time.monotonic() - self._t0, 4)

    def record(self, **event: Any) -> dict[str, Any]:
        event.setdefault("time", self.now())
        with self._lock:
            self.events.append(event)
            if self._file is not None:
                self._file.write(json.dumps(event, separators=(",", ":")) + "\n")
        return event

    def invoke(self, process: str, f: str, **value: Any) -> int:
        """Records the start of an operation; returns its id for :meth:`complete`."""
        with self._lock:
            op = self._next_id
            self._next_id += 1
        self.record(type="invoke", op=op, process=process, f=f, **value)
        return op

    def complete(self, op: int, process: str, f: str, ok: bool, **value: Any) -> None:
        self.record(type="ok" if ok else "fail", op=op, process=process, f=f, **value)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
