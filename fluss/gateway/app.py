"""The ASGI application: routes, the door every request passes (``fluss.gateway.http``), the error envelope.

Framework: FastAPI (on Starlette, served by uvicorn). It is the most used and most actively maintained Python
framework that generates an OpenAPI 3.1 document from the routes and pydantic models themselves - the document
a FIP-49 client or an agent reads is derived from the code, never written beside it - and being plain ASGI it
runs under any ASGI server and is tested in-process with ``TestClient``. aiohttp has no OpenAPI generation;
bare Starlette would mean maintaining the document by hand. Hot paths (write bodies, lookups) still read raw
bytes and parse them with orjson instead of going through pydantic; their body schemas are declared for the
document only (``body_doc``).
"""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from fluss.errors import FlussError
from fluss.gateway import models
from fluss.gateway.clusters import ClusterRegistry
from fluss.gateway.config import GatewayConfig
from fluss.gateway.errors import (
    INTERNAL,
    INVALID_ARGUMENT,
    METHOD_NOT_ALLOWED,
    NOT_FOUND,
    GatewayError,
    from_fluss,
)
from fluss.gateway.http import JSON, GatewayMiddleware, error_response_bytes, request_id_of
from fluss.gateway.json_rows import RowsInvalid
from fluss.gateway.metrics import GatewayMetrics, RequestMetricsMiddleware, metrics_endpoint
from fluss.gateway.principal import PassThroughCredentials, PrincipalResolver
from fluss.gateway.routes import catalog, reads, records, system

log = logging.getLogger(__name__)

API_VERSION = "1.0.0"
DASHBOARD_PATH = "/dashboard"
TITLE = "fluss-gateway"
DESCRIPTION = ("Stateless REST gateway for fluss-py clusters, following Apache Fluss's FIP-49 REST design "
               "(metadata, DDL, writes), plus lookups, bounded scans and union read.")


def _error(request: Request, status: int, code: str, message: str, details: list | None = None,
           headers: dict[str, str] | None = None) -> Response:
    body = error_response_bytes(code, message, request_id_of(request.scope), details)
    return Response(body, status_code=status, media_type=JSON, headers=headers)


def create_app(config: GatewayConfig, resolver: PrincipalResolver | None = None) -> FastAPI:
    """A gateway application for ``config`` (serve it with uvicorn, or ``fluss gateway``)."""

    dashboard = None
    if config.dashboard_cluster is not None:
        from fluss.dashboard.app import Dashboard

        dashboard = Dashboard(config.clusters[config.dashboard_cluster], config.dashboard_interval_s)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        app.state.ready = True
        try:
            yield
        finally:
            app.state.ready = False
            if dashboard is not None:
                await dashboard.close()
            app.state.metrics.close()
            await app.state.registry.close()

    app = FastAPI(title=TITLE, version=API_VERSION, description=DESCRIPTION, lifespan=lifespan,
                  openapi_url=None, docs_url=None, redoc_url=None)
    app.state.registry = ClusterRegistry(config)
    app.state.ledgers = {}
    app.state.ready = False
    app.state.metrics = GatewayMetrics()
    for module in (system, catalog, records, reads):
        app.include_router(module.router)
    app.add_api_route("/metrics", metrics_endpoint, methods=["GET"], include_in_schema=False, name="metrics")
    if dashboard is not None:  # the dashboard's pages, with this gateway's door (principal, request ids)
        from fluss.dashboard.app import mountable_app

        app.mount(DASHBOARD_PATH, mountable_app(dashboard), name="dashboard")
    app.add_middleware(GatewayMiddleware, resolver=resolver or PassThroughCredentials(),
                       max_body_bytes=config.max_body_bytes)
    app.add_middleware(RequestMetricsMiddleware, metrics=app.state.metrics,  # outermost: times the whole request
                       dashboard_prefix=DASHBOARD_PATH if dashboard is not None else None)

    @app.exception_handler(GatewayError)
    async def gateway_error(request: Request, exc: GatewayError) -> Response:
        return _error(request, exc.status, exc.code, exc.message, headers=exc.headers)

    @app.exception_handler(RowsInvalid)
    async def rows_invalid(request: Request, exc: RowsInvalid) -> Response:
        return _error(request, 400, INVALID_ARGUMENT, f"the request's rows do not fit the table: {exc}",
                      [e.to_json() for e in exc.errors])

    @app.exception_handler(FlussError)
    async def fluss_error(request: Request, exc: FlussError) -> Response:
        err = from_fluss(exc)
        return _error(request, err.status, err.code, err.message)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> Response:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:10])
        return _error(request, 400, INVALID_ARGUMENT, f"invalid request: {problems}")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 405:
            return _error(request, 405, METHOD_NOT_ALLOWED, f"{request.method} is not allowed on {request.url.path}",
                          headers=exc.headers)
        if exc.status_code == 404:
            return _error(request, 404, NOT_FOUND, f"no route {request.method} {request.url.path}")
        return _error(request, exc.status_code, INTERNAL if exc.status_code >= 500 else INVALID_ARGUMENT,
                      str(exc.detail))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> Response:
        log.exception("unexpected error in %s %s", request.method, request.url.path)
        return _error(request, 500, INTERNAL, f"internal error: {type(exc).__name__}: {exc}")

    app.openapi = lambda: openapi_document(app)  # type: ignore[method-assign]
    return app


def openapi_document(app: FastAPI) -> dict:
    """The OpenAPI 3.1 document of the app, with the body models handlers read themselves in its components."""
    if app.openapi_schema is not None:
        return app.openapi_schema
    from fastapi.openapi.utils import get_openapi

    doc = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes,
                      servers=[{"url": "/"}])
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    for path_item in doc.get("paths", {}).values():
        for operation in path_item.values():
            for name in operation.pop("x-body-models", []):
                _add_schema(schemas, getattr(models, name))
    _add_schema(schemas, models.ErrorEnvelope)
    doc["components"]["schemas"] = dict(sorted(schemas.items()))
    app.openapi_schema = doc
    return doc


def _add_schema(schemas: dict, model: type[BaseModel]) -> None:
    schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
    for name, sub in schema.pop("$defs", {}).items():
        schemas.setdefault(name, sub)
    schemas.setdefault(model.__name__, schema)
