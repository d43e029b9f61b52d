"""ALTER TABLE SET bucket.num on a partitioned table against the shared cluster: partitions created afterwards get
the new count, existing ones keep theirs, and writers, scanners and (prefix) lookups route each partition by its
own count, also a client whose table info predates the change; the tablet server checks writes against the
partition's count; non-partitioned tables and bad values are refused."""

from __future__ import annotations

import asyncio
import time

import pyarrow as pa
import pytest

import fluss
from fluss import EARLIEST_OFFSET, ErrorCode, FlussError, Schema, TableChange, TableDescriptor, TablePath
from fluss.key.bucketing import bucket_ids
from fluss.record.log_batch import build_batch
from fluss.rpc.gen import fluss_api_pb2 as pb

pytestmark = pytest.mark.asyncio(loop_scope="session")

EVENTS = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()),
                    pa.field("day", pa.string(), nullable=False)])
USERS = pa.schema([pa.field("user", pa.int64(), nullable=False), pa.field("seq", pa.int32(), nullable=False),
                   ("name", pa.string()), pa.field("day", pa.string(), nullable=False)])


async def _partition_counts(admin, path: TablePath) -> dict[str, int]:
    return {p.partition_name: p.bucket_count for p in await admin.list_partition_infos(path)}


async def _scan_partitions(table, counts: dict[int, int], expected: int) -> list[dict]:
    """Every record of the partitions ``{partition id: bucket count}``, read from the start of each bucket."""
    scanner = await table.new_scan().create_log_scanner()
    scanner.subscribe_partition_buckets({(pid, b): EARLIEST_OFFSET for pid, n in counts.items() for b in range(n)})
    got: list[dict] = []
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        records = await scanner.poll(300)
        got.extend(r.row | {"_bucket": tb.bucket_id} for tb in records.buckets() for r in records.records(tb))
        if len(got) >= expected and not records.count():  # and nothing more came
            break
    return got


async def test_log_table_new_partitions_get_the_new_count_and_every_partition_routes_by_its_own(
        conn, admin, database, cluster):
    path = TablePath(database, "events")
    await admin.create_table(path, TableDescriptor(Schema(EVENTS), partition_keys=["day"], bucket_count=2,
                                                   bucket_keys=["id"]))
    await admin.create_partition(path, {"day": "d1"})
    table = await conn.get_table(path)  # its table info says 2 buckets, also after the ALTER
    writer = table.new_append().create_writer()
    rows = [{"id": i, "v": f"a{i}", "day": "d1"} for i in range(40)]
    writer.write_arrow_batch(pa.RecordBatch.from_pylist(rows, EVENTS))
    await writer.flush()

    await admin.alter_table(path, [TableChange.set("bucket.num", "4")])
    assert (await admin.get_table_info(path)).num_buckets == 4
    await admin.create_partition(path, {"day": "d2"})
    assert await _partition_counts(admin, path) == {"d1": 2, "d2": 4}
    meta = await conn.run(conn.cluster.update_metadata([path], partitions=[(path, "d1"), (path, "d2")]))
    assert sorted((p.partition_name, len(p.buckets), p.bucket_count) for p in meta.partitions) == \
        [("d1", 2, 2), ("d2", 4, 4)]

    # the writer made before the ALTER: one batch over d1 (2 buckets), d2 (4) and d3 (created by the writer: 4)
    more = [{"id": i, "v": f"b{i}", "day": ("d1", "d2", "d3")[i % 3]} for i in range(40, 160)]
    writer.write_arrow_batch(pa.RecordBatch.from_pylist(more, EVENTS))
    for r in more[:9]:
        writer.append(r | {"id": r["id"] + 1000})
    await writer.flush()
    assert await _partition_counts(admin, path) == {"d1": 2, "d2": 4, "d3": 4}

    written = rows + more + [r | {"id": r["id"] + 1000} for r in more[:9]]
    ids = {p.partition_name: p.partition_id for p in await admin.list_partition_infos(path)}
    got = await _scan_partitions(table, {ids["d1"]: 2, ids["d2"]: 4, ids["d3"]: 4}, len(written))
    assert sorted((r["id"], r["v"], r["day"]) for r in got) == sorted((r["id"], r["v"], r["day"]) for r in written)
    for r in got:  # each row in the bucket its partition's count gives
        n = 2 if r["day"] == "d1" else 4
        assert r["_bucket"] == int(bucket_ids(pa.RecordBatch.from_pylist([{"id": r["id"]}]), [0], n)[0])
    assert {r["_bucket"] for r in got if r["day"] == "d2"} == {0, 1, 2, 3}

    # a new client learns the counts from the metadata alone
    async with await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": cluster.bootstrap_servers})) \
            as fresh:
        fresh_table = await fresh.get_table(path)
        fresh_writer = fresh_table.new_append().create_writer()
        fresh_writer.write_arrow_batch(pa.RecordBatch.from_pylist(
            [{"id": i, "v": "c", "day": ("d1", "d2")[i % 2]} for i in range(500, 540)], EVENTS))
        await fresh_writer.flush()
        offsets = await fresh.get_admin().list_partition_offsets(path, "d2", [0, 1, 2, 3], fluss.OffsetSpec.latest())
        assert sorted(offsets) == [0, 1, 2, 3]
        with pytest.raises(FlussError) as e:
            await fresh.get_admin().list_partition_offsets(path, "d1", [2], fluss.OffsetSpec.latest())
        assert e.value.error_code == ErrorCode.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION and "(2 buckets)" in e.value.message
    scanner = await table.new_scan().create_log_scanner()
    scanner.subscribe_partition(ids["d2"], 3, EARLIEST_OFFSET)  # bucket 3 exists in d2 only
    with pytest.raises(FlussError) as e:
        scanner.subscribe_partition(ids["d1"], 3, EARLIEST_OFFSET)
    assert e.value.error_code == ErrorCode.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION
    assert (await admin.get_table_stats(path)).row_count == len(written) + 40


