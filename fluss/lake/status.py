"""Tiering status: per lake-enabled table, the latest lake snapshot and how far the lake is behind the log.

``tier lag`` of a bucket = high watermark - the next offset to tier (records not in the lake yet);
``freshness`` = now - the commit time of the latest lake snapshot. These are Fluss's lake metrics
(``tierLag``, ``freshness``), computed on demand from the coordinator's records and ``list_offsets``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from fluss.lake.snapshot import list_lake_tables
from fluss.metadata import OffsetSpec, TableBucket


@dataclass
class TableTieringStatus:
    table: str
    table_id: int
    snapshot_id: int | None
    tier_lag: dict[int, int]  # bucket -> records not tiered yet
    freshness_ms: int | None  # None before the first tiering

    def describe(self) -> str:
        if self.snapshot_id is None:
            head = "not tiered yet"
        else:
            head = f"lake snapshot {self.snapshot_id}, {self.freshness_ms / 1000:.1f}s old"
        lag = ", ".join(f"b{b}:{n}" for b, n in sorted(self.tier_lag.items()))
        return f"{self.table} (id {self.table_id}): {head}; tier lag {sum(self.tier_lag.values())} [{lag}]"


async def tiering_status(conn) -> list[TableTieringStatus]:
    """The tiering status of every lake-enabled (non-partitioned) table."""
    out = []
    admin = conn.get_admin()
    now = int(time.time() * 1000)
    for info, snapshot in await list_lake_tables(conn):
        if info.is_partitioned():
            continue
        buckets = list(range(info.num_buckets))
        ends = await admin.list_offsets(info.table_path, buckets, OffsetSpec.latest())
        lag = {}
        for b in buckets:
            tiered = snapshot.get_bucket_offset(TableBucket(info.table_id, b)) if snapshot else None
            lag[b] = max(0, ends[b] - (tiered or 0))
        out.append(TableTieringStatus(
            str(info.table_path), info.table_id, snapshot.snapshot_id if snapshot else None, lag,
            now - snapshot.commit_time if snapshot and snapshot.commit_time else None))
    return out
