"""Union Read in Flink: lake-enabled tables read by Flink SQL as their lake snapshot (Paimon, read with Paimon's
Java reader) plus the Fluss log after it, and ``t$lake``.

A cluster with a Paimon warehouse of its own (``flink_lake_cluster`` in conftest.py); rows are written with the
Python client and tiered with the tiering core (``fluss.lake.tiering.tier_table``, what the PyFlink tiering job
runs), then read by the session's PyFlink environments through the catalog ``fluss_lake``.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import decimal
import threading
import time

import pyarrow as pa
import pytest
from lake_helpers import ACCOUNTS, append, create
from lake_helpers import tier as lake_tier

from fluss import OffsetSpec, TableBucket, TableChange, TablePath
from fluss.lake.union_read import read_lake

pytestmark = pytest.mark.asyncio(loop_scope="session")

EVENTS = pa.schema([
    pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("price", pa.decimal128(10, 2)),
    ("day", pa.date32()), ("at", pa.timestamp("us")), ("tag", pa.binary()),
])
VIEWS = pa.schema([pa.field("id", pa.int64(), nullable=False), ("url", pa.string()), ("day", pa.string())])
STREAM_TIMEOUT_S = 120


def visits(ids: range, day: str) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({"id": list(ids), "url": [f"/u/{i}" for i in ids], "day": [day] * len(ids)},
                                      schema=VIEWS)


def events(start: int, n: int) -> pa.RecordBatch:
    ids = list(range(start, start + n))
    return pa.RecordBatch.from_pydict({
        "id": ids, "name": [f"e{i}" for i in ids], "price": [decimal.Decimal(i) / 100 for i in ids],
        "day": [dt.date(2026, 1, 1 + i % 28) for i in ids],
        "at": [dt.datetime(2026, 1, 1, 0, 0, 0, 7) + dt.timedelta(seconds=i) for i in ids],
        "tag": [b"t%d" % i for i in ids],
    }, schema=EVENTS)


def event_tuple(i: int) -> tuple:
    """A row of :func:`events` as PyFlink's ``collect()`` returns it (timestamps without microseconds)."""
    return (i, f"e{i}", decimal.Decimal(i) / 100, dt.date(2026, 1, 1 + i % 28),
            dt.datetime(2026, 1, 1) + dt.timedelta(seconds=i), b"t%d" % i)


async def apply_ops(conn, path: TablePath, ops: list[tuple], state: dict[int, tuple]) -> None:
    """Upserts (``("u", id, owner, balance)``) and deletes (``("d", id)``), mirrored into ``state``."""
    writer = (await conn.get_table(path)).new_upsert().create_writer()
    for op in ops:
        if op[0] == "u":
            writer.upsert({"id": op[1], "owner": op[2], "balance": op[3]})
            state[op[1]] = (op[1], op[2], op[3])
        else:
            writer.delete({"id": op[1]})
            state.pop(op[1], None)
    await writer.flush()


async def tier(conn, info):
    """One tiering round of the table, reported to the coordinator; it must commit a lake snapshot."""
    result = await lake_tier(conn, info)
    assert result.snapshot_id is not None, result
    return result


def rows(t_env, sql: str) -> list[tuple]:
    with t_env.execute_sql(sql).collect() as results:
        return [tuple(bytes(v) if isinstance(v, bytearray) else v for v in r) for r in results]


def stream_rows(t_env, sql: str):
    """A streaming query's iterator of Rows, with a watchdog that cancels the job (ending the iterator)."""
    result = t_env.execute_sql(sql)
    job = result.get_job_client()
    watchdog = threading.Timer(STREAM_TIMEOUT_S, job.cancel)
    watchdog.start()
    return result, job, watchdog


async def wait_until_log_starts_after(conn, path: TablePath, bucket: int, timeout_s: float = 30) -> int:
    admin = conn.get_admin()
    deadline = time.monotonic() + timeout_s
    while (start := (await admin.list_offsets(path, [bucket], OffsetSpec.earliest()))[bucket]) == 0:
        assert time.monotonic() < deadline, "retention never deleted the expired segments"
        await asyncio.sleep(0.3)
    return start


# ---------------------------------------------------------------- log tables


