"""Union read through the gateway: a lake-enabled table's lake snapshot plus the Fluss log after it, with a
limit and a projection, as JSON and as Arrow; and the table's lake snapshot resource."""

from __future__ import annotations

import httpx
import pyarrow as pa
from lake_helpers import ACCOUNTS, EVENTS, append, apply_ops, create, events, tier

from fluss import TablePath
from fluss.gateway import GatewayConfig, create_app


async def test_union_read_of_log_and_primary_key_tables(lake_cluster, lake_conn, lake_db):
    app = create_app(GatewayConfig.single(lake_cluster.bootstrap_servers))
    base = f"/v1/clusters/default/databases/{lake_db}/tables"
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://gw") as gw:
        log_path = TablePath(lake_db, "events")
        info = await create(lake_conn, log_path, EVENTS)
        before = await gw.get(f"{base}/events/lake-snapshot")
        assert before.status_code == 404 and before.json()["error"]["code"] == "not_found"
        await append(lake_conn, log_path, events(0, 30))
        await tier(lake_conn, info)
        await append(lake_conn, log_path, events(30, 20))  # the log tail after the snapshot
        snap = (await gw.get(f"{base}/events/lake-snapshot")).json()
        assert sum(o["offset"] for o in snap["offsets"]) == 30
        r = await gw.post(f"{base}/events/union-read", json={"limit": 1000, "columns": ["id", "price"]})
        assert r.status_code == 200, r.text
        doc = r.json()
        assert sorted(row["id"] for row in doc["rows"]) == list(range(50)) and not doc["truncated"]
        assert doc["lake_snapshot_id"] == snap["snapshot_id"] and set(doc["rows"][0]) == {"id", "price"}
        limited = (await gw.post(f"{base}/events/union-read", json={"limit": 7})).json()
        assert limited["row_count"] == 7 and limited["truncated"]
        arrow = await gw.post(f"{base}/events/union-read", json={"limit": 1000},
                              headers={"accept": "application/vnd.apache.arrow.stream"})
        with pa.ipc.open_stream(pa.BufferReader(arrow.content)) as reader:
            assert reader.read_all().num_rows == 50

        kv_path = TablePath(lake_db, "accounts")
        kv_info = await create(lake_conn, kv_path, ACCOUNTS, pk=["id"])
        state: dict[int, dict] = {}
        await apply_ops(lake_conn, kv_path, [("u", {"id": i, "owner": f"o{i}", "balance": i}) for i in range(10)],
                        state)
        await tier(lake_conn, kv_info)
        await apply_ops(lake_conn, kv_path, [("u", {"id": 3, "owner": "new", "balance": 33}), ("d", 4)], state)
        rows = (await gw.post(f"{base}/accounts/union-read", json={})).json()["rows"]
        assert {r["id"]: r for r in rows} == state

        not_lake = await gw.post(f"/v1/clusters/default/databases/{lake_db}/tables",
                                 json={"table_name": "plain", "columns": [{"name": "x", "data_type": "INT"}]})
        assert not_lake.status_code == 201
        r = await gw.post(f"{base}/plain/union-read", json={})
        assert r.status_code == 409 and r.json()["error"]["code"] == "failed_precondition"
