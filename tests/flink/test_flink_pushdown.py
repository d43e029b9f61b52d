"""Source pushdowns of the Flink connector, each checked in the plan (``EXPLAIN``) and by its result: LIMIT,
``COUNT(*)`` of log tables answered from offsets, and filters on partition keys (partition pruning, also of
partitions created while a streaming job runs). Session JVM, session cluster."""

from __future__ import annotations

import asyncio
import threading
import time

import pyarrow as pa
import pytest

import fluss

pytestmark = pytest.mark.asyncio(loop_scope="session")

CATALOG = "fluss_catalog"  # created by the session fixtures in conftest.py
ROWS = pa.schema([pa.field("id", pa.int64(), nullable=False), ("payload", pa.string())])
VIEWS = pa.schema([pa.field("id", pa.int64(), nullable=False), ("url", pa.string()),
                   pa.field("dt", pa.string(), nullable=False)])
ACCOUNTS = pa.schema([pa.field("id", pa.int64(), nullable=False), ("owner", pa.string())])


def rows(t_env, sql: str) -> list[tuple]:
    with t_env.execute_sql(sql).collect() as results:
        return [tuple(r) for r in results]


def scan_line(plan: str) -> str:
    """The TableSourceScan line of the optimized physical plan."""
    physical = plan.split("== Optimized Physical Plan ==")[1].split("==")[0]
    return next(line for line in physical.splitlines() if "TableSourceScan" in line)


async def append_rows(conn, path: fluss.TablePath, start: int, n: int, batch: int = 20_000) -> None:
    writer = (await conn.get_table(path)).new_append().create_writer()
    for s in range(start, start + n, batch):
        ids = list(range(s, min(s + batch, start + n)))
        writer.write_arrow_batch(pa.RecordBatch.from_pydict(
            {"id": ids, "payload": [f"payload-{i:08d}-" + "x" * 40 for i in ids]}, schema=ROWS))
    await writer.flush()


async def append_views(conn, path: fluss.TablePath, rows_: list[tuple[int, str]]) -> None:
    writer = (await conn.get_table(path)).new_append().create_writer()
    writer.write_arrow_batch(pa.RecordBatch.from_pydict(
        {"id": [i for i, _ in rows_], "url": [f"/u/{i}" for i, _ in rows_], "dt": [d for _, d in rows_]},
        schema=VIEWS))
    await writer.flush()


# ---------------------------------------------------------------- LIMIT


async def test_limit_is_pushed_into_the_source_which_stops_reading_early(batch_env, conn, admin, flink_db):
    path = fluss.TablePath(flink_db, "big")
    await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(ROWS), bucket_count=4))
    total = 200_000
    await append_rows(conn, path, 0, total)
    t = f"{CATALOG}.{flink_db}.big"

    assert "limit=[7]" in scan_line(batch_env.explain_sql(f"SELECT * FROM {t} LIMIT 7"))
    started = time.monotonic()
    got = rows(batch_env, f"SELECT * FROM {t} LIMIT 7")
    assert time.monotonic() - started < 60
    assert len(got) == 7
    assert all(0 <= i < total and p == f"payload-{i:08d}-" + "x" * 40 for i, p in got)
    assert len(rows(batch_env, f"SELECT id FROM {t} WHERE id >= {total - 3} LIMIT 10")) == 3  # fewer than the limit

    # a primary-key table: the KV scans are limited too
    pk = fluss.TablePath(flink_db, "accounts")
    await admin.create_table(pk, fluss.TableDescriptor(fluss.Schema(ACCOUNTS, primary_keys=["id"]), bucket_count=3))
    writer = (await conn.get_table(pk)).new_upsert().create_writer()
    for i in range(500):
        writer.upsert({"id": i, "owner": f"o{i}"})
    await writer.flush()
    plan = batch_env.explain_sql(f"SELECT * FROM {CATALOG}.{flink_db}.accounts LIMIT 5")
    assert "limit=[5]" in scan_line(plan)
    got = rows(batch_env, f"SELECT * FROM {CATALOG}.{flink_db}.accounts LIMIT 5")
    assert len(got) == 5 and all(o == f"o{i}" for i, o in got)


