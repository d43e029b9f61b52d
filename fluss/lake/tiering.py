"""The tiering core: one round of "read the Fluss log range, write Paimon, commit, report" for one table.

A round for table ``t`` (``tier_table``):

1. **Recover.** Read the tiering progress recorded in the latest Paimon snapshot of ``t`` (commit user
   ``fluss-tiering``, ``fluss.offsets`` in the snapshot properties). If it is newer than the coordinator's lake
   snapshot (the previous run died after the lake commit and before the report), report it now.
   The Paimon progress, not the coordinator's copy, decides where tiering resumes.
2. **Plan.** Per bucket the range is ``[tiered offset, high watermark)`` (``list_offsets(latest)`` is the
   high watermark: readers never see beyond it). A start below the log start offset (data expired by TTL
   before it was tiered) is moved up to the log start and logged as a gap.
3. **Write.** Read exactly those ranges and write each batch to its own Paimon bucket.
4. **Commit.** Just before committing, re-read the Paimon progress: if a concurrent or retried run already
   committed (the latest progress differs from the one this round started from) nothing is committed; the
   written files are left unreferenced. Otherwise commit once with the new offsets of every bucket.
5. **Report** the new snapshot (id, per-bucket end offsets, max timestamp) to the coordinator (here, or by the
   job's committer operator with ``report=False``).

Freshness: :func:`is_due` says whether a table should be tiered now (its last lake commit is older than
``table.datalake.freshness``); the job checks it, ``--once`` ignores it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field

from fluss.lake.config import freshness_ms
from fluss.lake.log_range import iter_log_range
from fluss.lake.paimon import PaimonLake, TieredProgress
from fluss.lake.snapshot import LakeSnapshot, commit_lake_snapshot
from fluss.metadata import NO_PARTITION, OffsetSpec, TableBucket, TableInfo

log = logging.getLogger(__name__)


@dataclass
class TieringResult:
    """What one round did for one table."""

    table: str
    table_id: int
    snapshot_id: int | None = None  # the new lake snapshot (None: nothing committed)
    rows: int = 0
    ranges: dict[int, tuple[int, int]] = field(default_factory=dict)
    re_reported: bool = False  # a lake snapshot the coordinator had missed was reported first
    skipped: str | None = None  # why nothing was done
    seconds: float = 0.0
    #: the lake snapshot the coordinator does not have yet (reported already unless ``report=False``)
    to_report: LakeSnapshot | None = None

    def as_dict(self) -> dict:
        return {"table": self.table, "table_id": self.table_id, "snapshot_id": self.snapshot_id, "rows": self.rows,
                "ranges": {str(b): list(r) for b, r in self.ranges.items()}, "re_reported": self.re_reported,
                "skipped": self.skipped, "seconds": round(self.seconds, 3)}


def is_due(info: TableInfo, snapshot: LakeSnapshot | None, now_ms: int | None = None) -> bool:
    """True when the table's last lake commit is older than its ``table.datalake.freshness``."""
    if snapshot is None or not snapshot.commit_time:
        return True
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    return now_ms - snapshot.commit_time >= freshness_ms(info)


def snapshot_of(info: TableInfo, progress: TieredProgress) -> LakeSnapshot:
    """The coordinator's form of the progress recorded in a Paimon snapshot."""
    out = LakeSnapshot(snapshot_id=progress.snapshot_id, table_id=info.table_id,
                       commit_time=progress.commit_time or int(time.time() * 1000))
    for (pid, bucket), offset in progress.offsets.items():
        tb = TableBucket(info.table_id, bucket, None if pid == NO_PARTITION else pid)
        out.table_buckets_offset[tb] = offset
        out.max_timestamps[tb] = progress.max_timestamps.get((pid, bucket), -1)
    return out


