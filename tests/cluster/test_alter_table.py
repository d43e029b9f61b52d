"""ALTER TABLE ... SET / RESET through the admin API against the shared cluster: what may change, what is
refused (naming the option), that a refused request changes nothing, and that the change is stored in ZooKeeper."""

from __future__ import annotations

import pyarrow as pa
import pytest

from fluss import ErrorCode, FlussError, Schema, TableChange, TableDescriptor, TablePath
from fluss.server.zk.client import ZooKeeperClient

pytestmark = pytest.mark.asyncio(loop_scope="session")

ROWS = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])


async def _table(admin, database: str, name: str = "t", **props: str) -> TablePath:
    path = TablePath(database, name)
    await admin.create_table(path, TableDescriptor(Schema(ROWS), bucket_count=2, properties=props,
                                                   custom_properties={"team": "x"}))
    return path


async def test_set_and_reset_change_the_table_and_are_stored_in_zookeeper(admin, database, cluster):
    path = await _table(admin, database, **{"table.log.ttl": "2d"})
    before = await admin.get_table_info(path)
    await admin.alter_table(path, [TableChange.set("table.log.ttl", "3h"),
                                   TableChange.set("table.datalake.freshness", "30s"),
                                   TableChange.set("scan.startup.mode", "latest"),
                                   TableChange.set("owner", "ops")])
    info = await admin.get_table_info(path)
    assert info.get_properties()["table.log.ttl"] == "3h"
    assert info.get_properties()["table.datalake.freshness"] == "30s"
    assert info.get_custom_properties() == {"team": "x", "scan.startup.mode": "latest", "owner": "ops"}
    assert info.modified_time >= before.modified_time and info.created_time == before.created_time
    assert info.table_id == before.table_id and info.schema_id == before.schema_id

    await admin.alter_table(path, [TableChange.reset("table.log.ttl"), TableChange.reset("owner"),
                                   TableChange.reset("never.set")])
    info = await admin.get_table_info(path)
    assert "table.log.ttl" not in info.get_properties()
    assert info.get_custom_properties() == {"team": "x", "scan.startup.mode": "latest"}

    zk = ZooKeeperClient(cluster.zookeeper_address)
    zk.start()
    try:
        reg, _ = zk.get_table(database, "t")
    finally:
        zk.close()
    assert reg.properties == info.get_properties() and reg.custom_properties == info.get_custom_properties()


@pytest.mark.parametrize("change, code, words", [
    (TableChange.set("bucket.num", "4"), ErrorCode.INVALID_ALTER_TABLE_EXCEPTION,  # of future partitions only
     ["'bucket.num'", "it is not partitioned"]),
    (TableChange.set("table.log.arrow.compression.type", "LZ4_FRAME"), ErrorCode.INVALID_ALTER_TABLE_EXCEPTION,
     ["'table.log.arrow.compression.type'", "cannot be changed"]),
    (TableChange.reset("table.merge-engine"), ErrorCode.INVALID_ALTER_TABLE_EXCEPTION, ["'table.merge-engine'"]),
    (TableChange.set("table.datalake.paimon.warehouse", "/tmp/x"), ErrorCode.INVALID_ALTER_TABLE_EXCEPTION,
     ["'table.datalake.paimon.warehouse'"]),
    (TableChange.set("table.log.tll", "1d"), ErrorCode.INVALID_CONFIG_EXCEPTION, ["did you mean 'table.log.ttl'"]),
    (TableChange.set("table.log.ttl", "soon"), ErrorCode.INVALID_CONFIG_EXCEPTION, ["soon", "table.log.ttl"]),
    (TableChange.set("table.log.local-ttl", "1d"), ErrorCode.INVALID_CONFIG_EXCEPTION,
     ["'table.log.local-ttl' (1d)", "longer than 'table.log.ttl' (5h)"]),
    (TableChange.set("table.datalake.enabled", "maybe"), ErrorCode.INVALID_CONFIG_EXCEPTION, ["maybe"]),
    (TableChange.set("bootstrap.servers", "h:1"), ErrorCode.INVALID_ALTER_TABLE_EXCEPTION, ["'bootstrap.servers'"]),
    (TableChange.set("scan.startup.mode", "sometimes"), ErrorCode.INVALID_CONFIG_EXCEPTION, ["sometimes"]),
    (TableChange.set("scan.startp.mode", "latest"), ErrorCode.INVALID_CONFIG_EXCEPTION,
     ["did you mean 'scan.startup.mode'"]),
], ids=lambda x: getattr(x, "key", None))
async def test_refused_change_names_the_option_and_changes_nothing(admin, database, change, code, words):
    path = await _table(admin, database, **{"table.log.ttl": "2d"})
    with pytest.raises(FlussError) as e:
        # a valid change first: the request is all or nothing
        await admin.alter_table(path, [TableChange.set("table.log.ttl", "5h"), change])
    assert e.value.error_code == code, e.value.message
    for word in words:
        assert word in e.value.message
    assert path.table_path_str() in e.value.message
    info = await admin.get_table_info(path)
    assert info.get_properties()["table.log.ttl"] == "2d"
    assert info.get_custom_properties() == {"team": "x"}


async def test_alter_of_a_missing_table(admin, database):
    missing = TablePath(database, "missing")
    with pytest.raises(FlussError) as e:
        await admin.alter_table(missing, [TableChange.set("table.log.ttl", "1d")])
    assert e.value.error_code == ErrorCode.TABLE_NOT_EXIST
    await admin.alter_table(missing, [TableChange.set("table.log.ttl", "1d")], ignore_if_not_exists=True)


async def test_enabling_the_lake_needs_a_lake_configured_cluster(admin, database):
    path = await _table(admin, database)
    with pytest.raises(FlussError) as e:
        await admin.alter_table(path, [TableChange.set("table.datalake.enabled", "true")])
    assert e.value.error_code == ErrorCode.LAKE_STORAGE_NOT_CONFIGURED_EXCEPTION
    assert (await admin.get_table_info(path)).get_properties().get("table.datalake.enabled") is None
