"""Flink SQL DDL on live tables through the Fluss catalog: ALTER TABLE SET / RESET, and partition DDL
(ADD / SHOW / DROP PARTITION), checked with the Python admin."""

from __future__ import annotations

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
    with pytest.raises(Exception, match="'bucket.num'.*cannot be changed on a live table"):
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
