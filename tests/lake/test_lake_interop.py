"""Lake tables that Paimon itself can trust (issue 22): tables of a Paimon lake cluster are bucketed by Paimon's own
bucket function, so Paimon readers with key filters (pypaimon, and Paimon's Java reader through Flink's Paimon
catalog) find every key, a Paimon writer lands in the same bucket as the tiering job, lookups route the same way,
the servers refuse rows routed by another function, and the tiering job's compaction and snapshot expiry keep
Union Read exact.

On the lake cluster of ``conftest.py`` (its tables get ``table.bucket.function = paimon``); the refusal test also
uses the session's plain cluster (``default`` bucketing).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa
import pytest
from flink_paimon import point_reads
from lake_helpers import ACCOUNTS, append, apply_ops, by_id, create, paimon_rows, paimon_table, tier
from pypaimon import CatalogFactory
from pypaimon import Schema as PaimonSchema

from fluss import ErrorCode, FlussError, OffsetSpec, Schema, TableBucket, TableDescriptor, TablePath
from fluss.key.bucket_function import DefaultBucketing, PaimonBucketing, bucketing_of
from fluss.lake.snapshot import get_latest_lake_snapshot
from fluss.lake.union_read import union_read

pytestmark = pytest.mark.asyncio(loop_scope="session")

BY_REGION = pa.schema([pa.field("region", pa.string(), nullable=False), pa.field("id", pa.int32(), nullable=False),
                       ("score", pa.float64())])
CLICKS = pa.schema([pa.field("user", pa.string()), ("url", pa.string()), ("n", pa.int64())])
ORDERS = pa.schema([pa.field("day", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                    ("amount", pa.int64())])
EVENTS = pa.schema([pa.field("id", pa.int64(), nullable=False), ("tag", pa.string())])


def paimon_arrow_schema_of(table) -> pa.Schema:
    """The Arrow schema of a Paimon table, as pypaimon's writer wants its input."""
    from pypaimon.schema.data_types import PyarrowFieldParser

    return PyarrowFieldParser.from_paimon_schema(table.table_schema.fields)


def pypaimon_point_read(table, **equal) -> tuple[pa.Table, set[int]]:
    """The rows pypaimon returns from a Paimon ``table`` with ``equal`` key filters (ANDed), and the buckets its
    plan kept (each read plans afresh from the latest snapshot)."""
    builder = table.new_read_builder()
    factory = builder.new_predicate_builder()
    terms = [factory.equal(k, v) for k, v in equal.items()]
    builder = builder.with_filter(terms[0] if len(terms) == 1 else factory.and_predicates(terms))
    splits = builder.new_scan().plan().splits()
    rows = builder.new_read().to_arrow(splits) if splits else pa.table({k: [] for k in equal})
    return rows, {s.bucket for s in splits}


def old_placement_table(warehouse: str, database: str, name: str, ids: list[int], buckets: int) -> None:
    """A Paimon table like those written before Paimon bucketing: bucket-key ``id``, but each row put in the
    bucket this project's own function chose (the tiering job wrote Fluss bucket b into Paimon bucket b)."""
    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database(database, True)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("tag", pa.string())])
    catalog.create_table(f"{database}.{name}", PaimonSchema.from_pyarrow_schema(
        schema, options={"bucket": str(buckets), "bucket-key": "id"}), False)
    table = catalog.get_table(f"{database}.{name}")
    data = pa.table({"id": pa.array(ids, pa.int64()), "tag": [f"t{i}" for i in ids]}, schema=schema)
    placed = DefaultBucketing().bucket_ids(data, [0], buckets)
    builder = table.new_batch_write_builder()
    write, commit = builder.new_write(), builder.new_commit()
    for b in range(buckets):
        part = data.filter(pa.array(placed == b))
        if part.num_rows:
            write.write_arrow(part, bucket=b)
    commit.commit(write.prepare_commit())
    write.close()
    commit.close()


# ---------------------------------------------------------------- the table's bucket function


