"""Flink SQL DDL on live tables through the Fluss catalog: ALTER TABLE SET / RESET (also while a streaming job
reads the table and a writer writes it), watermarks and computed columns added, changed and dropped, and partition
DDL (ADD / SHOW / DROP PARTITION), checked with the Python admin."""

from __future__ import annotations

import threading

import pyarrow as pa
import pytest

import fluss

CATALOG = "fluss_catalog"  # created by the session fixtures in conftest.py


def _rows(table_result) -> list[tuple]:
    with table_result.collect() as results:
        return [tuple(r) for r in results]


async def test_alter_table_set_and_reset_options(batch_env, admin, flink_db):
    t = f"{CATALOG}.{flink_db}.orders"
    batch_env.execute_sql(f"CREATE TABLE {t} (id BIGINT, amount INT) WITH ('bucket.num' = '2')").wait()
    batch_env.execute_sql(f"ALTER TABLE {t} SET ('table.log.ttl' = '3h', 'table.datalake.freshness' = '1min', "
                          "'scan.startup.mode' = 'latest')").wait()
    info = await admin.get_table_info(fluss.TablePath(flink_db, "orders"))
    assert info.get_properties()["table.log.ttl"] == "3h"
    assert info.get_properties()["table.datalake.freshness"] == "1min"
    assert info.get_custom_properties()["scan.startup.mode"] == "latest"
    shown = _rows(batch_env.execute_sql(f"SHOW CREATE TABLE {t}"))[0][0]
    assert "'table.log.ttl' = '3h'" in shown and "'scan.startup.mode' = 'latest'" in shown

    batch_env.execute_sql(f"ALTER TABLE {t} RESET ('table.log.ttl', 'scan.startup.mode')").wait()
    info = await admin.get_table_info(fluss.TablePath(flink_db, "orders"))
    assert "table.log.ttl" not in info.get_properties()
    assert "scan.startup.mode" not in info.get_custom_properties()
    assert info.get_properties()["table.datalake.freshness"] == "1min"


async def test_alter_table_refuses_what_cannot_change(batch_env, admin, flink_db):
    t = f"{CATALOG}.{flink_db}.fixed"
    batch_env.execute_sql(f"CREATE TABLE {t} (id BIGINT, amount INT) WITH ('bucket.num' = '2')").wait()
    with pytest.raises(Exception, match="'bucket.num'.*it is not partitioned"):
        batch_env.execute_sql(f"ALTER TABLE {t} SET ('table.log.ttl' = '1h', 'bucket.num' = '4')").wait()
    with pytest.raises(Exception, match="did you mean 'table.log.ttl'"):
        batch_env.execute_sql(f"ALTER TABLE {t} SET ('table.log.tll' = '1h')").wait()
    with pytest.raises(Exception, match="RENAME|rename"):
        batch_env.execute_sql(f"ALTER TABLE {t} RENAME TO other").wait()
    info = await admin.get_table_info(fluss.TablePath(flink_db, "fixed"))
    assert "table.log.ttl" not in info.get_properties() and info.num_buckets == 2


async def test_partition_ddl_add_show_drop(batch_env, admin, flink_db):
    t = f"{CATALOG}.{flink_db}.sales"
    batch_env.execute_sql(f"CREATE TABLE {t} (id BIGINT, dt STRING, nation STRING) "
                          "PARTITIONED BY (dt, nation) WITH ('bucket.num' = '1')").wait()
    for dt, nation in [("2025-03-05", "US"), ("2025-03-05", "FR"), ("2025-03-06", "US")]:
        batch_env.execute_sql(f"ALTER TABLE {t} ADD PARTITION (dt = '{dt}', nation = '{nation}')").wait()
    batch_env.execute_sql(f"ALTER TABLE {t} ADD IF NOT EXISTS PARTITION (dt = '2025-03-06', nation = 'US')").wait()

    assert sorted(_rows(batch_env.execute_sql(f"SHOW PARTITIONS {t}"))) == [
        ("dt=2025-03-05/nation=FR",), ("dt=2025-03-05/nation=US",), ("dt=2025-03-06/nation=US",)]
    assert sorted(_rows(batch_env.execute_sql(f"SHOW PARTITIONS {t} PARTITION (dt = '2025-03-05')"))) == [
        ("dt=2025-03-05/nation=FR",), ("dt=2025-03-05/nation=US",)]

    batch_env.execute_sql(f"ALTER TABLE {t} DROP PARTITION (dt = '2025-03-05', nation = 'FR')").wait()
    batch_env.execute_sql(f"ALTER TABLE {t} DROP IF EXISTS PARTITION (dt = '2025-03-05', nation = 'FR')").wait()
    names = sorted(p.partition_name for p in await admin.list_partition_infos(fluss.TablePath(flink_db, "sales")))
    assert names == ["2025-03-05$US", "2025-03-06$US"]
    with pytest.raises(Exception, match="(?i)partition"):
        batch_env.execute_sql(f"ALTER TABLE {t} DROP PARTITION (dt = '2025-03-05', nation = 'FR')").wait()


