"""Leader-epoch history and idempotent-writer state of a LogTablet (no cluster)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from fluss.errors import ErrorCode, FlussError
from fluss.record.log_batch import assign_writer, build_batch, iter_batches
from fluss.server.log.config import LogConfig
from fluss.server.log.epoch_cache import LeaderEpochCache
from fluss.server.log.tablet import LogTablet
from fluss.server.log.writer_state import WriterStateManager


def _batch(values: list[int], writer_id: int = -1, seq: int = -1) -> bytes:
    data = build_batch(pa.record_batch([pa.array(values, pa.int64())], names=["v"]), schema_id=1)
    return assign_writer(data, writer_id, seq) if writer_id >= 0 else data


def _values(log: LogTablet) -> list[int]:
    out = []
    data = log.read(log.log_start_offset, 1 << 24).records
    schema = pa.schema([("v", pa.int64())])
    for b in iter_batches(data):
        out.extend(b.to_arrow(schema).column(0).to_pylist())
    return out


def test_epoch_cache_answers_end_offsets_and_survives_reopen(tmp_path):
    cache = LeaderEpochCache(tmp_path)
    cache.assign(0, 0)
    cache.assign(2, 50)
    cache.assign(1, 40)  # older epochs never go back in
    cache.assign(5, 90)
    assert cache.entries() == [(0, 0), (2, 50), (5, 90)]
    assert cache.end_offset_for(0, 120) == (0, 50)
    assert cache.end_offset_for(1, 120) == (0, 50)  # unknown epoch: the largest known below it
    assert cache.end_offset_for(2, 120) == (2, 90)
    assert cache.end_offset_for(7, 120) == (5, 120)
    cache.truncate_from_end(60)
    assert LeaderEpochCache(tmp_path).entries() == [(0, 0), (2, 50)]
    cache.truncate_from_start(55)
    assert cache.entries() == [(2, 55)]


def test_divergent_tail_is_cut_exactly(tmp_path):
    """Old leader A wrote offsets 3-4 in epoch 1 that new leader B (epoch 2) never got: A truncates to 3."""
    a = LogTablet.open(tmp_path / "a", LogConfig())
    b = LogTablet.open(tmp_path / "b", LogConfig())
    a.append_as_leader(_batch([1, 2, 3]), leader_epoch=1)
    b.append_as_follower(a.read(0, 1 << 20).records)
    a.append_as_leader(_batch([4, 5]), leader_epoch=1)  # never replicated
    b.epochs.assign(2, b.log_end_offset)  # B becomes leader
    b.append_as_leader(_batch([40, 50, 60]), leader_epoch=2)
    epoch, end = b.end_offset_for_epoch(a.epochs.latest_epoch)
    assert (epoch, end) == (1, 3)
    a.truncate_to(end)
    a.append_as_follower(b.read(end, 1 << 20).records)
    assert _values(a) == _values(b) == [1, 2, 3, 40, 50, 60]
    assert a.epochs.entries() == [(1, 0), (2, 3)]


def test_resent_batches_are_skipped_and_gaps_rejected(tmp_path):
    log = LogTablet.open(tmp_path, LogConfig())
    first = log.append_as_leader(_batch([1, 2], writer_id=9, seq=0), leader_epoch=0)
    again = log.append_as_leader(_batch([1, 2], writer_id=9, seq=0), leader_epoch=0)
    assert (again.first_offset, again.last_offset, again.record_count) == (first.first_offset, first.last_offset, 0)
    log.append_as_leader(_batch([3], writer_id=9, seq=1) + _batch([4], writer_id=9, seq=2), leader_epoch=0)
    with pytest.raises(FlussError) as e:
        log.append_as_leader(_batch([9], writer_id=9, seq=7), leader_epoch=0)
    assert e.value.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_EXCEPTION
    log.append_as_leader(_batch([5], writer_id=10, seq=0), leader_epoch=0)  # another writer is independent
    assert _values(log) == [1, 2, 3, 4, 5]
    log.close()
    reopened = LogTablet.open(tmp_path, LogConfig())  # writer state is rebuilt from the log
    dup = reopened.append_as_leader(_batch([4], writer_id=9, seq=2), leader_epoch=0)
    assert dup.record_count == 0 and dup.first_offset == 3
    assert _values(reopened) == [1, 2, 3, 4, 5]


def test_an_unknown_writer_starts_at_sequence_0(tmp_path):
    """A writer with no batch in the log: a later sequence may have overtaken its first batches, so it is refused
    (retriable UNKNOWN_WRITER_ID) instead of starting the writer's history past them. A writer the log forgot
    (restarted without writer state, as from remote storage) starts again at 0; PutKv's changelog (gaps
    allowed) still takes any sequence."""
    log = LogTablet.open(tmp_path, LogConfig())
    with pytest.raises(FlussError) as e:
        log.append_as_leader(_batch([2], writer_id=9, seq=1), leader_epoch=0)
    assert e.value.error_code == ErrorCode.UNKNOWN_WRITER_ID_EXCEPTION and "sequence 1, not 0" in e.value.message
    assert log.log_end_offset == 0 and len(log.writers) == 0  # nothing written, no state started
    log.append_as_leader(_batch([1], writer_id=9, seq=0) + _batch([2], writer_id=9, seq=1), leader_epoch=0)
    log.restart_at(log.log_end_offset)  # the earlier batches only in remote storage, without writer state
    with pytest.raises(FlussError) as e:
        log.append_as_leader(_batch([3], writer_id=9, seq=2), leader_epoch=0)
    assert e.value.error_code == ErrorCode.UNKNOWN_WRITER_ID_EXCEPTION
    log.append_as_leader(_batch([3], writer_id=9, seq=0), leader_epoch=0)  # the writer restarts at 0
    log.append_as_leader(_batch([4], writer_id=9, seq=1), leader_epoch=0)
    assert log.append_as_leader(_batch([4], writer_id=9, seq=1), leader_epoch=0).record_count == 0  # a resend
    log.append_as_leader(_batch([5], writer_id=11, seq=6), leader_epoch=0, allow_sequence_gap=True)
    assert _values(log) == [3, 4, 5]


def test_a_sequence_gap_is_reported_before_the_append_would_reject_it():
    writers = WriterStateManager()
    assert not writers.is_gap(4, 0) and writers.is_gap(4, 1)  # a new writer starts at 0
    assert not writers.is_gap(-1, 9) and not writers.is_gap(4, -1)  # not idempotent
    writers.update(4, 0, 0, 9)
    writers.update(4, 1, 10, 19)
    assert [writers.is_gap(4, s) for s in (0, 1, 2, 3)] == [False, False, False, True]  # resend, next, gap