# ---------------------------------------------------------------- COUNT(*)


async def test_count_star_of_a_log_table_is_answered_from_offsets(batch_env, conn, admin, flink_db):
    path = fluss.TablePath(flink_db, "events")
    await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(ROWS), bucket_count=3))
    await append_rows(conn, path, 0, 12_345, batch=1000)
    t = f"{CATALOG}.{flink_db}.events"

    scan = scan_line(batch_env.explain_sql(f"SELECT COUNT(*) FROM {t}"))
    assert "aggregates=[grouping=[], aggFunctions=[Count1AggFunction()]]" in scan
    assert rows(batch_env, f"SELECT COUNT(*) FROM {t}") == [(12_345,)]
    assert rows(batch_env, f"SELECT COUNT(1) FROM {t}") == [(12_345,)]
    assert rows(batch_env, f"SELECT COUNT(id) FROM {t}") == [(12_345,)]  # id is NOT NULL: the same
    # not pushed: a filter, a nullable column, or another startup mode
    for sql in (f"SELECT COUNT(*) FROM {t} WHERE id < 100", f"SELECT COUNT(payload) FROM {t}",
                f"SELECT COUNT(*) FROM {t} /*+ OPTIONS('scan.startup.mode'='latest') */"):
        assert "aggregates=" not in scan_line(batch_env.explain_sql(sql)), sql
    assert rows(batch_env, f"SELECT COUNT(*) FROM {t} WHERE id < 100") == [(100,)]
    assert rows(batch_env, f"SELECT COUNT(*) FROM {t} /*+ OPTIONS('scan.startup.mode'='latest') */") == [(0,)]



async def test_count_star_of_a_primary_key_table_is_answered_from_its_kv_row_counts(batch_env, conn, admin,
                                                                                     flink_db):
    pk = fluss.TablePath(flink_db, "accounts")
    await admin.create_table(pk, fluss.TableDescriptor(fluss.Schema(ACCOUNTS, primary_keys=["id"]), bucket_count=3))
    writer = (await conn.get_table(pk)).new_upsert().create_writer()
    for i in range(500):
        writer.upsert({"id": i % 200, "owner": f"o{i}"})  # 200 keys, most updated twice
    for i in range(0, 200, 10):
        writer.delete({"id": i})
    await writer.flush()
    pk_t = f"{CATALOG}.{flink_db}.accounts"

    scan = scan_line(batch_env.explain_sql(f"SELECT COUNT(*) FROM {pk_t}"))
    assert "aggregates=[grouping=[], aggFunctions=[Count1AggFunction()]]" in scan
    assert rows(batch_env, f"SELECT COUNT(*) FROM {pk_t}") == [(180,)]
    assert rows(batch_env, f"SELECT COUNT(id) FROM {pk_t}") == [(180,)]
    # not pushed: a filter on a value column, or a startup mode that reads the changelog
    for sql in (f"SELECT COUNT(*) FROM {pk_t} WHERE owner > 'o3'",
                f"SELECT COUNT(*) FROM {pk_t} /*+ OPTIONS('scan.startup.mode'='earliest') */"):
        assert "aggregates=" not in scan_line(batch_env.explain_sql(sql)), sql
    assert rows(batch_env, f"SELECT COUNT(*) FROM {pk_t} WHERE id < 50") == [(45,)]

    # a partitioned primary-key table: the partitions the filter keeps
    daily = fluss.TablePath(flink_db, "daily")
    await admin.create_table(daily, fluss.TableDescriptor(
        fluss.Schema(VIEWS, primary_keys=["id", "dt"]), partition_keys=["dt"], bucket_count=2))
    writer = (await conn.get_table(daily)).new_upsert().create_writer()
    for dt, n in (("2026-12-01", 30), ("2026-12-02", 12)):
        for i in range(n):
            writer.upsert({"id": i, "url": f"/u/{i}", "dt": dt})
    await writer.flush()
    d_t = f"{CATALOG}.{flink_db}.daily"
    assert rows(batch_env, f"SELECT COUNT(*) FROM {d_t}") == [(42,)]
    sql = f"SELECT COUNT(*) FROM {d_t} WHERE dt = '2026-12-02'"
    assert "aggregates=" in scan_line(batch_env.explain_sql(sql))
    assert rows(batch_env, sql) == [(12,)]


