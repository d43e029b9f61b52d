"""The OpenAPI document: committed under docs/, regenerated from the code, and served at /v1/openapi.json."""

from __future__ import annotations

import json

from fluss.gateway import openapi


def test_committed_document_is_current():
    assert openapi.DOCUMENT.exists(), "docs/gateway-openapi.json is missing: run python -m fluss.gateway.openapi"
    assert openapi.DOCUMENT.read_text() == openapi.render(), \
        "docs/gateway-openapi.json is stale: run python -m fluss.gateway.openapi and commit it"


def test_document_covers_the_fip49_paths_and_error_envelope():
    doc = json.loads(openapi.render())
    assert doc["openapi"].startswith("3.1")
    for path in ("/health", "/ready", "/v1/openapi.json", "/v1/clusters", "/v1/clusters/{cluster}/databases",
                 "/v1/clusters/{cluster}/databases/{database}/tables/{table}",
                 "/v1/clusters/{cluster}/databases/{database}/tables/{table}/partitions/{partition}",
                 "/v1/clusters/{cluster}/databases/{database}/tables/{table}/records"):
        assert path in doc["paths"], path
    schemas = doc["components"]["schemas"]
    for name in ("ErrorEnvelope", "WriteBody", "WriteResponse", "CreateTableBody", "ScanBody", "LookupBody"):
        assert name in schemas, name
    records = doc["paths"]["/v1/clusters/{cluster}/databases/{database}/tables/{table}/records"]["post"]
    assert {p["name"] for p in records["parameters"]} >= {"cluster", "database", "table", "Idempotency-Key"}
    assert set(records["requestBody"]["content"]) == {"application/json", "application/vnd.apache.arrow.stream"}


async def test_served_document_is_the_committed_one(gw):
    r = await gw.get("/v1/openapi.json")
    assert r.status_code == 200
    assert r.json() == json.loads(openapi.DOCUMENT.read_text())