async def tier_table(conn, lake: PaimonLake, info: TableInfo, coordinator_snapshot: LakeSnapshot | None = None,
                     *, report: bool = True) -> TieringResult:
    """Runs one tiering round for a lake-enabled, non-partitioned table (see the module docstring).

    With ``report=False`` the coordinator is not told: the snapshot to report is left in ``result.to_report``
    (the PyFlink job reports it from its committer operator; tests use it to stop between commit and report).
    """
    result = await _tier(conn, lake, info, coordinator_snapshot)
    if report and result.to_report is not None:
        await commit_lake_snapshot(conn, result.to_report)
    return result


async def _tier(conn, lake: PaimonLake, info: TableInfo, coordinator_snapshot: LakeSnapshot | None
                ) -> TieringResult:
    started = time.monotonic()
    path = info.table_path
    result = TieringResult(str(path), info.table_id)
    if info.is_partitioned():
        result.skipped = "partitioned tables are not tiered yet"
        log.warning("not tiering %s: %s", path, result.skipped)
        return result

    progress = await asyncio.to_thread(lake.tiered_progress, path, info.table_id)
    if progress is not None and (coordinator_snapshot is None
                                 or coordinator_snapshot.snapshot_id < progress.snapshot_id):
        result.to_report = snapshot_of(info, progress)
        result.re_reported = True
        log.info("lake snapshot %d of %s was never reported (the previous run stopped before): reporting it",
                 progress.snapshot_id, path)

    admin = conn.get_admin()
    buckets = list(range(info.num_buckets))
    ends = await admin.list_offsets(path, buckets, OffsetSpec.latest())
    starts = {b: (progress.offsets.get((NO_PARTITION, b), 0) if progress else 0) for b in buckets}
    if any(ends[b] > starts[b] for b in buckets):
        earliest = await admin.list_offsets(path, buckets, OffsetSpec.earliest())
        for b in buckets:
            if starts[b] < earliest[b] < ends[b]:
                log.warning("%s bucket %d: offsets [%d, %d) expired before they were tiered: the lake has a gap",
                            path, b, starts[b], earliest[b])
                starts[b] = earliest[b]
    result.ranges = {b: (starts[b], ends[b]) for b in buckets if ends[b] > starts[b]}
    if not result.ranges:
        result.skipped = "no new records"
        result.seconds = time.monotonic() - started
        return result

    table = await conn.get_table(path)
    scanner = await table.new_scan().create_record_batch_log_scanner()
    writer = lake.new_writer(info)
    offsets = dict(progress.offsets) if progress else {}
    max_ts = dict(progress.max_timestamps) if progress else {}
    try:
        async for rb in iter_log_range(scanner, result.ranges):
            b = rb.bucket.bucket_id
            await asyncio.to_thread(writer.write, b, rb.batch, rb.change_types)
            result.rows += rb.batch.num_rows
            key = (NO_PARTITION, b)
            max_ts[key] = max(max_ts.get(key, -1), int(rb.timestamp))
        for b in buckets:  # every bucket, also those without new records, so the report is complete
            offsets[(NO_PARTITION, b)] = result.ranges[b][1] if b in result.ranges else starts[b]

        def commit() -> TieredProgress | int:
            latest = lake.tiered_progress(path, info.table_id)
            if (latest.snapshot_id if latest else None) != (progress.snapshot_id if progress else None):
                return latest  # someone committed meanwhile: do not commit these offsets twice
            return writer.commit(offsets, max_ts, progress)

        committed = await asyncio.to_thread(commit)
    finally:
        writer.close()
        await scanner.aclose()
    if isinstance(committed, TieredProgress):
        result.skipped = f"lake snapshot {committed.snapshot_id} was committed concurrently; nothing committed"
        log.warning("%s: %s", path, result.skipped)
        result.seconds = time.monotonic() - started
        return result

    result.snapshot_id = committed
    result.to_report = snapshot_of(info, TieredProgress(committed, info.table_id, offsets, max_ts,
                                                        int(time.time() * 1000)))
    result.seconds = time.monotonic() - started
    log.info("tiered %d rows of %s into lake snapshot %d (%s)", result.rows, path, committed, result.ranges)
    return result
