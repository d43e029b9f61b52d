"""The (partition, bucket) keys of a lake table: which partitions exist now, and their log offsets.

A non-partitioned table has one key per bucket, ``(NO_PARTITION, b)``; a partitioned table one per bucket of each
partition that exists in Fluss at the time of the call (``list_partition_infos``). The tiering round and Union
Read both start here: a partition created later is seen by the next call, a partition dropped before the call
is not listed, and one dropped between the listing and the offsets call is left out (``PARTITION_NOT_EXISTS``).

Partitions are named the Fluss way (``fluss.key.partition``: values joined by ``$``); a caller restricting a read
to some partitions may give names or specs (``{key: value}``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping

import numpy as np
import pyarrow as pa

from fluss.errors import ErrorCode, FlussError
from fluss.key.partition import name_to_spec, partition_spec_to_name
from fluss.lake.log_range import BucketKey
from fluss.metadata import NO_PARTITION, OffsetSpec, TableInfo

_ROW_INDEX = "__fluss_row_index"

PartitionRef = str | Mapping[str, str]  # a partition name or spec


def partition_names(info: TableInfo, refs: Iterable[PartitionRef]) -> set[str]:
    """The Fluss partition names of ``refs`` (names are checked, specs converted)."""
    keys = info.get_partition_keys()
    if not keys:
        raise FlussError(f"Table '{info.table_path}' is not partitioned", ErrorCode.TABLE_NOT_PARTITIONED_EXCEPTION)
    out = set()
    for ref in refs:
        if isinstance(ref, str):
            name_to_spec(ref, keys)  # validates the number of values
            out.add(ref)
        else:
            out.add(partition_spec_to_name({k: str(v) for k, v in ref.items()}, keys))
    return out


async def current_partitions(admin, info: TableInfo, only: set[str] | None = None) -> dict[int, str]:
    """``{partition_id: name}`` of the table's partitions now (restricted to the names in ``only``)."""
    if not info.is_partitioned():
        return {}
    infos = await admin.list_partition_infos(info.table_path)
    return {p.partition_id: p.partition_name for p in infos if only is None or p.partition_name in only}


def bucket_keys(info: TableInfo, partitions: Mapping[int, str],
                counts: Mapping[int, int] | None = None) -> list[BucketKey]:
    """Every ``(partition_id, bucket)`` of the table (of the given partitions when partitioned). ``counts``: each
    partition's own bucket count where it differs from the table's (a lake-enabled table's never does)."""
    pids = sorted(partitions) if info.is_partitioned() else [NO_PARTITION]
    counts = counts or {}
    return [(pid, b) for pid in pids for b in range(counts.get(pid) or info.num_buckets)]


async def list_bucket_offsets(admin, info: TableInfo, partitions: Mapping[int, str],
                              spec: OffsetSpec, counts: Mapping[int, int] | None = None) -> dict[BucketKey, int]:
    """The offsets (``spec``) of every bucket key (``counts`` as in ``bucket_keys``); partitions dropped meanwhile
    are missing from the result."""
    buckets = list(range(info.num_buckets))
    counts = counts or {}
    path = info.table_path
    if not info.is_partitioned():
        got = await admin.list_offsets(path, buckets, spec)
        return {(NO_PARTITION, b): o for b, o in got.items()}

    async def one(pid: int, name: str) -> dict[BucketKey, int]:
        try:
            got = await admin.list_partition_offsets(path, name, list(range(counts.get(pid) or info.num_buckets)), spec)
        except FlussError as e:
            if e.error_code != ErrorCode.PARTITION_NOT_EXISTS:
                raise
            return {}  # dropped since it was listed
        return {(pid, b): o for b, o in got.items()}

    out: dict[BucketKey, int] = {}
    for part in await asyncio.gather(*(one(pid, name) for pid, name in sorted(partitions.items()))):
        out.update(part)
    return out


async def partition_exists(admin, info: TableInfo, partition_id: int) -> bool:
    """True while the partition exists in Fluss (always True for ``NO_PARTITION``)."""
    if partition_id == NO_PARTITION:
        return True
    return partition_id in await current_partitions(admin, info)


def rows_without_keys(rows: pa.Table, keys: pa.Table, key_columns: list[str]) -> pa.Table:
    """The rows of ``rows`` whose ``key_columns`` values are not in ``keys``, in their order. Only the key
    columns go through the join (Arrow's hash join cannot carry list, map or struct columns along)."""
    if rows.num_rows == 0 or keys.num_rows == 0:
        return rows
    probe = rows.select(key_columns).append_column(_ROW_INDEX, pa.array(np.arange(rows.num_rows), pa.int64()))
    kept = probe.join(keys.select(key_columns), keys=key_columns, join_type="left anti").column(_ROW_INDEX)
    return rows.take(pa.array(np.sort(kept.to_numpy(zero_copy_only=False))))
