"""The dashboard as an ASGI application (Starlette): static pages shipped in the package (``static/``: plain
HTML, CSS and JavaScript, no build step) and a small JSON API they poll.

    GET /                               the single page (overview, tables, one table: routes after '#')
    GET /api/overview                   coordinators, tablet servers, ZooKeeper sessions, cluster totals
    GET /api/series                     produce/fetch rates and request latencies of the last minutes
    GET /api/tables                     every table with its live write and read rate
    GET /api/tables/{database}/{table}  one table: definition, buckets (leader, ISR, offsets, sizes, KV snapshot,
                                        tiering), row count and its own rates

Every URL the page uses is relative, so the app works at the root (``fluss dashboard``) and mounted under a prefix
(the REST gateway mounts it at ``/dashboard``). A :class:`Dashboard` connects to the cluster when it starts (the
app's lifespan, or the first request when mounted in an app whose lifespan does not reach it) and runs the metrics
sampler until it is closed.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import asynccontextmanager
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

import fluss
from fluss.dashboard.sampler import MetricsSampler
from fluss.dashboard.views import ClusterViews
from fluss.errors import ErrorCode, FlussError

log = logging.getLogger(__name__)

STATIC = Path(__file__).resolve().parent / "static"


class Dashboard:
    """The dashboard's connection, metrics sampler and views of one cluster."""

    def __init__(self, bootstrap_servers: str, interval_s: float = 2.0, connection=None) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.interval_s = interval_s
        self.conn = connection
        self._own_connection = connection is None
        self.sampler: MetricsSampler | None = None
        self.views: ClusterViews | None = None
        self._lock = asyncio.Lock()

    async def start(self) -> None:
        async with self._lock:
            if self.views is not None:
                return
            if self.conn is None:
                self.conn = await fluss.FlussConnection.create(
                    fluss.Config({"bootstrap.servers": self.bootstrap_servers}))
            self.sampler = MetricsSampler(self.conn.get_admin(), self.interval_s)
            try:
                await self.sampler.sample_once()
            except FlussError as e:
                log.warning("first metrics sample failed: %s", e)
            self.sampler.start()
            self.views = ClusterViews(self.conn, self.sampler, self.bootstrap_servers)

    async def close(self) -> None:
        if self.sampler is not None:
            await self.sampler.close()
        if self.conn is not None and self._own_connection:
            await self.conn.aclose()
            self.conn = None
        self.views = None

    async def ready_views(self) -> ClusterViews:
        if self.views is None:
            await self.start()
        return self.views

    # ------------------------------------------------------------ routes

    def routes(self) -> list:
        return [
            Route("/", self._index),
            Route("/api/overview", self._overview),
            Route("/api/series", self._series),
            Route("/api/tables", self._tables),
            Route("/api/tables/{database}/{table}", self._table),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ]

    async def _index(self, request: Request) -> Response:
        if not request.url.path.endswith("/"):  # mounted at /dashboard: relative URLs need the slash
            return RedirectResponse(str(request.url.replace(path=request.url.path + "/")))
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})

    async def _overview(self, request: Request) -> Response:
        return await _json(lambda views: views.overview(), self)

    async def _series(self, request: Request) -> Response:
        views = await self.ready_views()
        return JSONResponse({"interval_s": self.interval_s, **views.sampler.series()})

    async def _tables(self, request: Request) -> Response:
        return await _json(lambda views: views.tables(), self)

    async def _table(self, request: Request) -> Response:
        db, table = request.path_params["database"], request.path_params["table"]
        return await _json(lambda views: views.table(db, table), self)


async def _json(make, dashboard: Dashboard) -> Response:
    try:
        views = await dashboard.ready_views()
        return JSONResponse(await make(views))
    except FlussError as e:
        status = 404 if e.error_code in (ErrorCode.TABLE_NOT_EXIST, ErrorCode.DATABASE_NOT_EXIST) else 502
        return JSONResponse({"error": e.message, "code": e.error_code}, status_code=status)


def create_app(bootstrap_servers: str, interval_s: float = 2.0) -> Starlette:
    """A standalone dashboard application (``fluss dashboard``)."""
    dashboard = Dashboard(bootstrap_servers, interval_s)

    @asynccontextmanager
    async def lifespan(app: Starlette):
        await dashboard.start()
        try:
            yield
        finally:
            await dashboard.close()

    app = Starlette(routes=dashboard.routes(), lifespan=lifespan)
    app.state.dashboard = dashboard
    return app


def mountable_app(dashboard: Dashboard) -> Starlette:
    """The dashboard's routes as an app to mount in another one (whose lifespan starts and closes ``dashboard``)."""
    app = Starlette(routes=dashboard.routes())
    app.state.dashboard = dashboard
    return app
