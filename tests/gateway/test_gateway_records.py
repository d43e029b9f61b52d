"""Writes through the gateway: JSON entries and Arrow streams, schema errors naming row/column/reason, partial
updates and deletes, acknowledgement, and Idempotency-Key retries that write once."""

from __future__ import annotations

import asyncio

import pyarrow as pa
from gateway_helpers import create_table, table_url

import fluss

ARROW = "application/vnd.apache.arrow.stream"

LOG = {"table_name": "clicks", "columns": [
    {"name": "user", "data_type": {"type": "STRING"}, "nullable": False},
    {"name": "n", "data_type": {"type": "BIGINT"}},
    {"name": "price", "data_type": {"type": "DECIMAL", "precision": 8, "scale": 2}},
    {"name": "at", "data_type": {"type": "TIMESTAMP_WITHOUT_TIME_ZONE", "precision": 3}},
    {"name": "day", "data_type": {"type": "DATE"}},
    {"name": "blob", "data_type": {"type": "BYTES"}}], "distribution": {"bucket_count": 2}}
KV = {"table_name": "accounts", "columns": [
    {"name": "id", "data_type": {"type": "INTEGER"}},
    {"name": "name", "data_type": {"type": "STRING"}},
    {"name": "balance", "data_type": {"type": "BIGINT"}}], "primary_key": ["id"], "distribution": {"bucket_count": 3}}


