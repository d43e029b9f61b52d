"""Metadata and DDL through the gateway: FIP-49 paths, shapes, paging and the error envelope."""

from __future__ import annotations

import uuid

from gateway_helpers import BASE, create_table, table_url

ORDERS = {
    "table_name": "orders",
    "columns": [
        {"name": "id", "data_type": {"type": "BIGINT"}},
        {"name": "customer", "data_type": {"type": "STRING"}},
        {"name": "amount", "data_type": {"type": "DECIMAL", "precision": 10, "scale": 2}},
        {"name": "ts", "data_type": "TIMESTAMP_LTZ(3)"},
    ],
    "primary_key": ["id"],
    "distribution": {"bucket_count": 3},
    "configs": {"table.log.arrow.compression.type": "NONE"},
    "comment": "orders table",
}


async def test_health_ready_clusters_and_request_id(gw):
    r = await gw.get("/health")
    assert r.status_code == 200 and r.json()["status"] == "ok" and r.json()["uptime_ms"] >= 0
    assert (await gw.get("/ready")).json() == {"status": "ready"}
    r = await gw.get("/v1/clusters", headers={"x-request-id": "abc-123"})
    assert r.json() == {"clusters": ["default"]}
    assert r.headers["x-request-id"] == "abc-123"
    generated = (await gw.get("/v1/clusters")).headers["x-request-id"]
    assert uuid.UUID(generated)


async def test_create_describe_list_and_drop_table(gw, gw_db):
    created = await create_table(gw, gw_db, ORDERS)
    assert created["primary_key"] == ["id"]
    assert created["distribution"] == {"bucket_count": 3, "bucket_keys": ["id"]}
    r = await gw.get(table_url(gw_db, "orders"))
    assert r.status_code == 200
    table = r.json()
    assert [(c["name"], c["type"], c["nullable"]) for c in table["columns"]] == [
        ("id", "BIGINT NOT NULL", False), ("customer", "STRING", True), ("amount", "DECIMAL(10, 2)", True),
        ("ts", "TIMESTAMP_LTZ(3)", True)]
    assert table["columns"][2]["data_type"] == {"type": "DECIMAL", "precision": 10, "scale": 2}
    assert table["columns"][3]["data_type"] == {"type": "TIMESTAMP_WITH_LOCAL_TIME_ZONE", "precision": 3}
    assert table["configs"]["table.log.arrow.compression.type"] == "NONE"
    assert table["comment"] == "orders table"
    listed = (await gw.get(f"{BASE}/databases/{gw_db}/tables")).json()
    assert listed == {"tables": ["orders"]}
    again = await gw.post(f"{BASE}/databases/{gw_db}/tables", json=ORDERS)
    assert again.status_code == 409 and again.json()["error"]["code"] == "table_already_exists"
    assert (await gw.delete(table_url(gw_db, "orders"))).status_code == 204
    missing = await gw.get(table_url(gw_db, "orders"))
    assert missing.status_code == 404
    err = missing.json()["error"]
    assert err["code"] == "table_not_found" and err["request_id"] == missing.headers["x-request-id"]


async def test_validate_only_creates_nothing(gw, gw_db):
    r = await gw.post(f"{BASE}/databases/{gw_db}/tables", json={**ORDERS, "validate_only": True})
    assert r.status_code == 200 and r.json()["validate_only"] is True and r.json()["column_count"] == 4
    assert (await gw.get(table_url(gw_db, "orders"))).status_code == 404


async def test_bad_definitions_are_400_naming_the_problem(gw, gw_db):
    bad_pk = {**ORDERS, "primary_key": ["nope"]}
    r = await gw.post(f"{BASE}/databases/{gw_db}/tables", json=bad_pk)
    assert r.status_code == 400 and "nope" in r.json()["error"]["message"]
    bad_type = {**ORDERS, "columns": [{"name": "id", "data_type": {"type": "DECIMAL", "precision": 50}}]}
    r = await gw.post(f"{BASE}/databases/{gw_db}/tables", json=bad_type)
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_argument"
    r = await gw.post(f"{BASE}/databases/{gw_db}/tables", content=b"{not json", headers={"content-type":
                                                                                         "application/json"})
    assert r.status_code == 400 and "not valid JSON" in r.json()["error"]["message"]
    r = await gw.post(f"{BASE}/databases/{gw_db}/tables", content=b"x", headers={"content-type": "text/plain"})
    assert r.status_code == 415 and r.json()["error"]["code"] == "unsupported_media_type"


async def test_database_paging_and_not_empty(gw, gw_db):
    names = [f"{gw_db}_p{i}" for i in range(5)]
    for n in names:
        assert (await gw.post(f"{BASE}/databases", json={"database": n})).status_code == 201
    try:
        seen, token = [], None
        while True:
            params = {"max_results": 2, **({"page_token": token} if token else {})}
            page = (await gw.get(f"{BASE}/databases", params=params)).json()
            assert len(page["databases"]) <= 2
            seen += page["databases"]
            token = page.get("next_page_token")
            if token is None:
                break
        assert seen == sorted(seen) and set(names) <= set(seen)
        bad = await gw.get(f"{BASE}/databases", params={"page_token": "garbage!"})
        assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_argument"
        await create_table(gw, names[0], ORDERS)
        r = await gw.delete(f"{BASE}/databases/{names[0]}")
        assert r.status_code == 409 and r.json()["error"]["code"] == "database_not_empty"
    finally:
        for n in names:
            await gw.delete(f"{BASE}/databases/{n}", params={"cascade": "true"})


