"""The gateway's own metrics (GET /metrics: requests, errors and latency per operation) and the dashboard mounted
at /dashboard, against the shared cluster."""

from __future__ import annotations

import uuid

import httpx
import pytest
import pytest_asyncio
from gateway_helpers import BASE

from fluss.gateway import GatewayConfig, create_app
from fluss.metrics.scrape import parse

REQUESTS = "fluss_gateway_request_requests_total"
ERRORS = "fluss_gateway_request_errors_total"
SERVER_ERRORS = "fluss_gateway_request_serverErrors_total"
LATENCY_COUNT = "fluss_gateway_request_totalTimeMs_count"


@pytest_asyncio.fixture(loop_scope="session")
async def gw_dash(cluster):
    app = create_app(GatewayConfig.single(cluster.bootstrap_servers, ledger_database="gw_ledger",
                                          dashboard_cluster="default", dashboard_interval_s=1.0))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
            yield client


async def _scrape(client: httpx.AsyncClient):
    r = await client.get("/metrics")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    return parse(r.text)


@pytest.mark.asyncio(loop_scope="session")
async def test_requests_errors_and_latency_per_operation(gw_dash):
    for _ in range(3):
        assert (await gw_dash.get("/health")).status_code == 200
    assert (await gw_dash.get("/no/such/route")).status_code == 404
    assert (await gw_dash.get(f"{BASE}/databases/db_{uuid.uuid4().hex[:8]}/tables")).status_code == 404
    m = await _scrape(gw_dash)
    assert m.value(REQUESTS, request="getHealth") == 3
    assert m.value(ERRORS, request="getHealth") == 0
    assert m.value(LATENCY_COUNT, request="getHealth") == 3
    assert m.value(REQUESTS, request="unmatched") == 1
    assert m.value(ERRORS, request="unmatched") == 1
    assert m.value(SERVER_ERRORS, request="unmatched") == 0
    (listed,) = [s.labels["request"] for s in m.series(ERRORS) if s.labels["request"] not in
                 ("getHealth", "unmatched") and s.value == 1]
    assert listed == "listTables"  # a route's OpenAPI operation id, not the path the client sent
    # the scrape itself is counted (by the next one), and nothing else showed up
    m2 = await _scrape(gw_dash)
    assert m2.value(REQUESTS, request="metrics") == 1
    assert {s.labels["request"] for s in m2.series(REQUESTS)} == {"getHealth", "unmatched", "listTables",
                                                                   "metrics"}
    assert m2.value("fluss_gateway_requestsInFlight") == 1  # the scrape in progress


@pytest.mark.asyncio(loop_scope="session")
async def test_dashboard_is_mounted_and_counted(gw_dash, cluster):
    r = await gw_dash.get("/dashboard", follow_redirects=True)
    assert r.status_code == 200 and "<html" in r.text.lower()
    assert str(r.url).endswith("/dashboard/")
    overview = (await gw_dash.get("/dashboard/api/overview")).json()
    assert len(overview["tablet_servers"]) == cluster.tablet_servers
    m = await _scrape(gw_dash)
    assert m.value(REQUESTS, request="dashboard") >= 3


def test_dashboard_cluster_must_be_known():
    with pytest.raises(ValueError, match="dashboard cluster 'other'"):
        GatewayConfig.single("127.0.0.1:1", dashboard_cluster="other")
