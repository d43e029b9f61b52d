"""The gateway's request metrics, served at ``GET /metrics`` (Prometheus text format, ``prometheus_client``).

:class:`RequestMetricsMiddleware` (pure ASGI, outermost) times every HTTP request from its arrival to the end of
its response and counts it under the operation that answered it: the route's OpenAPI operation id
(``appendRows``, ``lookup``), ``dashboard`` for the mounted dashboard, ``unmatched`` when no route matched - a
bounded set of label values whatever paths clients send. A response with a status of 400 or more counts as an
error (500 or more: also a server error). The metrics are declared in ``fluss.metrics.catalog`` (``gateway_*``)
like the servers'; per request the cost is a dict lookup and a few integer adds.
"""

from __future__ import annotations

import time

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from fluss.metrics import catalog as c
from fluss.metrics.core import Histogram, Meter, MetricRegistry
from fluss.metrics.prometheus import RegistryCollector

UNMATCHED = "unmatched"
DASHBOARD = "dashboard"


class _Operation:
    __slots__ = ("requests", "errors", "server_errors", "time")

    def __init__(self, registry: MetricRegistry, name: str) -> None:
        self.requests: Meter = registry.meter(c.GW_REQUESTS, request=name)
        self.errors: Meter = registry.meter(c.GW_ERRORS, request=name)
        self.server_errors: Meter = registry.meter(c.GW_SERVER_ERRORS, request=name)
        self.time: Histogram = registry.histogram(c.GW_TOTAL_TIME, request=name)


class GatewayMetrics:
    """The gateway's registry, its per-operation metrics and the Prometheus exposition of them."""

    def __init__(self, registry: MetricRegistry | None = None) -> None:
        self.registry = registry or MetricRegistry()
        self.in_flight = 0
        self.registry.gauge(c.GW_IN_FLIGHT, lambda: self.in_flight)
        self._operations: dict[str, _Operation] = {}
        self.exposition = CollectorRegistry(auto_describe=False)
        self.exposition.register(RegistryCollector(self.registry, {}))

    def record(self, operation: str, status: int, ms: float) -> None:
        op = self._operations.get(operation)
        if op is None:
            op = self._operations[operation] = _Operation(self.registry, operation)
        op.requests.mark()
        if status >= 400:
            op.errors.mark()
            if status >= 500:
                op.server_errors.mark()
        op.time.update(ms)

    def render(self) -> bytes:
        return generate_latest(self.exposition)

    def close(self) -> None:
        self.registry.close()


def operation_of(scope: Scope, dashboard_prefix: str | None) -> str:
    """The label a request is counted under (see the module docstring)."""
    if dashboard_prefix and scope.get("path", "").startswith(dashboard_prefix):
        return DASHBOARD
    route = scope.get("route")
    if route is None:
        return UNMATCHED
    return getattr(route, "operation_id", None) or getattr(route, "name", None) or UNMATCHED


class RequestMetricsMiddleware:
    def __init__(self, app: ASGIApp, metrics: GatewayMetrics, dashboard_prefix: str | None = None) -> None:
        self.app = app
        self.metrics = metrics
        self.dashboard_prefix = dashboard_prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # an exception that escapes every handler ends as a 500

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        self.metrics.in_flight += 1
        try:
            await self.app(scope, receive, send_status)
        finally:
            self.metrics.in_flight -= 1
            self.metrics.record(operation_of(scope, self.dashboard_prefix), status,
                                (time.perf_counter() - started) * 1000)


async def metrics_endpoint(request: Request) -> Response:
    """``GET /metrics``: the gateway's metrics in Prometheus's text format."""
    return Response(request.app.state.metrics.render(), media_type=CONTENT_TYPE_LATEST)
