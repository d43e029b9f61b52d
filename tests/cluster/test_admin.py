"""Databases, tables and partitions through the admin API against a real cluster."""

from __future__ import annotations

import pyarrow as pa
import pytest

import fluss
from fluss import ErrorCode, FlussError, Schema, TableDescriptor, TablePath
from fluss.rpc.gen import fluss_api_pb2 as pb

pytestmark = pytest.mark.asyncio(loop_scope="session")

ALL_TYPES = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    ("b", pa.bool_()), ("t", pa.int8()), ("s", pa.int16()), ("i", pa.int32()), ("f", pa.float32()),
    ("d", pa.float64()), ("str", pa.string()), ("dec", pa.decimal128(20, 4)), ("dt", pa.date32()),
    ("tm", pa.time32("ms")), ("ts", pa.timestamp("us")), ("ltz", pa.timestamp("ms", tz="UTC")),
    ("bin", pa.binary(4)), ("bytes", pa.binary()),
])


async def test_default_database_exists(admin):
    assert "fluss" in await admin.list_databases()
    assert await admin.database_exists("fluss")


async def test_database_lifecycle(admin):
    desc = fluss.DatabaseDescriptor(comment="for tests", custom_properties={"owner": "qa"})
    await admin.create_database("lifecycle_db", desc)
    info = await admin.get_database_info("lifecycle_db")
    assert info.database_name == "lifecycle_db"
    assert info.get_database_descriptor().comment == "for tests"
    assert info.get_database_descriptor().get_custom_properties() == {"owner": "qa"}
    assert info.created_time > 0
    await admin.create_database("lifecycle_db", ignore_if_exists=True)
    with pytest.raises(FlussError) as e:
        await admin.create_database("lifecycle_db")
    assert e.value.error_code == ErrorCode.DATABASE_ALREADY_EXIST

    schema = Schema(pa.schema([("a", pa.int32())]))
    await admin.create_table(TablePath("lifecycle_db", "t1"), TableDescriptor(schema))
    with pytest.raises(FlussError) as e:
        await admin.drop_database("lifecycle_db", cascade=False)
    assert e.value.error_code == ErrorCode.DATABASE_NOT_EMPTY
    assert "t1" in e.value.message
    await admin.drop_database("lifecycle_db", cascade=True)
    assert not await admin.database_exists("lifecycle_db")
    with pytest.raises(FlussError) as e:
        await admin.get_database_info("lifecycle_db")
    assert e.value.error_code == ErrorCode.DATABASE_NOT_EXIST
    await admin.drop_database("lifecycle_db", ignore_if_not_exists=True)


async def test_create_table_keeps_everything(admin, database):
    path = TablePath(database, "orders")
    schema = Schema(ALL_TYPES, primary_keys=["id", "str"])
    desc = TableDescriptor(schema, partition_keys=["str"], bucket_count=4, bucket_keys=["id"], comment="all types",
                           properties={"table.log.ttl": "2d"}, custom_properties={"team": "x"})
    await admin.create_table(path, desc)
    info = await admin.get_table_info(path)
    assert info.table_path == path
    assert info.table_id >= 0 and info.schema_id == 1
    assert info.num_buckets == 4
    assert info.get_primary_keys() == ["id", "str"]
    assert info.get_partition_keys() == ["str"]
    assert info.get_bucket_keys() == ["id"]
    assert info.comment == "all types"
    assert info.get_properties()["table.log.ttl"] == "2d"
    assert info.get_custom_properties() == {"team": "x"}
    assert info.get_schema().get_column_names() == ALL_TYPES.names
    assert info.get_schema().get_column_types() == [  # as the official client shows them
        "bigint NOT NULL", "boolean", "tinyint", "smallint", "int", "float", "double", "string NOT NULL",
        "decimal(20,4)", "date", "time(3)", "timestamp", "timestamp_ltz(3)", "binary(4)", "bytes"]
    assert info.get_schema().to_arrow().field("ltz").type == pa.timestamp("ms", tz="UTC")
    assert await admin.table_exists(path)
    assert await admin.list_tables(database) == ["orders"]


