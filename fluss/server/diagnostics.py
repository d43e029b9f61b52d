"""``kill -USR1 <pid>`` on a server: its asyncio tasks' stacks and every thread's stack go to its log.

The asyncio counterpart of a JVM thread dump, for finding where a live server is waiting.
"""

from __future__ import annotations

import asyncio
import io
import logging
import signal
import sys
import threading
import traceback

log = logging.getLogger(__name__)


def install_dump_on_sigusr1(loop: asyncio.AbstractEventLoop) -> None:
    """Dumps stacks to the log when the process gets SIGUSR1."""
    loop.add_signal_handler(signal.SIGUSR1, lambda: log.warning("stack dump on SIGUSR1:\n%s", stack_dump()))


def stack_dump() -> str:
    """Every asyncio task of the running loop and every thread, with their stacks."""
    out = io.StringIO()
    tasks = asyncio.all_tasks()
    out.write(f"--- {len(tasks)} asyncio tasks\n")
    for task in sorted(tasks, key=lambda t: t.get_name()):
        out.write(f"{task!r}\n")
        task.print_stack(limit=12, file=out)
    names = {t.ident: t.name for t in threading.enumerate()}
    for ident, frame in sys._current_frames().items():  # noqa: SLF001 - the documented way to see every thread
        out.write(f"--- thread {names.get(ident, ident)}\n")
        out.write("".join(traceback.format_stack(frame, limit=12)))
    return out.getvalue()
