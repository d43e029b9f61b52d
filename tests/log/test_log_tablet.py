"""LogTablet (fluss/server/log): appends, reads, segments and indexes, recovery, retention, truncation."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from fluss.errors import ErrorCode, FlussError
from fluss.record.log_batch import (
    COMPRESSION_NONE,
    COMPRESSION_ZSTD,
    LogBatch,
    assign_offsets,
    build_batch,
    iter_batches,
)
from fluss.server.log import loader as loader_module
from fluss.server.log import segment as segment_module
from fluss.server.log.checkpoint import CheckpointFile
from fluss.server.log.config import LogConfig
from fluss.server.log.loader import CHECKPOINT_FILE_NAME
from fluss.server.log.tablet import LogTablet

SCHEMA = pa.schema([("v", pa.int64()), ("s", pa.string())])
SMALL = LogConfig(segment_bytes=4096, index_interval_bytes=512)


def client_batch(values, compression=COMPRESSION_NONE, change_types=None) -> bytes:
    values = list(values)
    rb = pa.record_batch([pa.array(values, pa.int64()), pa.array([f"row-{v}" for v in values])], schema=SCHEMA)
    return build_batch(rb, schema_id=1, compression=compression, change_types=change_types)


def values_of(records: bytes) -> list[int]:
    out: list[int] = []
    for batch in iter_batches(records, validate=True):
        rb = batch.to_arrow(SCHEMA)
        values = rb.column("v").to_pylist()
        assert rb.column("s").to_pylist() == [f"row-{v}" for v in values]
        assert values == list(range(batch.base_offset, batch.next_offset)), "record value must equal its offset"
        out.extend(values)
    return out


def fill(tablet: LogTablet, count: int, *, batch_size=7, timestamp=lambda i: 1000 + i, epoch=1) -> None:
    """Append records whose value equals their offset, ``batch_size`` per batch, one batch per request."""
    i = 0
    while tablet.log_end_offset < count:
        start = tablet.log_end_offset
        n = min(batch_size, count - start)
        info = tablet.append_as_leader(client_batch(range(start, start + n)), epoch, commit_timestamp=timestamp(i))
        assert (info.first_offset, info.last_offset, info.record_count) == (start, start + n - 1, n)
        i += 1


def read_all(tablet: LogTablet, start: int = 0, max_bytes: int = 1 << 20, max_offset: int | None = None):
    out, offset = [], start
    while True:
        data = tablet.read(offset, max_bytes, max_offset)
        if data.is_empty:
            return out
        values = values_of(data.records)
        out.extend(v for v in values if v >= offset)
        offset = data.next_offset


def segment_files(directory: Path, suffix: str) -> list[Path]:
    return sorted(directory.glob(f"*{suffix}"))


@pytest.fixture
def tablet(tmp_path):
    t = LogTablet.open(tmp_path / "bucket-0", SMALL)
    yield t
    t.close()


# -- appends ----------------------------------------------------------------------------------------------------


def test_leader_append_assigns_consecutive_offsets_epoch_and_timestamp(tablet):
    info = tablet.append_as_leader(client_batch(range(3)) + client_batch(range(3, 8)), 5, commit_timestamp=777)
    assert (info.first_offset, info.last_offset, info.record_count, info.max_timestamp, info.batch_count) == (
        0, 7, 8, 777, 2)
    info = tablet.append_as_leader(client_batch(range(8, 10)), 6)
    assert (info.first_offset, info.last_offset) == (8, 9)
    batches = list(iter_batches(tablet.read(0, 1 << 20).records, validate=True))
    assert [(b.base_offset, b.record_count, b.leader_epoch) for b in batches] == [(0, 3, 5), (3, 5, 5), (8, 2, 6)]
    assert [b.commit_timestamp for b in batches[:2]] == [777, 777]
    assert batches[2].commit_timestamp == info.max_timestamp > 1_600_000_000_000  # wall clock when not given
    assert tablet.log_end_offset == 10


def test_the_lock_is_held_for_an_inline_append_only_when_no_other_thread_holds_it(tablet):
    """``held_if_free``: the event loop appends a small batch itself only when that cannot wait behind a worker
    thread (a read, a roll, a checkpoint); otherwise it hands the append to a worker at once."""
    import threading

    with tablet.held_if_free() as held:
        assert held
        info = tablet.append_as_leader(client_batch([0, 1]), leader_epoch=1)  # the lock is re-entrant
    assert (info.first_offset, info.last_offset) == (0, 1)
    taken, release = threading.Event(), threading.Event()

    def worker():
        with tablet._lock:  # noqa: SLF001 - a worker busy with this log
            taken.set()
            release.wait(10)

    t = threading.Thread(target=worker)
    t.start()
    try:
        assert taken.wait(10)
        with tablet.held_if_free() as held:
            assert not held
    finally:
        release.set()
        t.join()
    with tablet.held_if_free() as held:
        assert held
    assert read_all(tablet) == [0, 1]


def test_tail_bytes_bound_a_read_of_the_active_segment_only(tmp_path):
    """``tail_bytes_from``: from the offset index's entry at or below the offset to the active segment's end (what
    a read from there touches at most, so a fetch may read it on the event loop); None outside that segment or
    once the log is closed."""
    tablet = LogTablet.open(tmp_path / "t", SMALL)  # 4 KiB segments, an index entry every 512 bytes
    fill(tablet, 200)
    active = tablet._segments[-1]  # noqa: SLF001
    assert tablet.segment_count > 1 and active.base_offset > 0
    last = tablet.log_end_offset - 1
    tail = tablet.tail_bytes_from(last)
    position, _ = active.find_batch(last)
    assert active.size - position <= tail <= active.size - position + SMALL.index_interval_bytes + 4096
    assert tablet.tail_bytes_from(active.base_offset) == active.size
    assert tablet.tail_bytes_from(active.base_offset - 1) is None  # in an older segment
    assert tablet.tail_bytes_from(tablet.log_end_offset) is None  # nothing to read
    tablet.close()
    assert tablet.tail_bytes_from(last) is None


def test_leader_append_stores_exactly_the_assigned_batches(tablet):
    """The request is written as new headers plus the bodies as they arrived (``pwritev``): the segment holds
    what ``assign_offsets`` of each batch gives."""
    first, second = client_batch(range(3), COMPRESSION_ZSTD), client_batch(range(3, 50))
    tablet.append_as_leader(first + second, 2, commit_timestamp=55)
    expected = assign_offsets(first, 0, 2, 55) + assign_offsets(second, 3, 2, 55)
    assert segment_files(tablet.directory, ".log")[0].read_bytes() == expected
    assert tablet.read(0, 1 << 20).records == expected


def test_vectored_writes_resume_after_short_writes(tmp_path, monkeypatch):
    real = os.pwritev
    calls: list[int] = []

    def short_pwritev(fd, buffers, offset):  # writes at most 5 bytes and 3 buffers per call
        calls.append(len(buffers))
        return real(fd, [bytes(b"".join(bytes(b) for b in buffers[:3])[:5])], offset)

    monkeypatch.setattr(segment_module.os, "pwritev", short_pwritev)
    monkeypatch.setattr(segment_module, "_IOV_MAX", 3)
    parts = [b"abc", b"", memoryview(b"0123456789")[2:], bytearray(b"xyz"), b"Q" * 11]
    fd = os.open(tmp_path / "f", os.O_RDWR | os.O_CREAT)
    try:
        segment_module._pwrite_all(fd, parts, 4)
    finally:
        os.close(fd)
    assert (tmp_path / "f").read_bytes() == b"\0" * 4 + b"abc23456789xyz" + b"Q" * 11
    assert max(calls) <= 3 and len(calls) == 5  # 25 bytes, 5 at a time


def test_a_bad_crc_in_any_batch_rejects_the_whole_request_and_writes_nothing(tablet):
    tablet.append_as_leader(client_batch(range(4)), 1)
    size_before = segment_files(tablet.directory, ".log")[0].stat().st_size
    bad = bytearray(client_batch(range(4, 9)))
    bad[-20] ^= 0x40
    for request in (client_batch(range(4, 6)) + bytes(bad), bytes(bad), client_batch(range(4, 6))[:-8]):
        with pytest.raises(FlussError) as e:
            tablet.append_as_leader(request, 1)
        assert e.value.error_code == ErrorCode.CORRUPT_RECORD_EXCEPTION
    assert tablet.log_end_offset == 4
    assert segment_files(tablet.directory, ".log")[0].stat().st_size == size_before
    assert read_all(tablet) == [0, 1, 2, 3]


def test_follower_append_keeps_leader_offsets_and_must_continue_at_the_log_end(tmp_path, tablet):
    fill(tablet, 30)
    follower = LogTablet.open(tmp_path / "follower", SMALL)
    offset = 0
    while offset < tablet.log_end_offset:
        fetched = tablet.read(offset, 300)
        info = follower.append_as_follower(fetched.records)
        assert info.first_offset == offset
        offset = fetched.next_offset
    assert follower.log_end_offset == 30
    assert read_all(follower) == list(range(30))
    leader_logs = segment_files(tablet.directory, ".log")
    follower_logs = segment_files(follower.directory, ".log")
    assert [p.name for p in follower_logs] == [p.name for p in leader_logs]
    assert [p.read_bytes() for p in follower_logs] == [p.read_bytes() for p in leader_logs]
    with pytest.raises(FlussError, match="offset 0 where offset 30 was expected"):
        follower.append_as_follower(tablet.read(0, 100).records)
    follower.close()


def test_changelog_batches_keep_their_change_types(tablet):
    kinds = np.array([1, 2, 3, 4], dtype=np.uint8)
    tablet.append_as_leader(client_batch(range(4), COMPRESSION_ZSTD, change_types=kinds), 1)
    (batch,) = iter_batches(tablet.read(0, 1 << 20).records, validate=True)
    assert batch.change_types().tolist() == [1, 2, 3, 4]
    assert batch.to_arrow(SCHEMA).column("v").to_pylist() == [0, 1, 2, 3]


def test_a_batch_larger_than_a_segment_gets_a_segment_of_its_own(tmp_path):
    with LogTablet.open(tmp_path / "t", LogConfig(segment_bytes=1024, index_interval_bytes=128)) as tablet:
        fill(tablet, 6, batch_size=3)
        tablet.append_as_leader(client_batch(range(6, 206)), 1)
        fill(tablet, 212, batch_size=3)
        logs = segment_files(tablet.directory, ".log")
        big = [p for p in logs if p.stat().st_size > 1024]
        assert [int(p.name[:20]) for p in big] == [6]
        assert [b.base_offset for b in iter_batches(big[0].read_bytes())] == [6]
        assert read_all(tablet) == list(range(212))
        assert values_of(tablet.read(100, 10).records) == list(range(6, 206))


def test_concurrent_appends_and_reads_from_threads_keep_the_log_consistent(tablet):
    import threading

    errors: list[BaseException] = []
    stop = threading.Event()

    def writer(worker: int) -> None:
        try:
            for i in range(40):
                rb = pa.record_batch([pa.array([worker * 1000 + i] * 3, pa.int64()), pa.array(["x"] * 3)],
                                     schema=SCHEMA)
                tablet.append_as_leader(build_batch(rb, schema_id=1), 1)
        except BaseException as e:
            errors.append(e)

    def reader() -> None:
        try:
            while not stop.is_set():
                end = tablet.log_end_offset
                offset = 0
                while offset < end:
                    data = tablet.read(offset, 2000)
                    batches = list(iter_batches(data.records, validate=True))
                    assert batches[0].base_offset <= offset
                    offset = data.next_offset
        except BaseException as e:
            errors.append(e)

    writers = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    readers = [threading.Thread(target=reader) for _ in range(2)]
    for t in writers + readers:
        t.start()
    for t in writers:
        t.join()
    stop.set()
    for t in readers:
        t.join()
    assert not errors, errors
    assert tablet.log_end_offset == 4 * 40 * 3
    seen = []
    offset = 0
    while offset < tablet.log_end_offset:
        data = tablet.read(offset, 1 << 20)
        for batch in iter_batches(data.records, validate=True):
            assert (batch.base_offset, batch.record_count) == (offset, 3)  # contiguous, no interleaving
            seen.append(batch.to_arrow(SCHEMA).column("v")[0].as_py())
            offset = batch.next_offset
        assert offset == data.next_offset
    assert sorted(seen) == sorted(w * 1000 + i for w in range(4) for i in range(40))


# -- segments and reads -------------------------------------------------------------------------------------------


def test_segments_roll_at_segment_bytes_and_are_named_by_base_offset(tablet):
    fill(tablet, 600)
    logs = segment_files(tablet.directory, ".log")
    assert len(logs) == tablet.segment_count > 5
    bases = [int(p.name[:20]) for p in logs]
    assert all(len(p.stem) == 20 for p in logs)
    assert bases == tablet.segment_base_offsets()
    for path, base in zip(logs, bases, strict=True):
        first = LogBatch(path.read_bytes())
        assert first.base_offset == base
        assert path.stat().st_size <= SMALL.segment_bytes
        assert path.with_suffix(".index").exists() and path.with_suffix(".timeindex").exists()


def test_explicit_roll_starts_a_segment_at_the_log_end_only_when_the_active_one_has_data(tmp_path):
    with LogTablet.open(tmp_path / "t", LogConfig(segment_bytes=1 << 20)) as tablet:
        tablet.roll()
        assert tablet.segment_base_offsets() == [0]
        fill(tablet, 12)
        assert not tablet.roll_if_needed()
        tablet.roll()
        assert tablet.segment_base_offsets() == [0, 12]
        assert tablet.recovery_point == 12  # the sealed segment was fsynced
        fill(tablet, 20)
        assert read_all(tablet) == list(range(20))


def test_reading_from_every_offset_returns_exactly_the_right_records(tablet):
    fill(tablet, 400, batch_size=5)
    assert tablet.segment_count > 5
    for offset in range(400):
        data = tablet.read(offset, 700)
        values = values_of(data.records)
        assert data.first_offset == values[0] <= offset < values[0] + 5  # starts with the batch holding offset
        assert values == list(range(values[0], data.next_offset))
        assert len(data.records) <= 700
        assert (data.log_start_offset, data.log_end_offset) == (0, 400)
    assert read_all(tablet) == list(range(400))
    for offset in (0, 1, 37, 123, 399):
        assert read_all(tablet, offset) == list(range(offset, 400))


def test_max_bytes_is_respected_except_for_a_single_larger_batch(tablet):
    fill(tablet, 100, batch_size=10)
    sizes = [b.size_in_bytes for b in iter_batches(tablet.read(0, 1 << 20).records)]  # the first segment
    assert len(sizes) >= 4
    ends = np.cumsum(sizes).tolist()
    for max_bytes in (1, sizes[0] - 1, sizes[0], ends[1] - 1, ends[1], ends[2] + 5, ends[3]):
        data = tablet.read(0, max_bytes)
        whole = max(1, sum(1 for end in ends if end <= max_bytes))
        assert len(data.records) == ends[whole - 1]
        assert values_of(data.records) == list(range(10 * whole))
        assert data.next_offset == 10 * whole
    empty = tablet.read(0, sizes[0] - 1, min_one_batch=False)
    assert empty.is_empty and empty.next_offset == 0 and empty.first_offset == -1


def test_a_read_touches_the_file_once_at_the_size_it_returns(tmp_path, monkeypatch):
    """A first batch larger than max_bytes is read at its own size (after its header), not at max_bytes first;
    batches cut off at the end of a read are dropped from a view, not copied."""
    log = LogTablet.open(tmp_path / "reads")
    big = client_batch(range(2000))
    small = client_batch(range(2000, 2005))
    for data in (big, small, client_batch(range(2005, 2010))):
        log.append_as_leader(data, leader_epoch=1, commit_timestamp=1)
    reads: list[int] = []
    original = segment_module.LogSegment._pread

    def counting(self, length, position):
        reads.append(length)
        return original(self, length, position)

    monkeypatch.setattr(segment_module.LogSegment, "_pread", counting)
    got = log.read(0, 1000).records
    # (reads before these find the batch's position through the index)
    assert len(got) == len(big) and reads[-2:] == [segment_module.HEADER_SIZE, len(big)] and 1000 not in reads
    reads.clear()
    got = log.read(0, len(big) + len(small) + 10).records  # the read ends inside the third batch
    assert isinstance(got, memoryview) and len(got) == len(big) + len(small)
    assert reads[-2:] == [segment_module.HEADER_SIZE, len(big) + len(small) + 10]
    assert values_of(got) == list(range(2005))
    log.close()


def test_max_offset_is_an_exclusive_bound_on_whole_batches(tablet):
    fill(tablet, 100, batch_size=10)
    assert values_of(tablet.read(0, 1 << 20, max_offset=40).records) == list(range(40))
    assert values_of(tablet.read(0, 1 << 20, max_offset=45).records) == list(range(40))  # 40..49 not whole
    assert values_of(tablet.read(42, 1 << 20, max_offset=50).records) == list(range(40, 50))
    assert tablet.read(42, 1 << 20, max_offset=45).is_empty
    assert tablet.read(40, 1 << 20, max_offset=40).is_empty
    assert read_all(tablet, 0, max_bytes=300, max_offset=73) == list(range(70))


def test_out_of_range_reads_raise_offset_out_of_range(tablet):
    fill(tablet, 20)
    assert tablet.read(20, 1000).is_empty  # reading at the log end waits for data: not an error
    for offset in (21, 10_000, -1):
        with pytest.raises(FlussError) as e:
            tablet.read(offset, 1000)
        assert e.value.error_code == ErrorCode.LOG_OFFSET_OUT_OF_RANGE_EXCEPTION
        assert str(offset) in e.value.message and "[0, 20)" in e.value.message


def test_offset_for_timestamp_finds_the_first_batch_at_or_after_it(tablet):
    # batch i holds offsets [5i, 5i+5) and has timestamp 1000 + 10 * i
    fill(tablet, 500, batch_size=5, timestamp=lambda i: 1000 + 10 * i)
    assert tablet.segment_count > 3
    assert tablet.offset_for_timestamp(0) == 0
    assert tablet.offset_for_timestamp(1000) == 0
    assert tablet.offset_for_timestamp(1001) == 5
    for i in range(100):
        assert tablet.offset_for_timestamp(1000 + 10 * i) == 5 * i
        assert tablet.offset_for_timestamp(1000 + 10 * i - 3) == 5 * i
    assert tablet.offset_for_timestamp(1000 + 10 * 99 + 1) == 500  # none: LEO


def test_offset_for_timestamp_with_repeated_and_backwards_timestamps(tablet):
    stamps = [5, 5, 5, 3, 3, 9, 9, 2, 12, 12] * 10
    fill(tablet, 500, batch_size=5, timestamp=lambda i: stamps[i])
    for target in range(0, 14):
        expected = next((5 * i for i, ts in enumerate(stamps) if ts >= target), 500)
        assert tablet.offset_for_timestamp(target) == expected, target


# -- high watermark, flush and close -------------------------------------------------------------------------


def test_high_watermark_is_clamped_and_persisted_on_close(tmp_path):
    directory = tmp_path / "t"
    with LogTablet.open(directory, SMALL) as tablet:
        fill(tablet, 50)
        assert tablet.update_high_watermark(1000) == 50
        assert tablet.update_high_watermark(30) == 30
    values = CheckpointFile(directory / CHECKPOINT_FILE_NAME).read()
    assert values == {"high_watermark": 30, "recovery_point": 50, "written_point": 50,
                      "boot_id": loader_module.boot_id()}
    with LogTablet.open(directory, SMALL) as tablet:
        assert (tablet.high_watermark, tablet.recovery_point, tablet.log_end_offset) == (30, 50, 50)
        assert read_all(tablet) == list(range(50))


def test_an_empty_new_log_writes_no_checkpoint_until_it_has_something_to_say(tmp_path):
    """A missing checkpoint file reads as an empty log at its start, so a new bucket's periodic checkpoints write
    (and fsync) nothing until it has data; a log whose file exists keeps writing it."""
    directory = tmp_path / "t"
    file = directory / CHECKPOINT_FILE_NAME
    with LogTablet.open(directory, SMALL) as tablet:
        tablet.checkpoint()
        tablet.flush()
        assert not file.exists()
        fill(tablet, 20)
        tablet.update_high_watermark(20)
        tablet.checkpoint()
        assert CheckpointFile(file).read()["high_watermark"] == 20
        tablet.truncate_to(0)  # the file exists: an empty log is written down too
        assert CheckpointFile(file).read()["high_watermark"] == 0
    with LogTablet.open(directory / "other", SMALL) as tablet:
        tablet.restart_at(500)  # a follower's empty log continued at its leader's log start
        tablet.checkpoint()
        assert not (directory / "other" / CHECKPOINT_FILE_NAME).exists()
    with LogTablet.open(directory / "other", SMALL) as tablet:  # ... which the missing file reads as
        assert (tablet.log_start_offset, tablet.high_watermark, tablet.recovery_point) == (500, 500, 500)


def test_flush_interval_messages_advances_the_recovery_point(tmp_path):
    with LogTablet.open(tmp_path / "t", LogConfig(flush_interval_messages=20)) as tablet:
        fill(tablet, 14)
        assert tablet.recovery_point == 0
        fill(tablet, 21)
        assert tablet.recovery_point == 21
        fill(tablet, 28)
        assert tablet.recovery_point == 21
        tablet.flush()
        assert tablet.recovery_point == 28


def test_closed_tablet_refuses_work(tmp_path):
    tablet = LogTablet.open(tmp_path / "t", SMALL)
    tablet.close()
    with pytest.raises(FlussError, match="closed"):
        tablet.read(0, 10)


# -- recovery -------------------------------------------------------------------------------------------------


def test_torn_tail_is_cut_off_on_open(tmp_path):
    directory = tmp_path / "t"
    tablet = LogTablet.open(directory, SMALL)
    fill(tablet, 200, batch_size=10)
    tablet.close()
    last_log = segment_files(directory, ".log")[-1]
    data = last_log.read_bytes()
    batches = list(iter_batches(data))
    keep = sum(b.size_in_bytes for b in batches[:-1])
    last_good_offset = batches[-2].next_offset
    with open(last_log, "r+b") as f:  # the last batch half written, then garbage
        f.truncate(keep + batches[-1].size_in_bytes // 2)
        f.seek(0, os.SEEK_END)
        f.write(b"\xde\xad\xbe\xef" * 100)
    with LogTablet.open(directory, SMALL) as tablet:
        assert tablet.log_end_offset == last_good_offset
        assert last_log.stat().st_size == keep
        assert tablet.high_watermark <= last_good_offset
        assert read_all(tablet) == list(range(last_good_offset))
        fill(tablet, 230, batch_size=10)
        assert read_all(tablet) == list(range(230))
    with LogTablet.open(directory, SMALL) as tablet:
        assert read_all(tablet) == list(range(230))


def test_unflushed_corrupt_batch_is_cut_with_everything_after_it(tmp_path, caplog):
    directory = tmp_path / "t"
    tablet = LogTablet.open(directory, SMALL)
    fill(tablet, 100, batch_size=10)
    tablet.flush()
    fill(tablet, 140, batch_size=10)  # not flushed: offsets >= 100 are past the recovery point
    log_path = segment_files(directory, ".log")[-1]
    batches = list(iter_batches(log_path.read_bytes()))
    victim = next(b for b in batches if b.base_offset == 120)
    position = sum(b.size_in_bytes for b in batches[: batches.index(victim)])
    with open(log_path, "r+b") as f:  # flip one byte inside the batch at offset 120, as if torn by a crash
        f.seek(position + 200)
        byte = f.read(1)
        f.seek(position + 200)
        f.write(bytes([byte[0] ^ 1]))
    del tablet  # no close(): like a killed process (the page cache holds what was written)
    with caplog.at_level("WARNING", logger="fluss.server.log.loader"):
        with LogTablet.open(directory, SMALL) as reopened:
            assert reopened.log_end_offset == 120
            assert read_all(reopened) == list(range(120))
    cut = [r.getMessage() for r in caplog.records if "Cut" in r.getMessage()]
    assert cut and log_path.name in cut[0] and "offset 120" in cut[0], caplog.text


def test_checkpoint_lets_a_restart_in_the_same_boot_recheck_only_newer_data(tmp_path, caplog):
    directory = tmp_path / "t"
    tablet = LogTablet.open(directory, LogConfig(segment_bytes=1 << 20, index_interval_bytes=512))
    fill(tablet, 100, batch_size=10)
    assert tablet.checkpoint() and not tablet.checkpoint()  # the second has nothing new
    assert tablet.recovery_point == 0  # nothing was fsynced: a machine crash still re-checks everything
    fill(tablet, 130, batch_size=10)
    values = CheckpointFile(directory / CHECKPOINT_FILE_NAME).read()
    assert values["written_point"] == 100 and values["boot_id"] == loader_module.boot_id() != 0
    del tablet  # killed: offsets >= 100 are checked again at start-up, the rest is trusted
    with caplog.at_level("WARNING", logger="fluss.server.log.loader"):
        with LogTablet.open(directory, SMALL) as reopened:
            assert read_all(reopened) == list(range(130))
    assert "beyond the recovery point 100" in caplog.text


def test_after_a_reboot_everything_since_the_last_fsync_is_checked(tmp_path, caplog, monkeypatch):
    directory = tmp_path / "t"
    tablet = LogTablet.open(directory, LogConfig(segment_bytes=1 << 20, index_interval_bytes=512))
    fill(tablet, 100, batch_size=10)
    tablet.checkpoint()
    del tablet
    monkeypatch.setattr(loader_module, "_boot_id", loader_module.boot_id() + 1)  # as if the machine restarted
    with caplog.at_level("WARNING", logger="fluss.server.log.loader"):
        with LogTablet.open(directory, SMALL) as reopened:
            assert read_all(reopened) == list(range(100))
    assert "beyond the recovery point 0" in caplog.text


def test_restart_at_empties_the_log_and_continues_at_the_offset(tmp_path):
    with LogTablet.open(tmp_path / "t", SMALL) as tablet:
        fill(tablet, 30)
        tablet.restart_at(500)
        assert (tablet.log_start_offset, tablet.log_end_offset, tablet.high_watermark) == (500, 500, 500)
        info = tablet.append_as_follower(assign_offsets(client_batch(range(500, 505)), 500, 3, 1))
        assert (info.first_offset, info.last_offset) == (500, 504)
    with LogTablet.open(tmp_path / "t", SMALL) as tablet:
        assert read_all(tablet, start=500) == list(range(500, 505))


def test_errors_name_the_log_not_its_directory(tmp_path):
    with LogTablet.open(tmp_path / "bucket-0", SMALL, name="table db.t bucket 0") as tablet:
        fill(tablet, 10)
        for call in (lambda: tablet.read(10**12, 100), lambda: tablet.append_as_leader(b"\0" * 10, 1)):
            with pytest.raises(FlussError) as e:
                call()
            assert "table db.t bucket 0" in e.value.message and str(tmp_path) not in e.value.message


def test_recovery_deletes_segments_after_a_segment_that_was_cut_short(tmp_path):
    directory = tmp_path / "t"
    tablet = LogTablet.open(directory, SMALL)
    fill(tablet, 300, batch_size=10)
    tablet.close()
    logs = segment_files(directory, ".log")
    assert len(logs) >= 4
    CheckpointFile(directory / CHECKPOINT_FILE_NAME).write({"high_watermark": 300, "recovery_point": 0})
    victim = logs[1]
    with open(victim, "r+b") as f:
        f.truncate(victim.stat().st_size - 3)
    cut_at = list(iter_batches(victim.read_bytes()))[-1].next_offset
    with LogTablet.open(directory, SMALL) as tablet:
        assert tablet.log_end_offset == cut_at
        assert segment_files(directory, ".log") == logs[:2]
        assert read_all(tablet) == list(range(cut_at))
        assert tablet.high_watermark == cut_at


@pytest.mark.parametrize("damage", ["delete", "partial-entry", "garbage-entry"])
def test_damaged_or_missing_indexes_are_rebuilt_identically(tmp_path, damage):
    directory = tmp_path / "t"
    tablet = LogTablet.open(directory, SMALL)
    fill(tablet, 400, batch_size=3, timestamp=lambda i: 5000 + i // 2)
    tablet.close()
    originals = {p: p.read_bytes() for p in segment_files(directory, ".index") + segment_files(directory, ".timeindex")}
    assert any(len(v) > 0 for v in originals.values())
    sealed_index = segment_files(directory, ".index")[1]
    sealed_time = segment_files(directory, ".timeindex")[1]
    active_index = segment_files(directory, ".index")[-1]
    for path in (sealed_index, sealed_time, active_index):
        if damage == "delete":
            path.unlink()
        elif damage == "partial-entry":
            with open(path, "ab") as f:
                f.write(b"\x01\x02\x03")
        else:
            # a whole, well-formed entry pointing beyond the end of the segment
            words = 2 if path.suffix == ".index" else 3
            with open(path, "ab") as f:
                f.write((path.stat().st_size + 9999).to_bytes(4, "little") * words)
    with LogTablet.open(directory, SMALL) as tablet:
        for path, content in originals.items():
            assert path.read_bytes() == content, path.name
        assert read_all(tablet) == list(range(400))
        for i in range(0, 400, 7):
            assert tablet.offset_for_timestamp(5000 + (i // 3) // 2) == 3 * ((i // 3) - (i // 3) % 2)


def test_orphan_index_files_and_temp_files_are_removed_on_open(tmp_path):
    directory = tmp_path / "t"
    with LogTablet.open(directory, SMALL) as tablet:
        fill(tablet, 10)
    (directory / "00000000000000099999.index").write_bytes(b"\0" * 8)
    (directory / "log.checkpoint.tmp").write_text("half")
    with LogTablet.open(directory, SMALL) as tablet:
        assert read_all(tablet) == list(range(10))
    assert not (directory / "00000000000000099999.index").exists()
    assert not (directory / "log.checkpoint.tmp").exists()


_WRITER = textwrap.dedent(
    """
    import sys
    import pyarrow as pa
    from fluss.record.log_batch import build_batch
    from fluss.server.log.config import LogConfig
    from fluss.server.log.tablet import LogTablet

    schema = pa.schema([("v", pa.int64()), ("s", pa.string())])
    tablet = LogTablet.open(sys.argv[1], LogConfig(segment_bytes=16384, index_interval_bytes=1024,
                                                   flush_interval_messages=500))
    while True:
        start = tablet.log_end_offset
        values = list(range(start, start + 13))
        rb = pa.record_batch([pa.array(values, pa.int64()), pa.array([f"row-{v}" for v in values])], schema=schema)
        info = tablet.append_as_leader(build_batch(rb, schema_id=1), 1)
        print(info.last_offset + 1, flush=True)
    """
)


def test_appends_acknowledged_before_sigkill_survive_reopen(tmp_path):
    directory = tmp_path / "t"
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(directory)], stdout=subprocess.PIPE, text=True)
    acknowledged = 0
    try:
        for _ in range(600):
            line = proc.stdout.readline()
            assert line, "writer died"
            acknowledged = int(line)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    with LogTablet.open(directory, LogConfig(segment_bytes=16384, index_interval_bytes=1024)) as tablet:
        assert tablet.log_end_offset >= acknowledged
        assert tablet.segment_count > 3
        assert read_all(tablet, max_bytes=5000) == list(range(tablet.log_end_offset))


# -- truncation and retention -----------------------------------------------------------------------------------


def test_truncate_to_drops_everything_at_and_after_the_offset(tmp_path):
    directory = tmp_path / "t"
    tablet = LogTablet.open(directory, SMALL)
    fill(tablet, 300, batch_size=10)
    tablet.update_high_watermark(300)
    bases = tablet.segment_base_offsets()
    tablet.truncate_to(bases[2])  # exactly at a segment boundary
    assert tablet.log_end_offset == bases[2] and tablet.segment_base_offsets() == bases[:2]
    assert tablet.high_watermark == bases[2]
    tablet.truncate_to(45)  # mid-batch: the batch [40, 50) is dropped whole
    assert tablet.log_end_offset == 40
    assert read_all(tablet) == list(range(40))
    fill(tablet, 120, batch_size=10)
    assert read_all(tablet) == list(range(120))
    tablet.close()
    with LogTablet.open(directory, SMALL) as reopened:
        assert read_all(reopened) == list(range(120))
        assert reopened.high_watermark == 40


def test_truncate_below_the_log_start_restarts_the_log_there(tmp_path):
    with LogTablet.open(tmp_path / "t", SMALL) as tablet:
        fill(tablet, 50)
        tablet.truncate_to(0)
        assert (tablet.log_start_offset, tablet.log_end_offset, tablet.segment_count) == (0, 0, 1)
        fill(tablet, 5)
        assert read_all(tablet) == list(range(5))


def test_retention_deletes_only_whole_expired_segments_and_never_the_active_one(tmp_path):
    day = 24 * 3600 * 1000
    config = LogConfig(segment_bytes=4096, index_interval_bytes=512, ttl_ms=day)
    directory = tmp_path / "t"
    tablet = LogTablet.open(directory, config)
    fill(tablet, 500, batch_size=10, timestamp=lambda i: i * 1000)  # batch i at i seconds
    tablet.update_high_watermark(500)
    bases = tablet.segment_base_offsets()
    assert len(bases) >= 5
    ends = bases[1:] + [500]
    max_ts = [((end // 10) - 1) * 1000 for end in ends]  # the last batch of each segment is its newest

    assert tablet.delete_expired_segments(now_ms=max_ts[0] + day) == 0  # not older than the ttl yet
    assert tablet.delete_expired_segments(now_ms=max_ts[1] + day + 1) == 2
    assert tablet.log_start_offset == bases[2]
    assert segment_files(directory, ".log")[0].name == f"{bases[2]:020d}.log"
    assert not (directory / f"{bases[0]:020d}.index").exists()
    with pytest.raises(FlussError) as e:
        tablet.read(bases[2] - 1, 1000)
    assert e.value.error_code == ErrorCode.LOG_OFFSET_OUT_OF_RANGE_EXCEPTION
    assert read_all(tablet, bases[2]) == list(range(bases[2], 500))

    tablet.update_high_watermark(bases[3] + 1)  # segments reaching beyond the high watermark are kept
    assert tablet.delete_expired_segments(now_ms=10**15) == 1
    tablet.update_high_watermark(500)
    assert tablet.delete_expired_segments(now_ms=10**15) == len(bases) - 4
    assert tablet.segment_count == 1 and tablet.log_start_offset == bases[-1]  # the active segment stays
    assert read_all(tablet, bases[-1]) == list(range(bases[-1], 500))
    tablet.close()
    with LogTablet.open(directory, config) as reopened:
        assert (reopened.log_start_offset, reopened.log_end_offset, reopened.high_watermark) == (bases[-1], 500, 500)


def test_retention_is_off_with_ttl_minus_one(tmp_path):
    with LogTablet.open(tmp_path / "t", LogConfig(segment_bytes=2048, ttl_ms=-1)) as tablet:
        fill(tablet, 200, timestamp=lambda i: 0)
        tablet.update_high_watermark(200)
        assert tablet.delete_expired_segments(now_ms=10**15) == 0


# -- config and checkpoint files ------------------------------------------------------------------------------


def test_log_config_reads_fluss_option_keys():
    config = LogConfig.from_options(
        {"log.segment.file-size": "64mb", "log.index.interval-size": "8kb", "log.flush.interval-messages": "100"},
        {"table.log.ttl": "2d"},
    )
    assert config == LogConfig(segment_bytes=64 << 20, index_interval_bytes=8192, ttl_ms=2 * 86_400_000,
                               flush_interval_messages=100)
    assert LogConfig.from_options({}, {"table.log.ttl": "-1"}).ttl_ms == -1
    assert LogConfig.from_options() == LogConfig()
    with pytest.raises(FlussError, match="log.segment.file-size") as e:
        LogConfig(segment_bytes=0)
    assert e.value.error_code == ErrorCode.INVALID_CONFIG_EXCEPTION


def test_checkpoint_file_round_trips_and_names_a_malformed_file(tmp_path):
    checkpoint = CheckpointFile(tmp_path / "cp")
    assert checkpoint.read() == {}
    checkpoint.write({"high_watermark": 12, "recovery_point": 10})
    assert checkpoint.read() == {"high_watermark": 12, "recovery_point": 10}
    assert not (tmp_path / "cp.tmp").exists()
    (tmp_path / "cp").write_text("0\nhigh_watermark twelve\n")
    with pytest.raises(FlussError) as e:
        checkpoint.read()
    assert e.value.error_code == ErrorCode.LOG_STORAGE_EXCEPTION
    assert "cp" in e.value.message and "line 2" in e.value.message