async def test_every_table_of_a_lake_cluster_records_paimon_bucketing(lake_conn, lake_db, admin, database):
    lake_admin = lake_conn.get_admin()
    plain = TablePath(lake_db, "not_lake_enabled")  # not lake-enabled: bucketed for the lake all the same
    await lake_admin.create_table(plain, TableDescriptor(Schema(EVENTS, primary_keys=["id"]), bucket_count=2))
    props = (await lake_admin.get_table_info(plain)).get_properties()
    assert props["table.bucket.function"] == "paimon" and props["table.datalake.format"] == "paimon"

    with pytest.raises(FlussError) as e:  # the function is the server's to choose
        await lake_admin.create_table(TablePath(lake_db, "chosen"), TableDescriptor(
            Schema(EVENTS), properties={"table.bucket.function": "default"}))
    assert e.value.error_code == ErrorCode.INVALID_CONFIG_EXCEPTION and "table.bucket.function" in e.value.message
    with pytest.raises(FlussError) as e:
        await lake_admin.create_table(TablePath(lake_db, "iceberg"), TableDescriptor(
            Schema(EVENTS), properties={"table.datalake.format": "iceberg"}))
    assert e.value.error_code == ErrorCode.INVALID_CONFIG_EXCEPTION and "iceberg" in e.value.message
    with pytest.raises(FlussError) as e:  # a Fluss column may not take a system column's name in the lake
        await create(lake_conn, TablePath(lake_db, "clash"), pa.schema([("id", pa.int64()), ("__offset", pa.int64())]))
    assert e.value.error_code == ErrorCode.INVALID_TABLE_EXCEPTION and "__offset" in e.value.message

    # a cluster without a lake: the project's own function, and no lake format
    await admin.create_table(TablePath(database, "plain"), TableDescriptor(Schema(EVENTS), bucket_count=2))
    props = (await admin.get_table_info(TablePath(database, "plain"))).get_properties()
    assert props["table.bucket.function"] == "default" and "table.datalake.format" not in props


# ---------------------------------------------------------------- Paimon readers with key filters


async def test_paimon_readers_with_key_filters_find_every_tiered_key(lake_conn, lake_db, warehouse):
    # the scenario of issue 22: a primary-key table of 4 buckets, 200 keys, tiered once, point reads by key
    accounts = TablePath(lake_db, "accounts")
    accounts_info = await create(lake_conn, accounts, ACCOUNTS, pk=["id"], buckets=4)
    state: dict[int, dict] = {}
    await apply_ops(lake_conn, accounts, [("u", {"id": i, "owner": f"o{i}", "balance": i}) for i in range(200)], state)
    # a composite primary key (STRING + INT), a log table bucketed by a STRING, a partitioned primary-key table
    regions = TablePath(lake_db, "by_region")
    regions_info = await create(lake_conn, regions, BY_REGION, pk=["region", "id"], buckets=3)
    region_rows = [{"region": ("north", "south", "a region name longer than seven bytes")[i % 3], "id": i,
                    "score": i / 2} for i in range(60)]
    await apply_ops(lake_conn, regions, [("u", r) for r in region_rows], {})
    clicks = TablePath(lake_db, "clicks")
    clicks_info = await create(lake_conn, clicks, CLICKS, buckets=3, **{"bucket.key": "user"})
    users = [f"user-{u}" for u in range(30)]
    await append(lake_conn, clicks, pa.RecordBatch.from_pydict(
        {"user": [users[i % 30] for i in range(90)], "url": [f"/p{i}" for i in range(90)], "n": list(range(90))},
        schema=CLICKS))
    orders = TablePath(lake_db, "orders")
    orders_info = await create(lake_conn, orders, ORDERS, pk=["day", "id"], buckets=2, partition_keys=["day"])
    days = ["2026-01-01", "2026-01-02", "2026-01-03"]
    await apply_ops(lake_conn, orders, [("u", {"day": d, "id": i, "amount": i}) for d in days for i in range(30)], {})
    for info in (accounts_info, regions_info, clicks_info, orders_info):
        assert (await tier(lake_conn, info)).snapshot_id is not None
    # the control: a lake table of the old placement (this project's own bucket function)
    old_placement_table(warehouse, lake_db, "old_placement", list(range(200)), buckets=4)

    # pypaimon: every key, with its bucket pruning (one bucket planned per key)
    accounts_table, regions_table, clicks_table, orders_table, old_table = (
        paimon_table(warehouse, p) for p in (accounts, regions, clicks, orders, TablePath(lake_db, "old_placement")))
    for i in range(200):
        rows, planned = pypaimon_point_read(accounts_table, id=i)
        assert rows.column("id").to_pylist() == [i] and rows.column("owner").to_pylist() == [f"o{i}"], i
        assert len(planned) == 1
    for r in region_rows:
        rows, _ = pypaimon_point_read(regions_table, region=r["region"], id=r["id"])
        assert rows.column("score").to_pylist() == [r["score"]], r
    for u, user in enumerate(users):
        rows, _ = pypaimon_point_read(clicks_table, user=user)
        assert sorted(rows.column("n").to_pylist()) == [u, u + 30, u + 60], user
    for d in days:
        for i in range(30):
            rows, _ = pypaimon_point_read(orders_table, day=d, id=i)
            assert rows.column("amount").to_pylist() == [i], (d, i)
    missed = [i for i in range(200) if pypaimon_point_read(old_table, id=i)[0]
              .num_rows == 0]
    assert len(missed) > 100, "the control: Paimon's pruning misses keys placed by another bucket function"

    # Paimon's Java reader through Flink's Paimon catalog (its own filter pushdown and bucket pruning): a sample of
    # the keys pypaimon read above (one Flink job with one source per probe; planning costs ~1 s per probe)
    db = lake_db
    probes = ([(f"{db}.accounts", "id", f"id = {i}") for i in range(0, 200, 17)]
              + [(f"{db}.by_region", "id", f"region = '{r['region']}' AND id = {r['id']}") for r in region_rows[::11]]
              + [(f"{db}.clicks", "n", f"`user` = '{user}'") for user in users[::7]]
              + [(f"{db}.orders", "id", f"`day` = '{d}' AND id = {i}") for d in days for i in (3, 22)]
              + [(f"{db}.old_placement", "id", f"id = {i}") for i in range(0, 200, 19)])
    found = point_reads(warehouse, probes)
    for n, (table, _, condition) in enumerate(probes):
        if table.endswith("old_placement"):
            continue
        expected = 3 if table.endswith("clicks") else 1
        assert len(found[n]) == expected, f"Flink's Paimon reader found {found[n]} in {table} WHERE {condition}"
    control = [found[n] for n, p in enumerate(probes) if p[0].endswith("old_placement")]
    assert sum(1 for f in control if not f) > 2, "the control: Java Paimon misses keys of the old placement"


