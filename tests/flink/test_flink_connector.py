"""The Flink connector end to end: Flink SQL (PyFlink, one JVM for the session) against a real cluster, checked
with the Python client, and Python-written data read by Flink."""

from __future__ import annotations

import datetime as dt
import decimal
import threading
import time

import pyarrow as pa

import fluss
from fluss.key.bucketing import bucket_ids

CATALOG = "fluss_catalog"  # created by the session fixtures in conftest.py


def _rows(table_result) -> list[tuple]:
    with table_result.collect() as results:
        return [tuple(r) for r in results]


async def _read_all(conn, path: fluss.TablePath, columns: list[str] | None = None) -> pa.Table:
    table = await conn.get_table(path)
    scan = table.new_scan()
    if columns:
        scan = scan.project_by_name(columns)
    scanner = await scan.create_record_batch_log_scanner()
    info = await conn.get_admin().get_table_info(path)
    scanner.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in range(info.num_buckets)})
    return await scanner.to_arrow()


async def test_catalog_ddl_is_visible_to_the_python_admin(batch_env, admin, flink_db):
    batch_env.execute_sql(f"CREATE DATABASE IF NOT EXISTS {CATALOG}.{flink_db}_extra").wait()
    assert f"{flink_db}_extra" in await admin.list_databases()
    batch_env.execute_sql(f"""
        CREATE TABLE {CATALOG}.{flink_db}.orders (
            id BIGINT NOT NULL COMMENT 'order id',
            customer STRING,
            amount DECIMAL(10, 2),
            ts TIMESTAMP(3),
            ltz TIMESTAMP_LTZ(3),
            d DATE,
            flag BOOLEAN,
            code CHAR(3),
            payload BYTES,
            region STRING
        ) COMMENT 'orders table' PARTITIONED BY (region)
        WITH ('bucket.num' = '3', 'bucket.key' = 'id', 'table.log.ttl' = '2d', 'scan.startup.mode' = 'earliest')
    """).wait()
    info = await admin.get_table_info(fluss.TablePath(flink_db, "orders"))
    assert info.num_buckets == 3
    assert info.get_bucket_keys() == ["id"]
    assert info.get_partition_keys() == ["region"]
    assert info.get_properties()["table.log.ttl"] == "2d"
    assert info.get_custom_properties()["scan.startup.mode"] == "earliest"
    assert dict(info.get_schema().get_columns()) == {
        # type strings as the official Python client prints them (docs/data-types.md)
        "id": "bigint NOT NULL", "customer": "string", "amount": "decimal(10,2)", "ts": "timestamp(3)",
        "ltz": "timestamp_ltz(3)", "d": "date", "flag": "boolean", "code": "char(3)", "payload": "bytes",
        "region": "string",
    }

    tables = [r[0] for r in _rows(batch_env.execute_sql(f"SHOW TABLES IN {CATALOG}.{flink_db}"))]
    assert tables == ["orders"]
    described = {r[0]: r[1] for r in _rows(batch_env.execute_sql(f"DESCRIBE {CATALOG}.{flink_db}.orders"))}
    assert described["amount"] == "DECIMAL(10, 2)"
    assert described["ltz"] == "TIMESTAMP_LTZ(3)"
    assert described["id"] == "BIGINT"  # nullability is its own DESCRIBE column

    batch_env.execute_sql(f"ALTER TABLE {CATALOG}.{flink_db}.orders ADD PARTITION (region = 'EU')").wait()
    partitions = _rows(batch_env.execute_sql(f"SHOW PARTITIONS {CATALOG}.{flink_db}.orders"))
    assert partitions == [("region=EU",)]

    batch_env.execute_sql(f"DROP TABLE {CATALOG}.{flink_db}.orders").wait()
    assert await admin.list_tables(flink_db) == []
    batch_env.execute_sql(f"DROP DATABASE {CATALOG}.{flink_db}_extra").wait()
    assert f"{flink_db}_extra" not in await admin.list_databases()


