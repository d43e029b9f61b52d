"""A log held by another thread, as a worker's read, roll or checkpoint holds it (for tests of what the event
loop does then)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def held_by_another_thread(log) -> Iterator[None]:
    """Holds ``log``'s lock (``LogTablet.held_if_free``) in another thread until the block ends."""
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with log.held_if_free() as held:
            assert held
            holding.set()
            release.wait(10)

    holder = threading.Thread(target=hold, name="holds-the-log")
    holder.start()
    try:
        assert holding.wait(5), "the other thread could not take the log"
        yield
    finally:
        release.set()
        holder.join(5)