# ---------------------------------------------------------------- partition pruning


async def test_filter_on_the_partition_key_reads_only_the_matching_partitions(batch_env, conn, admin, flink_db):
    path = fluss.TablePath(flink_db, "visits")
    await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(VIEWS), partition_keys=["dt"],
                                                         bucket_count=2))
    days = ["2026-01-01", "2026-01-02", "2026-01-03"]
    await append_views(conn, path, [(i, days[i % 3]) for i in range(300)])
    t = f"{CATALOG}.{flink_db}.visits"

    sql = f"SELECT id, dt FROM {t} WHERE dt = '2026-01-02'"
    scan = scan_line(batch_env.explain_sql(sql))
    assert "filter=[" in scan and "2026-01-02" in scan
    assert "Calc(select=[id, dt], where=" not in batch_env.explain_sql(sql)  # pruning is exact: no filter left
    # the source alone decides which rows come back: only the partition's rows, all of them
    assert sorted(rows(batch_env, sql)) == [(i, "2026-01-02") for i in range(1, 300, 3)]
    assert sorted(rows(batch_env, f"SELECT id FROM {t} WHERE dt IN ('2026-01-01', '2026-01-03') AND id < 9")) == \
        [(0,), (2,), (3,), (5,), (6,), (8,)]
    assert sorted(rows(batch_env, f"SELECT DISTINCT dt FROM {t} WHERE dt > '2026-01-01'")) == \
        [("2026-01-02",), ("2026-01-03",)]
    assert rows(batch_env, f"SELECT COUNT(*) FROM {t} WHERE dt <> '2026-01-03'") == [(200,)]  # from offsets
    assert rows(batch_env, f"SELECT COUNT(*) FROM {t} WHERE dt = '2027-01-01'") == [(0,)]


async def test_partitions_created_while_a_streaming_read_runs_are_discovered_and_pruned(
        stream_env, conn, admin, flink_db):
    path = fluss.TablePath(flink_db, "clicks")
    await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(VIEWS), partition_keys=["dt"],
                                                         bucket_count=1))  # one bucket: the sentinel comes last
    await append_views(conn, path, [(i, "2026-01-01") for i in range(10)] + [(i, "2026-02-01") for i in range(10, 15)])

    hint = "/*+ OPTIONS('scan.partition.discovery.interval'='1s') */"
    sql = f"SELECT id, dt FROM {CATALOG}.{flink_db}.clicks {hint} WHERE dt >= '2026-02-01'"
    assert "filter=[" in scan_line(stream_env.explain_sql(sql))
    result = stream_env.execute_sql(sql)
    job = result.get_job_client()
    watchdog = threading.Timer(120, job.cancel)
    watchdog.start()
    try:
        with result.collect() as it:
            first = [tuple(next(it)) for _ in range(5)]
            # a new partition the filter prunes (the planner does not filter again: read, its rows would show),
            # given time to be discovered; then one it keeps, ending with a sentinel
            await append_views(conn, path, [(i, "2025-12-31") for i in range(200, 210)])
            await asyncio.sleep(3)
            await append_views(conn, path, [(i, "2026-03-01") for i in range(100, 110)] + [(999, "2026-03-01")])
            later = []
            while not later or later[-1][0] != 999:
                later.append(tuple(next(it)))
    finally:
        watchdog.cancel()
        job.cancel()
    assert sorted(first) == [(i, "2026-02-01") for i in range(10, 15)]
    assert sorted(later) == [(i, "2026-03-01") for i in [*range(100, 110), 999]]