async def test_batch_read_of_a_log_table_is_the_lake_snapshot_plus_the_log_after_it(
        batch_env, lake_catalog, flink_lake_conn, flink_lake_db):
    path = TablePath(flink_lake_db, "events")
    info = await create(flink_lake_conn, path, EVENTS, **{"bucket.key": "id"})  # rows in every bucket
    t = f"{lake_catalog}.{flink_lake_db}.events"
    assert sorted(rows(batch_env, f"SELECT * FROM {t}")) == []  # nothing written, nothing tiered
    await append(flink_lake_conn, path, events(0, 60), events(60, 40))
    assert sorted(rows(batch_env, f"SELECT id FROM {t}")) == [(i,) for i in range(100)]  # no lake snapshot yet

    await tier(flink_lake_conn, info)
    await append(flink_lake_conn, path, events(100, 50))

    assert sorted(rows(batch_env, f"SELECT * FROM {t}")) == [event_tuple(i) for i in range(150)]
    # microseconds survive the lake (PyFlink's collect() drops them, a string does not)
    assert sorted(rows(batch_env, f"SELECT id, CAST(`at` AS STRING) FROM {t} WHERE id IN (1, 120)")) == \
        [(1, "2026-01-01 00:00:01.000007"), (120, "2026-01-01 00:02:00.000007")]
    assert sorted(rows(batch_env, f"SELECT name, id FROM {t} WHERE id % 10 = 3")) == \
        sorted((f"e{i}", i) for i in range(3, 150, 10))
    assert rows(batch_env, f"SELECT COUNT(*) FROM {t}") == [(150,)]
    lake = f"`{lake_catalog}`.`{flink_lake_db}`.`events$lake`"
    assert sorted(rows(batch_env, f"SELECT id, name, price, `day`, `at`, tag FROM {lake}")) == \
        [event_tuple(i) for i in range(100)]
    # t$lake also has the lake table's system columns: each row's Fluss bucket, log offset and commit time
    system = rows(batch_env, f"SELECT id, __bucket, __offset, __timestamp IS NOT NULL FROM {lake}")
    expected = (await read_lake(flink_lake_conn, path, system_columns=True)).to_pylist()
    assert sorted(system) == sorted((r["id"], r["__bucket"], r["__offset"], True) for r in expected)
    for b in range(3):  # every offset of every bucket once
        offsets = sorted(o for _, bucket, o, _ in system if bucket == b)
        assert offsets == list(range(len(offsets)))
    assert rows(batch_env, f"SELECT COUNT(*) FROM `{lake_catalog}`.`{flink_lake_db}`.`events$lake`") == [(100,)]
    # other startup modes are plain log reads
    latest = rows(batch_env, f"SELECT COUNT(*) FROM {t} /*+ OPTIONS('scan.startup.mode'='latest') */")
    assert latest == [(0,)]

    # ALTER TABLE ADD: lake rows (Paimon files of the older schema) and older log batches read the column as null
    await flink_lake_conn.get_admin().alter_table(path, [TableChange.add_column("region", pa.string())])
    writer = (await flink_lake_conn.get_table(path)).new_append().create_writer()
    writer.append({**events(150, 1).to_pylist()[0], "region": "EU"})
    await writer.flush()
    assert sorted(rows(batch_env, f"SELECT id, region FROM {t} WHERE id >= 98")) == \
        [(i, None) for i in range(98, 150)] + [(150, "EU")]
    assert sorted(rows(batch_env, f"SELECT id, region FROM {lake} WHERE id < 2")) == [(0, None), (1, None)]


async def test_rows_expired_from_the_log_after_tiering_are_read_from_the_lake(
        batch_env, lake_catalog, flink_lake_conn, flink_lake_db):
    path = TablePath(flink_lake_db, "expiring")
    info = await create(flink_lake_conn, path, EVENTS, buckets=1, **{"table.log.ttl": "1s"})
    for start in range(0, 600, 60):
        await append(flink_lake_conn, path, events(start, 60))
    await tier(flink_lake_conn, info)
    await asyncio.sleep(1.2)
    await append(flink_lake_conn, path, events(600, 60))  # rolls a new segment so the old ones can expire
    log_start = await wait_until_log_starts_after(flink_lake_conn, path, 0)
    assert 0 < log_start <= 600

    t = f"{lake_catalog}.{flink_lake_db}.expiring"
    assert sorted(rows(batch_env, f"SELECT id FROM {t}")) == [(i,) for i in range(660)]
    assert rows(batch_env, f"SELECT COUNT(*) FROM {t}") == [(660,)]
    # without the lake only what is left in the log; retention goes on deleting expired segments meanwhile, so
    # the count lies between what the log held before and after the query
    before = (await flink_lake_conn.get_admin().list_offsets(path, [0], OffsetSpec.earliest()))[0]
    (earliest,), = rows(batch_env, f"SELECT COUNT(*) FROM {t} /*+ OPTIONS('scan.startup.mode'='earliest') */")
    after = (await flink_lake_conn.get_admin().list_offsets(path, [0], OffsetSpec.earliest()))[0]
    assert 660 - after <= earliest <= 660 - before < 660


