"""Flink reads a tiered log on S3 (moto's server on loopback): a source started from ``earliest`` reads the whole
retained history, the older part downloaded by the Java connector from the remote segments and projected there,
then the local log (an ARROW log, and an INDEXED log whose remote rows the connector decodes itself); and the
lake half (``t$lake``) comes from a Paimon warehouse on S3 through Paimon's Java
reader (marked ``long``: ``make remote-long`` or ``make test-long``)."""

from __future__ import annotations

import asyncio

import pyarrow as pa
import pytest
import pytest_asyncio

import fluss
from fluss.server.cluster import LocalCluster

pytestmark = pytest.mark.asyncio(loop_scope="session")

S3_CATALOG = "fluss_tiered_s3"
ROWS = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("score", pa.float64())])


def _rows(table_result) -> list[tuple]:
    with table_result.collect() as results:
        return [tuple(r) for r in results]


@pytest.fixture(scope="module")
def s3_tiered_cluster(tmp_path_factory, s3_server):
    """A cluster whose remote.data.dir and lake warehouse are in a bucket of the session's S3 server."""
    directory = tmp_path_factory.mktemp("flink-tiered-s3")
    s3_server.create_bucket("flink")
    config = {"remote.data.dir": "s3://flink/remote", **s3_server.options(), "log.segment.file-size": "64kb",
              "remote.log.task-interval-duration": "1s", "datalake.format": "paimon",
              "datalake.paimon.warehouse": "s3://flink/lake"}
    with LocalCluster(tablet_servers=1, server_config=config, directory=directory / "cluster") as cluster:
        yield cluster


@pytest_asyncio.fixture(loop_scope="session", scope="module")
async def s3_conn(s3_tiered_cluster):
    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": s3_tiered_cluster.bootstrap_servers}))
    await conn.get_admin().create_database("tiered", ignore_if_exists=True)
    yield conn
    await conn.aclose()


@pytest.fixture(scope="module")
def s3_catalog(batch_env, s3_tiered_cluster):
    batch_env.execute_sql(f"CREATE CATALOG {S3_CATALOG} WITH ('type'='fluss', "
                          f"'bootstrap.servers'='{s3_tiered_cluster.bootstrap_servers}')").wait()
    return S3_CATALOG


async def _write(conn, path, start, n):
    writer = (await conn.get_table(path)).new_append().create_writer()
    for i in range(start, start + n, 1000):
        ids = list(range(i, min(i + 1000, start + n)))
        writer.write_arrow_batch(pa.record_batch({"id": pa.array(ids, pa.int64()), "name": [f"n{x:07d}" for x in ids],
                                                  "score": [x / 4 for x in ids]}, schema=ROWS))
    await writer.flush()


async def _describe(conn, path):
    from fluss.table_report import log_states

    info = await conn.get_admin().get_table_info(path)
    return await log_states(conn, info)


async def test_flink_earliest_reads_the_whole_history_from_s3_segments_and_the_local_log(batch_env, s3_conn,
                                                                                        s3_catalog):
    path = fluss.TablePath("tiered", "history")
    await s3_conn.get_admin().create_table(path, fluss.TableDescriptor(fluss.Schema(ROWS), bucket_count=2))
    await _write(s3_conn, path, 0, 60_000)  # compressed, a few 64 KiB segments per bucket (24,000 did not seal one)
    for _ in range(120):
        states = await _describe(s3_conn, path)
        if all(s.remote_start == 0 and s.local_start > 0 for s in states):
            break
        await asyncio.sleep(0.5)
    else:
        raise AssertionError(f"not tiered: {states}")
    t = f"{s3_catalog}.tiered.history"
    # aggregated in Flink (60,000 rows through py4j one by one would take minutes): every id once, in range,
    # with its score (not COUNT(*) alone: that is answered from offsets without reading)
    got = _rows(batch_env.execute_sql(
        f"SELECT COUNT(id), COUNT(DISTINCT id), MIN(id), MAX(id), SUM(score - id / 4.0) "
        f"FROM {t} /*+ OPTIONS('scan.startup.mode'='earliest', 'client.scanner.remote-log.prefetch-num'='2') */"))
    assert got == [(60_000, 60_000, 0, 59_999, 0.0)]
    plan = batch_env.explain_sql(f"SELECT id FROM {t}")
    assert "project=[id]" in plan  # the projection reaches the source, so remote batches are projected there


ROW_LOG = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("score", pa.float64()),
                     ("tags", pa.list_(pa.string())), ("p", pa.struct([("a", pa.int32()), ("b", pa.float64())]))])


