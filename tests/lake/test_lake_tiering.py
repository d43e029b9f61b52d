"""Lake tiering into Paimon and Union Read against a real cluster with a Paimon warehouse.

Most tests tier through the tiering core (``fluss.lake.tiering.tier_table``), the code the PyFlink job runs in
its operators; the last one runs the PyFlink job itself (``python -m tiering_job --once``, a local Flink mini
cluster: slow to start, so once).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from lake_helpers import (
    ACCOUNTS,
    EVENTS,
    LAKE,
    append,
    apply_ops,
    by_id,
    create,
    ends,
    events,
    ids,
    paimon_rows,
    paimon_table,
    tier,
)

from fluss import ErrorCode, FlussError, OffsetSpec, Schema, TableBucket, TableDescriptor, TablePath
from fluss.lake.paimon import COMMIT_USER, ROW_KIND_COLUMN
from fluss.lake.snapshot import get_latest_lake_snapshot
from fluss.lake.union_read import read_lake, union_read

pytestmark = pytest.mark.asyncio(loop_scope="session")


# ---------------------------------------------------------------- table creation


async def test_lake_enabled_table_gets_a_paimon_table_with_the_same_shape(lake_conn, lake_db, warehouse):
    info = await create(lake_conn, TablePath(lake_db, "shape"), ACCOUNTS, pk=["id"], buckets=4)
    assert info.get_properties()["table.datalake.format"] == "paimon"
    assert info.get_properties()["table.datalake.paimon.warehouse"] == warehouse
    assert info.get_properties()["table.bucket.function"] == "paimon"
    table = paimon_table(warehouse, info.table_path)
    assert [(f.name, str(f.type)) for f in table.table_schema.fields][3:] == [
        ("__bucket", "INT"), ("__offset", "BIGINT"), ("__timestamp", "TIMESTAMP_LTZ(3)"),
        (ROW_KIND_COLUMN, "STRING")]
    assert [f.name for f in table.table_schema.fields][:3] == ["id", "owner", "balance"]
    assert table.table_schema.primary_keys == ["id"]
    options = table.table_schema.options
    assert options["bucket"] == "4" and options["bucket-key"] == "id"
    assert options["rowkind.field"] == ROW_KIND_COLUMN


async def test_lake_enabled_table_needs_a_lake_configured_cluster(admin, database):
    with pytest.raises(FlussError) as e:
        await admin.create_table(TablePath(database, "no_lake"), TableDescriptor(Schema(ACCOUNTS), properties=LAKE))
    assert e.value.error_code == ErrorCode.LAKE_STORAGE_NOT_CONFIGURED_EXCEPTION
    assert not await admin.table_exists(TablePath(database, "no_lake"))


# ---------------------------------------------------------------- log tables


async def test_tiered_log_table_is_readable_by_pypaimon_alone_bucket_by_bucket(lake_conn, lake_db, warehouse):
    path = TablePath(lake_db, "events")
    info = await create(lake_conn, path, EVENTS, buckets=3, **{"bucket.key": "id"})
    written = pa.Table.from_batches([events(0, 50), events(50, 70)])
    await append(lake_conn, path, *written.to_batches())

    result = await tier(lake_conn, info)
    assert result.rows == 120 and result.snapshot_id is not None

    table = paimon_table(warehouse, path)
    assert [f.name for f in table.table_schema.fields] == EVENTS.names + ["__bucket", "__offset", "__timestamp"]
    rows = paimon_rows(table)
    assert rows.select(EVENTS.names).sort_by("id").to_pylist() == written.sort_by("id").to_pylist()
    # the system columns: each row's Fluss bucket, its log offset (every offset of the bucket once), commit time
    end = await ends(lake_conn, info)
    for b in range(3):
        in_bucket = rows.filter(pc.equal(rows.column("__bucket"), b))
        assert sorted(in_bucket.column("__offset").to_pylist()) == list(range(end[b]))
    assert rows.column("__timestamp").null_count == 0
    snapshot = table.snapshot_manager().get_latest_snapshot()
    assert snapshot.commit_user == COMMIT_USER
    assert snapshot.properties["fluss.offsets"] == "{" + ", ".join(f'"-1:{b}": {end[b]}' for b in range(3)) + "}"

    # each Fluss bucket landed in the same Paimon bucket (written with the bucket given, no re-hashing)
    fluss_table = await lake_conn.get_table(path)
    fluss_buckets = {}
    for b in range(3):
        scanner = fluss_table.new_scan().limit(1_000_000).create_bucket_batch_scanner(
            TableBucket(fluss_table.get_table_info().table_id, b))
        rows = await scanner.to_arrow()
        fluss_buckets[b] = set(rows.column("id").to_pylist())
    builder = table.new_read_builder()
    for split in builder.new_scan().plan().splits():
        in_split = builder.new_read().to_arrow([split])
        assert set(in_split.column("id").to_pylist()) <= fluss_buckets[split.bucket]
        assert set(in_split.column("__bucket").to_pylist()) == {split.bucket}

    coordinator = await get_latest_lake_snapshot(lake_conn, path)
    assert coordinator.snapshot_id == result.snapshot_id
    assert {tb.bucket_id: o for tb, o in coordinator.table_buckets_offset.items()} == end
    assert coordinator.get_bucket_offset(TableBucket(info.table_id, 0)) == end[0]


async def test_union_read_of_a_log_table_is_lake_plus_log_tail(lake_conn, lake_db):
    path = TablePath(lake_db, "clicks")
    info = await create(lake_conn, path, EVENTS, buckets=2)
    assert (await union_read(lake_conn, path)).num_rows == 0
    await append(lake_conn, path, events(0, 30))
    assert ids(await union_read(lake_conn, path)) == list(range(30))  # no lake snapshot yet: all from the log
    await tier(lake_conn, info)
    await append(lake_conn, path, events(30, 25))
    assert ids(await read_lake(lake_conn, path)) == list(range(30))
    assert ids(await union_read(lake_conn, path)) == list(range(55))
    await tier(lake_conn, info)
    await append(lake_conn, path, events(55, 5))
    union = await union_read(lake_conn, path)
    assert union.schema == info.row_schema.to_arrow()
    assert union.sort_by("id").to_pylist() == pa.Table.from_batches([events(0, 60)]).to_pylist()


async def test_union_read_equals_everything_written_while_ingestion_and_tiering_run(lake_conn, lake_db):
    path = TablePath(lake_db, "stream")
    info = await create(lake_conn, path, EVENTS, buckets=3)
    acked: list[int] = []
    stop = asyncio.Event()

    async def ingest():
        n = 0
        while not stop.is_set():
            await append(lake_conn, path, events(n, 20))
            n += 20
            acked.extend(range(n - 20, n))

    async def tier_loop():
        while not stop.is_set():
            await tier(lake_conn, info)
            await asyncio.sleep(0.2)

    tasks = [asyncio.create_task(ingest()), asyncio.create_task(tier_loop())]
    try:
        checks = 0
        deadline = time.monotonic() + 12
        while time.monotonic() < deadline:
            before = set(acked)
            got = ids(await union_read(lake_conn, path))
            assert len(got) == len(set(got)), "union read returned a row twice"
            assert before <= set(got), "union read lost acknowledged rows"
            assert set(got) <= set(range(max(got, default=-1) + 1)), "union read has a gap"
            checks += 1
            await asyncio.sleep(0.3)
    finally:
        stop.set()
        await asyncio.gather(*tasks)
    assert checks >= 3
    await tier(lake_conn, info)
    assert ids(await union_read(lake_conn, path)) == sorted(acked)
    assert ids(await read_lake(lake_conn, path)) == sorted(acked)


# ---------------------------------------------------------------- primary-key tables


async def test_pk_table_lake_holds_upserts_and_deletes_and_union_read_lets_fluss_win(lake_conn, lake_db, warehouse):
    path = TablePath(lake_db, "accounts")
    info = await create(lake_conn, path, ACCOUNTS, pk=["id"], buckets=3)
    state: dict[int, dict] = {}
    await apply_ops(lake_conn, path, [("u", {"id": i, "owner": f"o{i}", "balance": i * 10}) for i in range(20)],
                    state)
    await apply_ops(lake_conn, path, [("u", {"id": 3, "owner": "o3", "balance": 333}), ("d", 4), ("d", 5),
                                      ("u", {"id": 25, "owner": "new", "balance": 1}), ("d", 25)], state)
    await tier(lake_conn, info)

    lake = paimon_rows(paimon_table(warehouse, path))  # pypaimon alone
    assert {r["id"]: {k: r[k] for k in ("id", "owner", "balance")} for r in lake.to_pylist()} == state
    assert set(lake.column(ROW_KIND_COLUMN).to_pylist()) <= {"+I", "+U"}

    # after tiering: updates of tiered keys, deletes of tiered keys, new keys - Fluss wins over the lake
    await apply_ops(lake_conn, path, [("u", {"id": 1, "owner": "changed", "balance": -1}), ("d", 2),
                                      ("u", {"id": 100, "owner": "fresh", "balance": 7}), ("d", 6),
                                      ("u", {"id": 6, "owner": "back", "balance": 6})], state)
    union = await union_read(lake_conn, path)
    assert by_id(union) == state
    assert union.num_rows == len(state)

    await tier(lake_conn, info)
    assert by_id(await read_lake(lake_conn, path)) == state
    assert by_id(await union_read(lake_conn, path)) == state


# ---------------------------------------------------------------- exactly once


async def test_job_stopped_between_lake_commit_and_report_resumes_without_duplicates_or_gaps(
        lake_conn, lake_db, warehouse):
    log_path, pk_path = TablePath(lake_db, "orders"), TablePath(lake_db, "stock")
    log_info = await create(lake_conn, log_path, EVENTS, buckets=2)
    pk_info = await create(lake_conn, pk_path, ACCOUNTS, pk=["id"], buckets=2)
    state: dict[int, dict] = {}
    await append(lake_conn, log_path, events(0, 40))
    await apply_ops(lake_conn, pk_path, [("u", {"id": i, "owner": "a", "balance": i}) for i in range(10)], state)
    first = {p: await tier(lake_conn, i) for p, i in ((log_path, log_info), (pk_path, pk_info))}

    await append(lake_conn, log_path, events(40, 20))
    await apply_ops(lake_conn, pk_path, [("u", {"id": 1, "owner": "b", "balance": 100}), ("d", 2)], state)
    crashed = {p: await tier(lake_conn, i, report=False) for p, i in ((log_path, log_info), (pk_path, pk_info))}
    for p in (log_path, pk_path):
        assert crashed[p].snapshot_id > first[p].snapshot_id  # committed to the lake ...
        assert (await get_latest_lake_snapshot(lake_conn, p)).snapshot_id == first[p].snapshot_id  # ... not reported
    # the coordinator's (older) snapshot + the log still give the whole table
    assert ids(await union_read(lake_conn, log_path)) == list(range(60))
    assert by_id(await union_read(lake_conn, pk_path)) == state

    await append(lake_conn, log_path, events(60, 10))
    await apply_ops(lake_conn, pk_path, [("u", {"id": 50, "owner": "c", "balance": 5})], state)
    rerun = {p: await tier(lake_conn, i) for p, i in ((log_path, log_info), (pk_path, pk_info))}
    for p in (log_path, pk_path):
        assert rerun[p].re_reported
        assert (await get_latest_lake_snapshot(lake_conn, p)).snapshot_id == rerun[p].snapshot_id
    assert rerun[log_path].rows == 10  # only the records after the unreported commit

    lake_ids = paimon_rows(paimon_table(warehouse, log_path)).column("id").to_pylist()
    assert sorted(lake_ids) == list(range(70))  # no duplicate, no gap
    lake_pk = paimon_rows(paimon_table(warehouse, pk_path))
    assert {r["id"]: {k: r[k] for k in ("id", "owner", "balance")} for r in lake_pk.to_pylist()} == state

    # a retried round with nothing new commits nothing
    again = await tier(lake_conn, log_info)
    assert again.snapshot_id is None and again.skipped == "no new records"


# ---------------------------------------------------------------- log TTL


async def test_union_read_serves_log_records_expired_by_ttl_from_the_lake(lake_conn, lake_db):
    path = TablePath(lake_db, "expiring")
    info = await create(lake_conn, path, EVENTS, buckets=1, **{"table.log.ttl": "1s"})
    for start in range(0, 600, 60):
        await append(lake_conn, path, events(start, 60))
    await tier(lake_conn, info)
    await asyncio.sleep(1.2)
    await append(lake_conn, path, events(600, 60))  # rolls a new segment so the old ones can expire
    admin = lake_conn.get_admin()
    deadline = time.monotonic() + 60  # a 500 ms retention check; the package's shared server may be busy in CI
    while (await admin.list_offsets(path, [0], OffsetSpec.earliest()))[0] == 0:
        assert time.monotonic() < deadline, "retention never deleted the expired segments"
        await asyncio.sleep(0.3)
    assert (await admin.list_offsets(path, [0], OffsetSpec.earliest()))[0] > 0
    assert ids(await union_read(lake_conn, path)) == list(range(660))


# ---------------------------------------------------------------- the PyFlink job

JOB_TIMEOUT_S = 300


def run_job(bootstrap: str, *args: str) -> list[dict]:
    proc = subprocess.run([sys.executable, "-m", "tiering_job", "--bootstrap-servers", bootstrap, *args],
                          capture_output=True, text=True, timeout=JOB_TIMEOUT_S)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


async def test_tiering_job_once_tiers_log_pk_and_partitioned_tables_and_reports_them(lake_conn, lake_db,
                                                                                      lake_cluster):
    log_path, pk_path = TablePath(lake_db, "job_events"), TablePath(lake_db, "job_accounts")
    part_path = TablePath(lake_db, "job_by_day")
    log_info = await create(lake_conn, log_path, EVENTS, buckets=2)
    pk_info = await create(lake_conn, pk_path, ACCOUNTS, pk=["id"], buckets=2)
    part_info = await create(lake_conn, part_path, EVENTS.append(pa.field("d", pa.string())), buckets=2,
                             partition_keys=["d"])
    state: dict[int, dict] = {}
    await append(lake_conn, log_path, events(0, 100))
    by_day = [events(0, 30).append_column("d", pa.array(["mon"] * 30)),
              events(30, 20).append_column("d", pa.array(["tue"] * 20))]
    await append(lake_conn, part_path, *by_day)
    await apply_ops(lake_conn, pk_path, [("u", {"id": i, "owner": "x", "balance": i}) for i in range(30)]
                    + [("d", 7), ("u", {"id": 8, "owner": "y", "balance": 80})], state)

    results = {r["table_id"]: r for r in run_job(lake_cluster.bootstrap_servers, "--once", "--parallelism", "2")}

    assert results[log_info.table_id]["rows"] == 100 and results[log_info.table_id]["reported"]
    assert results[pk_info.table_id]["snapshot_id"] is not None and results[pk_info.table_id]["reported"]
    for info in (log_info, pk_info):
        snapshot = await get_latest_lake_snapshot(lake_conn, info.table_path)
        assert snapshot.snapshot_id == results[info.table_id]["snapshot_id"]
        latest = await lake_conn.get_admin().list_offsets(info.table_path, [0, 1], OffsetSpec.latest())
        assert {tb.bucket_id: o for tb, o in snapshot.table_buckets_offset.items()} == latest
    assert ids(await read_lake(lake_conn, log_path)) == list(range(100))
    assert by_id(await read_lake(lake_conn, pk_path)) == state
    assert by_id(await union_read(lake_conn, pk_path)) == state
    assert (await union_read(lake_conn, log_path)).sort_by("id").equals(
        pa.Table.from_batches([events(0, 100)]))

    result = results[part_info.table_id]
    assert result["rows"] == 50 and result["reported"]
    snapshot = await get_latest_lake_snapshot(lake_conn, part_path)
    assert snapshot.snapshot_id == result["snapshot_id"]
    assert sorted(snapshot.partition_names.values()) == ["mon", "tue"]
    assert len(snapshot.table_buckets_offset) == 4 and sum(snapshot.table_buckets_offset.values()) == 50
    assert (await read_lake(lake_conn, part_path)).sort_by("id").to_pylist() == \
        pa.Table.from_batches(by_day).to_pylist()


async def test_tiering_status_command_shows_snapshot_and_tier_lag(lake_conn, lake_db, lake_cluster):
    path = TablePath(lake_db, "status_events")
    info = await create(lake_conn, path, EVENTS, buckets=1)
    await append(lake_conn, path, events(0, 10))
    await tier(lake_conn, info)
    await append(lake_conn, path, events(10, 4))
    proc = subprocess.run([sys.executable, "-m", "fluss.cli", "tiering", "status", "--bootstrap-servers",
                           lake_cluster.bootstrap_servers], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    line = next(line for line in proc.stdout.splitlines() if line.startswith(f"{path} "))
    snapshot = await get_latest_lake_snapshot(lake_conn, path)
    assert f"lake snapshot {snapshot.snapshot_id}," in line and "tier lag 4 [b0:4]" in line


async def test_recreating_a_table_whose_lake_table_holds_data_is_refused(lake_conn, lake_db):
    path = TablePath(lake_db, "recreated")
    info = await create(lake_conn, path, EVENTS, buckets=1)
    await append(lake_conn, path, events(0, 5))
    await tier(lake_conn, info)
    await lake_conn.get_admin().drop_table(path)
    with pytest.raises(FlussError) as e:
        await create(lake_conn, path, EVENTS, buckets=1)
    assert e.value.error_code == ErrorCode.LAKE_TABLE_ALREADY_EXIST
    assert not await lake_conn.get_admin().table_exists(path)


@pytest.mark.long  # a minute or more; make test-long (the continuous job's smoke in make test: test_lake_interop's compaction test)
async def test_continuous_tiering_job_keeps_the_lake_within_freshness(lake_conn, lake_db, lake_cluster, tmp_path):
    path = TablePath(lake_db, "continuous")
    await create(lake_conn, path, EVENTS, buckets=2, **{"table.datalake.freshness": "1s"})
    log_file = tmp_path / "job.log"
    with open(log_file, "w") as out:
        job = subprocess.Popen([sys.executable, "-m", "tiering_job", "--bootstrap-servers",
                                lake_cluster.bootstrap_servers, "--interval", "500ms"],
                               stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        written = 0
        for expected in (50, 80):
            await append(lake_conn, path, events(written, expected - written))
            written = expected
            deadline = time.monotonic() + JOB_TIMEOUT_S
            while len(lake := ids(await read_lake(lake_conn, path))) < expected:
                assert job.poll() is None, log_file.read_text()[-3000:]
                assert time.monotonic() < deadline, "the continuous job did not tier the new rows"
                await asyncio.sleep(0.5)
            assert lake == list(range(expected))
    finally:
        os.killpg(job.pid, signal.SIGTERM)
        job.wait(30)
