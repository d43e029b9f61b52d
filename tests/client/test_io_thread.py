"""The client's I/O thread (fluss/client/io_thread.py): two connections in one process run two I/O loops, and
grpcio wakes both on every completion; the loop that finds the notification socket already read must not log an
ERROR for it (grpc/grpc#25364), while every other loop exception still reaches asyncio's handler."""

from __future__ import annotations

import asyncio
import logging

import fluss
from fluss.client.io_thread import IoThread


class _AsyncioErrors(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if record.exc_info:
            text += f" {record.exc_info[1]!r}"
        self.messages.append(text)


async def test_two_connections_busy_at_once_log_no_grpc_wakeup_errors(cluster):
    errors = _AsyncioErrors()
    logging.getLogger("asyncio").addHandler(errors)
    config = fluss.Config({"bootstrap.servers": cluster.bootstrap_servers})
    try:
        first = await fluss.FlussConnection.create(config)
        second = await fluss.FlussConnection.create(config)
        try:
            async def busy(conn: fluss.FlussConnection) -> None:
                admin = conn.get_admin()
                for _ in range(300):
                    assert "fluss" in await admin.list_databases()

            await asyncio.gather(busy(first), busy(second), busy(first), busy(second))
        finally:
            await first.aclose()
            await second.aclose()
    finally:
        logging.getLogger("asyncio").removeHandler(errors)
    assert not [m for m in errors.messages if "BlockingIOError" in m or "_handle_events" in m], errors.messages[:3]


def test_other_loop_exceptions_still_reach_asyncio_handler():
    errors = _AsyncioErrors()
    logging.getLogger("asyncio").addHandler(errors)
    io = IoThread(fluss.Config({"bootstrap.servers": "127.0.0.1:1"}), name="test-io")
    try:
        def fails() -> None:
            raise RuntimeError("a callback that fails")

        io.loop.call_soon_threadsafe(fails)
        io.call(asyncio.sleep(0.05))
    finally:
        io.stop()
        logging.getLogger("asyncio").removeHandler(errors)
    assert any("a callback that fails" in m for m in errors.messages), errors.messages