async def test_bucket_num_of_future_partitions_routes_sink_source_and_lookup_per_partition(batch_env, admin, conn,
                                                                                            flink_db):
    """ALTER TABLE SET ('bucket.num') on a partitioned table: the partition created afterwards has the new count,
    the old keeps its own; the Flink sink writes both (the tablet servers check its routing), a batch read and a
    point query read them back, and the Python client finds every key."""
    t = f"{CATALOG}.{flink_db}.visits"
    path = fluss.TablePath(flink_db, "visits")
    batch_env.execute_sql(f"CREATE TABLE {t} (id BIGINT, dt STRING, v STRING, PRIMARY KEY (id, dt) NOT ENFORCED) "
                          "PARTITIONED BY (dt) WITH ('bucket.num' = '2')").wait()
    values = ", ".join(f"({i}, 'a', 'a{i}')" for i in range(20))
    batch_env.execute_sql(f"INSERT INTO {t} VALUES {values}").wait()
    batch_env.execute_sql(f"ALTER TABLE {t} SET ('bucket.num' = '4')").wait()
    values = ", ".join(f"({i}, '{dt}', '{dt}{i}')" for i in range(20, 40) for dt in ("a", "b"))
    batch_env.execute_sql(f"INSERT INTO {t} VALUES {values}").wait()  # partition b is created with 4 buckets
    counts = {p.partition_name: p.bucket_count for p in await admin.list_partition_infos(path)}
    assert counts == {"a": 2, "b": 4}
    assert "'bucket.num' = '4'" in _rows(batch_env.execute_sql(f"SHOW CREATE TABLE {t}"))[0][0]

    expected = sorted([(i, "a", f"a{i}") for i in range(40)] + [(i, "b", f"b{i}") for i in range(20, 40)])
    assert sorted(_rows(batch_env.execute_sql(f"SELECT id, dt, v FROM {t}"))) == expected
    assert _rows(batch_env.execute_sql(f"SELECT v FROM {t} WHERE id = 33 AND dt = 'b'")) == [("b33",)]
    assert _rows(batch_env.execute_sql(f"SELECT v FROM {t} WHERE id = 3 AND dt = 'a'")) == [("a3",)]
    lookuper = (await conn.get_table(path)).new_lookup().create_lookuper()
    for i, dt, v in expected:
        assert await lookuper.lookup({"id": i, "dt": dt}) == {"id": i, "dt": dt, "v": v}


async def test_alter_watermarks_and_computed_columns(batch_env, admin, flink_db):
    t = f"{CATALOG}.{flink_db}.events"
    batch_env.execute_sql(f"CREATE TABLE {t} (id BIGINT, ts TIMESTAMP(3)) WITH ('bucket.num' = '1')").wait()

    def described() -> dict[str, tuple]:
        return {r[0]: r[1:] for r in _rows(batch_env.execute_sql(f"DESCRIBE {t}"))}

    batch_env.execute_sql(f"ALTER TABLE {t} ADD (d AS CAST(ts AS DATE), "
                          "WATERMARK FOR ts AS ts - INTERVAL '10' SECOND)").wait()
    assert list(described()) == ["id", "ts", "d"]
    assert described()["ts"][4] == "`ts` - INTERVAL '10' SECOND"
    batch_env.execute_sql(f"ALTER TABLE {t} MODIFY WATERMARK FOR ts AS ts - INTERVAL '20' SECOND").wait()
    assert described()["ts"][4] == "`ts` - INTERVAL '20' SECOND"
    batch_env.execute_sql(f"ALTER TABLE {t} DROP WATERMARK").wait()
    batch_env.execute_sql(f"ALTER TABLE {t} DROP d").wait()
    assert list(described()) == ["id", "ts"] and described()["ts"][4] is None
    info = await admin.get_table_info(fluss.TablePath(flink_db, "events"))
    assert not [k for k in info.get_custom_properties() if k.startswith("schema.")]

    with pytest.raises(Exception, match="not supported by Fluss tables yet"):
        batch_env.execute_sql(f"ALTER TABLE {t} DROP id").wait()
    with pytest.raises(Exception, match="'schema.0.name' is reserved"):
        batch_env.execute_sql(f"ALTER TABLE {t} SET ('schema.0.name' = 'x')").wait()


