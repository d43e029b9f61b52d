"""Flink DDL as Fluss users write it, through the Fluss catalog: computed columns (``PROCTIME()`` included),
watermarks, column and table comments, CREATE TABLE ... LIKE and CREATE TABLE AS SELECT. What a Fluss table
cannot hold is kept in its custom properties, so the table reads back identically in a new session."""

from __future__ import annotations

import pytest

import fluss

CATALOG = "fluss_catalog"  # created by the session fixtures in conftest.py


def _rows(table_result) -> list[tuple]:
    with table_result.collect() as results:
        return [tuple(r) for r in results]


def _describe(env, table: str) -> dict[str, tuple]:
    return {r[0]: r[1:] for r in _rows(env.execute_sql(f"DESCRIBE {table}"))}


async def test_computed_columns_watermark_and_comments_read_back_in_a_new_session(batch_env, new_stream_env,
                                                                                 cluster, admin, flink_db):
    t = f"{CATALOG}.{flink_db}.clicks"
    batch_env.execute_sql(f"""CREATE TABLE {t} (
        user_id BIGINT NOT NULL COMMENT 'who clicked',
        url STRING,
        log_ts STRING,
        ts AS TO_TIMESTAMP(log_ts) COMMENT 'event time',
        url_len AS CHAR_LENGTH(url),
        ptime AS PROCTIME(),
        WATERMARK FOR ts AS ts - INTERVAL '5' SECOND,
        PRIMARY KEY (user_id) NOT ENFORCED
    ) COMMENT 'clicks of users' WITH ('bucket.num' = '2')""").wait()

    info = await admin.get_table_info(fluss.TablePath(flink_db, "clicks"))
    assert info.get_column_names() == ["user_id", "url", "log_ts"]  # Fluss stores the physical columns
    assert info.comment == "clicks of users"
    custom = info.get_custom_properties()
    assert custom["schema.3.name"] == "ts" and "TO_TIMESTAMP" in custom["schema.3.expr"]
    assert custom["schema.5.expr"] == "PROCTIME()"
    assert custom["schema.watermark.0.rowtime"] == "ts"

    other = new_stream_env(cluster.bootstrap_servers, "other_session")  # a new session reads it back
    described = _describe(other, f"other_session.{flink_db}.clicks")
    assert list(described) == ["user_id", "url", "log_ts", "ts", "url_len", "ptime"]
    assert described["ts"][0] == "TIMESTAMP(3) *ROWTIME*"
    assert described["ts"][3] == "AS TO_TIMESTAMP(`log_ts`)"
    assert described["ts"][4] == "`ts` - INTERVAL '5' SECOND"
    assert described["ptime"][0] == "TIMESTAMP_LTZ(3) *PROCTIME*"
    assert described["user_id"][-1] == "who clicked" and described["ts"][-1] == "event time"
    shown = _rows(other.execute_sql(f"SHOW CREATE TABLE other_session.{flink_db}.clicks"))[0][0]
    assert "COMMENT 'clicks of users'" in shown and "schema.3" not in shown

    batch_env.execute_sql(f"INSERT INTO {t} VALUES (1, 'https://a', '2024-01-01 10:00:00'), "
                          "(2, 'https://bb', '2024-01-01 10:00:05')").wait()
    rows = sorted(_rows(batch_env.execute_sql(f"SELECT user_id, url_len, CAST(ts AS STRING) FROM {t}")))
    assert rows == [(1, 9, "2024-01-01 10:00:00.000"), (2, 10, "2024-01-01 10:00:05.000")]


async def test_create_table_like_and_as_select(batch_env, admin, flink_db):
    c = f"{CATALOG}.{flink_db}"
    batch_env.execute_sql("""CREATE TEMPORARY TABLE datagen_events (
        user_id BIGINT, item_id BIGINT, behavior STRING, dt STRING)
        WITH ('connector' = 'datagen', 'number-of-rows' = '20', 'fields.dt.length' = '1')""").wait()
    batch_env.execute_sql(f"CREATE TABLE {c}.events LIKE datagen_events (EXCLUDING OPTIONS)").wait()
    info = await admin.get_table_info(fluss.TablePath(flink_db, "events"))
    assert info.get_column_names() == ["user_id", "item_id", "behavior", "dt"]

    batch_env.execute_sql(f"INSERT INTO {c}.events SELECT * FROM datagen_events").wait()
    batch_env.execute_sql(f"CREATE TABLE {c}.per_user WITH ('bucket.num' = '1') AS "
                          f"SELECT user_id, COUNT(*) AS n FROM {c}.events GROUP BY user_id").wait()
    info = await admin.get_table_info(fluss.TablePath(flink_db, "per_user"))
    assert info.get_column_names() == ["user_id", "n"] and info.num_buckets == 1
    assert sum(r[0] for r in _rows(batch_env.execute_sql(f"SELECT n FROM {c}.per_user"))) == 20


async def test_metadata_columns_and_reserved_keys_are_refused(batch_env, flink_db):
    c = f"{CATALOG}.{flink_db}"
    with pytest.raises(Exception, match="metadata column"):
        batch_env.execute_sql(f"CREATE TABLE {c}.m (a INT, ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp')").wait()
    with pytest.raises(Exception, match="'schema.0.name' is reserved"):
        batch_env.execute_sql(f"CREATE TABLE {c}.r (a INT) WITH ('schema.0.name' = 'x')").wait()
