"""Tiering status: per lake-enabled table, the latest lake snapshot and how far the lake is behind the log.

``tier lag`` of a bucket = high watermark - the next offset to tier (records not in the lake yet);
``freshness`` = now - the commit time of the latest lake snapshot. These are Fluss's lake metrics
(``tierLag``, ``freshness``), computed on demand from the coordinator's records and ``list_offsets``.
A partitioned table has one entry per bucket of each partition that exists now (a partition the lake snapshot
does not know yet lags by all its records).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from fluss.lake.partitions import bucket_keys, current_partitions, list_bucket_offsets
from fluss.lake.snapshot import list_lake_tables
from fluss.metadata import NO_PARTITION, OffsetSpec, TableBucket

BucketLabel = tuple[str | None, int]  # (partition name or None, bucket)


@dataclass
class TableTieringStatus:
    table: str
    table_id: int
    snapshot_id: int | None
    tier_lag: dict[BucketLabel, int]  # (partition name, bucket) -> records not tiered yet
    freshness_ms: int | None  # None before the first tiering

    def describe(self) -> str:
        if self.snapshot_id is None:
            head = "not tiered yet"
        else:
            head = f"lake snapshot {self.snapshot_id}, {self.freshness_ms / 1000:.1f}s old"
        lag = ", ".join(f"b{b}:{n}" if p is None else f"{p}/b{b}:{n}"
                        for (p, b), n in sorted(self.tier_lag.items(), key=lambda kv: (kv[0][0] or "", kv[0][1])))
        return f"{self.table} (id {self.table_id}): {head}; tier lag {sum(self.tier_lag.values())} [{lag}]"


async def tiering_status(conn) -> list[TableTieringStatus]:
    """The tiering status of every lake-enabled table (partitioned ones per partition and bucket)."""
    out = []
    admin = conn.get_admin()
    now = int(time.time() * 1000)
    for info, snapshot in await list_lake_tables(conn):
        partitions = await current_partitions(admin, info)
        ends = await list_bucket_offsets(admin, info, partitions, OffsetSpec.latest())
        lag = {}
        for key in bucket_keys(info, partitions):
            if key not in ends:
                continue  # partition dropped meanwhile
            pid, bucket = key
            tiered = snapshot.get_bucket_offset(TableBucket(info.table_id, bucket, pid)) if snapshot else None
            lag[(None if pid == NO_PARTITION else partitions[pid], bucket)] = max(0, ends[key] - (tiered or 0))
        out.append(TableTieringStatus(
            str(info.table_path), info.table_id, snapshot.snapshot_id if snapshot else None, lag,
            now - snapshot.commit_time if snapshot and snapshot.commit_time else None))
    return out