async def test_primary_key_table_defaults_bucket_key_to_pk_without_partition_keys(admin, database):
    path = TablePath(database, "pk_default")
    schema = Schema(pa.schema([("region", pa.string()), ("id", pa.int32()), ("v", pa.string())]),
                    primary_keys=["region", "id"])
    await admin.create_table(path, TableDescriptor(schema, partition_keys=["region"]))
    info = await admin.get_table_info(path)
    assert info.get_bucket_keys() == ["id"]
    assert info.num_buckets == 1  # default.bucket.number


async def test_table_exists_and_not_found_errors(admin, database):
    path = TablePath(database, "t")
    schema = Schema(pa.schema([("a", pa.int32())]))
    await admin.create_table(path, TableDescriptor(schema))
    with pytest.raises(FlussError) as e:
        await admin.create_table(path, TableDescriptor(schema))
    assert e.value.error_code == ErrorCode.TABLE_ALREADY_EXIST
    await admin.create_table(path, TableDescriptor(schema), ignore_if_exists=True)
    await admin.drop_table(path)
    for call in (admin.get_table_info(path), admin.drop_table(path)):
        with pytest.raises(FlussError) as e:
            await call
        assert e.value.error_code == ErrorCode.TABLE_NOT_EXIST
    await admin.drop_table(path, ignore_if_not_exists=True)
    with pytest.raises(FlussError) as e:
        await admin.create_table(TablePath("no_such_db", "t"), TableDescriptor(schema))
    assert e.value.error_code == ErrorCode.DATABASE_NOT_EXIST


def _descriptor(columns, pk=(), **kw) -> TableDescriptor:
    return TableDescriptor(Schema(pa.schema(columns), primary_keys=list(pk)), **kw)


INT_A = [("a", pa.int32()), ("b", pa.string())]
BAD_TABLES = [
    ("bad name!", _descriptor(INT_A), ErrorCode.INVALID_TABLE_EXCEPTION, "bad name!"),
    ("ok", _descriptor(INT_A, bucket_keys=["zzz"]), ErrorCode.INVALID_TABLE_EXCEPTION, "zzz"),
    ("ok", _descriptor(INT_A, pk=["a"], bucket_keys=["b"]), ErrorCode.INVALID_TABLE_EXCEPTION, "b"),
    ("ok", _descriptor(INT_A, partition_keys=["p"]), ErrorCode.INVALID_TABLE_EXCEPTION, "p"),
    ("ok", _descriptor(INT_A, bucket_count=65), ErrorCode.BUCKET_MAX_NUM_EXCEPTION, "max.bucket.num"),
    ("ok", _descriptor(INT_A, properties={"table.log.arrow.compression.type": "GZIP"}),
     ErrorCode.INVALID_CONFIG_EXCEPTION, "GZIP"),
    ("ok", _descriptor(INT_A, properties={"table.replication.factor": "4"}),
     ErrorCode.INVALID_REPLICATION_FACTOR, "4"),
    ("ok", _descriptor(INT_A, properties={"table.log.ttl": "soon"}), ErrorCode.INVALID_CONFIG_EXCEPTION, "soon"),
    # the coordinator applies the tablet servers' rules (the options registry and the merge engine's checks), so
    # a table it accepts never fails to open on a tablet server
    ("ok", _descriptor(INT_A, properties={"table.log.tll": "1d"}), ErrorCode.INVALID_CONFIG_EXCEPTION,
     "did you mean 'table.log.ttl'"),
    ("ok", _descriptor(INT_A, properties={"table.kv.row.ttl": "1h"}),
     ErrorCode.INVALID_CONFIG_EXCEPTION, "not supported yet"),
    ("ok", _descriptor(INT_A, properties={"table.log.local-ttl": "8d"}), ErrorCode.INVALID_CONFIG_EXCEPTION,
     "longer than 'table.log.ttl' (7d)"),
    ("ok", _descriptor(INT_A, properties={"table.log.ttl": "-5s"}), ErrorCode.INVALID_CONFIG_EXCEPTION,
     "table.log.ttl"),
    ("ok", _descriptor(INT_A, properties={"table.log.arrow.compression.zstd.level": "99"}),
     ErrorCode.INVALID_CONFIG_EXCEPTION, "table.log.arrow.compression.zstd.level"),
    ("ok", _descriptor(INT_A, properties={"table.datalake.enabled": "maybe"}), ErrorCode.INVALID_CONFIG_EXCEPTION,
     "table.datalake.enabled"),
    ("ok", _descriptor(INT_A, pk=["a"], properties={"table.merge-engine": "versioned"}),
     ErrorCode.INVALID_CONFIG_EXCEPTION, "table.merge-engine.versioned.ver-column"),
    ("ok", _descriptor(INT_A, pk=["a"], properties={"table.merge-engine": "aggregation", "fields.b.agg": "median"}),
     ErrorCode.INVALID_CONFIG_EXCEPTION, "median"),
    ("ok", _descriptor(INT_A, properties={"table.merge-engine": "first_row"}), ErrorCode.INVALID_CONFIG_EXCEPTION,
     "primary-key table"),
    ("ok", _descriptor(INT_A, comment="x" * (1 << 20)), ErrorCode.INVALID_CONFIG_EXCEPTION, "comment"),
    ("ok", _descriptor(INT_A, custom_properties={f"k{i}": "v" * 60_000 for i in range(12)}),
     ErrorCode.INVALID_CONFIG_EXCEPTION, "metadata"),
]


