"""Primary-key tables through Flink SQL (PyFlink, the session's one JVM) against the session's cluster: upserts,
deletes, partial updates, UPDATE/DELETE statements, batch and streaming reads, lookup joins and ``t$changelog``,
each checked against what the Python client sees."""

from __future__ import annotations

import asyncio
import datetime
import threading
import time

import pytest

import fluss

CATALOG = "fluss_catalog"  # created by the session fixtures in conftest.py


def _rows(table_result) -> list[tuple]:
    with table_result.collect() as results:
        return [tuple(r) for r in results]


async def _lookup(conn, path: fluss.TablePath, *keys) -> list[dict | None]:
    table = await conn.get_table(path)
    lookuper = table.new_lookup().create_lookuper()
    try:
        # concurrent lookups: the client batches them into a few Lookup requests
        return list(await asyncio.gather(*(lookuper.lookup(list(k) if isinstance(k, tuple) else [k]) for k in keys)))
    finally:
        await lookuper.aclose()


async def test_upserts_deletes_and_partial_updates_from_flink_sql(batch_env, conn, flink_db):
    t = f"{CATALOG}.{flink_db}.users"
    path = fluss.TablePath(flink_db, "users")
    batch_env.execute_sql(f"""
        CREATE TABLE {t} (id BIGINT NOT NULL, name STRING, city STRING, score INT, PRIMARY KEY (id) NOT ENFORCED)
        WITH ('bucket.num' = '3')
    """).wait()
    batch_env.execute_sql(f"""
        INSERT INTO {t} VALUES (1, 'alice', 'Paris', 10), (2, 'bob', 'Rome', 20), (3, 'carol', 'Oslo', 30)
    """).wait()
    # an upsert replaces the row
    batch_env.execute_sql(f"INSERT INTO {t} VALUES (2, 'bob', 'Berlin', 21)").wait()
    # a partial update writes only the named columns; the others keep their values
    batch_env.execute_sql(f"INSERT INTO {t} (id, score) VALUES (1, 11), (3, 31)").wait()
    got = await _lookup(conn, path, 1, 2, 3, 4)
    assert got == [dict(id=1, name="alice", city="Paris", score=11), dict(id=2, name="bob", city="Berlin", score=21),
                   dict(id=3, name="carol", city="Oslo", score=31), None]

    # batch reads: the current rows (ScanKv), with projection, a filter and COUNT(*)
    assert sorted(_rows(batch_env.execute_sql(f"SELECT id, city FROM {t}"))) == [
        (1, "Paris"), (2, "Berlin"), (3, "Oslo")]
    assert _rows(batch_env.execute_sql(f"SELECT COUNT(*) FROM {t}")) == [(3,)]

    # UPDATE ... WHERE pk = and DELETE ... WHERE pk = (batch mode)
    batch_env.execute_sql(f"UPDATE {t} SET city = 'Lyon', score = 12 WHERE id = 1").wait()
    batch_env.execute_sql(f"DELETE FROM {t} WHERE id = 3").wait()
    assert await _lookup(conn, path, 1, 3) == [dict(id=1, name="alice", city="Lyon", score=12), None]
    assert sorted(_rows(batch_env.execute_sql(f"SELECT * FROM {t}"))) == [
        (1, "alice", "Lyon", 12), (2, "bob", "Berlin", 21)]


async def test_partial_update_must_name_the_primary_key(batch_env, flink_db):
    t = f"{CATALOG}.{flink_db}.p"
    batch_env.execute_sql(f"CREATE TABLE {t} (id INT NOT NULL, v STRING, w STRING, PRIMARY KEY (id) NOT ENFORCED)")\
        .wait()
    with pytest.raises(Exception, match="'id'"):
        batch_env.execute_sql(f"INSERT INTO {t} (v) VALUES ('x')").wait()


