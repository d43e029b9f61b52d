"""The one way a gRPC server is built: ``RpcServerBuilder`` (used by the coordinator and the tablet server).

    server = (RpcServerBuilder(config.bind_listeners())
              .add_service(rpc.add_TabletServiceServicer_to_server, TabletServicer(...))
              .add_interceptor(lambda listener: MyInterceptor(listener))
              .build())
    await server.start()
    ...
    await server.stop(grace=1)

Each listener gets its own ``grpc.aio.Server`` with the same services and options (message sizes, keepalive) and
its own interceptor chain: :class:`~fluss.rpc.interceptors.ErrorDoor` first, then the interceptors added with
``add_interceptor`` in order, then request metrics and request logging (``fluss.rpc.interceptors``). An
interceptor is made by a factory from the :class:`~fluss.rpc.listeners.Listener`, so a listener's security
protocol, for example, decides what its chain does. Consecutive
:class:`~fluss.rpc.interceptors.UnaryInterceptor` are applied as one ``InterceptorChain`` (gRPC awaits each
interceptor on every request; a chain is that await once). Port 0 binds a free port; ``RpcServer.ports`` tells
which. ``use_tls(name, credentials)`` serves one listener over TLS (gRPC server credentials) instead of plaintext.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import grpc

from fluss.errors import ErrorCode, FlussError
from fluss.rpc.channels import MAX_MESSAGE_BYTES
from fluss.rpc.interceptors import ErrorDoor, RequestLogging, RequestMetrics, RequestStats, chained
from fluss.rpc.listeners import Listener

#: Server options of every listener.
GRPC_SERVER_OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.so_reuseport", 0),
    # clients ping every CLIENT_KEEPALIVE_MS while calls are open (long-polling fetches): allow it
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.min_recv_ping_interval_without_data_ms", 5_000),
]

InterceptorFactory = Callable[[Listener], grpc.aio.ServerInterceptor]
ServiceAdder = Callable[[object, grpc.aio.Server], None]


@dataclass
class _Bound:
    listener: Listener
    server: grpc.aio.Server
    port: int


class RpcServer:
    """The gRPC servers of one process, one per listener (build it with :class:`RpcServerBuilder`)."""

    def __init__(self, bound: list[_Bound], stats: RequestStats) -> None:
        self._bound = bound
        self.stats = stats

    @property
    def listeners(self) -> list[Listener]:
        """The listeners with the ports actually bound (a port 0 in the configuration is resolved)."""
        return [Listener(b.listener.name, b.listener.host, b.port) for b in self._bound]

    @property
    def ports(self) -> dict[str, int]:
        return {b.listener.name: b.port for b in self._bound}

    async def start(self) -> None:
        for b in self._bound:
            await b.server.start()

    async def stop(self, grace: float | None = None) -> None:
        for b in self._bound:
            await b.server.stop(grace)

    async def wait_for_termination(self) -> None:
        for b in self._bound:
            await b.server.wait_for_termination()


class RpcServerBuilder:
    def __init__(self, listeners: list[Listener], options: list[tuple[str, object]] | None = None,
                 stats: RequestStats | None = None) -> None:
        if not listeners:
            raise FlussError("A server needs at least one listener", ErrorCode.INVALID_CONFIG_EXCEPTION)
        self._listeners = list(listeners)
        self._options = list(GRPC_SERVER_OPTIONS if options is None else options)
        self._services: list[tuple[ServiceAdder, object]] = []
        self._interceptors: list[InterceptorFactory] = []
        self._tls: dict[str, grpc.ServerCredentials] = {}
        self._stats = stats or RequestStats()

    def add_service(self, add_to_server: ServiceAdder, servicer: object) -> RpcServerBuilder:
        """``add_to_server`` is a generated ``add_XServiceServicer_to_server``."""
        self._services.append((add_to_server, servicer))
        return self

    def add_interceptor(self, factory: InterceptorFactory) -> RpcServerBuilder:
        """Adds an interceptor after the error door (see the module docstring), made once per listener."""
        self._interceptors.append(factory)
        return self

    def use_tls(self, listener_name: str, credentials: grpc.ServerCredentials) -> RpcServerBuilder:
        """Serves the listener ``listener_name`` over TLS."""
        self._tls[listener_name] = credentials
        return self

    def build(self) -> RpcServer:
        bound = []
        for listener in self._listeners:
            chain = [ErrorDoor(listener), *(f(listener) for f in self._interceptors), RequestMetrics(self._stats),
                     RequestLogging(listener)]
            server = grpc.aio.server(interceptors=chained(chain), options=self._options)
            for add_to_server, servicer in self._services:
                add_to_server(servicer, server)
            try:
                credentials = self._tls.get(listener.name)
                port = (server.add_secure_port(listener.address, credentials) if credentials is not None
                        else server.add_insecure_port(listener.address))
            except RuntimeError:
                port = 0
            if port == 0:
                raise FlussError(f"Cannot bind listener {listener} (address in use?)",
                                 ErrorCode.INVALID_CONFIG_EXCEPTION)
            bound.append(_Bound(listener, server, port))
        return RpcServer(bound, self._stats)
