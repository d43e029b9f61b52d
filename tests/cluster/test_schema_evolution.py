"""ALTER TABLE ADD (schema evolution) on the shared cluster: a nullable column appended with a new schema id; data
written before reads back with nulls everywhere (scans, projections, lookups, prefix lookups, the changelog, KV
snapshot scans); writers holding the old schema keep working; refused changes name the column and change nothing."""

from __future__ import annotations

import time

import pyarrow as pa
import pytest

from fluss import (
    EARLIEST_OFFSET,
    ErrorCode,
    FlussError,
    Schema,
    TableBucket,
    TableChange,
    TableDescriptor,
    TablePath,
)
from fluss.server.zk import paths
from fluss.server.zk.client import ZooKeeperClient

pytestmark = pytest.mark.asyncio(loop_scope="session")

LOG = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])
PK = pa.schema([pa.field("k1", pa.int32(), nullable=False), pa.field("k2", pa.string(), nullable=False),
                ("v", pa.string())])


async def _read(table, projection: list[str] | None = None, scanner=None) -> pa.Table:
    if scanner is None:
        scan = table.new_scan()
        if projection:
            scan = scan.project_by_name(projection)
        scanner = await scan.create_record_batch_log_scanner()
    scanner.subscribe_buckets({b: EARLIEST_OFFSET for b in range(table.get_table_info().num_buckets)})
    got = await scanner.to_arrow()
    return got.sort_by("id") if "id" in got.column_names else got


async def _append(table_or_writer, rows: list[dict]) -> None:
    writer = table_or_writer.new_append().create_writer() if hasattr(table_or_writer, "new_append") \
        else table_or_writer
    for r in rows:
        writer.append(r)
    await writer.flush()


async def test_log_table_add_column_old_batches_read_with_nulls(conn, admin, database, cluster):
    path = TablePath(database, "events")
    await admin.create_table(path, TableDescriptor(Schema(LOG), bucket_count=2, comment="events"))
    old_table = await conn.get_table(path)
    old_writer = old_table.new_append().create_writer()
    await _append(old_writer, [{"id": i, "name": f"n{i}"} for i in range(4)])
    long_lived = await old_table.new_scan().create_record_batch_log_scanner()  # created before the ALTER

    await admin.alter_table(path, [TableChange.add_column("score", pa.int32(), "points so far"),
                                   TableChange.add_column("tag", "STRING")])
    info = await admin.get_table_info(path)
    assert info.schema_id == 2 and info.schema_column_counts == [2, 4]
    assert info.get_column_names() == ["id", "name", "score", "tag"]
    assert [c.comment for c in info.row_schema.columns] == [None, None, "points so far", None]
    assert info.comment == "events"

    await _append(old_writer, [{"id": 10, "name": "old writer"}])  # still schema id 1: accepted as it is
    new_table = await conn.get_table(path)
    await _append(new_table, [{"id": 20, "name": "new", "score": 7, "tag": "t"}])

    everything = await _read(new_table)
    assert everything.column_names == ["id", "name", "score", "tag"]
    rows = everything.to_pylist()
    assert [r["id"] for r in rows] == [0, 1, 2, 3, 10, 20]
    assert all(r["score"] is None and r["tag"] is None for r in rows[:5])
    assert rows[5] == {"id": 20, "name": "new", "score": 7, "tag": "t"}

    # projections are indexes into the new schema; an old batch holds none, one or all of the projected columns
    only_new = (await _read(new_table, ["tag", "score"], None)).to_pylist()
    assert sorted(only_new, key=lambda r: r["score"] or 0) == [{"tag": None, "score": None}] * 5 + [
        {"tag": "t", "score": 7}]
    mixed = (await _read(new_table, ["score", "id"])).to_pylist()
    assert mixed[-1] == {"score": 7, "id": 20} and mixed[0] == {"score": None, "id": 0}

    # a reader created before the ALTER keeps its columns, reading batches of the newer schema id too
    kept = await _read(old_table, scanner=long_lived)
    assert kept.column_names == ["id", "name"] and kept.column("id").to_pylist() == [0, 1, 2, 3, 10, 20]

    zk = ZooKeeperClient(cluster.zookeeper_address)
    zk.start()
    try:
        assert sorted(zk._zk.get_children(paths.schemas(database, "events"))) == ["1", "2"]
        reg, schema_json = zk.get_table(database, "events")
    finally:
        zk.close()
    assert reg.schema_id == 2 and [c["name"] for c in schema_json["columns"]] == ["id", "name", "score", "tag"]


