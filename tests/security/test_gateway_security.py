"""The REST gateway in front of the secured cluster: HTTP Basic credentials become the caller's SASL identity,
so the cluster's ACLs apply to the caller (401 for a wrong password, 403 naming what is missing)."""

from __future__ import annotations

import base64
import uuid

import httpx
import pytest
import pytest_asyncio

from fluss import AclBinding, OperationType, Principal, Resource
from fluss.gateway import GatewayConfig, create_app

pytestmark = pytest.mark.asyncio(loop_scope="session")

BASE = "/v1/clusters/default"


def _basic(user: str, password: str) -> dict[str, str]:
    return {"authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


@pytest_asyncio.fixture(loop_scope="session")
async def secured_gw(secured_cluster):
    service = secured_cluster.sasl_config("admin")
    config = GatewayConfig.single(service.pop("bootstrap.servers"), client_options=service)
    app = create_app(config)
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gateway") as client:
            yield client


async def test_callers_act_as_themselves_through_the_gateway(secured_gw, as_admin):
    db = f"gw_sec_{uuid.uuid4().hex[:6]}"
    r = await secured_gw.post(f"{BASE}/databases", json={"database": db})  # no credentials: the service (admin)
    assert r.status_code == 201, r.text
    try:
        r = await secured_gw.get(f"{BASE}/databases", headers=_basic("alice", "wrong"))
        assert r.status_code == 401 and "invalid username or password" in r.json()["error"]["message"]
        assert "wrong" not in r.text
        r = await secured_gw.post(f"{BASE}/databases/{db}/tables", headers=_basic("alice", "alice-secret"),
                                  json={"table_name": "t", "columns": [{"name": "id", "data_type": {"type": "INT"}}]})
        assert r.status_code == 403, r.text
        assert "User:alice" in r.json()["error"]["message"] and "CREATE" in r.json()["error"]["message"]
        await as_admin.get_admin().create_acls([AclBinding(Resource.database(db), Principal.user("alice"),
                                                           OperationType.ALL)])
        r = await secured_gw.get(f"{BASE}/databases", headers=_basic("alice", "alice-secret"))
        assert r.status_code == 200 and db in r.text, r.text
    finally:
        await as_admin.get_admin().drop_database(db, ignore_if_not_exists=True, cascade=True)