async def test_streaming_read_switches_from_the_lake_to_the_log_exactly_once(
        stream_env, lake_catalog, flink_lake_conn, flink_lake_db):
    path = TablePath(flink_lake_db, "clicks")
    info = await create(flink_lake_conn, path, EVENTS, buckets=2, **{"bucket.key": "id"})
    await append(flink_lake_conn, path, events(0, 50))
    await tier(flink_lake_conn, info)
    await append(flink_lake_conn, path, events(50, 30))

    result, job, watchdog = stream_rows(stream_env, f"SELECT id, name FROM {lake_catalog}.{flink_lake_db}.clicks")
    try:
        with result.collect() as it:
            first = [tuple(next(it)) for _ in range(80)]
            await append(flink_lake_conn, path, events(80, 20))  # written while the job runs
            later = []
            while len({i for i, _ in later}) < 20:  # two buckets, read independently: wait for every id
                later.append(tuple(next(it)))
    finally:
        watchdog.cancel()
        job.cancel()
    assert sorted(first) == [(i, f"e{i}") for i in range(80)]
    assert sorted(later) == [(i, f"e{i}") for i in range(80, 100)]  # each once


async def test_partitioned_log_table_is_read_per_partition_from_the_lake_and_the_log(
        batch_env, lake_catalog, flink_lake_conn, flink_lake_db):
    path = TablePath(flink_lake_db, "visits")
    info = await create(flink_lake_conn, path, VIEWS, buckets=2, partition_keys=["day"], **{"bucket.key": "id"})

    await append(flink_lake_conn, path, visits(range(0, 40), "2026-01-01"), visits(range(40, 70), "2026-01-02"))
    await tier(flink_lake_conn, info)
    await append(flink_lake_conn, path, visits(range(70, 80), "2026-01-02"), visits(range(80, 95), "2026-01-03"))
    expected = [(i, "2026-01-01" if i < 40 else "2026-01-02" if i < 80 else "2026-01-03") for i in range(95)]

    t = f"{lake_catalog}.{flink_lake_db}.visits"
    assert sorted(rows(batch_env, f"SELECT id, `day` FROM {t}")) == expected
    assert sorted(rows(batch_env, f"SELECT id FROM {t} WHERE `day` = '2026-01-02'")) == [(i,) for i in range(40, 80)]
    assert rows(batch_env, f"SELECT COUNT(*) FROM {t}") == [(95,)]
    assert rows(batch_env, f"SELECT COUNT(*) FROM {t} WHERE `day` >= '2026-01-02'") == [(55,)]
    lake = f"`{lake_catalog}`.`{flink_lake_db}`.`visits$lake`"
    assert sorted(rows(batch_env, f"SELECT id, `day` FROM {lake}")) == expected[:70]

    # a partition dropped from Fluss (as auto-partitioning expires one) stays readable from the lake: its tiered
    # rows (40..69), not the ten that were only in its log
    await flink_lake_conn.get_admin().drop_partition(path, {"day": "2026-01-02"})
    after_drop = [r for r in expected if not 70 <= r[0] < 80]
    assert sorted(rows(batch_env, f"SELECT id, `day` FROM {t}")) == after_drop
    assert rows(batch_env, f"SELECT COUNT(*) FROM {t} WHERE `day` < '2026-01-03'") == [(70,)]
    assert sorted(rows(batch_env, f"SELECT id FROM {lake} WHERE `day` = '2026-01-02'")) == [(i,) for i in range(40, 70)]


