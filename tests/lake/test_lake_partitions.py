"""Partitioned lake tables: tiering per (partition, bucket) across rounds while partitions come and go, Union
Read per partition, and primary-key buckets whose changelog expired before tiering (started from the KV state).
"""

from __future__ import annotations

import asyncio
import json
import time

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from lake_helpers import append, apply_ops, by_id, create, ids, paimon_rows, paimon_table, tier

from fluss import OffsetSpec, TablePath
from fluss.lake.log_range import iter_log_range
from fluss.lake.paimon import COMMIT_USER
from fluss.lake.snapshot import get_latest_lake_snapshot
from fluss.lake.status import tiering_status
from fluss.lake.union_read import read_lake, union_read

pytestmark = pytest.mark.asyncio(loop_scope="session")

VIEWS = pa.schema([pa.field("id", pa.int64(), nullable=False), ("url", pa.string()), ("ms", pa.int32()),
                   ("day", pa.string())])
ORDERS = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("region", pa.string(), nullable=False),
                    pa.field("yr", pa.int32(), nullable=False), ("item", pa.string()), ("amount", pa.int64())])


def views(start: int, n: int, day: str) -> pa.RecordBatch:
    ids_ = list(range(start, start + n))
    return pa.RecordBatch.from_pydict({"id": ids_, "url": [f"/p/{i % 9}" for i in ids_], "ms": [i * 3 for i in ids_],
                                       "day": [day] * n}, schema=VIEWS)


def order(i: int, region: str, yr: int, amount: int, item: str | None = None) -> dict:
    return {"id": i, "region": region, "yr": yr, "item": item or f"item{i}", "amount": amount}


async def partition_ids(conn, path: TablePath) -> dict[str, int]:
    return {p.partition_name: p.partition_id for p in await conn.get_admin().list_partition_infos(path)}


async def latest_offsets(conn, path: TablePath, parts: dict[str, int], buckets: int) -> dict[tuple[int, int], int]:
    out = {}
    for name, pid in parts.items():
        got = await conn.get_admin().list_partition_offsets(path, name, list(range(buckets)), OffsetSpec.latest())
        out.update({(pid, b): o for b, o in got.items()})
    return out


def lake_offsets(warehouse: str, path: TablePath) -> dict[tuple[int, int], int]:
    """``fluss.offsets`` of the latest Paimon snapshot (pypaimon alone)."""
    snapshot = paimon_table(warehouse, path).snapshot_manager().get_latest_snapshot()
    assert snapshot.commit_user == COMMIT_USER
    return {tuple(int(x) for x in k.split(":")): v for k, v in json.loads(snapshot.properties["fluss.offsets"]).items()}


def paimon_partition_rows(warehouse: str, path: TablePath, **spec) -> pa.Table:
    """One partition of the lake table, read by pypaimon alone with a partition filter."""
    table = paimon_table(warehouse, path)
    builder = table.new_read_builder()
    factory = builder.new_predicate_builder()
    builder = builder.with_filter(factory.and_predicates([factory.equal(k, v) for k, v in spec.items()])
                                  if len(spec) > 1 else factory.equal(*next(iter(spec.items()))))
    return builder.new_read().to_arrow(builder.new_scan().plan().splits())


# ---------------------------------------------------------------- log tables