async def test_unknown_table_and_bad_option_are_validation_errors(batch_env, flink_db):
    import pytest

    with pytest.raises(Exception, match="nope"):
        batch_env.execute_sql(f"SELECT * FROM {CATALOG}.{flink_db}.nope").wait()
    batch_env.execute_sql(f"CREATE TABLE {CATALOG}.{flink_db}.t (a INT)").wait()
    with pytest.raises(Exception, match="scan.startup.mode"):
        batch_env.execute_sql(
            f"SELECT * FROM {CATALOG}.{flink_db}.t /*+ OPTIONS('scan.startup.mode'='sometime') */").wait()


async def test_insert_in_batch_mode_is_read_back_by_the_python_client(batch_env, conn, flink_db):
    t = f"{CATALOG}.{flink_db}.events"
    batch_env.execute_sql(f"""
        CREATE TABLE {t} (id BIGINT, name STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3), d DATE, payload BYTES)
        WITH ('bucket.num' = '4', 'bucket.key' = 'id')
    """).wait()
    batch_env.execute_sql(f"""
        INSERT INTO {t} VALUES
          (1, 'alice', 12.34, TIMESTAMP '2024-01-01 12:34:56.789', DATE '2024-06-30', X'0001'),
          (2, CAST(NULL AS STRING), -0.01, CAST(NULL AS TIMESTAMP(3)), DATE '1970-01-01', X''),
          (3, '日本', 0.00, TIMESTAMP '1969-12-31 23:59:59.999', CAST(NULL AS DATE), CAST(NULL AS BYTES))
    """).wait()
    got = (await _read_all(conn, fluss.TablePath(flink_db, "events"))).sort_by("id").to_pylist()
    assert got == [
        dict(id=1, name="alice", amount=decimal.Decimal("12.34"), ts=dt.datetime(2024, 1, 1, 12, 34, 56, 789000),
             d=dt.date(2024, 6, 30), payload=b"\x00\x01"),
        dict(id=2, name=None, amount=decimal.Decimal("-0.01"), ts=None, d=dt.date(1970, 1, 1), payload=b""),
        dict(id=3, name="日本", amount=decimal.Decimal("0.00"), ts=dt.datetime(1969, 12, 31, 23, 59, 59, 999000),
             d=None, payload=None),
    ]

    # datagen → Fluss; every row sits in the bucket the Python bucket function gives it
    batch_env.execute_sql("""
        CREATE TEMPORARY TABLE gen (id BIGINT, name STRING) WITH (
            'connector' = 'datagen', 'number-of-rows' = '5000', 'fields.id.kind' = 'sequence',
            'fields.id.start' = '100', 'fields.id.end' = '5099', 'fields.name.length' = '8')
    """).wait()
    batch_env.execute_sql(f"INSERT INTO {t} (id, name) SELECT id, name FROM gen").wait()
    table = await conn.get_table(fluss.TablePath(flink_db, "events"))
    total = 0
    for bucket in range(4):
        scanner = await table.new_scan().create_record_batch_log_scanner()
        scanner.subscribe_buckets({bucket: fluss.EARLIEST_OFFSET})
        data = (await scanner.to_arrow())
        total += data.num_rows
        batch = data.select(["id"]).combine_chunks().to_batches()[0]
        assert set(bucket_ids(batch, [0], 4).tolist()) <= {bucket}
    assert total == 5003
    assert _rows(batch_env.execute_sql(f"SELECT COUNT(*), SUM(id) FROM {t}")) == [(5003, 6 + sum(range(100, 5100)))]