@pytest.mark.long  # a streaming Flink job (~25 s): make test-long
async def test_streaming_union_read_gives_a_dropped_partitions_lake_rows_once_then_the_live_logs(
        stream_env, lake_catalog, flink_lake_conn, flink_lake_db):
    path = TablePath(flink_lake_db, "expiring")
    info = await create(flink_lake_conn, path, VIEWS, buckets=2, partition_keys=["day"], **{"bucket.key": "id"})

    await append(flink_lake_conn, path, visits(range(0, 30), "d1"), visits(range(30, 50), "d2"))
    await tier(flink_lake_conn, info)
    await append(flink_lake_conn, path, visits(range(50, 60), "d1"), visits(range(60, 65), "d2"))
    await flink_lake_conn.get_admin().drop_partition(path, {"day": "d1"})  # its lake rows 0..29 stay readable
    expected = [(i, "d1") for i in range(30)] + [(i, "d2") for i in range(30, 50)] + [(i, "d2") for i in range(60, 65)]
    result, job, watchdog = stream_rows(stream_env, f"SELECT id, `day` FROM {lake_catalog}.{flink_lake_db}.expiring")
    try:
        with result.collect() as it:
            first = [tuple(next(it)) for _ in range(len(expected))]
            await append(flink_lake_conn, path, visits(range(65, 70), "d2"))
            later = [tuple(next(it)) for _ in range(5)]
    finally:
        watchdog.cancel()
        job.cancel()
    assert sorted(first) == sorted(expected)
    assert sorted(later) == [(i, "d2") for i in range(65, 70)]


# ---------------------------------------------------------------- primary-key tables


async def test_batch_read_of_a_primary_key_table_merges_the_log_into_the_lake_and_fluss_wins(
        batch_env, lake_catalog, flink_lake_conn, flink_lake_db):
    path = TablePath(flink_lake_db, "accounts")
    info = await create(flink_lake_conn, path, ACCOUNTS, pk=["id"], buckets=3)
    state: dict[int, tuple] = {}
    await apply_ops(flink_lake_conn, path, [("u", i, f"o{i}", i * 10) for i in range(30)], state)
    await apply_ops(flink_lake_conn, path, [("u", 3, "o3", 333), ("d", 4), ("d", 5)], state)
    await tier(flink_lake_conn, info)
    tiered = dict(state)

    # after tiering: updates and deletes of tiered keys, new keys, a key deleted and written again
    await apply_ops(flink_lake_conn, path, [("u", 1, "changed", -1), ("d", 2), ("u", 100, "fresh", 7), ("d", 6),
                                            ("u", 6, "back", 6), ("u", 101, "gone", 0), ("d", 101),
                                            ("u", 7, "twice", 1), ("u", 7, "twice", 2)], state)
    t = f"{lake_catalog}.{flink_lake_db}.accounts"
    assert sorted(rows(batch_env, f"SELECT * FROM {t}")) == sorted(state.values())
    assert sorted(rows(batch_env, f"SELECT balance, id FROM {t} WHERE id < 10")) == \
        sorted((b, i) for i, _, b in state.values() if i < 10)
    assert rows(batch_env, f"SELECT COUNT(*) FROM {t}") == [(len(state),)]
    lake = f"`{lake_catalog}`.`{flink_lake_db}`.`accounts$lake`"
    assert sorted(rows(batch_env, f"SELECT id, owner, balance FROM {lake}")) == sorted(tiered.values())

    await tier(flink_lake_conn, info)  # everything in the lake: the log tail is empty
    assert sorted(rows(batch_env, f"SELECT id, owner, balance FROM {lake}")) == sorted(state.values())
    assert sorted(rows(batch_env, f"SELECT * FROM {t}")) == sorted(state.values())


async def test_streaming_read_of_a_primary_key_table_starts_with_the_lake_then_follows_the_changelog(
        stream_env, lake_catalog, flink_lake_conn, flink_lake_db):
    path = TablePath(flink_lake_db, "balances")
    info = await create(flink_lake_conn, path, ACCOUNTS, pk=["id"], buckets=2)
    state: dict[int, tuple] = {}
    await apply_ops(flink_lake_conn, path, [("u", i, f"o{i}", i) for i in range(20)], state)
    await tier(flink_lake_conn, info)
    await apply_ops(flink_lake_conn, path, [("u", 1, "after-tiering", 1), ("d", 2)], state)

    result, job, watchdog = stream_rows(stream_env, f"SELECT * FROM {lake_catalog}.{flink_lake_db}.balances")
    view: dict[int, tuple] = {}
    kinds = []

    def apply(row) -> None:
        kind = row.get_row_kind().name
        kinds.append(kind)
        key = row[0]
        if kind in ("INSERT", "UPDATE_AFTER"):
            view[key] = tuple(row)
        else:
            view.pop(key, None)

    try:
        with result.collect() as it:
            while len(kinds) < 20 + 3:  # 20 lake rows (+I), then -U/+U of key 1 and -D of key 2
                apply(next(it))
            assert view == state
            assert sorted(kinds) == sorted(["INSERT"] * 20 + ["UPDATE_BEFORE", "UPDATE_AFTER", "DELETE"])
            await apply_ops(flink_lake_conn, path, [("u", 3, "live", 3), ("d", 4), ("u", 500, "new", 0)], state)
            while view != state:  # buckets are read independently: no single sentinel marks the end
                apply(next(it))
    finally:
        watchdog.cancel()
        job.cancel()
    assert view == state
    assert kinds.count("INSERT") == 20 + 1  # the lake rows once, then the new key 500


