"""A background thread running an asyncio loop for the client's data path.

The official client's ``append()`` and ``poll()`` are synchronous while sends and fetches are asynchronous;
running the I/O on its own loop lets ``append()`` block for backpressure (a full write buffer) and ``poll()``
wait for data without deadlocking the caller's event loop. The thread owns its own ``ClusterClient`` (gRPC
aio channels belong to the loop that made them).

grpcio's asyncio stack wakes every event loop of the process that made gRPC calls on each completion event (one
notification socket, read by each loop). With two connections (two I/O loops) one loop reads the byte and the other
finds the socket empty: grpcio's ``PollerCompletionQueue._handle_events`` raises ``BlockingIOError`` into that loop,
whose default handler logs an ERROR with a traceback, although nothing is lost (the loop that read the byte hands
every queued event to the loop it belongs to; grpc/grpc#25364). The I/O loop's exception handler drops exactly that
error and passes every other one to asyncio's default handler.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from fluss.client.cluster_client import ClusterClient
from fluss.client.config import Config

T = TypeVar("T")


def _is_spurious_grpc_wakeup(context: dict[str, Any]) -> bool:
    """Whether an event-loop exception is grpcio's empty read of its shared notification socket (module docstring)."""
    return isinstance(context.get("exception"), BlockingIOError) \
        and "PollerCompletionQueue._handle_events" in repr(context.get("handle"))


def _handle_loop_exception(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    if not _is_spurious_grpc_wakeup(context):
        loop.default_exception_handler(context)


class IoThread:
    def __init__(self, config: Config, name: str = "fluss-client-io") -> None:
        self.loop = asyncio.new_event_loop()
        self.loop.set_exception_handler(_handle_loop_exception)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        self.client: ClusterClient = self.call(self._make_client(config))

    async def _make_client(self, config: Config) -> ClusterClient:
        return ClusterClient(config)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Runs a coroutine on the I/O loop and blocks the calling thread for its result."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("blocking call from the client's own I/O thread")
        return self.submit(coro).result(timeout)

    async def wait(self, coro: Coroutine[Any, Any, T]) -> T:
        """Runs a coroutine on the I/O loop and awaits it from another loop."""
        return await asyncio.wrap_future(self.submit(coro))

    async def _shutdown(self) -> None:
        """Cancels every task still running on the loop (senders, fetches), then closes the channels."""
        current = asyncio.current_task()
        tasks = [t for t in asyncio.all_tasks() if t is not current]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.client.close()

    def stop(self) -> None:
        if not self.loop.is_running():
            return
        try:
            self.call(self._shutdown(), timeout=10)
        except Exception:  # noqa: BLE001 - closing is best effort
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()
