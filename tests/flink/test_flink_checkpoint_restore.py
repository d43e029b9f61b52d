"""A streaming job restarted from a retained checkpoint continues without loss or duplicates (session JVM,
session cluster).

A Fluss log table filled by the Python client is copied by one streaming job (checkpoints every 2 s to a local
directory, retained on cancellation) into a primary-key table keyed by the sequence number and into a log table.
The job is cancelled and restarted from its last checkpoint; the input is written in three parts:

* A, before the first run's last checkpoint: read once (the source resumes after it) and written once;
* B, written right after that checkpoint and seen in the log table before the cancellation: rows processed after
  the last checkpoint are read again after the restore, so the log table holds them twice (the sink is
  at-least-once; whether a checkpoint slips in before the cancellation is timing, so once is accepted too) but
  never loses them;
* C, written while no job runs: read once by the restored job.

The primary-key table (an idempotent upsert per key) ends with exactly the input in every case.
"""

from __future__ import annotations

import asyncio
import collections
import time
from pathlib import Path

import pyarrow as pa

import fluss

CATALOG = "fluss_restore"
SCHEMA = pa.schema([pa.field("seq", pa.int64(), nullable=False), ("payload", pa.string())])
BUCKETS = 2


async def _wait_until(predicate, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while True:
        value = await predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out after {timeout_s}s waiting for {what}"
        await asyncio.sleep(0.2)


def _completed_checkpoints(checkpoint_dir: Path, job_id: str) -> list[int]:
    """Ids of the job's completed checkpoints on disk (a checkpoint is complete once its _metadata exists)."""
    job_dir = checkpoint_dir / job_id
    if not job_dir.is_dir():
        return []
    return sorted(int(d.name[4:]) for d in job_dir.glob("chk-*") if (d / "_metadata").exists())


async def _wait_for_checkpoint_after(checkpoint_dir: Path, job_id: str, after: int) -> int:
    async def newer():
        done = _completed_checkpoints(checkpoint_dir, job_id)
        return done[-1] if done and done[-1] > after else None

    return await _wait_until(newer, 60, f"a checkpoint after #{after} of job {job_id}")


async def _write(writer, seqs: range) -> None:
    writer.write_arrow(pa.Table.from_pylist([dict(seq=s, payload=f"p{s}") for s in seqs], schema=SCHEMA))
    await writer.flush()


async def _log_count(admin, path) -> int:
    return sum((await admin.list_offsets(path, list(range(BUCKETS)), fluss.OffsetSpec.latest())).values())


async def _log_count_above(admin, path, n: int) -> bool:
    return await _log_count(admin, path) > n


async def _log_rows(conn, path) -> list[tuple[int, str]]:
    scanner = await (await conn.get_table(path)).new_scan().create_record_batch_log_scanner()
    scanner.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in range(BUCKETS)})
    data = await scanner.to_arrow()
    return list(zip(data.column("seq").to_pylist(), data.column("payload").to_pylist(), strict=True))


async def _pk_rows(conn, path) -> dict[int, str]:
    """Every row of the primary-key table (the KV snapshot of each bucket)."""
    table = await conn.get_table(path)
    out: dict[int, str] = {}
    for b in range(BUCKETS):
        bucket = fluss.TableBucket(table.get_table_info().table_id, b)
        data = await table.new_scan().limit(1_000_000).create_bucket_batch_scanner(bucket).to_arrow()
        for seq, payload in zip(data.column("seq").to_pylist(), data.column("payload").to_pylist(), strict=True):
            assert seq not in out, f"key {seq} in two buckets"
            out[seq] = payload
    return out


def _stop(job) -> None:
    """Cancels a job and waits until it is gone (a local job's mini-cluster shuts down with the job)."""
    from py4j.protocol import Py4JJavaError
    from pyflink.common import JobStatus

    try:
        job.cancel().result()
    except Py4JJavaError:  # already finished, failed or gone
        pass
    deadline = time.monotonic() + 60
    while True:
        try:
            if job.get_job_status().result() in (JobStatus.CANCELED, JobStatus.FAILED, JobStatus.FINISHED):
                return
        except Py4JJavaError as e:
            if "shut down" in str(e):  # the job's mini-cluster has shut down after the job ended
                return
            raise
        assert time.monotonic() < deadline, "the job did not stop"
        time.sleep(0.1)