async def test_quickstart_flow_with_datagen(batch_env, conn, flink_db):
    """Fluss's Flink quickstart with ``datagen`` in place of faker, in batch mode so it ends by itself: three
    primary-key tables (the orders with ``ptime AS PROCTIME()``, as the quickstart declares them) filled by one
    statement set, an enriched table filled by the quickstart's lookup join on two of them,
    then LIMIT, COUNT(*), a point query, an UPDATE and a DELETE, each checked against the Python client."""
    c = f"{CATALOG}.{flink_db}"
    n_orders, n_customers, n_nations = 300, 40, 25
    batch_env.execute_sql(f"""CREATE TABLE {c}.fluss_order (
        order_key BIGINT NOT NULL, cust_key INT NOT NULL, total_price DECIMAL(15, 2), order_date DATE,
        order_priority STRING, clerk STRING, ptime AS PROCTIME(), PRIMARY KEY (order_key) NOT ENFORCED)
        WITH ('bucket.num' = '3')""").wait()
    batch_env.execute_sql(f"""CREATE TABLE {c}.fluss_customer (
        cust_key INT NOT NULL, name STRING, phone STRING, nation_key INT NOT NULL, acctbal DECIMAL(15, 2),
        mktsegment STRING, PRIMARY KEY (cust_key) NOT ENFORCED) WITH ('bucket.num' = '2')""").wait()
    batch_env.execute_sql(f"""CREATE TABLE {c}.fluss_nation (
        nation_key INT NOT NULL, name STRING, PRIMARY KEY (nation_key) NOT ENFORCED)""").wait()
    batch_env.execute_sql(f"""CREATE TABLE {c}.enriched_orders (
        order_key BIGINT NOT NULL, cust_key INT NOT NULL, total_price DECIMAL(15, 2), order_date DATE,
        order_priority STRING, clerk STRING, cust_name STRING, cust_phone STRING, cust_acctbal DECIMAL(15, 2),
        cust_mktsegment STRING, nation_name STRING, PRIMARY KEY (order_key) NOT ENFORCED)
        WITH ('bucket.num' = '3')""").wait()
    batch_env.execute_sql(f"""CREATE TEMPORARY TABLE source_order (
        order_key BIGINT, cust_key INT, total_price DECIMAL(15, 2), order_date DATE, order_priority STRING,
        clerk STRING) WITH ('connector' = 'datagen', 'number-of-rows' = '{n_orders}',
        'fields.order_key.kind' = 'sequence', 'fields.order_key.start' = '1', 'fields.order_key.end' = '{n_orders}',
        'fields.cust_key.min' = '1', 'fields.cust_key.max' = '{n_customers}', 'fields.order_priority.length' = '6',
        'fields.clerk.length' = '10')""").wait()
    batch_env.execute_sql(f"""CREATE TEMPORARY TABLE source_customer (
        cust_key INT, name STRING, phone STRING, nation_key INT, acctbal DECIMAL(15, 2), mktsegment STRING)
        WITH ('connector' = 'datagen', 'number-of-rows' = '{n_customers}', 'fields.cust_key.kind' = 'sequence',
        'fields.cust_key.start' = '1', 'fields.cust_key.end' = '{n_customers}', 'fields.nation_key.min' = '0',
        'fields.nation_key.max' = '{n_nations - 1}', 'fields.name.length' = '8', 'fields.phone.length' = '12',
        'fields.mktsegment.length' = '8')""").wait()
    batch_env.execute_sql(f"""CREATE TEMPORARY TABLE source_nation (nation_key INT, name STRING)
        WITH ('connector' = 'datagen', 'number-of-rows' = '{n_nations}', 'fields.nation_key.kind' = 'sequence',
        'fields.nation_key.start' = '0', 'fields.nation_key.end' = '{n_nations - 1}', 'fields.name.length' = '6')
        """).wait()
    batch_env.execute_sql(f"""EXECUTE STATEMENT SET BEGIN
        INSERT INTO {c}.fluss_order SELECT * FROM source_order;
        INSERT INTO {c}.fluss_customer SELECT * FROM source_customer;
        INSERT INTO {c}.fluss_nation SELECT * FROM source_nation;
        END""").wait()
    batch_env.execute_sql(f"""INSERT INTO {c}.enriched_orders
        SELECT o.order_key, o.cust_key, o.total_price, o.order_date, o.order_priority, o.clerk,
               cu.name, cu.phone, cu.acctbal, cu.mktsegment, n.name
        FROM {c}.fluss_order o
        LEFT JOIN {c}.fluss_customer FOR SYSTEM_TIME AS OF o.ptime AS cu ON o.cust_key = cu.cust_key
        LEFT JOIN {c}.fluss_nation FOR SYSTEM_TIME AS OF o.ptime AS n ON cu.nation_key = n.nation_key""").wait()

    # what was written, read with the Python client
    orders = await _lookup(conn, fluss.TablePath(flink_db, "fluss_order"), *range(1, n_orders + 1))
    customers = await _lookup(conn, fluss.TablePath(flink_db, "fluss_customer"), *range(1, n_customers + 1))
    nations = await _lookup(conn, fluss.TablePath(flink_db, "fluss_nation"), *range(n_nations))
    assert all(r is not None for r in orders + customers + nations)
    cust = {r["cust_key"]: r for r in customers}
    nation = {r["nation_key"]: r["name"] for r in nations}
    expected = {}
    for o in orders:
        cu = cust[o["cust_key"]]
        expected[o["order_key"]] = dict(o, cust_name=cu["name"], cust_phone=cu["phone"], cust_acctbal=cu["acctbal"],
                                        cust_mktsegment=cu["mktsegment"], nation_name=nation[cu["nation_key"]])
    enriched_path = fluss.TablePath(flink_db, "enriched_orders")
    assert await _lookup(conn, enriched_path, *range(1, n_orders + 1)) == [expected[k] for k in range(1, n_orders + 1)]
    columns = list(expected[1])

    t = f"{c}.enriched_orders"
    limited = _rows(batch_env.execute_sql(f"SELECT * FROM {t} LIMIT 10"))
    assert len(limited) == 10
    assert all(dict(zip(columns, r, strict=True)) == expected[r[0]] for r in limited)
    assert _rows(batch_env.execute_sql(f"SELECT COUNT(*) FROM {t}")) == [(n_orders,)]
    point = _rows(batch_env.execute_sql(f"SELECT * FROM {t} WHERE order_key = 42"))
    assert [dict(zip(columns, r, strict=True)) for r in point] == [expected[42]]
    # the key filter reaches the source, which answers it with one Lookup instead of a scan
    assert "filter=[=(order_key, 42" in batch_env.explain_sql(f"SELECT * FROM {t} WHERE order_key = 42")
    assert _rows(batch_env.execute_sql(f"SELECT clerk FROM {t} WHERE order_key = {n_orders + 1}")) == []

    batch_env.execute_sql(f"UPDATE {t} SET cust_name = 'renamed', clerk = 'nobody' WHERE order_key = 7").wait()
    batch_env.execute_sql(f"DELETE FROM {t} WHERE order_key = 8").wait()
    assert await _lookup(conn, enriched_path, 7, 8, 9) == [
        dict(expected[7], cust_name="renamed", clerk="nobody"), None, expected[9]]
    assert _rows(batch_env.execute_sql(f"SELECT COUNT(*) FROM {t}")) == [(n_orders - 1,)]