async def test_alter_while_a_streaming_job_reads_and_a_writer_writes(stream_env, conn, admin, flink_db):
    path = fluss.TablePath(flink_db, "live")
    schema = pa.schema([("id", pa.int64())])
    await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(schema), bucket_count=2))
    writer = (await conn.get_table(path)).new_append().create_writer()
    writer.write_arrow(pa.Table.from_pylist([{"id": i} for i in range(5)], schema=schema))
    await writer.flush()

    result = stream_env.execute_sql(f"SELECT id FROM {CATALOG}.{flink_db}.live")
    job = result.get_job_client()
    watchdog = threading.Timer(90, job.cancel)  # never hang the suite: cancelling ends the iterator
    watchdog.start()
    try:
        with result.collect() as it:
            first = [next(it)[0] for _ in range(5)]
            await admin.alter_table(path, [fluss.TableChange.set("table.log.ttl", "1d"),
                                           fluss.TableChange.set("table.datalake.freshness", "1min"),
                                           fluss.TableChange.add_column("note", pa.string())])
            writer.write_arrow(pa.Table.from_pylist([{"id": i} for i in range(5, 12)], schema=schema))
            await writer.flush()  # the writer that started before the ALTER keeps working (schema id 1)
            fresh = (await conn.get_table(path)).new_append().create_writer()
            fresh.append({"id": 12, "note": "new"})  # schema id 2: the job keeps its one column
            await fresh.flush()
            later = [next(it)[0] for _ in range(8)]
    finally:
        watchdog.cancel()
    assert sorted(first) == list(range(5)) and sorted(later) == list(range(5, 13))
    assert (await admin.get_table_info(path)).get_properties()["table.log.ttl"] == "1d"


async def test_alter_table_add_column(batch_env, conn, admin, flink_db):
    t = f"{CATALOG}.{flink_db}.scores"
    path = fluss.TablePath(flink_db, "scores")
    batch_env.execute_sql(f"CREATE TABLE {t} (id BIGINT, name STRING) WITH ('bucket.num' = '2')").wait()
    old = (await conn.get_table(path)).new_append().create_writer()
    for i, name in ((1, "a"), (2, "b")):
        old.append({"id": i, "name": name})  # batches of schema id 1
    await old.flush()
    batch_env.execute_sql(f"ALTER TABLE {t} ADD (score INT COMMENT 'points', tag STRING)").wait()
    info = await admin.get_table_info(path)
    assert info.get_column_names() == ["id", "name", "score", "tag"] and info.schema_id == 2
    assert info.row_schema.columns[2].comment == "points"
    batch_env.execute_sql(f"INSERT INTO {t} VALUES (3, 'c', 30, 'x')").wait()  # the sink writes schema id 2
    # a projection of the new schema: schema id 1 bodies hold only `id` of it, the rest is null
    assert sorted(_rows(batch_env.execute_sql(f"SELECT tag, id, score FROM {t}")), key=lambda r: r[1]) == [
        (None, 1, None), (None, 2, None), ("x", 3, 30)]
    with pytest.raises(Exception, match="must be nullable"):
        batch_env.execute_sql(f"ALTER TABLE {t} ADD z INT NOT NULL").wait()
    with pytest.raises(Exception, match="FIRST"):
        batch_env.execute_sql(f"ALTER TABLE {t} ADD z INT FIRST").wait()
    assert (await admin.get_table_info(path)).schema_id == 2