async def test_partitions_offsets_stats(gw, gw_db):
    body = {"table_name": "events", "columns": [{"name": "region", "data_type": {"type": "STRING"}},
                                                 {"name": "v", "data_type": {"type": "INTEGER"}}],
            "partitioned_by": ["region"], "distribution": {"bucket_count": 2}}
    await create_table(gw, gw_db, body)
    r = await gw.post(table_url(gw_db, "events", "/partitions"), json={"partition": {"region": "eu"}})
    assert r.status_code == 201 and r.headers["location"].endswith("/partitions/eu")
    await gw.post(table_url(gw_db, "events", "/partitions"), json={"partition": {"region": "us"}})
    parts = (await gw.get(table_url(gw_db, "events", "/partitions"))).json()["partitions"]
    assert [(p["name"], p["partition"]) for p in parts] == [("eu", {"region": "eu"}), ("us", {"region": "us"})]
    dup = await gw.post(table_url(gw_db, "events", "/partitions"), json={"partition": {"region": "eu"}})
    assert dup.status_code == 409 and dup.json()["error"]["code"] == "partition_already_exists"
    offsets = (await gw.get(table_url(gw_db, "events", "/offsets"), params={"spec": "earliest"})).json()
    assert sorted((o["partition"], o["bucket"], o["offset"]) for o in offsets["offsets"]) == [
        ("eu", 0, 0), ("eu", 1, 0), ("us", 0, 0), ("us", 1, 0)]
    assert (await gw.get(table_url(gw_db, "events", "/stats"))).json() == {"row_count": 0}
    assert (await gw.delete(table_url(gw_db, "events", "/partitions/us"))).status_code == 204
    gone = await gw.delete(table_url(gw_db, "events", "/partitions/us"))
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "partition_not_found"


async def test_unknown_cluster_route_and_method(gw):
    r = await gw.get("/v1/clusters/nope/databases")
    assert r.status_code == 404 and r.json()["error"]["code"] == "cluster_not_found"
    r = await gw.get("/v1/nothing")
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
    r = await gw.put("/v1/clusters")
    assert r.status_code == 405 and r.json()["error"]["code"] == "method_not_allowed"


async def test_credentials_are_passed_to_the_cluster_not_faked(gw):
    # the shared cluster has no SASL listener: Basic credentials are the cluster's to refuse, never ignored
    r = await gw.get(f"{BASE}/databases", headers={"authorization": "Basic dXNlcjpwYXNz"})
    assert r.status_code == 401
    assert r.json()["error"]["code"] == "unauthenticated" and "is PLAINTEXT" in r.json()["error"]["message"]
    r = await gw.get(f"{BASE}/databases", headers={"authorization": "Bearer abc"})
    assert r.status_code == 401 and "not supported" in r.json()["error"]["message"]


async def test_alter_table_sets_resets_options_and_adds_columns(gw, gw_db):
    """PATCH of a table (FIP-49's alterTable): config changes and an added column, each visible in the next GET;
    bad changes are 400 naming the problem and change nothing."""
    await create_table(gw, gw_db, {**ORDERS, "table_name": "altered"})
    url = table_url(gw_db, "altered")
    r = await gw.patch(url, json={"changes": [
        {"kind": "set_config", "key": "table.log.ttl", "value": "2d"},
        {"kind": "set_config", "key": "table.datalake.freshness", "value": "1min"},
        {"kind": "set_config", "key": "owner", "value": "team-a"}]})
    assert r.status_code == 204, r.text
    table = (await gw.get(url)).json()
    assert table["configs"]["table.log.ttl"] == "2d" and table["configs"]["table.datalake.freshness"] == "1min"
    assert table["custom_properties"]["owner"] == "team-a"
    schema_id = table["schema_id"]

    r = await gw.patch(url, json={"changes": [
        {"kind": "add_column", "name": "note", "data_type": {"type": "STRING"}, "comment": "free text"},
        {"kind": "add_column", "name": "tags", "data_type": "ARRAY<STRING>"},
        {"kind": "reset_config", "key": "table.datalake.freshness"}]})
    assert r.status_code == 204, r.text
    table = (await gw.get(url)).json()
    assert "table.datalake.freshness" not in table["configs"]
    assert [c["name"] for c in table["columns"]][-2:] == ["note", "tags"]
    assert table["columns"][-2]["comment"] == "free text" and table["columns"][-2]["nullable"]
    assert table["schema_id"] == schema_id + 1

    for changes, words in (
            ([{"kind": "set_config", "key": "table.replication.factor", "value": "2"}], "table.replication.factor"),
            ([{"kind": "reset_config", "key": "table.log.arrow.compression.type"}], "cannot be changed"),
            ([{"kind": "add_column", "name": "n", "data_type": "INT NOT NULL"}], "n"),
            ([{"kind": "add_column", "name": "id", "data_type": "INT"}], "id"),
            ([{"kind": "drop_column", "name": "note"}], "drop_column"),
            ([], "changes")):
        r = await gw.patch(url, json={"changes": changes})
        assert r.status_code == 400, (changes, r.text)
        assert r.json()["error"]["code"] == "invalid_argument" and words in r.json()["error"]["message"], r.text
    assert (await gw.get(url)).json()["schema_id"] == schema_id + 1
    r = await gw.patch(table_url(gw_db, "missing"), json={"changes": [{"kind": "reset_config", "key": "owner"}]})
    assert r.status_code == 404 and r.json()["error"]["code"] == "table_not_found"