async def test_tablet_server_checks_routing_by_the_partitions_own_count(conn, admin, database):
    path = TablePath(database, "guarded")
    await admin.create_table(path, TableDescriptor(Schema(EVENTS), partition_keys=["day"], bucket_count=2,
                                                   bucket_keys=["id"]))
    await admin.create_partition(path, {"day": "old"})
    await admin.alter_table(path, [TableChange.set("bucket.num", "4")])
    table_id = (await admin.get_table_info(path)).table_id
    pid = {p.partition_name: p.partition_id for p in await admin.list_partition_infos(path)}["old"]
    meta = await conn.run(conn.cluster.update_metadata([path], partitions=[(path, "old")]))
    leaders = {b.bucket_id: b.leader_id for p in meta.partitions for b in p.buckets}
    # a key of bucket 1 of 2 that is in bucket 3 of 4: only a server checking by the partition's own count takes it
    ids = [i for i in range(100) if bucket_ids(pa.RecordBatch.from_pylist([{"id": i}]), [0], 2)[0] == 1
           and bucket_ids(pa.RecordBatch.from_pylist([{"id": i}]), [0], 4)[0] == 3]
    rows = pa.RecordBatch.from_pylist([{"id": ids[0], "v": "x", "day": "old"}], EVENTS)

    async def produce(bucket: int) -> pb.ProduceBucketResultPb:
        address = conn.cluster.servers[leaders[bucket]].address
        req = pb.ProduceLogRequest(acks=-1, table_id=table_id, timeout_ms=5000, buckets=[pb.ProduceBucketPb(
            partition_id=pid, bucket_id=bucket, records=build_batch(rows, schema_id=1))])
        for _ in range(50):
            result = (await conn.run(conn.cluster.tablet_call(address, "ProduceLog", req))).buckets[0]
            if result.error.code != ErrorCode.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION:
                return result
            await asyncio.sleep(0.1)
        return result

    assert leaders.keys() == {0, 1}  # the old partition has no bucket 3
    refused = await produce(0)  # routed by neither count: refused
    assert refused.error.code == ErrorCode.CORRUPT_RECORD_EXCEPTION and "of 2" in refused.error.message
    assert (await produce(1)).error.code == 0  # its own count: accepted