async def test_the_sink_sends_small_batches_uncompressed(batch_env, cluster, conn, flink_db):
    """``client.writer.compression.min-batch-size`` [16kb]: a few rows go uncompressed, 5,000 rows and any
    batch with the option at 0 with the table's codec (ZSTD); the rows read back either way."""
    from fluss.record.log_batch import COMPRESSION_NONE, COMPRESSION_ZSTD
    from tests.stored_batches import stored_codecs

    t = f"{CATALOG}.{flink_db}.codecs"
    batch_env.execute_sql(f"CREATE TABLE {t} (id BIGINT, name STRING) WITH ('bucket.num' = '1')").wait()
    batch_env.execute_sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')").wait()
    batch_env.execute_sql(
        f"INSERT INTO {t} /*+ OPTIONS('client.writer.compression.min-batch-size'='0') */ VALUES (3, 'c')").wait()
    batch_env.execute_sql("""
        CREATE TEMPORARY TABLE gen_codecs (id BIGINT, name STRING) WITH (
            'connector' = 'datagen', 'number-of-rows' = '5000', 'fields.id.kind' = 'sequence',
            'fields.id.start' = '4', 'fields.id.end' = '5003', 'fields.name.length' = '8')
    """).wait()
    batch_env.execute_sql(f"INSERT INTO {t} SELECT id, name FROM gen_codecs").wait()
    # the codecs of each INSERT's batches (the 2 sink tasks may each send a part of an INSERT's rows)
    codecs_by_insert: list[set[int]] = [set(), set(), set()]
    written = 0
    for rows, codec in stored_codecs(cluster.bootstrap_servers, flink_db, "codecs"):
        codecs_by_insert[0 if written < 2 else 1 if written < 3 else 2].add(codec)
        written += rows
    assert written == 5003
    assert codecs_by_insert == [{COMPRESSION_NONE}, {COMPRESSION_ZSTD}, {COMPRESSION_ZSTD}]
    ids = (await _read_all(conn, fluss.TablePath(flink_db, "codecs"))).column("id").to_pylist()
    assert sorted(ids) == list(range(1, 5004))


async def test_python_written_table_is_read_by_flink_in_batch_mode_with_projection(batch_env, conn, admin, flink_db):
    path = fluss.TablePath(flink_db, "metrics")
    schema = pa.schema([("host", pa.string()), ("cpu", pa.float64()), ("ts", pa.timestamp("ms")),
                        ("tags", pa.binary())])
    await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(schema), bucket_count=3))
    table = await conn.get_table(path)
    writer = table.new_append().create_writer()
    rows = [dict(host=f"h{i % 7}", cpu=i / 10, ts=dt.datetime(2024, 1, 1) + dt.timedelta(seconds=i), tags=b"x")
            for i in range(1000)]
    writer.write_arrow(pa.Table.from_pylist(rows, schema=schema))
    await writer.flush()

    t = f"{CATALOG}.{flink_db}.metrics"
    got = _rows(batch_env.execute_sql(f"SELECT cpu, host FROM {t} WHERE host = 'h3'"))
    assert sorted(got) == sorted((r["cpu"], "h3") for r in rows if r["host"] == "h3")
    plan = batch_env.explain_sql(f"SELECT cpu, host FROM {t}")
    assert "project=[cpu, host]" in plan
    assert _rows(batch_env.execute_sql(f"SELECT COUNT(*) FROM {t}")) == [(1000,)]
    latest = _rows(batch_env.execute_sql(
        f"SELECT COUNT(*) FROM {t} /*+ OPTIONS('scan.startup.mode'='latest') */"))
    assert latest == [(0,)]


async def test_streaming_read_picks_up_rows_written_while_it_runs(stream_env, conn, admin, flink_db):
    path = fluss.TablePath(flink_db, "clicks")
    schema = pa.schema([("user_id", pa.int64()), ("url", pa.string())])
    await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(schema), bucket_count=2))
    table = await conn.get_table(path)
    writer = table.new_append().create_writer()
    writer.write_arrow(pa.Table.from_pylist([dict(user_id=i, url=f"/a/{i}") for i in range(5)], schema=schema))
    await writer.flush()

    result = stream_env.execute_sql(f"SELECT user_id, url FROM {CATALOG}.{flink_db}.clicks")
    job = result.get_job_client()
    watchdog = threading.Timer(90, job.cancel)  # never hang the suite: cancelling ends the iterator
    watchdog.start()
    try:
        with result.collect() as it:
            first = [tuple(next(it)) for _ in range(5)]
            # the job is running; these rows arrive after it started
            writer.write_arrow(pa.Table.from_pylist([dict(user_id=i, url=f"/b/{i}") for i in range(5, 12)],
                                                    schema=schema))
            await writer.flush()
            started = time.monotonic()
            later = [tuple(next(it)) for _ in range(7)]
            assert time.monotonic() - started < 60
    finally:
        watchdog.cancel()
    assert sorted(first) == [(i, f"/a/{i}") for i in range(5)]
    assert sorted(later) == [(i, f"/b/{i}") for i in range(5, 12)]
