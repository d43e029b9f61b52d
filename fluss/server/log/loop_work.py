"""Where a tablet server does the disk work of one log: on a worker thread, except small work on a free log.

Disk work runs off the event loop (``asyncio.to_thread``). For a few KB the hand-over to a worker and back costs more
than the work itself (a 100-row produce: ~0.1-0.2 ms; more after an idle gap, docs/benchmarks.md round eight), so
work of at most ``SMALL_LOG_WORK_BYTES`` runs on the event loop when no other thread holds the log (a worker's read,
roll or checkpoint): validating and appending a small produce, reading the tail of the active segment for a
caught-up fetch, appending a small fetched chunk on a follower. The loop never waits for a log's lock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from fluss.server.log.tablet import LogTablet

T = TypeVar("T")

SMALL_LOG_WORK_BYTES = 32 * 1024


async def run_log_work(log: LogTablet, small: bool | Callable[[], bool], fn: Callable[..., T], *args) -> T:
    """``fn(*args)`` on this thread (the event loop's) when no other thread holds ``log`` and the work is
    ``small`` (a callable is asked with the log held, so what it looks at cannot change meanwhile); on a worker
    thread otherwise."""
    if small is not False:
        with log.held_if_free() as held:
            if held and (small is True or small()):
                return fn(*args)
    return await asyncio.to_thread(fn, *args)
