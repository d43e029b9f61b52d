"""The SIGUSR1 stack dump of a server process, exercised in-process."""

from __future__ import annotations

import asyncio
import logging
import os
import signal

from fluss.server.diagnostics import install_dump_on_sigusr1, stack_dump


async def _parked(event: asyncio.Event) -> None:
    await event.wait()


async def test_stack_dump_names_every_task_and_where_it_waits():
    event = asyncio.Event()
    task = asyncio.create_task(_parked(event), name="parked-task")
    await asyncio.sleep(0)
    try:
        dump = stack_dump()
    finally:
        event.set()
        await task
    assert "parked-task" in dump
    assert "in _parked" in dump and "await event.wait()" in dump
    assert "--- thread MainThread" in dump


async def test_sigusr1_writes_the_dump_to_the_log(caplog):
    loop = asyncio.get_running_loop()
    install_dump_on_sigusr1(loop)
    try:
        with caplog.at_level(logging.WARNING, logger="fluss.server.diagnostics"):
            os.kill(os.getpid(), signal.SIGUSR1)
            for _ in range(50):
                await asyncio.sleep(0.02)
                if caplog.records:
                    break
        assert any("stack dump on SIGUSR1" in r.getMessage() and "asyncio tasks" in r.getMessage()
                   for r in caplog.records)
    finally:
        loop.remove_signal_handler(signal.SIGUSR1)
