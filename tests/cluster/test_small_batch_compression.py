"""Writers send small batches uncompressed (``writer.compression.min-batch-size``, 16 KiB by default), whatever
the table's codec: the batches the leader stores say which codec each one used, and every reader gets the rows."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import fluss
from fluss import EARLIEST_OFFSET, Schema, TableDescriptor, TablePath
from fluss.record.log_batch import COMPRESSION_NONE, COMPRESSION_ZSTD
from tests.stored_batches import stored_codecs

pytestmark = pytest.mark.asyncio(loop_scope="session")

LOG = pa.schema([("id", pa.int64()), ("name", pa.string())])
KV = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])


def _rows(start: int, n: int, schema: pa.Schema = LOG) -> pa.RecordBatch:
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.record_batch([pa.array(ids), pa.array([f"name-{i}" for i in ids])], schema=schema)


def _stored_codecs(cluster, table: fluss.FlussTable) -> list[tuple[int, int]]:
    path = table.get_table_info().table_path
    return stored_codecs(cluster.bootstrap_servers, path.database_name, path.table_name)


async def _log_table(conn, admin, database, name: str) -> fluss.FlussTable:
    path = TablePath(database, name)
    await admin.create_table(path, TableDescriptor(Schema(LOG), bucket_count=1))
    return await conn.get_table(path)


async def _read(table: fluss.FlussTable) -> list[int]:
    scanner = await table.new_scan().create_record_batch_log_scanner()
    scanner.subscribe_buckets({0: EARLIEST_OFFSET})
    return (await scanner.to_arrow()).column("id").to_pylist()


async def test_a_small_batch_is_stored_uncompressed_and_a_large_one_with_the_tables_codec(cluster, conn, admin,
                                                                                         database):
    table = await _log_table(conn, admin, database, "sizes")
    writer = table.new_append().create_writer()
    small, large = _rows(0, 20), _rows(20, 4000)  # ~0.5 KB and ~100 KB of values
    assert small.nbytes < 16 * 1024 <= large.nbytes
    writer.write_arrow_batch(small)
    await writer.flush()
    writer.write_arrow_batch(large)
    await writer.flush()
    assert _stored_codecs(cluster, table) == [(20, COMPRESSION_NONE), (4000, COMPRESSION_ZSTD)]
    assert await _read(table) == list(range(4020))


async def test_min_batch_size_zero_compresses_every_batch(cluster, admin, database):
    path = TablePath(database, "always")
    await admin.create_table(path, TableDescriptor(Schema(LOG), bucket_count=1))
    config = fluss.Config({"bootstrap.servers": cluster.bootstrap_servers, "writer.compression.min-batch-size": "0"})
    conn = await fluss.FlussConnection.create(config)
    try:
        table = await conn.get_table(path)
        writer = table.new_append().create_writer()
        writer.write_arrow_batch(_rows(0, 20))
        await writer.flush()
        assert _stored_codecs(cluster, table) == [(20, COMPRESSION_ZSTD)]
        assert await _read(table) == list(range(20))
    finally:
        await conn.aclose()


async def test_a_primary_key_tables_small_changelog_batch_is_stored_uncompressed(cluster, conn, admin, database):
    path = TablePath(database, "kv")
    await admin.create_table(path, TableDescriptor(Schema(KV, primary_keys=["id"]), bucket_count=1))
    table = await conn.get_table(path)
    upserts = table.new_upsert().create_writer()
    upserts.upsert_arrow_batch(_rows(0, 3, KV))
    await upserts.flush()
    upserts.upsert_arrow_batch(_rows(0, 4000, KV))
    await upserts.flush()
    # the leader's changelog: +I of 3 rows, then -U/+U of those 3 and +I of the other 3,997 rows in one batch
    assert _stored_codecs(cluster, table) == [(3, COMPRESSION_NONE), (4003, COMPRESSION_ZSTD)]
    lookuper = table.new_lookup().create_lookuper()
    assert (await lookuper.lookup({"id": 2}))["name"] == "name-2"


async def test_a_negative_min_batch_size_is_refused_naming_the_key(cluster, conn, admin, database):
    table = await _log_table(conn, admin, database, "negative")
    config = fluss.Config({"bootstrap.servers": cluster.bootstrap_servers, "writer.compression.min-batch-size": "-1"})
    bad = await fluss.FlussConnection.create(config)
    try:
        with pytest.raises(fluss.FlussError, match="'writer.compression.min-batch-size': a memory size cannot be negative") as e:
            (await bad.get_table(table.get_table_info().table_path)).new_append().create_writer()
        assert e.value.error_code == fluss.ErrorCode.INVALID_CONFIG_EXCEPTION
    finally:
        await bad.aclose()
