"""The tiering core: one round of "read the Fluss log range, write Paimon, commit, report" for one table.

A round for table ``t`` (``tier_table``) works on bucket keys ``(partition_id, bucket)`` (``partition_id = -1``
for a non-partitioned table; for a partitioned one, every bucket of each partition that exists when the round
starts - ``fluss.lake.partitions``):

1. **Recover.** Read the tiering progress recorded in the latest Paimon snapshot of ``t`` (commit user
   ``fluss-tiering``, ``fluss.offsets`` in the snapshot properties). If it is newer than the coordinator's lake
   snapshot (the previous run died after the lake commit and before the report), report it now.
   The Paimon progress, not the coordinator's copy, decides where tiering resumes.
2. **Plan.** Per bucket key the range is ``[tiered offset, high watermark)`` (``list_offsets(latest)`` is the
   high watermark: readers never see beyond it); a partition not tiered before starts at 0. A start below the
   log start offset (records expired by ``table.log.ttl`` before they were tiered): a log table moves it up to
   the log start and logs the gap; a primary-key table starts that bucket from its KV state instead (see 3).
3. **Write.** Read exactly those ranges and write each batch to its own Paimon bucket (in its partition). A
   primary-key bucket with a gap is first written from its current KV state (the ScanKv snapshot scan: rows +
   the log offset they cover, as +I; keys the lake holds but the KV state does not get -D), and its range
   continues from the snapshot's log offset, so the lake loses nothing. A partition dropped during the read
   is given up where the read got to.
4. **Commit.** Just before committing, re-read the Paimon progress: if a concurrent or retried run already
   committed (the latest progress differs from the one this round started from) nothing is committed; the
   written files are left unreferenced. Otherwise commit once with the new offsets of every bucket key of the
   existing partitions (offsets of dropped partitions are not carried over; their lake rows stay).
5. **Report** the new snapshot (id, per-bucket end offsets, max timestamp, partition names) to the coordinator
   (here, or by the job's committer operator with ``report=False``).

Freshness: :func:`is_due` says whether a table should be tiered now (its last lake commit is older than
``table.datalake.freshness``); the job checks it, ``--once`` ignores it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fluss.key.partition import name_to_spec, partition_name_array
from fluss.lake.config import freshness_ms
from fluss.lake.log_range import BucketKey, iter_log_range, key_of
from fluss.lake.paimon import LakeWriter, PaimonLake, TieredProgress, bucket_key_str
from fluss.lake.partitions import bucket_keys, current_partitions, list_bucket_offsets, rows_without_keys
from fluss.lake.snapshot import LakeSnapshot, commit_lake_snapshot
from fluss.metadata import NO_PARTITION, OffsetSpec, TableBucket, TableInfo

log = logging.getLogger(__name__)

_INSERT, _DELETE = 1, 4  # Fluss change types


@dataclass
class TieringResult:
    """What one round did for one table."""

    table: str
    table_id: int
    snapshot_id: int | None = None  # the new lake snapshot (None: nothing committed)
    rows: int = 0
    ranges: dict[BucketKey, tuple[int, int]] = field(default_factory=dict)
    #: bucket keys started from their KV state (primary-key buckets whose changelog start had expired)
    from_kv: dict[BucketKey, int] = field(default_factory=dict)
    re_reported: bool = False  # a lake snapshot the coordinator had missed was reported first
    skipped: str | None = None  # why nothing was done
    seconds: float = 0.0
    #: the lake snapshot the coordinator does not have yet (reported already unless ``report=False``)
    to_report: LakeSnapshot | None = None

    def as_dict(self) -> dict:
        return {"table": self.table, "table_id": self.table_id, "snapshot_id": self.snapshot_id, "rows": self.rows,
                "ranges": {bucket_key_str(k): list(r) for k, r in sorted(self.ranges.items())},
                "from_kv": {bucket_key_str(k): o for k, o in sorted(self.from_kv.items())},
                "re_reported": self.re_reported, "skipped": self.skipped, "seconds": round(self.seconds, 3)}


def is_due(info: TableInfo, snapshot: LakeSnapshot | None, now_ms: int | None = None) -> bool:
    """True when the table's last lake commit is older than its ``table.datalake.freshness``."""
    if snapshot is None or not snapshot.commit_time:
        return True
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    return now_ms - snapshot.commit_time >= freshness_ms(info)