async def test_prefix_lookup_join_and_lookup_options(batch_env, conn, admin, flink_db):
    """A lookup join on the bucket key of a table whose primary key is longer (PrefixLookup), sync and with
    Flink's partial cache; a join on the full key of a partitioned table."""
    c = f"{CATALOG}.{flink_db}"
    batch_env.execute_sql(f"""CREATE TABLE {c}.visits (user_id INT NOT NULL, page STRING NOT NULL, n INT,
        PRIMARY KEY (user_id, page) NOT ENFORCED) WITH ('bucket.num' = '3', 'bucket.key' = 'user_id')""").wait()
    batch_env.execute_sql(f"""INSERT INTO {c}.visits VALUES (1, '/a', 1), (1, '/b', 2), (2, '/a', 3),
        (3, '/c', 4)""").wait()
    batch_env.execute_sql(f"""CREATE TABLE {c}.prices (region STRING NOT NULL, item INT NOT NULL, price INT,
        PRIMARY KEY (region, item) NOT ENFORCED) PARTITIONED BY (region) WITH ('bucket.num' = '2')""").wait()
    batch_env.execute_sql(f"INSERT INTO {c}.prices VALUES ('eu', 1, 10), ('us', 1, 12), ('eu', 2, 20)").wait()
    batch_env.execute_sql("""CREATE TEMPORARY VIEW probes AS
        SELECT * FROM (VALUES (1, 'eu', 1), (2, 'us', 1), (4, 'eu', 2), (3, 'us', 9)) AS v(user_id, region, item)
        """).wait()
    for hints in ("'lookup.async' = 'false'",
                  "'lookup.cache' = 'PARTIAL', 'lookup.partial-cache.max-rows' = '100', "
                  "'lookup.partial-cache.expire-after-write' = '1 min'"):
        got = _rows(batch_env.execute_sql(f"""
            SELECT p.user_id, v.page, v.n FROM (SELECT *, PROCTIME() AS pt FROM probes) AS p
            JOIN {c}.visits /*+ OPTIONS({hints}) */ FOR SYSTEM_TIME AS OF p.pt AS v ON p.user_id = v.user_id"""))
        assert sorted(got) == [(1, "/a", 1), (1, "/b", 2), (2, "/a", 3), (3, "/c", 4)]
    got = _rows(batch_env.execute_sql(f"""
        SELECT p.user_id, pr.price FROM (SELECT *, PROCTIME() AS pt FROM probes) AS p
        LEFT JOIN {c}.prices FOR SYSTEM_TIME AS OF p.pt AS pr ON p.region = pr.region AND p.item = pr.item"""))
    assert sorted(got) == [(1, 10), (2, 12), (3, None), (4, 20)]


