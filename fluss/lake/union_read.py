"""Union Read in the Python client: a lake-enabled table as its lake snapshot plus the Fluss log after it.

``await union_read(conn, path, partitions=None)``:

1. Ask the coordinator for the table's latest lake snapshot (Paimon snapshot id + per-(partition, bucket)
   offsets).
2. Read exactly that Paimon snapshot with pypaimon (time travel, so a tiering commit racing with the read
   changes nothing). For a partitioned table this is every partition the lake holds, also partitions since
   dropped from Fluss (the lake keeps them).
3. Read the Fluss log of each (partition, bucket) that exists now from the snapshot's offset (0 for a partition
   the snapshot does not know: created after it) to the current end (``list_offsets(latest)``).
4. Log tables: concatenate. Primary-key tables: the log is a changelog on top of the lake rows - per key
   the last change wins (-U ignored); a last -D removes the key; a key the log touches replaces the lake row
   (partition keys are part of the primary key, so this is per partition too).

``partitions`` (names like ``2024-01-01`` / ``US$2024``, or specs ``{"region": "US"}``) restricts both halves
to those partitions. Before the first tiering there is no lake snapshot: the whole log is read. When the lake's
offset of a bucket is below the log start offset (records expired by TTL before they were tiered), a
primary-key bucket is read from its KV store instead (a snapshot scan: the bucket's current rows replace its
lake rows and its log); for a log bucket the gap cannot be served and is logged. A partition dropped while it is
read is left out of the log half.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fluss.errors import ErrorCode, FlussError
from fluss.key.bucket_function import bucketing_of
from fluss.key.partition import name_to_spec, partition_name_array
from fluss.lake.log_range import iter_log_range
from fluss.lake.paimon import SYSTEM_COLUMNS, PaimonLake, lake_of_table
from fluss.lake.partitions import (
    BucketKey,
    PartitionRef,
    bucket_keys,
    current_partitions,
    list_bucket_offsets,
    partition_names,
    rows_without_keys,
)
from fluss.lake.snapshot import LakeSnapshot, get_latest_lake_snapshot
from fluss.metadata import NO_PARTITION, OffsetSpec, TableBucket, TableInfo, TablePath
from fluss.nested_values import conform_nested
from fluss.types import Column, type_of_field

log = logging.getLogger(__name__)

_UPDATE_BEFORE, _DELETE = 2, 4
_SEQ = "__union_seq"
_CHANGE = "__union_change"


async def latest_lake_snapshot_or_none(conn, table_path: TablePath) -> LakeSnapshot | None:
    try:
        return await get_latest_lake_snapshot(conn, table_path)
    except FlussError as e:
        if e.error_code == ErrorCode.LAKE_SNAPSHOT_NOT_EXIST:
            return None
        raise


async def union_read(conn, table_path: TablePath, *, warehouse: str | None = None,
                     partitions: Iterable[PartitionRef] | None = None) -> pa.Table:
    """The full content of a lake-enabled table: lake snapshot + Fluss log after it (see the module docstring)."""
    info = await conn.get_admin().get_table_info(table_path)
    only = partition_names(info, partitions) if partitions is not None else None
    lake = lake_of_table(info, warehouse)
    snapshot, lake_rows = await _read_latest_lake(conn, lake, info, only)
    if not info.has_primary_key():
        log_rows, _ = await read_log_after(conn, info, snapshot, partitions=only)
        return pa.concat_tables([lake_rows, log_rows])
    gaps: dict[BucketKey, str | None] = {}
    log_rows, change_types = await read_log_after(conn, info, snapshot, partitions=only, kv_gaps=gaps)
    merged = _apply_changelog(without_buckets(lake_rows, info, gaps), log_rows, change_types,
                              info.get_primary_keys())
    if not gaps:
        return merged
    scan = (await conn.get_table(table_path)).new_scan()
    current = await asyncio.gather(*(
        scan.create_kv_state_scanner(TableBucket(info.table_id, bucket, pid)).to_arrow()
        for pid, bucket in gaps))
    return pa.concat_tables([merged, *(_conform(rows, merged.schema) for rows in current)])


def without_buckets(rows: pa.Table, info: TableInfo, buckets: dict[BucketKey, str | None]) -> pa.Table:
    """``rows`` (in the table's schema) minus those of the given ``(partition id, bucket)`` keys, whose values
    are the partition names (None when not partitioned): each row's bucket is computed from its bucket key."""
    if not buckets or rows.num_rows == 0:
        return rows
    schema = rows.schema
    row_buckets = pa.array(bucketing_of(info).bucket_ids(
        rows, [schema.get_field_index(k) for k in info.get_bucket_keys()], info.num_buckets))
    names = (partition_name_array(rows, [schema.get_field_index(k) for k in info.get_partition_keys()])
             if info.is_partitioned() else None)
    drop = pa.array(np.zeros(rows.num_rows, dtype=bool))
    for (_, bucket), name in buckets.items():
        hit = pc.equal(row_buckets, bucket)
        if names is not None:
            hit = pc.and_(hit, pc.equal(names, name))
        drop = pc.or_(drop, hit)
    return rows.filter(pc.invert(drop))


async def read_lake(conn, table_path: TablePath, *, warehouse: str | None = None,
                    partitions: Iterable[PartitionRef] | None = None, system_columns: bool = False) -> pa.Table:
    """The lake half only (the table's latest lake snapshot; empty before the first tiering). With
    ``system_columns`` the rows also have the lake's ``__bucket``, ``__offset`` and ``__timestamp`` (as ``t$lake``
    in Flink; null for a lake table created before they existed)."""
    info = await conn.get_admin().get_table_info(table_path)
    only = partition_names(info, partitions) if partitions is not None else None
    return (await _read_latest_lake(conn, lake_of_table(info, warehouse), info, only, system_columns))[1]


#: Reads of a lake snapshot that the tiering job's snapshot expiry removed meanwhile are retried this often.
LAKE_READ_ATTEMPTS = 3


async def _read_latest_lake(conn, lake: PaimonLake, info: TableInfo, only: set[str] | None,
                            system_columns: bool = False) -> tuple[LakeSnapshot | None, pa.Table]:
    """The coordinator's latest lake snapshot and its rows. Expiry never removes that snapshot, but it may move on
    (and the old one be expired, ``table.datalake.auto-expire-snapshot``) while it is read: then the read starts
    again from the new one."""
    for attempt in range(LAKE_READ_ATTEMPTS):
        snapshot = await latest_lake_snapshot_or_none(conn, info.table_path)
        try:
            return snapshot, await _read_lake_rows(lake, info, snapshot, only, system_columns)
        except Exception:
            newer = await latest_lake_snapshot_or_none(conn, info.table_path)
            moved = snapshot is not None and newer is not None and newer.snapshot_id != snapshot.snapshot_id
            if not moved or attempt == LAKE_READ_ATTEMPTS - 1:
                raise
            log.info("lake snapshot %d of %s was replaced by %d while it was read: reading again",
                     snapshot.snapshot_id, info.table_path, newer.snapshot_id)
    raise AssertionError("unreachable")


async def _read_lake_rows(lake: PaimonLake, info: TableInfo, snapshot: LakeSnapshot | None,
                          only: set[str] | None, system_columns: bool = False) -> pa.Table:
    schema = info.row_schema.to_arrow()
    if system_columns:
        schema = pa.schema([*schema, *SYSTEM_COLUMNS])
    if snapshot is None or (only is not None and not only):
        return schema.empty_table()
    keys = info.get_partition_keys()
    specs = None if only is None else [name_to_spec(n, keys) for n in sorted(only)]
    rows = await asyncio.to_thread(lake.read, info.table_path, snapshot.snapshot_id, specs,
                                   system_columns=system_columns)
    for f in SYSTEM_COLUMNS if system_columns else ():
        if f.name not in rows.column_names:  # a lake table of the layout before the system columns
            rows = rows.append_column(f.name, pa.nulls(rows.num_rows, f.type))
    rows = _conform(rows, schema)
    if only is not None and rows.num_rows:  # exact (the scan prunes on string-typed keys only)
        names = partition_name_array(rows, [schema.get_field_index(k) for k in keys])
        rows = rows.filter(pc.is_in(names, value_set=pa.array(sorted(only), pa.string())))
    return rows


async def read_log_after(conn, info: TableInfo, snapshot: LakeSnapshot | None, *,
                         partitions: set[str] | None = None,
                         kv_gaps: dict[BucketKey, str | None] | None = None) -> tuple[pa.Table, np.ndarray]:
    """The log records after the snapshot's offsets up to the current end, and their change types
    (of every existing partition, or of those named in ``partitions``). With ``kv_gaps`` (a primary-key
    table), a bucket whose log no longer reaches back to the lake's offset is not read: it is added there
    (with its partition name) to be read from its KV store."""
    path = info.table_path
    admin = conn.get_admin()
    parts = await current_partitions(admin, info, partitions)
    ends = await list_bucket_offsets(admin, info, parts, OffsetSpec.latest())
    earliest = await list_bucket_offsets(admin, info, parts, OffsetSpec.earliest())
    ranges = {}
    for key in bucket_keys(info, parts):
        if key not in ends or key not in earliest:
            continue  # partition dropped meanwhile
        pid, bucket = key
        start = snapshot.get_bucket_offset(TableBucket(info.table_id, bucket, pid)) if snapshot else None
        start = start or 0
        if start < earliest[key]:
            if kv_gaps is not None:
                kv_gaps[key] = parts.get(pid) if pid != NO_PARTITION else None
                continue
            if snapshot is not None or earliest[key] > 0:
                where = f"bucket {bucket}" if pid == NO_PARTITION else f"partition {parts[pid]} bucket {bucket}"
                log.warning("%s %s: offsets [%d, %d) expired from the log and are not in the lake",
                            path, where, start, earliest[key])
            start = earliest[key]
        ranges[key] = (start, ends[key])
    table = await conn.get_table(path)
    scanner = table.new_scan().create_changelog_batch_scanner()
    schema = info.row_schema.to_arrow()

    async def gone(pending: list) -> set:
        now = await current_partitions(admin, info)
        return {k for k in pending if k[0] != NO_PARTITION and k[0] not in now}

    batches, cts = [], []
    try:
        async for rb in iter_log_range(scanner, ranges, gone=gone if info.is_partitioned() else None):
            batches.append(rb.batch)
            cts.append(np.asarray(rb.change_types, dtype=np.uint8))
    finally:
        await scanner.aclose()
    rows = _conform(pa.Table.from_batches(batches, schema=batches[0].schema) if batches else schema.empty_table(),
                    schema)
    return rows, (np.concatenate(cts) if cts else np.zeros(0, np.uint8))


def _apply_changelog(lake_rows: pa.Table, log_rows: pa.Table, change_types: np.ndarray,
                     primary_keys: list[str]) -> pa.Table:
    if log_rows.num_rows == 0:
        return lake_rows
    keep = change_types != _UPDATE_BEFORE
    changes = log_rows.filter(pa.array(keep))
    cts = change_types[keep]
    changes = changes.append_column(_SEQ, pa.array(np.arange(changes.num_rows), pa.int64()))
    changes = changes.append_column(_CHANGE, pa.array(cts, pa.uint8()))
    last_seq = changes.group_by(primary_keys).aggregate([(_SEQ, "max")]).column(f"{_SEQ}_max")
    last = changes.filter(pc.is_in(changes.column(_SEQ), value_set=last_seq))
    touched = last.select(primary_keys)
    untouched_lake = rows_without_keys(lake_rows, touched, primary_keys)
    upserts = last.filter(pc.not_equal(last.column(_CHANGE), _DELETE)).drop_columns([_SEQ, _CHANGE])
    names = lake_rows.column_names
    return pa.concat_tables([_conform(untouched_lake.select(names), lake_rows.schema),
                             _conform(upserts.select(names), lake_rows.schema)])


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    arrays = []
    names = set(table.column_names)
    for f in schema:
        if f.name not in names:  # a column added (ALTER TABLE ADD) after these lake rows were written: null
            arrays.append(pa.nulls(table.num_rows, f.type))
            continue
        col = table.column(f.name)
        if col.type == f.type:
            arrays.append(col)
        elif pa.types.is_nested(f.type):  # rebuilt level by level: NOT NULL children, Paimon's TIME(3) widened
            arrays.append(conform_nested(col.combine_chunks(), Column(f.name, type_of_field(f))))
        else:
            arrays.append(col.cast(f.type))
    return pa.Table.from_arrays(arrays, schema=schema)  # also restores NOT NULL lost by joins