def snapshot_of(info: TableInfo, progress: TieredProgress, partitions: Mapping[int, str] | None = None
                ) -> LakeSnapshot:
    """The coordinator's form of the progress recorded in a Paimon snapshot (``partitions``: id -> name)."""
    out = LakeSnapshot(snapshot_id=progress.snapshot_id, table_id=info.table_id,
                       commit_time=progress.commit_time or int(time.time() * 1000))
    for (pid, bucket), offset in progress.offsets.items():
        tb = TableBucket(info.table_id, bucket, None if pid == NO_PARTITION else pid)
        out.table_buckets_offset[tb] = offset
        out.max_timestamps[tb] = progress.max_timestamps.get((pid, bucket), -1)
        if pid != NO_PARTITION and partitions and pid in partitions:
            out.partition_names[pid] = partitions[pid]
    return out


async def tier_table(conn, lake: PaimonLake, info: TableInfo, coordinator_snapshot: LakeSnapshot | None = None,
                     *, report: bool = True) -> TieringResult:
    """Runs one tiering round for a lake-enabled table (see the module docstring).

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
    admin = conn.get_admin()
    partitions = await current_partitions(admin, info)

    progress = await asyncio.to_thread(lake.tiered_progress, path, info.table_id)
    if progress is not None and (coordinator_snapshot is None
                                 or coordinator_snapshot.snapshot_id < progress.snapshot_id):
        result.to_report = snapshot_of(info, progress, partitions)
        result.re_reported = True
        log.info("lake snapshot %d of %s was never reported (the previous run stopped before): reporting it",
                 progress.snapshot_id, path)

    ends = await list_bucket_offsets(admin, info, partitions, OffsetSpec.latest())
    keys = [k for k in bucket_keys(info, partitions) if k in ends]  # without partitions dropped meanwhile
    tiered = progress.offsets if progress else {}
    starts = {k: tiered.get(k, 0) for k in keys}
    gaps: set[BucketKey] = set()
    if any(ends[k] > starts[k] for k in keys):
        earliest = await list_bucket_offsets(admin, info, partitions, OffsetSpec.earliest())
        for k in keys:
            if k in earliest and starts[k] < earliest[k]:
                if info.has_primary_key():
                    gaps.add(k)
                    continue
                log.warning("%s %s: offsets [%d, %d) expired before they were tiered: the lake has a gap",
                            path, _label(k, partitions), starts[k], earliest[k])
                starts[k] = earliest[k]
    result.ranges = {k: (starts[k], ends[k]) for k in keys if ends[k] > starts[k] and k not in gaps}
    if not result.ranges and not gaps:
        result.skipped = "no new records"
        result.seconds = time.monotonic() - started
        return result

    alive = {pid for pid, _ in keys}
    offsets = {k: o for k, o in tiered.items() if k[0] in alive}  # dropped partitions are not carried over
    max_ts = {k: t for k, t in (progress.max_timestamps if progress else {}).items() if k[0] in alive}
    offsets.update(starts)
    table = await conn.get_table(path)
    scanner = table.new_scan().create_changelog_batch_scanner()
    writer = lake.new_writer(info)
    try:
        for k in sorted(gaps):
            kv_offset, rows = await _write_kv_state(table, lake, writer, info, k, partitions.get(k[0]), progress)
            log.warning("%s %s: offsets [%d, log start) expired before they were tiered: tiered its KV state "
                        "(%d rows, log offset %d) instead", path, _label(k, partitions), starts[k], rows, kv_offset)
            result.from_kv[k] = kv_offset
            result.rows += rows
            offsets[k] = max(offsets[k], kv_offset)
            if ends[k] > kv_offset:
                result.ranges[k] = (kv_offset, ends[k])

        given_up: set[BucketKey] = set()

        async def gone(pending: list[BucketKey]) -> set[BucketKey]:
            now = await current_partitions(admin, info)
            dropped = {k for k in pending if k[0] != NO_PARTITION and k[0] not in now}
            given_up.update(dropped)
            return dropped

        async for rb in iter_log_range(scanner, result.ranges, gone=gone if info.is_partitioned() else None):
            k = key_of(rb)
            await asyncio.to_thread(writer.write, k[1], rb.batch, rb.change_types, rb.base_offset, int(rb.timestamp))
            result.rows += rb.batch.num_rows
            offsets[k] = rb.last_offset + 1
            max_ts[k] = max(max_ts.get(k, -1), int(rb.timestamp))
        for k, (_, end) in result.ranges.items():
            if k in given_up:
                log.warning("%s %s was dropped while it was tiered: tiered up to offset %d", path,
                            _label(k, partitions), offsets[k])
            else:
                offsets[k] = end

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
                                                        int(time.time() * 1000)), partitions)
    result.seconds = time.monotonic() - started
    log.info("tiered %d rows of %s into lake snapshot %d (%s)", result.rows, path, committed,
             {bucket_key_str(k): r for k, r in result.ranges.items()})
    return result


async def _write_kv_state(table, lake: PaimonLake, writer: LakeWriter, info: TableInfo, key: BucketKey,
                          partition_name: str | None, progress: TieredProgress | None) -> tuple[int, int]:
    """Writes a primary-key bucket's current KV state (as +I, and -D for lake keys it no longer has); returns the
    log offset the state covers and the number of rows written."""
    pid, bucket = key
    scanner = table.new_scan().create_kv_state_scanner(
        TableBucket(info.table_id, bucket, None if pid == NO_PARTITION else pid))
    rows = await scanner.to_arrow()
    kv_offset = int(scanner.log_offset or 0)
    changes = [(rows, _INSERT)]
    if progress is not None and key in progress.offsets:  # the lake holds keys of it, some deleted in the gap
        held = await asyncio.to_thread(_lake_bucket_rows, lake, info, progress.snapshot_id, bucket, partition_name)
        pk = info.get_primary_keys()
        stale = rows_without_keys(held, rows, pk)
        changes.insert(0, (stale.select(held.column_names), _DELETE))
    written = 0
    for part, change_type in changes:
        for batch in part.combine_chunks().to_batches():
            if batch.num_rows:
                await asyncio.to_thread(writer.write, bucket, batch,
                                        np.full(batch.num_rows, change_type, np.uint8))
                written += batch.num_rows
    return kv_offset, written


def _lake_bucket_rows(lake: PaimonLake, info: TableInfo, snapshot_id: int, bucket: int,
                      partition_name: str | None) -> pa.Table:
    """The rows the lake snapshot holds for one bucket of one partition, in the Fluss row schema."""
    schema = info.row_schema.to_arrow()
    specs = None if partition_name is None else [name_to_spec(partition_name, info.get_partition_keys())]
    held = lake.read(info.table_path, snapshot_id, specs, bucket)
    held = pa.Table.from_arrays([held.column(f.name).cast(f.type) for f in schema], schema=schema)
    if partition_name is not None and held.num_rows:
        index = [schema.get_field_index(k) for k in info.get_partition_keys()]
        held = held.filter(pc.equal(partition_name_array(held, index), partition_name))
    return held


def _label(key: BucketKey, partitions: Mapping[int, str]) -> str:
    pid, bucket = key
    return f"bucket {bucket}" if pid == NO_PARTITION else f"partition {partitions.get(pid, pid)} bucket {bucket}"
