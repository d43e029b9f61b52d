"""Server interceptors: the one door every request passes, and the chain that authentication, authorization,
metrics and request logging hook into.

``RpcServerBuilder`` (``fluss.rpc.server``) puts :class:`ErrorDoor` first on every listener, then the interceptors
a server adds. The shipped ones:

* :class:`ErrorDoor` - no raw exception text crosses the wire. A ``FlussError`` raised anywhere below becomes the
  response's ``error`` (its code and message). Any other exception is logged here with its stack and a request id,
  and the client gets ``UNKNOWN_SERVER_ERROR`` with a message naming the API and that request id (and nothing of
  the exception). A request body that does not decode as the method's protobuf message gets ``CORRUPT_MESSAGE``
  and one concise, rate-limited log line (never a traceback). Every response message has an ``error`` field
  (``ErrorInfo``), so every API can carry a request-level error.
* :class:`RequestLogging` - one DEBUG line per request: API, listener, peer, duration, error code, request id.
* :class:`RequestMetrics` - per-API request count, error count and latency (total, max and a histogram), in a
  :class:`RequestStats` the server exposes (``RpcServer.stats``) for the metrics reporter.

An interceptor is a ``grpc.aio.ServerInterceptor``; the builder makes one per listener from a factory taking the
:class:`~fluss.rpc.listeners.Listener`, so per-listener policies (a SASL listener next to a plaintext one) are
plain code. :func:`current_request` gives the code below the door the request's id, API and listener.
All methods of the Fluss services are unary; streaming handlers pass through untouched.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import itertools
import logging
import os
import time
from bisect import bisect_left
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import grpc

from fluss.errors import ErrorCode, FlussError, error_name
from fluss.rpc.fetch_wire import passing_encoded
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.rpc.listeners import Listener

log = logging.getLogger("fluss.rpc.requests")

Continuation = Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler | None]]


@dataclass(frozen=True)
class RequestInfo:
    """What the code handling a request may know about it."""

    request_id: str
    api: str
    listener: str


_CURRENT: contextvars.ContextVar[RequestInfo | None] = contextvars.ContextVar("fluss_request", default=None)
_PROCESS_TAG = os.urandom(3).hex()
_SEQUENCE = itertools.count(1)


def current_request() -> RequestInfo | None:
    """The request being handled (None outside a request)."""
    return _CURRENT.get()


def new_request_id() -> str:
    return f"{_PROCESS_TAG}-{next(_SEQUENCE):x}"


def api_name(method: str) -> str:
    """``/fluss.rpc.TabletService/ProduceLog`` → ``ProduceLog``."""
    return method.rsplit("/", 1)[-1]


_RESPONSE_TYPES: dict[str, type | None] = {}


def response_type(method: str) -> type | None:
    """The response message class of a method of the Fluss services (None for a method it does not know)."""
    if method not in _RESPONSE_TYPES:
        found = None
        service, _, name = method.strip("/").rpartition("/")
        desc = pb.DESCRIPTOR.services_by_name.get(service.rsplit(".", 1)[-1])
        if desc is not None and name in desc.methods_by_name:
            found = getattr(pb, desc.methods_by_name[name].output_type.name, None)
        _RESPONSE_TYPES[method] = found
    return _RESPONSE_TYPES[method]


def error_response(response_cls: type, code: int, message: str):
    return response_cls(error=pb.ErrorInfo(code=code, message=message))


def internal_error_message(api: str, request_id: str) -> str:
    return f"Internal server error in {api} (request id {request_id}); the server log has the details"


def _wrap_unary(handler: grpc.RpcMethodHandler,
                behavior: Callable[[object, grpc.aio.ServicerContext], Awaitable[object]],
                request_deserializer=None) -> grpc.RpcMethodHandler:
    return grpc.unary_unary_rpc_method_handler(
        behavior, request_deserializer=request_deserializer or handler.request_deserializer,
        response_serializer=handler.response_serializer)


async def _call(inner, request, context):
    result = inner(request, context)
    if inspect.isawaitable(result):
        result = await result
    return result


def awaitable_handler(inner: Callable) -> Callable[[object, grpc.aio.ServicerContext], Awaitable[object]]:
    """``inner`` (a unary behaviour) as a coroutine function: itself when it is one (every servicer method and
    every shipped interceptor's behaviour), so a chain of interceptors awaits each layer directly instead of
    through a coroutine more per layer and request; else an adapter awaiting its result when that is awaitable."""
    if inspect.iscoroutinefunction(inner):
        return inner

    async def adapted(request, context):
        return await _call(inner, request, context)

    return adapted


class UnaryInterceptor(grpc.aio.ServerInterceptor):
    """Base of the shipped interceptors: wraps each unary handler once per method (cached while the handler below
    stays the same object), so the per-request cost is one call, not a new handler."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[grpc.RpcMethodHandler, grpc.RpcMethodHandler]] = {}

    async def intercept_service(self, continuation: Continuation,
                                details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        handler = await continuation(details)
        if handler is None or handler.unary_unary is None:
            return handler
        cached = self._cache.get(details.method)
        if cached is not None and cached[0] is handler:
            return cached[1]
        wrapped = self.wrap(details.method, handler)
        self._cache[details.method] = (handler, wrapped)
        return wrapped

    def wrap(self, method: str, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        raise NotImplementedError


class _Undecodable:
    """Stands for a request body that did not decode (the handler below never sees it)."""

    __slots__ = ("size", "reason")

    def __init__(self, size: int, reason: str) -> None:
        self.size = size
        self.reason = reason


class RateLimitedLog:
    """At most one WARNING per ``interval_s`` (with the count of those suppressed); the rest go to DEBUG."""

    def __init__(self, interval_s: float = 10.0, logger: logging.Logger | None = None) -> None:
        self.log = logger or log
        self.interval_s = interval_s
        self._next = 0.0
        self._suppressed = 0

    def warning(self, message: str, *args: object) -> None:
        now = time.monotonic()
        if now >= self._next:
            suffix = f" ({self._suppressed} similar since the last report)" if self._suppressed else ""
            self.log.warning(message + suffix, *args)
            self._next = now + self.interval_s
            self._suppressed = 0
        else:
            self._suppressed += 1
            self.log.debug(message, *args)


class InterceptorChain(UnaryInterceptor):
    """Several :class:`UnaryInterceptor` applied as one (the first outermost, as in a gRPC chain). ``grpc.aio``
    awaits every interceptor's ``intercept_service`` on every request; a chain wraps each method's handler with all
    of them once (cached as every :class:`UnaryInterceptor` is), so a request pays that await once."""

    def __init__(self, interceptors: list[UnaryInterceptor]) -> None:
        super().__init__()
        self.interceptors = list(interceptors)

    def wrap(self, method: str, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        for interceptor in reversed(self.interceptors):
            handler = interceptor.wrap(method, handler)
        return handler


def chained(interceptors: list[grpc.aio.ServerInterceptor]) -> list[grpc.aio.ServerInterceptor]:
    """The same interceptors in the same order, each run of :class:`UnaryInterceptor` made one
    :class:`InterceptorChain` (others, which may do anything in ``intercept_service``, stay as they are)."""
    out: list[grpc.aio.ServerInterceptor] = []
    run: list[UnaryInterceptor] = []
    for interceptor in [*interceptors, None]:
        if isinstance(interceptor, UnaryInterceptor):
            run.append(interceptor)
            continue
        if run:
            out.append(run[0] if len(run) == 1 else InterceptorChain(run))
            run = []
        if interceptor is not None:
            out.append(interceptor)
    return out


class ErrorDoor(UnaryInterceptor):
    """Maps every failure to a Fluss error code in the response (see the module docstring)."""

    def __init__(self, listener: Listener) -> None:
        super().__init__()
        self.listener = listener.name
        self._undecodable_log = RateLimitedLog()

    def wrap(self, method: str, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        response_cls = response_type(method)
        if response_cls is None:
            return handler
        api = api_name(method)
        inner = awaitable_handler(handler.unary_unary)
        decode = handler.request_deserializer
        listener = self.listener

        def safe_decode(data: bytes):
            try:
                return decode(data) if decode is not None else data
            except Exception as e:  # noqa: BLE001 - any decoding failure is the client's
                return _Undecodable(len(data), type(e).__name__)

        async def behavior(request, context):
            info = RequestInfo(new_request_id(), api, listener)
            token = _CURRENT.set(info)
            try:
                if type(request) is _Undecodable:
                    self._undecodable_log.warning("undecodable %s request (%d bytes, %s) from %s on listener %s",
                                                  api, request.size, request.reason, context.peer(), listener)
                    return error_response(response_cls, ErrorCode.CORRUPT_MESSAGE,
                                          f"The request body ({request.size} bytes) is not a valid {api} request")
                return await inner(request, context)
            except FlussError as e:
                return error_response(response_cls, e.error_code, e.message)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - logged with its stack; the client gets a request id, not the text
                log.exception("internal error in %s (request id %s)", api, info.request_id)
                return error_response(response_cls, ErrorCode.UNKNOWN_SERVER_ERROR,
                                      internal_error_message(api, info.request_id))
            finally:
                _CURRENT.reset(token)

        wrapped = _wrap_unary(handler, behavior, safe_decode)  # the outermost handler: the one gRPC serializes with
        return wrapped._replace(response_serializer=passing_encoded(handler.response_serializer))


class RequestLogging(UnaryInterceptor):
    """One DEBUG line per request (``fluss.rpc.requests`` logger); nothing is done while DEBUG is off."""

    def __init__(self, listener: Listener) -> None:
        super().__init__()
        self.listener = listener.name

    def wrap(self, method: str, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        api = api_name(method)
        inner = awaitable_handler(handler.unary_unary)

        async def behavior(request, context):
            if not log.isEnabledFor(logging.DEBUG):
                return await inner(request, context)
            start = time.perf_counter()
            response = await inner(request, context)
            info = current_request()
            code = _error_code(response)
            log.debug("%s from %s on %s: %.2f ms, %s (request id %s)", api, context.peer(), self.listener,
                      (time.perf_counter() - start) * 1000, error_name(code),
                      info.request_id if info else "-")
            return response

        return _wrap_unary(handler, behavior)


def _error_code(response: object) -> int:
    error = getattr(response, "error", None)
    return error.code if error is not None else ErrorCode.NONE


#: Upper bounds (ms) of the latency histogram buckets; the last bucket is unbounded.
LATENCY_BUCKETS_MS = (1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000)


@dataclass
class ApiStats:
    """Counters of one API since the server started."""

    requests: int = 0
    errors: int = 0  # responses with a request-level error code (or an exception)
    total_ms: float = 0.0
    max_ms: float = 0.0
    histogram: list[int] = field(default_factory=lambda: [0] * (len(LATENCY_BUCKETS_MS) + 1))

    def record(self, ms: float, error: bool) -> None:
        self.requests += 1
        self.errors += error
        self.total_ms += ms
        if ms > self.max_ms:
            self.max_ms = ms
        self.histogram[bisect_left(LATENCY_BUCKETS_MS, ms)] += 1


@dataclass
class RequestStats:
    """Per-API counters of one server (every listener), read by the metrics reporter.

    ``variants`` splits an API's counts by request: it maps an API name to a function of the request returning
    the name to count it under (``FetchLog`` -> ``FetchLogClient`` / ``FetchLogFollower``, as Fluss reports them).
    """

    apis: dict[str, ApiStats] = field(default_factory=dict)
    variants: dict[str, Callable[[object], str]] = field(default_factory=dict)

    def of(self, api: str) -> ApiStats:
        stats = self.apis.get(api)
        if stats is None:
            stats = self.apis[api] = ApiStats()
        return stats

    def snapshot(self) -> dict[str, ApiStats]:
        return {api: ApiStats(s.requests, s.errors, s.total_ms, s.max_ms, list(s.histogram))
                for api, s in self.apis.items()}


class RequestMetrics(UnaryInterceptor):
    """Counts requests, request-level errors and latency per API into a shared :class:`RequestStats`."""

    def __init__(self, stats: RequestStats) -> None:
        super().__init__()
        self.stats = stats

    def wrap(self, method: str, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        api = api_name(method)
        variant = self.stats.variants.get(api)
        fixed = self.stats.of(api) if variant is None else None
        of = self.stats.of
        inner = awaitable_handler(handler.unary_unary)

        async def behavior(request, context):
            start = time.perf_counter()
            failed = True
            try:
                response = await inner(request, context)
                failed = _error_code(response) != ErrorCode.NONE
                return response
            finally:
                stats = fixed if fixed is not None else of(variant(request))
                stats.record((time.perf_counter() - start) * 1000, failed)

        return _wrap_unary(handler, behavior)