# ---------------------------------------------------------------- a Paimon writer on the same table


async def test_a_paimon_writer_upserting_a_tiered_key_lands_in_its_bucket_and_replaces_it(lake_conn, lake_db,
                                                                                          warehouse):
    path = TablePath(lake_db, "shared_writes")
    info = await create(lake_conn, path, ACCOUNTS, pk=["id"], buckets=4)
    state: dict[int, dict] = {}
    await apply_ops(lake_conn, path, [("u", {"id": i, "owner": f"o{i}", "balance": i}) for i in range(40)], state)
    first = await tier(lake_conn, info)

    # pypaimon writes as any Paimon writer: it computes each row's bucket itself (no bucket given)
    table = paimon_table(warehouse, path)
    updated = list(range(0, 40, 3))
    n = len(updated)  # a foreign writer leaves the system columns (Fluss bucket, offset, time) null
    rows = pa.Table.from_arrays(
        [pa.array(updated, pa.int64()), pa.array([f"paimon{i}" for i in updated]), pa.array([-i for i in updated],
                                                                                              pa.int64()),
         pa.nulls(n, pa.int32()), pa.nulls(n, pa.int64()), pa.nulls(n, pa.timestamp("ms", tz="UTC")),
         pa.array(["+U"] * n)],
        schema=paimon_arrow_schema_of(table))
    builder = table.new_batch_write_builder()
    write, commit = builder.new_write(), builder.new_commit()
    write.write_arrow(rows)
    messages = write.prepare_commit()
    commit.commit(messages)
    write.close()
    commit.close()
    fluss_buckets = PaimonBucketing().bucket_ids(rows, [0], 4)
    written_to = {(m.bucket) for m in messages if m.new_files}
    assert written_to == set(fluss_buckets.tolist())  # the buckets the Fluss client routes these keys to

    lake = paimon_rows(paimon_table(warehouse, path))
    assert sorted(lake.column("id").to_pylist()) == list(range(40))  # replaced, not duplicated
    got = {r["id"]: (r["owner"], r["balance"]) for r in lake.to_pylist()}
    for i in range(40):
        assert got[i] == ((f"paimon{i}", -i) if i in updated else (f"o{i}", i)), i
    builder = paimon_table(warehouse, path).new_read_builder()
    for split in builder.new_scan().plan().splits():  # each key in exactly the bucket of its Fluss bucket
        ids = builder.new_read().to_arrow([split]).column("id").to_pylist()
        expected = PaimonBucketing().bucket_ids(pa.table({"id": pa.array(ids, pa.int64())}), [0], 4)
        assert set(expected.tolist()) <= {split.bucket}

    # the tiering job goes on after the foreign commit (its progress is its own last snapshot)
    await apply_ops(lake_conn, path, [("u", {"id": 100, "owner": "new", "balance": 1})], state)
    second = await tier(lake_conn, info)
    assert second.snapshot_id > first.snapshot_id and second.rows == 1


