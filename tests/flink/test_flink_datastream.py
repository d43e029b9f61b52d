"""The PyFlink DataStream wrappers ``FlussSource`` / ``FlussSink`` (session JVM, session cluster)."""

from __future__ import annotations

import pyarrow as pa

import fluss


async def test_datastream_copies_a_projected_primary_key_table(stream_env, cluster, conn, admin, flink_db):
    from pyflink.common import WatermarkStrategy
    from pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment

    from fluss.flink import add_connector_jars
    from fluss.flink.datastream import FlussSink, FlussSource, FlussStartingOffsets

    src = fluss.TablePath(flink_db, "accounts")
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), ("owner", pa.string()), ("balance", pa.int64())])
    await admin.create_table(src, fluss.TableDescriptor(fluss.Schema(schema, primary_keys=["id"]), bucket_count=2))
    dst = fluss.TablePath(flink_db, "owners")
    dst_schema = pa.schema([pa.field("id", pa.int32(), nullable=False), ("owner", pa.string())])
    await admin.create_table(dst, fluss.TableDescriptor(fluss.Schema(dst_schema, primary_keys=["id"]),
                                                        bucket_count=3))
    writer = (await conn.get_table(src)).new_upsert().create_writer()
    for i in range(1, 6):
        writer.upsert(dict(id=i, owner=f"o{i}", balance=i * 10))
    writer.delete(dict(id=5))
    await writer.flush()

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    env.set_parallelism(2)
    add_connector_jars(env)
    servers = cluster.bootstrap_servers
    source = (FlussSource.builder().set_bootstrap_servers(servers).set_database(flink_db).set_table("accounts")
              .set_starting_offsets(FlussStartingOffsets.full()).set_projected_fields(["id", "owner"])
              .set_bounded().build())
    sink = FlussSink.builder().set_bootstrap_servers(servers).set_database(flink_db).set_table("owners").build()
    env.from_source(source, WatermarkStrategy.no_watermarks(), "accounts").sink_to(sink)
    env.execute("copy accounts")

    lookuper = (await conn.get_table(dst)).new_lookup().create_lookuper()
    try:
        got = [await lookuper.lookup([i]) for i in range(1, 6)]
    finally:
        await lookuper.aclose()
    assert got == [dict(id=i, owner=f"o{i}") for i in range(1, 5)] + [None]

    rows = list(env.from_source(source, WatermarkStrategy.no_watermarks(), "again").execute_and_collect())
    assert sorted(tuple(r) for r in rows) == [(i, f"o{i}") for i in range(1, 5)]