@pytest.mark.parametrize(("name", "desc", "code", "mentions"), BAD_TABLES)
async def test_bad_table_is_rejected_with_a_clear_error(admin, database, name, desc, code, mentions):
    with pytest.raises(FlussError) as e:
        await admin.create_table(TablePath(database, name), desc)
    assert e.value.error_code == code
    assert mentions in e.value.message
    assert await admin.list_tables(database) == []


async def test_oversized_database_comment_is_refused_clearly(admin):
    with pytest.raises(FlussError) as e:
        await admin.create_database("big_comment_db", fluss.DatabaseDescriptor(comment="c" * (1 << 20)))
    assert e.value.error_code == ErrorCode.INVALID_CONFIG_EXCEPTION and "comment" in e.value.message
    assert not await admin.database_exists("big_comment_db")


async def test_server_rejects_bad_column_definitions(conn, database):
    """What a client library might not catch, the coordinator does: duplicates and unknown types."""
    client = conn.cluster
    cases = [
        ([("a", "INT"), ("a", "STRING")], "duplicate column name 'a'"),
        ([("a", "MULTISET<INT>")], "MULTISET<INT>"),
        ([("a", "ARRAY<INT NOT>")], "ARRAY<INT NOT>"),
        ([("a", "NOT_A_TYPE")], "NOT_A_TYPE"),
        ([], "at least one column"),
    ]
    negative_buckets = pb.TableDescriptorPb(schema=pb.SchemaPb(columns=[pb.ColumnPb(name="a", data_type="INT")]),
                                            bucket_count=-3)
    with pytest.raises(FlussError) as e:
        await conn.run(client.admin_call("CreateTable", pb.CreateTableRequest(
            table_path=pb.TablePathPb(database_name=database, table_name="raw"), descriptor=negative_buckets)))
    assert e.value.error_code == ErrorCode.INVALID_TABLE_EXCEPTION and "at least 1" in e.value.message
    missing_pk = pb.TableDescriptorPb(schema=pb.SchemaPb(columns=[pb.ColumnPb(name="a", data_type="INT")],
                                                         primary_keys=["nope"]))
    with pytest.raises(FlussError) as e:
        await conn.run(client.admin_call("CreateTable", pb.CreateTableRequest(
            table_path=pb.TablePathPb(database_name=database, table_name="raw"), descriptor=missing_pk)))
    assert e.value.error_code == ErrorCode.INVALID_TABLE_EXCEPTION and "nope" in e.value.message
    for columns, mentions in cases:
        desc = pb.TableDescriptorPb(schema=pb.SchemaPb(columns=[pb.ColumnPb(name=n, data_type=t) for n, t in columns]))
        with pytest.raises(FlussError) as e:
            await conn.run(client.admin_call("CreateTable", pb.CreateTableRequest(
                table_path=pb.TablePathPb(database_name=database, table_name="raw"), descriptor=desc)))
        assert mentions in e.value.message, e.value.message
        assert e.value.error_code != ErrorCode.UNKNOWN_SERVER_ERROR


async def test_invalid_database_name(admin):
    for name in ("", "has space", "semi;colon", "x" * 201):
        with pytest.raises(FlussError) as e:
            await admin.create_database(name)
        assert e.value.error_code == ErrorCode.INVALID_DATABASE_EXCEPTION


