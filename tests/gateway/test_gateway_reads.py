"""Reads through the gateway: lookups (one and many keys), prefix lookups, bounded scans paged by the returned
next offsets, projection, and Arrow responses."""

from __future__ import annotations

import pyarrow as pa
from gateway_helpers import create_table, table_url

ARROW = "application/vnd.apache.arrow.stream"

ORDERS = {"table_name": "orders", "columns": [
    {"name": "shop", "data_type": {"type": "STRING"}}, {"name": "id", "data_type": {"type": "BIGINT"}},
    {"name": "amount", "data_type": {"type": "DECIMAL", "precision": 10, "scale": 2}},
    {"name": "at", "data_type": {"type": "TIMESTAMP_WITH_LOCAL_TIME_ZONE", "precision": 3}}],
    "primary_key": ["shop", "id"], "distribution": {"bucket_count": 3, "bucket_keys": ["shop"]}}


def read_arrow(body: bytes) -> pa.Table:
    with pa.ipc.open_stream(pa.BufferReader(body)) as r:
        return r.read_all()


async def _fill_orders(gw, db):
    await create_table(gw, db, ORDERS)
    entries = [{"upsert": {"shop": f"s{i % 4}", "id": i, "amount": f"{i}.50", "at": 1_700_000_000_000 + i}}
               for i in range(40)]
    r = await gw.post(table_url(db, "orders", "/records"), json={"entries": entries})
    assert r.status_code == 200, r.text


async def test_lookup_one_and_many_keys_with_projection(gw, gw_db):
    await _fill_orders(gw, gw_db)
    r = await gw.post(table_url(gw_db, "orders", "/lookup"), json={"keys": [{"shop": "s1", "id": 1}]})
    assert r.status_code == 200, r.text
    assert r.json() == {"rows": [{"shop": "s1", "id": 1, "amount": "1.50", "at": "2023-11-14T22:13:20.001Z"}],
                        "found": 1}
    keys = [{"shop": "s2", "id": 2}, {"shop": "s0", "id": 999}, {"shop": "s3", "id": "3"}]
    r = await gw.post(table_url(gw_db, "orders", "/lookup"), json={"keys": keys, "columns": ["id", "amount"]})
    assert r.json() == {"rows": [{"id": 2, "amount": "2.50"}, None, {"id": 3, "amount": "3.50"}], "found": 2}
    bad = await gw.post(table_url(gw_db, "orders", "/lookup"), json={"keys": [{"shop": "s1"}]})
    assert bad.status_code == 400 and bad.json()["error"]["details"][0]["column"] == "id"
    arrow = await gw.post(table_url(gw_db, "orders", "/lookup"), json={"keys": keys}, headers={"accept": ARROW})
    assert arrow.headers["content-type"] == ARROW
    table = read_arrow(arrow.content)
    assert table.column("id").to_pylist() == [2, 3]


async def test_prefix_lookup(gw, gw_db):
    await _fill_orders(gw, gw_db)
    r = await gw.post(table_url(gw_db, "orders", "/prefix-lookup"),
                      json={"prefixes": [{"shop": "s1"}, {"shop": "nope"}], "columns": ["id"]})
    assert r.status_code == 200, r.text
    doc = r.json()
    assert sorted(row["id"] for row in doc["results"][0]) == list(range(1, 40, 4))
    assert doc["results"][1] == [] and doc["row_count"] == 10
    r = await gw.post(table_url(gw_db, "orders", "/prefix-lookup"), json={"prefixes": [{"id": 1}]})
    assert r.status_code == 400


async def test_scan_pages_by_next_offsets(gw, gw_db):
    body = {"table_name": "log", "columns": [{"name": "v", "data_type": {"type": "INTEGER"}},
                                              {"name": "s", "data_type": {"type": "STRING"}}],
            "distribution": {"bucket_count": 2, "bucket_keys": ["v"]}}
    await create_table(gw, gw_db, body)
    r = await gw.post(table_url(gw_db, "log", "/records"),
                      json={"entries": [{"append": {"v": i, "s": f"x{i}"}} for i in range(100)]})
    assert r.status_code == 200
    seen, buckets, pages = [], None, 0
    while True:
        req = {"limit": 30, "columns": ["v"], **({"buckets": buckets} if buckets else {})}
        page = (await gw.post(table_url(gw_db, "log", "/scan"), json=req)).json()
        pages += 1
        assert page["row_count"] == len(page["records"]) <= 30
        seen += [rec["row"]["v"] for rec in page["records"]]
        assert all(rec["change_type"] == "+A" and set(rec["row"]) == {"v"} for rec in page["records"])
        buckets = [{"bucket": o["bucket"], "offset": o["offset"]} for o in page["next_offsets"]]
        if page["complete"]:
            break
        assert pages < 10
    assert sorted(seen) == list(range(100)) and pages == 4
    end = {o["bucket"]: o["offset"] for o in page["end_offsets"]}
    assert sum(end.values()) == 100
    beyond = await gw.post(table_url(gw_db, "log", "/scan"), json={"buckets": [{"bucket": 0, "offset": 10_000}]})
    assert beyond.status_code == 416 and beyond.json()["error"]["code"] == "offset_out_of_range"
    latest = (await gw.post(table_url(gw_db, "log", "/scan"), json={"start": "latest"})).json()
    assert latest["records"] == [] and latest["complete"]
    arrow = await gw.post(table_url(gw_db, "log", "/scan"), json={"limit": 1000}, headers={"accept": ARROW})
    table = read_arrow(arrow.content)
    assert sorted(table.column("v").to_pylist()) == list(range(100))
    assert table.schema.names[:5] == ["_partition", "_bucket", "_offset", "_change_type", "_timestamp"]
    assert b"next_offsets" in table.schema.metadata[b"fluss.response"]


async def test_scan_from_timestamp_and_changelog_of_pk_table(gw, gw_db):
    await _fill_orders(gw, gw_db)
    r = await gw.post(table_url(gw_db, "orders", "/records"),
                      json={"entries": [{"upsert": {"shop": "s1", "id": 1, "amount": "9.99"}}]})
    assert r.status_code == 200
    doc = (await gw.post(table_url(gw_db, "orders", "/scan"), json={"timestamp": 0, "limit": 1000})).json()
    kinds = [rec["change_type"] for rec in doc["records"] if rec["row"]["id"] == 1]
    assert kinds == ["+I", "-U", "+U"] and doc["complete"]