async def test_partitioned_log_table_is_tiered_per_partition_as_partitions_come_and_go(lake_conn, lake_db, warehouse):
    path = TablePath(lake_db, "views")
    admin = lake_conn.get_admin()
    info = await create(lake_conn, path, VIEWS, buckets=2, partition_keys=["day"], **{"bucket.key": "id"})
    assert paimon_table(warehouse, path).partition_keys == ["day"]
    written = [views(0, 40, "2026-01-01"), views(40, 30, "2026-01-02")]
    await append(lake_conn, path, *written)  # the writer creates the partitions
    first = await tier(lake_conn, info)
    assert first.rows == 70 and first.snapshot_id is not None

    # between the rounds: a new partition and more rows in an old one - union read = lake + log tail
    more = [views(70, 25, "2026-01-03"), views(95, 10, "2026-01-01")]
    await append(lake_conn, path, *more)
    everything = pa.Table.from_batches(written + more)
    assert ids(await read_lake(lake_conn, path)) == list(range(70))
    union = await union_read(lake_conn, path)
    assert union.schema == info.row_schema.to_arrow()
    assert union.sort_by("id").to_pylist() == everything.sort_by("id").to_pylist()

    second = await tier(lake_conn, info)
    assert second.rows == 35
    parts = await partition_ids(lake_conn, path)
    assert sorted(parts) == ["2026-01-01", "2026-01-02", "2026-01-03"]
    latest = await latest_offsets(lake_conn, path, parts, 2)
    assert lake_offsets(warehouse, path) == latest  # every bucket of every partition, keyed "<partition id>:<bucket>"
    coordinator = await get_latest_lake_snapshot(lake_conn, path)
    assert coordinator.snapshot_id == second.snapshot_id
    assert {(tb.partition_id, tb.bucket_id): o for tb, o in coordinator.table_buckets_offset.items()} == latest
    assert coordinator.partition_names == {pid: name for name, pid in parts.items()}

    # pypaimon alone, partition by partition: the rows of that Fluss partition, nothing else
    for day in parts:
        expected = everything.filter(pc.equal(everything.column("day"), day))
        got = paimon_partition_rows(warehouse, path, day=day)
        assert got.select(VIEWS.names).sort_by("id").to_pylist() == expected.sort_by("id").to_pylist()
    assert ids(await read_lake(lake_conn, path)) == list(range(105))

    # union read restricted to partitions (by name or spec)
    assert ids(await union_read(lake_conn, path, partitions=["2026-01-03"])) == list(range(70, 95))
    assert ids(await union_read(lake_conn, path, partitions=[{"day": "2026-01-01"}])) == \
        list(range(40)) + list(range(95, 105))

    status = next(s for s in await tiering_status(lake_conn) if s.table == str(path))
    assert status.snapshot_id == second.snapshot_id
    assert status.tier_lag == {(day, b): 0 for day in parts for b in (0, 1)}
    await append(lake_conn, path, views(105, 3, "2026-01-04"))
    status = next(s for s in await tiering_status(lake_conn) if s.table == str(path))
    assert sum(n for (day, _), n in status.tier_lag.items() if day == "2026-01-04") == 3
    assert "2026-01-04/b" in status.describe()

    # a dropped partition is not tiered any more; what the lake holds of it stays readable
    await admin.drop_partition(path, {"day": "2026-01-02"})
    await append(lake_conn, path, views(108, 5, "2026-01-01"))
    third = await tier(lake_conn, info)
    assert third.rows == 8
    offsets = lake_offsets(warehouse, path)
    assert parts["2026-01-02"] not in {pid for pid, _ in offsets}
    assert offsets == await latest_offsets(lake_conn, path, await partition_ids(lake_conn, path), 2)
    assert ids(await union_read(lake_conn, path)) == list(range(113))
    assert ids(await union_read(lake_conn, path, partitions=["2026-01-02"])) == list(range(40, 70))


async def test_reading_a_partition_dropped_meanwhile_gives_it_up(lake_conn, lake_db):
    path = TablePath(lake_db, "dropping")
    info = await create(lake_conn, path, VIEWS, buckets=1, partition_keys=["day"])
    await append(lake_conn, path, views(0, 10, "d1"), views(10, 10, "d2"))
    parts = await partition_ids(lake_conn, path)
    await lake_conn.get_admin().drop_partition(path, {"day": "d2"})
    scanner = await (await lake_conn.get_table(path)).new_scan().create_record_batch_log_scanner()

    async def gone(pending):
        alive = set((await partition_ids(lake_conn, path)).values())
        return {k for k in pending if k[0] not in alive}

    # d2's range can never be read to its end: without the check this read would stall until its timeout
    started = time.monotonic()
    got = [rb async for rb in iter_log_range(scanner, {(parts["d1"], 0): (0, 10), (parts["d2"], 0): (0, 10)},
                                             gone=gone, recheck_s=0.5, stall_timeout_s=30)]
    await scanner.aclose()
    assert time.monotonic() - started < 20
    by_partition = {}
    for rb in got:
        by_partition.setdefault(rb.bucket.partition_id, []).extend(rb.batch.column("id").to_pylist())
    assert sorted(by_partition.pop(parts["d1"])) == list(range(10))
    # the drop removes d2's replicas after it returns: a read that reached d2 first got its rows, whole
    assert sorted(by_partition.pop(parts["d2"], list(range(10, 20)))) == list(range(10, 20))
    assert not by_partition
    assert ids(await union_read(lake_conn, path)) == list(range(10))
    result = await tier(lake_conn, info)
    assert result.rows == 10 and set(result.ranges) == {(parts["d1"], 0)}


# ---------------------------------------------------------------- primary-key tables