async def test_schema_errors_are_caught_by_the_client():
    with pytest.raises(FlussError) as e:
        Schema(pa.schema([("a", pa.list_(pa.float16()))]))
    assert "column 'a': element: Arrow type 'halffloat'" in e.value.message
    with pytest.raises(FlussError) as e:
        Schema(pa.schema([("a", pa.int32())]), primary_keys=["nope"])
    assert e.value.error_code == ErrorCode.INVALID_TABLE_EXCEPTION and "nope" in e.value.message


async def test_partitions_lifecycle(admin, database):
    path = TablePath(database, "events")
    schema = Schema(pa.schema([("dt", pa.string()), ("region", pa.string()), ("v", pa.int64())]))
    await admin.create_table(path, TableDescriptor(schema, partition_keys=["dt", "region"], bucket_count=2))
    await admin.create_partition(path, {"dt": "2024-01-01", "region": "us"})
    await admin.create_partition(path, {"dt": "2024-01-01", "region": "eu"})
    await admin.create_partition(path, {"dt": "2024-01-02", "region": "us"})
    parts = await admin.list_partition_infos(path)
    assert sorted(p.partition_name for p in parts) == ["2024-01-01$eu", "2024-01-01$us", "2024-01-02$us"]
    assert len({p.partition_id for p in parts}) == 3
    us = await admin.list_partition_infos(path, {"region": "us"})
    assert sorted(p.partition_name for p in us) == ["2024-01-01$us", "2024-01-02$us"]
    with pytest.raises(FlussError) as e:
        await admin.create_partition(path, {"dt": "2024-01-01", "region": "us"})
    assert e.value.error_code == ErrorCode.PARTITION_ALREADY_EXISTS
    await admin.create_partition(path, {"dt": "2024-01-01", "region": "us"}, ignore_if_exists=True)
    with pytest.raises(FlussError) as e:
        await admin.create_partition(path, {"dt": "2024-01-01"})
    assert e.value.error_code == ErrorCode.PARTITION_SPEC_INVALID_EXCEPTION
    await admin.drop_partition(path, {"dt": "2024-01-01", "region": "eu"})
    assert len(await admin.list_partition_infos(path)) == 2
    with pytest.raises(FlussError) as e:
        await admin.drop_partition(path, {"dt": "2024-01-01", "region": "eu"})
    assert e.value.error_code == ErrorCode.PARTITION_NOT_EXISTS
    await admin.drop_partition(path, {"dt": "2024-01-01", "region": "eu"}, ignore_if_not_exists=True)
    plain = TablePath(database, "plain")
    await admin.create_table(plain, TableDescriptor(schema))
    with pytest.raises(FlussError) as e:
        await admin.create_partition(plain, {"dt": "x"})
    assert e.value.error_code == ErrorCode.TABLE_NOT_PARTITIONED_EXCEPTION


async def test_server_nodes(admin):
    nodes = await admin.get_server_nodes()
    kinds = sorted(n.server_type for n in nodes)
    assert kinds == ["CoordinatorServer", "TabletServer", "TabletServer", "TabletServer"]
    assert sorted(n.uid for n in nodes) == ["cs-0", "ts-0", "ts-1", "ts-2"]
    assert all(n.host == "127.0.0.1" and n.port > 0 for n in nodes)


async def _bucket_metadata(conn, path: TablePath):
    resp = await conn.run(conn.cluster.update_metadata([path]))
    return list(resp.tables[0].buckets)


async def test_replicas_are_spread_and_leaders_balanced(admin, conn, database):
    for rf, buckets in ((3, 6), (2, 6), (1, 3)):
        path = TablePath(database, f"rf{rf}")
        schema = Schema(pa.schema([("a", pa.int32())]))
        await admin.create_table(path, TableDescriptor(schema, bucket_count=buckets,
                                                       properties={"table.replication.factor": str(rf)}))
        meta = await _bucket_metadata(conn, path)
        assert sorted(b.bucket_id for b in meta) == list(range(buckets))
        for b in meta:
            assert len(b.replicas) == rf and len(set(b.replicas)) == rf
            assert b.leader_id == b.replicas[0]
            assert sorted(b.isr) == sorted(b.replicas)
        leaders = [b.leader_id for b in meta]
        counts = [leaders.count(s) for s in (0, 1, 2)]
        assert max(counts) - min(counts) <= 1, counts
        replica_counts = [sum(s in b.replicas for b in meta) for s in (0, 1, 2)]
        assert max(replica_counts) - min(replica_counts) <= 1, replica_counts