# ---------------------------------------------------------------- Paimon bucketing in the connector


async def test_flink_sink_and_lookup_join_route_with_the_tables_paimon_bucketing(
        batch_env, lake_catalog, flink_lake_conn, flink_lake_db):
    """Tables of a Paimon lake cluster are bucketed by Paimon's function: the Java sink routes with it (the tablet
    servers refuse rows of another bucket), lookup joins (point and prefix) find every key, and in the tiered lake
    table each key is where Paimon's own key filter looks for it."""
    from lake_helpers import paimon_table

    from fluss.key.bucket_function import PaimonBucketing

    c = f"`{lake_catalog}`.`{flink_lake_db}`"
    batch_env.execute_sql(f"""CREATE TABLE {c}.wallets (owner STRING NOT NULL, id BIGINT NOT NULL, amount INT,
        PRIMARY KEY (owner, id) NOT ENFORCED) WITH ('bucket.num' = '4', 'bucket.key' = 'owner',
        'table.datalake.enabled' = 'true')""").wait()

    def owner(i: int) -> str:  # short (inline) and long (var part) BinaryRow strings
        return f"owner-{i % 9}{'-long' * (i % 3)}"

    values = ", ".join(f"('{owner(i)}', {i}, {i * 3})" for i in range(60))
    batch_env.execute_sql(f"INSERT INTO {c}.wallets VALUES {values}").wait()  # refused if routed another way
    path = TablePath(flink_lake_db, "wallets")
    info = await flink_lake_conn.get_admin().get_table_info(path)
    assert info.get_properties()["table.bucket.function"] == "paimon"
    table = await flink_lake_conn.get_table(path)
    held = 0
    for b in range(4):  # every row sits in the bucket Paimon's function names
        rows_of_b = await table.new_scan().create_kv_state_scanner(TableBucket(info.table_id, b)).to_arrow()
        held += rows_of_b.num_rows
        assert rows_of_b.num_rows == 0 or set(PaimonBucketing().bucket_ids(rows_of_b, [0], 4).tolist()) == {b}
    assert held == 60
    batch_env.execute_sql("""CREATE TEMPORARY VIEW wallet_probes AS
        SELECT * FROM (VALUES ('owner-1-long', 10), ('owner-5-long-long', 5), ('owner-0', 0), ('nobody', 1))
        AS v(owner, id)""").wait()
    got = rows(batch_env, f"""SELECT p.owner, p.id, w.amount FROM (SELECT *, PROCTIME() AS pt FROM wallet_probes) AS p
        LEFT JOIN {c}.wallets FOR SYSTEM_TIME AS OF p.pt AS w ON p.owner = w.owner AND p.id = w.id""")
    assert sorted(got) == [("nobody", 1, None), ("owner-0", 0, 0), ("owner-1-long", 10, 30),
                           ("owner-5-long-long", 5, 15)]
    prefix = rows(batch_env, f"""SELECT p.owner, w.id FROM (SELECT *, PROCTIME() AS pt FROM wallet_probes) AS p
        JOIN {c}.wallets FOR SYSTEM_TIME AS OF p.pt AS w ON p.owner = w.owner""")
    probes = ("owner-1-long", "owner-5-long-long", "owner-0")
    expected = {o: sorted(i for i in range(60) if owner(i) == o) for o in probes}
    assert {o: sorted(i for po, i in prefix if po == o) for o in probes} == expected

    await tier(flink_lake_conn, info)
    lake = paimon_table(info.get_properties()["table.datalake.paimon.warehouse"], path)
    for o in probes:  # pypaimon with a key filter (it prunes buckets by Paimon's function)
        builder = lake.new_read_builder()
        builder = builder.with_filter(builder.new_predicate_builder().equal("owner", o))
        found = builder.new_read().to_arrow(builder.new_scan().plan().splits())
        assert sorted(found.column("id").to_pylist()) == expected[o]
