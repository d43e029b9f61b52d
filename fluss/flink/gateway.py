"""Keep one Python thread's PyFlink calls on one JVM thread.

PyFlink talks to its JVM through a py4j gateway whose client keeps a pool of socket connections, each served by
its own JVM thread; a call takes whichever connection was given back last, and opens a new one when all are in
use (another Python thread calling at the same time, or a py4j object finalised by the garbage collector during
a call). Flink's planner is not indifferent to that: the metadata provider Calcite needs is a thread-local set
once, on the JVM thread that created the ``TableEnvironment``. A query planned on any other JVM thread fails
with ``NullPointerException: metadataHandlerProvider`` and leaves the environment's planner broken for good.

:func:`pin_gateway_to_current_thread` reserves one connection for the calling thread: its calls always go to the
same JVM thread, and every other thread shares the remaining pool. Call it before creating table environments
in a process where other threads also touch py4j objects (``asyncio.to_thread``, watchdog timers, test suites).
"""

from __future__ import annotations

import threading
from typing import Any

#: Attribute marking a py4j gateway client whose connections are already pinned.
_PINNED = "_fluss_pinned_thread"


def pin_gateway_to_current_thread(gateway: Any | None = None) -> None:
    """Route every later py4j call of the calling thread through one reserved connection (one JVM thread).

    ``gateway`` defaults to PyFlink's (started if needed). Calling it again from the same thread does nothing;
    pinning a second thread of the same gateway is refused, since only one thread can own the planner.
    """
    if gateway is None:
        from pyflink.java_gateway import get_gateway

        gateway = get_gateway()
    client = gateway._gateway_client
    owner = threading.get_ident()
    pinned_to = getattr(client, _PINNED, None)
    if pinned_to == owner:
        return
    if pinned_to is not None:
        raise RuntimeError(f"the py4j gateway is already pinned to thread {pinned_to}")
    _PinnedConnection(client, owner).install()
    setattr(client, _PINNED, owner)


class _PinnedConnection:
    """One connection reserved for one thread, in front of a py4j ``GatewayClient``'s pool."""

    def __init__(self, client: Any, owner: int) -> None:
        self._client = client
        self._owner = owner
        self._pool_get = client._get_connection
        self._pool_give_back = client._give_back_connection
        self._reserved = self._pool_get()  # the connection this thread used last: the JVM thread it knows
        self._in_use = False

    def install(self) -> None:
        self._client._get_connection = self._get
        self._client._give_back_connection = self._give_back

    def _get(self) -> Any:
        if threading.get_ident() == self._owner and not self._in_use and self._reserved.is_connected:
            self._in_use = True  # only the owner thread sets or reads this flag while it is False
            return self._reserved
        return self._pool_get()  # another thread, or a nested call (a finaliser) of the owner

    def _give_back(self, connection: Any) -> None:
        if connection is self._reserved:
            self._in_use = False
        else:
            self._pool_give_back(connection)