async def test_partitioned_pk_table_tiers_changes_per_partition_and_union_read_lets_fluss_win(
        lake_conn, lake_db, warehouse):
    path = TablePath(lake_db, "orders")
    info = await create(lake_conn, path, ORDERS, pk=["id", "region", "yr"], buckets=2,
                        partition_keys=["region", "yr"])
    table = paimon_table(warehouse, path)
    assert table.partition_keys == ["region", "yr"] and table.table_schema.options["bucket-key"] == "id"
    state: dict[int, dict] = {}
    await apply_ops(lake_conn, path, [("u", order(i, "US" if i % 2 else "EU", 2025, i * 10)) for i in range(30)],
                    state)
    await apply_ops(lake_conn, path, [("u", order(3, "US", 2025, 333, "changed")), ("d", state[4]),
                                      ("d", state[5]), ("u", order(40, "EU", 2025, 1)), ("d", order(40, "EU", 2025, 1))],
                    state)
    first = await tier(lake_conn, info)
    assert first.snapshot_id is not None
    assert by_id(await read_lake(lake_conn, path)) == state

    # between the rounds: a new partition, updates and deletes of tiered keys in the old ones
    await apply_ops(lake_conn, path, [("u", order(1, "US", 2025, -1, "fresh")), ("d", state[2]),
                                      ("u", order(100, "APAC", 2026, 7)), ("u", order(101, "APAC", 2026, 8)),
                                      ("d", state[6]), ("u", order(6, "EU", 2025, 6, "back")),
                                      ("u", order(101, "APAC", 2026, 9))], state)
    union = await union_read(lake_conn, path)
    assert by_id(union) == state and union.num_rows == len(state)
    assert by_id(await union_read(lake_conn, path, partitions=["APAC$2026"])) == {
        i: r for i, r in state.items() if r["region"] == "APAC"}
    assert by_id(await union_read(lake_conn, path, partitions=[{"region": "EU", "yr": "2025"}])) == {
        i: r for i, r in state.items() if r["region"] == "EU"}

    second = await tier(lake_conn, info)
    assert second.snapshot_id > first.snapshot_id
    parts = await partition_ids(lake_conn, path)
    assert sorted(parts) == ["APAC$2026", "EU$2025", "US$2025"]
    assert lake_offsets(warehouse, path) == await latest_offsets(lake_conn, path, parts, 2)
    assert by_id(await read_lake(lake_conn, path)) == state
    assert by_id(await union_read(lake_conn, path)) == state
    for region, yr in (("US", 2025), ("EU", 2025), ("APAC", 2026)):  # pypaimon alone, per partition
        rows = paimon_partition_rows(warehouse, path, region=region, yr=yr)
        assert {r["id"]: {k: r[k] for k in ORDERS.names} for r in rows.to_pylist()} == {
            i: r for i, r in state.items() if r["region"] == region and r["yr"] == yr}
        assert set(rows.column("__row_kind").to_pylist()) <= {"+I", "+U"}


# ---------------------------------------------------------------- primary-key tables from the KV state

PADDED = pa.schema([pa.field("id", pa.int64(), nullable=False), ("owner", pa.string()), ("balance", pa.int64())])
PAD = "x" * 300


async def wait_until_log_start_passes(conn, path: TablePath, offset: int, roll) -> None:
    """Waits until TTL retention moved bucket 0's log start beyond ``offset`` (``roll()`` rolls a segment)."""
    admin = conn.get_admin()
    deadline = time.monotonic() + 30
    while (await admin.list_offsets(path, [0], OffsetSpec.earliest()))[0] <= offset:
        assert time.monotonic() < deadline, "retention never deleted the expired segments"
        await roll()
        await asyncio.sleep(0.5)


async def test_pk_table_whose_changelog_expired_before_tiering_is_tiered_from_its_kv_state(lake_conn, lake_db,
                                                                                          warehouse):
    path = TablePath(lake_db, "kv_start")
    info = await create(lake_conn, path, PADDED, pk=["id"], buckets=1, **{"table.log.ttl": "1s"})
    state: dict[int, dict] = {}
    for start in range(0, 200, 20):  # ~60 KB of changelog: several 8 KB segments
        await apply_ops(lake_conn, path, [("u", {"id": i, "owner": PAD, "balance": i}) for i in range(start, start + 20)],
                        state)
    await apply_ops(lake_conn, path, [("d", 7), ("u", {"id": 8, "owner": "late", "balance": -8})], state)
    counter = iter(range(1000, 10_000))

    async def roll():
        await apply_ops(lake_conn, path, [("u", {"id": next(counter), "owner": PAD, "balance": 0}) for _ in range(30)],
                        state)

    await asyncio.sleep(1.2)
    await wait_until_log_start_passes(lake_conn, path, 0, roll)

    first = await tier(lake_conn, info)  # the first tiering: the changelog no longer starts at 0
    assert first.from_kv and first.snapshot_id is not None
    assert by_id(await read_lake(lake_conn, path)) == state
    assert by_id(await union_read(lake_conn, path)) == state

    # a later gap: the lake holds keys that are deleted or changed while the job is away longer than the TTL
    tiered = lake_offsets(warehouse, path)[(-1, 0)]
    await apply_ops(lake_conn, path, [("d", i) for i in range(0, 50)]
                    + [("u", {"id": i, "owner": "changed", "balance": 1}) for i in range(50, 60)], state)
    await asyncio.sleep(1.2)
    await wait_until_log_start_passes(lake_conn, path, tiered, roll)
    # in the gap the lake still has the deleted keys and the log lost their deletes: the bucket is read from KV
    assert by_id(await union_read(lake_conn, path)) == state
    second = await tier(lake_conn, info)
    assert second.from_kv
    lake = by_id(await read_lake(lake_conn, path))
    assert lake.keys() == state.keys() and lake == state
    assert by_id(paimon_rows(paimon_table(warehouse, path)).select(["id", "owner", "balance"])) == state
    assert by_id(await union_read(lake_conn, path)) == state
