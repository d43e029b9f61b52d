"""Helpers of the gateway tests (paths, table creation)."""

from __future__ import annotations

BASE = "/v1/clusters/default"


def table_url(db: str, table: str, suffix: str = "") -> str:
    return f"{BASE}/databases/{db}/tables/{table}{suffix}"


async def create_table(gw, db: str, body: dict) -> dict:
    r = await gw.post(f"{BASE}/databases/{db}/tables", json=body)
    assert r.status_code == 201, r.text
    return r.json()