def arrow_body(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


async def read_all(conn, db: str, table: str) -> list[dict]:
    t = await conn.get_table(fluss.TablePath(db, table))
    scan = t.new_scan()
    # a primary-key table's changelog as Arrow (the official record-batch scanner refuses primary-key tables)
    scanner = scan.create_changelog_batch_scanner() if t.get_table_info().has_primary_key() \
        else await scan.create_record_batch_log_scanner()
    for b in range(t.get_table_info().num_buckets):
        scanner.subscribe(b, fluss.EARLIEST_OFFSET)
    return (await scanner.to_arrow()).to_pylist()


async def test_json_append_is_acknowledged_and_readable(gw, gw_db, conn):
    await create_table(gw, gw_db, LOG)
    entries = [{"id": f"e{i}", "append": {"user": f"u{i}", "n": str(2**62 + i), "price": "12.30",
                                          "at": "2026-01-31T12:34:56.789", "day": "2026-01-31", "blob": "AAE="}}
               for i in range(50)]
    r = await gw.post(table_url(gw_db, "clicks", "/records"), json={"entries": entries})
    assert r.status_code == 200, r.text
    doc = r.json()
    assert (doc["row_count"], doc["success_count"], doc["error_count"], doc["acks"]) == (50, 50, 0, "all")
    assert [s["id"] for s in doc["successes"]] == [f"e{i}" for i in range(50)]
    rows = await read_all(conn, gw_db, "clicks")  # answered only after acks=all: readable now
    assert sorted(r["n"] for r in rows) == [2**62 + i for i in range(50)]
    import decimal
    assert rows[0]["price"] == decimal.Decimal("12.30") and rows[0]["blob"] == b"\x00\x01"


async def test_bad_rows_are_rejected_whole_naming_row_column_reason(gw, gw_db, conn):
    await create_table(gw, gw_db, LOG)
    entries = [{"append": {"user": "ok", "n": 1}},
               {"append": {"user": "bad", "n": "x1"}},
               {"append": {"user": "bad2", "price": "1.234"}},
               {"append": {"n": 3}},
               {"append": {"user": "z", "at": "2026-01-31T12:00:00Z"}},
               {"append": {"user": "z", "nope": 1}}]
    r = await gw.post(table_url(gw_db, "clicks", "/records"), json={"entries": entries})
    assert r.status_code == 400
    err = r.json()["error"]
    assert err["code"] == "invalid_argument"
    details = {(d["row"], d["column"]) for d in err["details"]}
    assert details == {(1, "n"), (2, "price"), (3, "user"), (4, "at"), (5, "nope")}
    reasons = {d["row"]: d["reason"] for d in err["details"]}
    assert "BIGINT" in reasons[1] and "fractional digits" in reasons[2] and "missing" in reasons[3]
    assert "zone" in reasons[4]
    assert await read_all(conn, gw_db, "clicks") == []  # nothing of the request was written


async def test_structural_errors(gw, gw_db):
    await create_table(gw, gw_db, KV)
    url = table_url(gw_db, "accounts", "/records")
    cases = [({"entries": []}, "entries"), ({"rows": []}, "unknown field"),
             ({"entries": [{"append": {"id": 1}}]}, "primary-key table"),
             ({"entries": [{"upsert": {"id": 1}, "delete": {"id": 1}}]}, "exactly one"),
             ({"entries": [{"upsert": {"id": 1}}], "partial_update_columns": ["name"]}, "primary-key column 'id'")]
    for body, text in cases:
        r = await gw.post(url, json=body)
        assert r.status_code == 400 and text in r.json()["error"]["message"], (body, r.text)


async def test_upsert_partial_update_and_delete_in_order(gw, gw_db, conn):
    await create_table(gw, gw_db, KV)
    url = table_url(gw_db, "accounts", "/records")
    r = await gw.post(url, json={"entries": [
        {"upsert": {"id": 1, "name": "a", "balance": 10}}, {"upsert": {"id": 2, "name": "b", "balance": 20}},
        {"delete": {"id": 2}}, {"upsert": {"id": 2, "name": "b2", "balance": 21}},
        {"upsert": {"id": 3, "name": "c", "balance": 30}}, {"delete": {"id": 3, "name": "ignored"}}]})
    assert r.status_code == 200 and r.json()["success_count"] == 6, r.text
    r = await gw.post(url, json={"partial_update_columns": ["id", "balance"],
                                 "entries": [{"upsert": {"id": 1, "balance": 99}}]})
    assert r.status_code == 200, r.text
    lookuper = (await conn.get_table(fluss.TablePath(gw_db, "accounts"))).new_lookup().create_lookuper()
    assert await lookuper.lookup({"id": 1}) == {"id": 1, "name": "a", "balance": 99}
    assert await lookuper.lookup({"id": 2}) == {"id": 2, "name": "b2", "balance": 21}
    assert await lookuper.lookup({"id": 3}) is None


async def test_arrow_append_and_upsert(gw, gw_db, conn):
    await create_table(gw, gw_db, KV)
    data = pa.table({"id": pa.array(range(1000), pa.int32()), "name": [f"n{i}" for i in range(1000)],
                     "balance": pa.array(range(1000), pa.int64())})
    r = await gw.post(table_url(gw_db, "accounts", "/records"), content=arrow_body(data),
                      headers={"content-type": ARROW})
    assert r.status_code == 200 and r.json()["row_count"] == 1000 and r.json()["operation"] == "upsert", r.text
    keys = pa.table({"id": pa.array(range(500), pa.int32())})
    r = await gw.post(table_url(gw_db, "accounts", "/records"), params={"operation": "delete"},
                      content=arrow_body(keys), headers={"content-type": ARROW})
    assert r.status_code == 200, r.text
    stats = (await gw.get(table_url(gw_db, "accounts", "/stats"))).json()
    assert stats == {"row_count": 500}
    wrong = pa.table({"id": pa.array([1], pa.int32()), "name": pa.array([1.5])})
    r = await gw.post(table_url(gw_db, "accounts", "/records"), params={"partial_update_columns": "id,name"},
                      content=arrow_body(wrong), headers={"content-type": ARROW})
    assert r.status_code == 400 and "name" in r.json()["error"]["message"]
    r = await gw.post(table_url(gw_db, "accounts", "/records"), content=b"not arrow",
                      headers={"content-type": ARROW})
    assert r.status_code == 400 and "Arrow" in r.json()["error"]["message"]


async def test_body_limit(gw, gw_db, gateway_app):
    await create_table(gw, gw_db, KV)
    limit = gateway_app.state.registry.config.max_body_bytes
    r = await gw.post(table_url(gw_db, "accounts", "/records"), content=b"x" * (limit + 1),
                      headers={"content-type": "application/json"})
    assert r.status_code == 413 and r.json()["error"]["code"] == "limit_exceeded"


async def test_idempotency_key_retries_write_once(gw, gw_db, conn):
    await create_table(gw, gw_db, LOG)
    url = table_url(gw_db, "clicks", "/records")
    body = {"entries": [{"append": {"user": f"u{i}", "n": i}} for i in range(20)]}
    first = await gw.post(url, json=body, headers={"idempotency-key": "req-1"})
    assert first.status_code == 200 and first.json()["replayed"] is False, first.text
    again = await gw.post(url, json=body, headers={"idempotency-key": "req-1"})
    assert again.status_code == 200 and again.json()["replayed"] is True
    assert again.json()["successes"] == first.json()["successes"]
    assert len(await read_all(conn, gw_db, "clicks")) == 20
    other = await gw.post(url, json={"entries": [{"append": {"user": "x"}}]}, headers={"idempotency-key": "req-1"})
    assert other.status_code == 409 and other.json()["error"]["code"] == "failed_precondition"


async def test_interrupted_idempotent_write_is_completed_once(gw, gw_db, conn, gateway_app):
    """An attempt that died after sending its batches but before recording the outcome: the retry sends the
    same batches under the claimed writer id, and the leaders answer them as duplicates."""
    from fluss.gateway import exactly_once

    await create_table(gw, gw_db, {**KV, "table_name": "acc2"})
    await create_table(gw, gw_db, LOG)
    for table, entries in (("acc2", [{"upsert": {"id": i, "name": "x", "balance": i}} for i in range(30)]),
                           ("clicks", [{"append": {"user": f"u{i}", "n": i}} for i in range(30)])):
        url = table_url(gw_db, table, "/records")
        real = exactly_once.Ledger.record_outcome

        async def die(*args, **kwargs):
            raise asyncio.CancelledError("gateway killed before recording the outcome")

        exactly_once.Ledger.record_outcome = die
        try:
            try:
                await gw.post(url, json={"entries": entries}, headers={"idempotency-key": f"k-{table}"})
            except asyncio.CancelledError:
                pass
        finally:
            exactly_once.Ledger.record_outcome = real
        retry = await gw.post(url, json={"entries": entries}, headers={"idempotency-key": f"k-{table}"})
        assert retry.status_code == 200 and retry.json()["replayed"] is False, retry.text
        rows = await read_all(conn, gw_db, table)
        assert len(rows) == 30, f"{table}: {len(rows)} changelog records, expected each row once"