# ---------------------------------------------------------------- routers: lookups and the servers' check


async def test_lookups_and_prefix_lookups_route_with_paimon_bucketing(lake_conn, lake_db):
    path = TablePath(lake_db, "sessions")
    schema = pa.schema([pa.field("user", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                        ("v", pa.int64())])
    info = await create(lake_conn, path, schema, pk=["user", "id"], buckets=4, **{"bucket.key": "user"})
    assert bucketing_of(info).name == "paimon"
    users = [f"u{i}-{'x' * (i % 12)}" for i in range(20)]  # inline and var-part BinaryRow strings
    rows = [{"user": users[i % 20], "id": i, "v": i * 10} for i in range(80)]
    await apply_ops(lake_conn, path, [("u", {**r, "id": r["id"]}) for r in rows], {})
    table = await lake_conn.get_table(path)
    lookuper = table.new_lookup().create_lookuper()
    found = await asyncio.gather(*(lookuper.lookup({"user": r["user"], "id": r["id"]}) for r in rows))
    assert [f["v"] if f else None for f in found] == [r["v"] for r in rows]
    prefix = table.new_lookup().lookup_by(["user"]).create_lookuper()
    for u in users:
        assert sorted(r["id"] for r in await prefix.lookup({"user": u})) == [i for i in range(80) if i % 20 ==
                                                                            users.index(u)]
    # the rows are in the buckets Paimon's function names
    for b in range(4):
        held = await table.new_scan().create_kv_state_scanner(
            TableBucket(table.get_table_info().table_id, b)).to_arrow()
        if held.num_rows:
            assert set(PaimonBucketing().bucket_ids(held, [0], 4).tolist()) == {b}


def _write(writer, batch: pa.RecordBatch):
    return (writer.upsert_arrow_batch if hasattr(writer, "upsert_arrow_batch") else writer.write_arrow_batch)(batch)


async def _refused(writer, batch: pa.RecordBatch) -> FlussError:
    with pytest.raises(FlussError) as e:
        await _write(writer, batch).wait()
    return e.value


async def test_servers_refuse_rows_routed_by_another_bucket_function(lake_conn, lake_db, conn, database):
    # a primary-key table (PutKv) and a log table with a bucket key (ProduceLog) routed by Paimon's function
    pk_path, log_path = TablePath(lake_db, "strict_pk"), TablePath(lake_db, "strict_log")
    await create(lake_conn, pk_path, ACCOUNTS, pk=["id"], buckets=4)
    await create(lake_conn, log_path, EVENTS, buckets=4, **{"bucket.key": "id"})
    batch = pa.RecordBatch.from_pydict({"id": list(range(40)), "owner": ["x"] * 40, "balance": list(range(40))},
                                       schema=ACCOUNTS)
    events = pa.RecordBatch.from_pydict({"id": list(range(40)), "tag": ["t"] * 40}, schema=EVENTS)
    for path, rows, make in ((pk_path, batch, lambda t: t.new_upsert()),
                             (log_path, events, lambda t: t.new_append())):
        writer = make(await lake_conn.get_table(path)).create_writer()
        writer._bucketing = DefaultBucketing()  # a client that routes with the wrong function
        error = await _refused(writer, rows)
        assert error.error_code == ErrorCode.CORRUPT_RECORD_EXCEPTION
        assert "'paimon' bucket function" in error.message and str(path) in error.message
        latest = await lake_conn.get_admin().list_offsets(path, list(range(4)), OffsetSpec.latest())
        assert set(latest.values()) == {0}  # nothing was written
        good = make(await lake_conn.get_table(path)).create_writer()
        await _write(good, rows).wait()  # routed right: accepted
        assert sum((await lake_conn.get_admin().list_offsets(path, list(range(4)), OffsetSpec.latest())).values()) > 0

    # and the other way round on a cluster without a lake (the project's own function)
    plain = TablePath(database, "strict_plain")
    await conn.get_admin().create_table(plain, TableDescriptor(Schema(ACCOUNTS, primary_keys=["id"]), bucket_count=4))
    writer = (await conn.get_table(plain)).new_upsert().create_writer()
    writer._bucketing = PaimonBucketing()
    error = await _refused(writer, batch)
    assert error.error_code == ErrorCode.CORRUPT_RECORD_EXCEPTION and "'default' bucket function" in error.message


# ---------------------------------------------------------------- lake maintenance by the tiering job

JOB_TIMEOUT_S = 420
MAINTENANCE = {"table.datalake.freshness": "1s", "table.datalake.auto-compaction": "true",
               "table.datalake.auto-expire-snapshot": "true",
               # compact from two sorted runs / files on; keep one snapshot beyond the coordinator's, none by age
               "paimon.num-sorted-run.compaction-trigger": "2", "paimon.compaction.min.file-num": "2",
               "paimon.snapshot.num-retained.min": "1", "paimon.snapshot.num-retained.max": "2",
               "paimon.snapshot.time-retained": "1 ms"}


def _snapshots(warehouse: str, path: TablePath) -> list:
    manager = paimon_table(warehouse, path).snapshot_manager()
    latest = manager.get_latest_snapshot()
    out = []
    for i in range(1, (latest.id if latest else 0) + 1):
        try:
            snapshot = manager.get_snapshot_by_id(i)
        except Exception:  # noqa: BLE001 - expired
            snapshot = None
        if snapshot is not None:
            out.append(snapshot)
    return out


async def test_compaction_and_expiry_by_the_tiering_job_keep_union_read_exact(lake_conn, lake_db, lake_cluster,
                                                                             warehouse, tmp_path):
    pk_path, log_path = TablePath(lake_db, "kept_pk"), TablePath(lake_db, "kept_log")
    await create(lake_conn, pk_path, ACCOUNTS, pk=["id"], buckets=2, **MAINTENANCE)
    await create(lake_conn, log_path, EVENTS, buckets=2, **MAINTENANCE)  # no bucket key: bucket-unaware lake
    state: dict[int, dict] = {}
    appended = 0
    log_file = tmp_path / "job.log"
    with open(log_file, "w") as out:
        job = subprocess.Popen([sys.executable, "-m", "tiering_job", "--bootstrap-servers",
                                lake_cluster.bootstrap_servers, "--interval", "300ms"],
                               stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + JOB_TIMEOUT_S
        rng = np.random.default_rng(22)
        compacted = expired = False
        rounds = 0
        while not (compacted and expired and rounds >= 6):
            assert job.poll() is None, log_file.read_text()[-4000:]
            assert time.monotonic() < deadline, f"no compaction/expiry seen: {log_file.read_text()[-4000:]}"
            keys = rng.choice(60, size=15, replace=False).tolist()
            await apply_ops(lake_conn, pk_path, [("d", k) if k % 7 == 0 and k in state else
                                                 ("u", {"id": k, "owner": f"r{rounds}", "balance": rounds})
                                                 for k in keys], state)
            await append(lake_conn, log_path, pa.RecordBatch.from_pydict(
                {"id": list(range(appended, appended + 10)), "tag": [f"r{rounds}"] * 10}, schema=EVENTS))
            appended += 10
            rounds += 1
            # Union Read while the job tiers, compacts and expires: always exactly what was acknowledged
            assert by_id(await union_read(lake_conn, pk_path)) == state
            assert sorted((await union_read(lake_conn, log_path)).column("id").to_pylist()) == list(range(appended))
            pk_snapshots, log_snapshots = _snapshots(warehouse, pk_path), _snapshots(warehouse, log_path)
            compacted = all(any(s.commit_kind == "COMPACT" for s in snaps) for snaps in (pk_snapshots, log_snapshots))
            expired = all(snaps and snaps[0].id > 1 for snaps in (pk_snapshots, log_snapshots))
            await asyncio.sleep(1.0)
        # the coordinator's lake snapshot is never expired
        for path in (pk_path, log_path):
            coordinator = await get_latest_lake_snapshot(lake_conn, path)
            assert coordinator.snapshot_id in {s.id for s in _snapshots(warehouse, path)}
        results = [json.loads(line[line.index("{"):]) for line in log_file.read_text().splitlines()
                   if "{" in line and '"table_id"' in line]
        assert not [r for r in results if "maintenance_error" in r], results
        assert any(r.get("compacted", {}).get("snapshot_id") for r in results)
        assert any(r.get("expired") for r in results)
    finally:
        os.killpg(job.pid, signal.SIGTERM)
        job.wait(30)
    assert by_id(await union_read(lake_conn, pk_path)) == state
    lake_ids = paimon_rows(paimon_table(warehouse, log_path)).column("id").to_pylist()
    assert len(lake_ids) == len(set(lake_ids)) and set(lake_ids) <= set(range(appended))  # compaction: once each