async def test_primary_key_table_lookups_find_every_key_in_partitions_of_both_counts(conn, admin, database, cluster):
    path = TablePath(database, "users")
    await admin.create_table(path, TableDescriptor(Schema(USERS, primary_keys=["user", "seq", "day"]),
                                                   partition_keys=["day"], bucket_count=2, bucket_keys=["user"]))
    table = await conn.get_table(path)
    old_lookuper = table.new_lookup().create_lookuper()  # made before the ALTER, with 2 buckets in its table info
    writer = table.new_upsert().create_writer()
    first = [{"user": u, "seq": s, "name": f"n{u}.{s}", "day": "d1"} for u in range(30) for s in range(2)]
    for r in first:
        writer.upsert(r)
    await writer.flush()

    await admin.alter_table(path, [TableChange.set("bucket.num", "4")])
    second = [{"user": u, "seq": s, "name": f"m{u}.{s}", "day": "d2"} for u in range(30) for s in range(2)]
    for r in second:  # d2 is created by the writer, with 4 buckets
        writer.upsert(r)
    writer.upsert({"user": 0, "seq": 0, "name": "changed", "day": "d1"})
    await writer.flush()
    assert await _partition_counts(admin, path) == {"d1": 2, "d2": 4}
    expected = {(r["user"], r["seq"], r["day"]): r for r in first + second}
    expected[(0, 0, "d1")] = {"user": 0, "seq": 0, "name": "changed", "day": "d1"}

    async with await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": cluster.bootstrap_servers})) \
            as fresh:
        fresh_table = await fresh.get_table(path)
        for lookuper in (old_lookuper, table.new_lookup().create_lookuper(), fresh_table.new_lookup().create_lookuper()):
            got = await asyncio.gather(*(lookuper.lookup({"user": u, "seq": s, "day": d}) for u, s, d in expected))
            assert got == list(expected.values())
            assert await lookuper.lookup({"user": 99, "seq": 0, "day": "d2"}) is None
        prefix = fresh_table.new_lookup().lookup_by(["day", "user"]).create_lookuper()
        for day in ("d1", "d2"):
            for user in range(30):
                rows = await prefix.lookup({"day": day, "user": user})
                assert sorted(r["seq"] for r in rows) == [0, 1]
                assert all(r == expected[(user, r["seq"], day)] for r in rows)

    ids = {p.partition_name: p.partition_id for p in await admin.list_partition_infos(path)}
    changelog = await _scan_partitions(table, {ids["d1"]: 2, ids["d2"]: 4}, len(first) + len(second) + 2)
    assert len(changelog) == len(first) + len(second) + 2  # +I each, -U/+U for the update
    assert (await admin.get_table_stats(path)).row_count == len(expected)


async def test_bucket_num_changes_that_are_refused(admin, database):
    plain = TablePath(database, "plain")
    await admin.create_table(plain, TableDescriptor(Schema(EVENTS), bucket_count=2))
    with pytest.raises(FlussError) as e:
        await admin.alter_table(plain, [TableChange.set("bucket.num", "4")])
    assert e.value.error_code == ErrorCode.INVALID_ALTER_TABLE_EXCEPTION
    assert "it is not partitioned" in e.value.message and "misplace every key" in e.value.message
    assert (await admin.get_table_info(plain)).num_buckets == 2

    parted = TablePath(database, "parted")
    await admin.create_table(parted, TableDescriptor(Schema(EVENTS), partition_keys=["day"], bucket_count=2))
    for value, code, words in (("0", ErrorCode.INVALID_CONFIG_EXCEPTION, "bucket.num"),
                               ("-3", ErrorCode.INVALID_CONFIG_EXCEPTION, "bucket.num"),
                               ("four", ErrorCode.INVALID_CONFIG_EXCEPTION, "bucket.num"),
                               ("65", ErrorCode.INVALID_ALTER_TABLE_EXCEPTION, "max.bucket.num (64)")):
        with pytest.raises(FlussError) as e:
            await admin.alter_table(parted, [TableChange.set("bucket.num", value)])
        assert e.value.error_code == code and words in e.value.message, (value, e.value)
    with pytest.raises(FlussError) as e:
        await admin.alter_table(parted, [TableChange.reset("bucket.num")])
    assert e.value.error_code == ErrorCode.INVALID_ALTER_TABLE_EXCEPTION and "reset" in e.value.message
    assert (await admin.get_table_info(parted)).num_buckets == 2  # nothing changed
    await admin.alter_table(parted, [TableChange.set("bucket.num", "2")])  # its current count: a no-op
    await admin.alter_table(parted, [TableChange.set("bucket.num", "64")])
    assert (await admin.get_table_info(parted)).num_buckets == 64