def _row_log_batch(schema: pa.Schema, start: int, n: int) -> pa.RecordBatch:
    ids = list(range(start, start + n))
    columns = {"id": pa.array(ids, pa.int64()), "name": [f"n{x}" for x in ids], "score": [x / 4 for x in ids],
               "tags": [None if x % 5 == 0 else [str(x), None][: 1 + x % 2] for x in ids],
               "p": [None if x % 11 == 0 else {"a": x % 7, "b": x / 4} for x in ids]}
    if "extra" in schema.names:
        columns["extra"] = [f"e{x}" for x in ids]
    return pa.record_batch(columns, schema=schema)


async def test_flink_earliest_reads_a_row_format_log_from_its_remote_segments_and_the_local_log(batch_env, s3_conn,
                                                                                               s3_catalog):
    """An INDEXED log (rows, not Arrow, in its segments) with a column added half-way (two schema ids in the
    remote segments): the connector decodes the remote rows itself, then reads the local log through FetchLog."""
    path = fluss.TablePath("tiered", "row_history")
    admin = s3_conn.get_admin()
    await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(ROW_LOG), bucket_count=2,
                                                         properties={"table.log.format": "INDEXED"}))
    writer = (await s3_conn.get_table(path)).new_append().create_writer()
    for start in range(0, 6000, 500):  # one request in flight (retries under load once broke sequence order)
        writer.write_arrow_batch(_row_log_batch(ROW_LOG, start, 500))
        await writer.flush()
    await admin.alter_table(path, [fluss.TableChange.add_column("extra", pa.string())])
    evolved = ROW_LOG.append(pa.field("extra", pa.string()))
    writer = (await s3_conn.get_table(path)).new_append().create_writer()
    for start in range(6000, 12_000, 500):
        writer.write_arrow_batch(_row_log_batch(evolved, start, 500))
        await writer.flush()
    for _ in range(120):
        states = await _describe(s3_conn, path)
        if all(s.remote_start == 0 and s.remote_end > 3000 and s.local_start > 0 for s in states):
            break
        await asyncio.sleep(0.5)
    else:
        raise AssertionError(f"not tiered: {states}")
    assert all(s.local_end > s.remote_end for s in states), states  # the newest rows are in the local log only
    t = f"{s3_catalog}.tiered.row_history"
    # every row once, each value as written (score is left out: the source projects it away); the rows written
    # before the ALTER have extra null
    good = ("CASE WHEN name = CONCAT('n', CAST(id AS STRING))"
            " AND (CASE WHEN MOD(id, 5) = 0 THEN tags IS NULL ELSE CARDINALITY(tags) = 1 + MOD(id, 2)"
            " AND tags[1] = CAST(id AS STRING) AND (MOD(id, 2) = 0 OR tags[2] IS NULL) END)"
            " AND (CASE WHEN MOD(id, 11) = 0 THEN p IS NULL ELSE p.a = MOD(id, 7) AND p.b = id / 4.0 END)"
            " AND (CASE WHEN id < 6000 THEN extra IS NULL ELSE extra = CONCAT('e', CAST(id AS STRING)) END)"
            " THEN 1 ELSE 0 END")
    got = _rows(batch_env.execute_sql(
        f"SELECT COUNT(id), COUNT(DISTINCT id), MIN(id), MAX(id), SUM({good}) "
        f"FROM {t} /*+ OPTIONS('scan.startup.mode'='earliest', 'client.scanner.remote-log.prefetch-num'='2') */"))
    assert got == [(12_000, 12_000, 0, 11_999, 12_000)]


@pytest.mark.long  # a minute or more (the tiering round and Paimon's S3A reader): make remote-long
async def test_flink_reads_a_lake_table_on_s3_with_paimons_java_reader(batch_env, s3_conn, s3_catalog):
    from fluss.lake.paimon import lake_of_table
    from fluss.lake.tiering import tier_table

    path = fluss.TablePath("tiered", "lake_rows")
    await s3_conn.get_admin().create_table(path, fluss.TableDescriptor(
        fluss.Schema(ROWS), bucket_count=1, properties={"table.datalake.enabled": "true"}), ignore_if_exists=True)
    await _write(s3_conn, path, 0, 2000)
    info = await s3_conn.get_admin().get_table_info(path)
    await tier_table(s3_conn, lake_of_table(info), info, None)
    await _write(s3_conn, path, 2000, 300)
    lake = _rows(batch_env.execute_sql(
        f"SELECT COUNT(id), COUNT(DISTINCT id), MAX(id) FROM {s3_catalog}.tiered.`lake_rows$lake`"))
    assert lake == [(2000, 2000, 1999)]
    union = _rows(batch_env.execute_sql(
        f"SELECT COUNT(id), COUNT(DISTINCT id), MAX(id) FROM {s3_catalog}.tiered.lake_rows"))
    assert union == [(2300, 2300, 2299)]