async def test_primary_key_table_add_column_lookups_changelog_and_partial_updates(conn, admin, database):
    path = TablePath(database, "kv")
    await admin.create_table(path, TableDescriptor(Schema(PK, primary_keys=["k1", "k2"]), bucket_count=2,
                                                   bucket_keys=["k1"]))
    old_table = await conn.get_table(path)
    old_writer = old_table.new_upsert().create_writer()
    for k2 in ("a", "b"):
        old_writer.upsert({"k1": 1, "k2": k2, "v": f"old-{k2}"})
    old_writer.upsert({"k1": 2, "k2": "a", "v": "old"})
    await old_writer.flush()
    old_lookuper = old_table.new_lookup().create_lookuper()

    await admin.alter_table(path, [TableChange.add_column("price", pa.float64(), "in EUR")])
    table = await conn.get_table(path)
    lookuper = table.new_lookup().create_lookuper()
    assert await lookuper.lookup({"k1": 1, "k2": "a"}) == {"k1": 1, "k2": "a", "v": "old-a", "price": None}

    writer = table.new_upsert().create_writer()
    writer.upsert({"k1": 1, "k2": "a", "v": "new-a", "price": 1.5})
    await writer.flush()
    partial = table.new_upsert().partial_update_by_name(["k1", "k2", "price"]).create_writer()
    partial.upsert({"k1": 1, "k2": "b", "price": 2.5})  # sets only the new column of an old row
    await partial.flush()
    old_writer.upsert({"k1": 2, "k2": "a", "v": "old again"})  # a writer of schema id 1: price stays null
    await old_writer.flush()

    assert await lookuper.lookup({"k1": 1, "k2": "a"}) == {"k1": 1, "k2": "a", "v": "new-a", "price": 1.5}
    assert await lookuper.lookup({"k1": 1, "k2": "b"}) == {"k1": 1, "k2": "b", "v": "old-b", "price": 2.5}
    assert await lookuper.lookup({"k1": 2, "k2": "a"}) == {"k1": 2, "k2": "a", "v": "old again", "price": None}
    # a lookuper created before the ALTER keeps its columns
    assert await old_lookuper.lookup({"k1": 1, "k2": "a"}) == {"k1": 1, "k2": "a", "v": "new-a"}

    prefix = table.new_lookup().lookup_by(["k1"]).create_lookuper()
    got = sorted(await prefix.lookup({"k1": 1}), key=lambda r: r["k2"])
    assert got == [{"k1": 1, "k2": "a", "v": "new-a", "price": 1.5}, {"k1": 1, "k2": "b", "v": "old-b", "price": 2.5}]

    # the changelog: records of schema id 1 (before the ALTER) and 2, all read with the new columns
    scanner = await table.new_scan().create_log_scanner()
    scanner.subscribe_buckets({0: EARLIEST_OFFSET, 1: EARLIEST_OFFSET})
    changelog, deadline = [], time.monotonic() + 15
    while len(changelog) < 9 and time.monotonic() < deadline:
        changelog.extend(r.row for r in await scanner.poll(300))
    assert len(changelog) == 3 + 2 * 3  # 3 inserts, then 3 updates as -U/+U pairs
    assert {(r["k1"], r["k2"], r["v"], r["price"]) for r in changelog} >= {
        (1, "a", "old-a", None), (1, "a", "new-a", 1.5), (1, "b", "old-b", 2.5), (2, "a", "old again", None)}

    # KV snapshot scans of a bucket: old and new rows with the new column
    table_id = table.get_table_info().table_id
    snap_rows = []
    for b in (0, 1):
        scan = table.new_scan().limit(100).create_bucket_batch_scanner(TableBucket(table_id, b))
        snap_rows += (await scan.to_arrow()).to_pylist()
    assert sorted((r["k1"], r["k2"], r["price"]) for r in snap_rows) == [(1, "a", 1.5), (1, "b", 2.5), (2, "a", None)]