async def test_job_restarted_from_a_checkpoint_continues_without_loss_or_duplicates(
        new_stream_env, cluster, conn, admin, flink_db, tmp_path):
    src, by_seq, copy = (fluss.TablePath(flink_db, n) for n in ("events", "events_by_seq", "events_copy"))
    await admin.create_table(src, fluss.TableDescriptor(fluss.Schema(SCHEMA), bucket_count=BUCKETS))
    await admin.create_table(by_seq, fluss.TableDescriptor(fluss.Schema(SCHEMA, primary_keys=["seq"]),
                                                           bucket_count=BUCKETS))
    await admin.create_table(copy, fluss.TableDescriptor(fluss.Schema(SCHEMA), bucket_count=BUCKETS))
    writer = (await conn.get_table(src)).new_append().create_writer()
    part_a, part_b, part_c = range(0, 1000), range(1000, 1500), range(1500, 2500)
    everything = range(0, 2500)

    checkpoint_dir = tmp_path / "checkpoints"
    checkpointing = {
        # long enough that rows written right after a checkpoint reach the log table before the next one
        "execution.checkpointing.interval": "2s",
        "execution.checkpointing.dir": checkpoint_dir.as_uri(),
        "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
        "execution.checkpointing.num-retained": "1",
        "restart-strategy.type": "none",  # a failure fails the test instead of being retried from a checkpoint
        # Flink 2.3 (FLIP-558) refuses an insert-only query into a primary-key sink without ON CONFLICT; the
        # sink's upserts are idempotent, so no SinkUpsertMaterializer is wanted
        "table.exec.sink.require-on-conflict": "false",
    }
    c = f"{CATALOG}.{flink_db}"
    job_sql = f"""EXECUTE STATEMENT SET BEGIN
        INSERT INTO {c}.events_by_seq SELECT seq, payload FROM {c}.events;
        INSERT INTO {c}.events_copy /*+ OPTIONS('sink.buffer-flush.max-rows'='50') */
            SELECT seq, payload FROM {c}.events;
        END"""

    async def arrived(seqs: range):
        """Every row of ``seqs`` is in both sinks."""
        if await _log_count(admin, copy) < len(seqs):
            return False
        rows = await _pk_rows(conn, by_seq)
        return all(s in rows for s in seqs)

    await _write(writer, part_a)
    first = new_stream_env(cluster.bootstrap_servers, CATALOG, checkpointing).execute_sql(job_sql).get_job_client()
    try:
        first_id = str(first.get_job_id())
        await _wait_until(lambda: arrived(part_a), 90, "part A in both sinks")
        done = _completed_checkpoints(checkpoint_dir, first_id)
        # the sink flushes before a checkpoint's barrier, so any checkpoint completed from now on covers part A
        await _wait_for_checkpoint_after(checkpoint_dir, first_id, done[-1] if done else 0)
        # B reaches the log table (its small buffers are sent when full) before the next checkpoint, then the
        # job is cancelled: the restored job reads B again
        await _write(writer, part_b)
        await _wait_until(lambda: _log_count_above(admin, copy, len(part_a)), 60, "part B in the log table")
    finally:
        await asyncio.to_thread(_stop, first)
    retained = _completed_checkpoints(checkpoint_dir, first_id)
    assert retained, f"no checkpoint retained in {checkpoint_dir / first_id} after the cancellation"
    restore_from = checkpoint_dir / first_id / f"chk-{retained[-1]}"

    await _write(writer, part_c)  # while no job runs
    restored_env = new_stream_env(cluster.bootstrap_servers, CATALOG,
                                  {**checkpointing, "execution.state-recovery.path": restore_from.as_uri()})
    second = restored_env.execute_sql(job_sql).get_job_client()
    try:
        second_id = str(second.get_job_id())
        await _wait_until(lambda: arrived(everything), 90, "every input row in both sinks")
        # rows read again (part B) are flushed by the sink before the next checkpoint completes
        done = _completed_checkpoints(checkpoint_dir, second_id)
        await _wait_for_checkpoint_after(checkpoint_dir, second_id, done[-1] if done else 0)
    finally:
        await asyncio.to_thread(_stop, second)

    assert await _pk_rows(conn, by_seq) == {s: f"p{s}" for s in everything}
    copied = await _log_rows(conn, copy)
    assert all(payload == f"p{seq}" for seq, payload in copied)
    counts = collections.Counter(seq for seq, _ in copied)
    assert set(counts) == set(everything), f"lost: {sorted(set(everything) - set(counts))[:20]}"
    # A: covered by the restored checkpoint (a restore that re-read from the start would duplicate it);
    # C: read by the restored job only
    duplicated = sorted(s for s, n in counts.items() if n != 1)
    assert all(s in part_b and counts[s] == 2 for s in duplicated), \
        f"duplicates outside the rows in flight at the cancellation: {duplicated[:20]}"
