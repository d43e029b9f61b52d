"""Gateway fixtures: the gateway application in-process over the shared cluster (``gw``), plus helpers."""

from __future__ import annotations

import uuid

import httpx
import pytest_asyncio
from gateway_helpers import BASE

from fluss.gateway import GatewayConfig, create_app


@pytest_asyncio.fixture(loop_scope="session", scope="session")
async def gateway_app(cluster):
    app = create_app(GatewayConfig.single(cluster.bootstrap_servers, ledger_database="gw_ledger",
                                          client_options={"writer.batch-timeout": "5ms"}))
    async with app.router.lifespan_context(app):
        yield app


@pytest_asyncio.fixture(loop_scope="session")
async def gw(gateway_app):
    transport = httpx.ASGITransport(app=gateway_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
        yield client


@pytest_asyncio.fixture(loop_scope="session")
async def gw_db(gw):
    """A fresh database created through the gateway, dropped (cascade) afterwards."""
    name = f"gw_{uuid.uuid4().hex[:8]}"
    r = await gw.post(f"{BASE}/databases", json={"database": name})
    assert r.status_code == 201, r.text
    yield name
    await gw.delete(f"{BASE}/databases/{name}", params={"cascade": "true"})