async def test_streaming_read_of_a_primary_key_table_and_its_changelog(stream_env, conn, admin, flink_db):
    """``full`` mode: the rows written before the job (snapshot), then the changes written while it runs;
    ``t$changelog``: every change with its type, offset and commit time."""
    import pyarrow as pa
    from pyflink.common import RowKind

    path = fluss.TablePath(flink_db, "accounts")
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), ("owner", pa.string()), ("balance", pa.int64())])
    await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(schema, primary_keys=["id"]), bucket_count=2))
    table = await conn.get_table(path)
    writer = table.new_upsert().create_writer()
    for i in range(1, 4):
        writer.upsert(dict(id=i, owner=f"o{i}", balance=100 * i))
    writer.upsert(dict(id=1, owner="o1", balance=150))
    await writer.flush()

    def collect(result, n):
        job = result.get_job_client()
        watchdog = threading.Timer(90, job.cancel)  # never hang the suite: cancelling ends the iterator
        watchdog.start()
        try:
            with result.collect() as it:
                return [next(it) for _ in range(n)]
        finally:
            watchdog.cancel()

    full = stream_env.execute_sql(f"SELECT id, balance FROM {CATALOG}.{flink_db}.accounts")
    job = full.get_job_client()
    watchdog = threading.Timer(90, job.cancel)
    watchdog.start()
    try:
        with full.collect() as it:
            snapshot = [next(it) for _ in range(3)]
            writer.upsert(dict(id=2, owner="o2", balance=250))
            writer.delete(dict(id=3))
            writer.upsert(dict(id=4, owner="o4", balance=400))
            await writer.flush()
            started = time.monotonic()
            changes = [next(it) for _ in range(4)]
            assert time.monotonic() - started < 60
    finally:
        watchdog.cancel()
    assert sorted((r.get_row_kind(), tuple(r)) for r in snapshot) == [
        (RowKind.INSERT, (1, 150)), (RowKind.INSERT, (2, 200)), (RowKind.INSERT, (3, 300))]
    assert sorted(((r.get_row_kind(), tuple(r)) for r in changes), key=lambda x: (x[1][0], x[0].value)) == [
        (RowKind.UPDATE_BEFORE, (2, 200)), (RowKind.UPDATE_AFTER, (2, 250)), (RowKind.DELETE, (3, 300)),
        (RowKind.INSERT, (4, 400))]

    log = collect(stream_env.execute_sql(
        # (PyFlink cannot pickle the TIMESTAMP_LTZ value itself, so it travels as a TIMESTAMP)
        f"SELECT _change_type, _log_offset, CAST(_commit_timestamp AS TIMESTAMP(3)), id, balance "
        f"FROM {CATALOG}.{flink_db}.`accounts$changelog`"), 9)
    by_key = {}
    for r in log:
        assert r.get_row_kind() == RowKind.INSERT
        by_key.setdefault(r[3], []).append((r[0], r[4]))
    assert by_key == {1: [("+I", 100), ("-U", 100), ("+U", 150)], 2: [("+I", 200), ("-U", 200), ("+U", 250)],
                      3: [("+I", 300), ("-D", 300)], 4: [("+I", 400)]}
    # offsets are per bucket; a key's changes are in one bucket, in offset order; commit times are recent
    for key in by_key:
        offsets = [r[1] for r in log if r[3] == key]
        assert offsets == sorted(offsets) and offsets[0] >= 0
    now = datetime.datetime.now()  # the cast gives wall-clock time in the session (= system) time zone
    assert all(abs((now - r[2]).total_seconds()) < 600 for r in log)