@pytest.mark.parametrize("change, words", [
    (TableChange.add_column("n", "INT NOT NULL"), ["'n'", "must be nullable"]),
    (TableChange.add_column("NAME", pa.string()), ["'NAME'", "'name' already exists"]),
    (TableChange.add_column("x", pa.int32(), position="FIRST"), ["'x'", "FIRST", "after the last one"]),
    (TableChange.add_column("__offset", pa.int64()), ["'__offset'", "reserved"]),
    (TableChange.add_column("ptime", pa.int64()), ["'ptime'", "already exists"]),  # a Flink computed column
])
async def test_refused_add_column_names_the_column_and_changes_nothing(admin, database, change, words):
    path = TablePath(database, "t")
    await admin.create_table(path, TableDescriptor(Schema(LOG), bucket_count=1, custom_properties={
        "schema.2.name": "ptime", "schema.2.data-type": "TIMESTAMP_LTZ(3) NOT NULL", "schema.2.expr": "PROCTIME()"}))
    before = await admin.get_table_info(path)
    with pytest.raises(FlussError) as e:
        await admin.alter_table(path, [TableChange.set("table.log.ttl", "1d"), change])
    assert e.value.error_code == ErrorCode.INVALID_ALTER_TABLE_EXCEPTION
    for w in words:
        assert w in e.value.message
    after = await admin.get_table_info(path)
    assert after.schema_id == before.schema_id == 1 and after.get_column_names() == ["id", "name"]
    assert "table.log.ttl" not in after.get_properties()


@pytest.mark.parametrize("fmt", ["INDEXED", "COMPACTED"])
async def test_row_format_tables_add_a_nested_column(conn, admin, database, fmt):
    """Row-format logs and KV values (table.log.format / table.kv.format) of schema id 1 decode with the new
    schema too, and a nested column can be added."""
    log_path, kv_path = TablePath(database, f"rows_{fmt.lower()}"), TablePath(database, f"kv_{fmt.lower()}")
    await admin.create_table(log_path, TableDescriptor(Schema(LOG), bucket_count=1,
                                                       properties={"table.log.format": fmt}))
    await admin.create_table(kv_path, TableDescriptor(Schema(PK, primary_keys=["k1", "k2"]), bucket_count=1,
                                                      properties={"table.kv.format": fmt}))
    await _append(await conn.get_table(log_path), [{"id": 1, "name": "old"}])
    old_kv = (await conn.get_table(kv_path)).new_upsert().create_writer()
    old_kv.upsert({"k1": 1, "k2": "a", "v": "old"})
    await old_kv.flush()
    add = [TableChange.add_column("tags", pa.list_(pa.int32()))]
    await admin.alter_table(log_path, add)
    await admin.alter_table(kv_path, add)

    log_table = await conn.get_table(log_path)
    await _append(log_table, [{"id": 2, "name": "new", "tags": [1, None, 3]}])
    scanner = await log_table.new_scan().project_by_name(["tags", "id"]).create_log_scanner()
    scanner.subscribe_buckets({0: EARLIEST_OFFSET})
    rows, deadline = [], time.monotonic() + 15
    while len(rows) < 2 and time.monotonic() < deadline:
        rows.extend(r.row for r in await scanner.poll(300))
    assert sorted(rows, key=lambda r: r["id"]) == [{"tags": None, "id": 1}, {"tags": [1, None, 3], "id": 2}]

    kv_table = await conn.get_table(kv_path)
    writer = kv_table.new_upsert().create_writer()
    writer.upsert({"k1": 1, "k2": "b", "v": "new", "tags": [7]})
    await writer.flush()
    lookuper = kv_table.new_lookup().create_lookuper()
    assert await lookuper.lookup({"k1": 1, "k2": "a"}) == {"k1": 1, "k2": "a", "v": "old", "tags": None}
    assert await lookuper.lookup({"k1": 1, "k2": "b"}) == {"k1": 1, "k2": "b", "v": "new", "tags": [7]}
