"""Property tests: KvTablet against a plain-dict model over random operation sequences.

Each seed runs batches of random upserts/deletes (with repeated keys inside a batch), random partial
updates where the engine allows them, and random flushes and aborts. After every step the emitted
changelog must equal the model's diffs, lookups must equal the committed model state, and at the end a
fresh tablet rebuilt from the kept changelog must equal the final state.
"""

from __future__ import annotations

import random
import zlib

import numpy as np
import pytest
from kv_model import AGG_PROPS, SCHEMA, Model, changelog_records, random_row, state_of, to_batch

from fluss.key.encoding import encode_key
from fluss.server.kv.tablet import KvTablet

SEEDS = range(20)

CASES = {
    "last_row_full": ({}, Model("last_row"), False, False),
    "last_row_wal": ({"table.changelog.image": "WAL"}, Model("last_row", wal=True), False, False),
    "last_row_ignore_deletes": (
        {"table.delete.behavior": "IGNORE"},
        Model("last_row", deletes="IGNORE"),
        False,
        False,
    ),
    "last_row_partial_update": ({}, Model("last_row"), True, False),
    "last_row_partial_update_wal": (
        {"table.changelog.image": "wal"},
        Model("last_row", wal=True),
        True,
        False,
    ),
    "last_row_field_merge_path": ({}, Model("last_row"), False, True),
    "first_row": ({"table.merge-engine": "first_row"}, Model("first_row", deletes="IGNORE"), False, False),
    "versioned": (
        {"table.merge-engine": "versioned", "table.merge-engine.versioned.ver-column": "ts"},
        Model("versioned", deletes="IGNORE"),
        False,
        False,
    ),
    "versioned_wal": (
        {
            "table.merge-engine": "versioned",
            "table.merge-engine.versioned.ver-column": "ts",
            "table.changelog.image": "WAL",
        },
        Model("versioned", wal=True, deletes="IGNORE"),
        False,
        False,
    ),
    "aggregation": (AGG_PROPS, Model("aggregation", deletes="IGNORE"), False, False),
    "aggregation_partial_update": (AGG_PROPS, Model("aggregation", deletes="IGNORE"), True, False),
    "aggregation_allow_deletes": (
        {**AGG_PROPS, "table.delete.behavior": "ALLOW"},
        Model("aggregation"),
        True,
        False,
    ),
}


def _lookup_state(tablet: KvTablet, keys: range) -> dict[int, tuple]:
    encoded = [encode_key([k], [SCHEMA.columns[0].data_type]) for k in keys]
    batch = tablet.lookup_rows(encoded)
    return {k: r for k, r in state_of(batch).items() if k is not None}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_tablet_matches_model(tmp_path, case, seed):
    props, model0, partial, field_path = CASES[case]
    rng = random.Random(seed * 7919 + zlib.crc32(case.encode()))
    keys = rng.choice([3, 8, 20])
    tablet = KvTablet.open(tmp_path / "kv", SCHEMA, 1, props)
    if field_path:
        tablet.engine.whole_row = False  # force the field-by-field path for the last-row engine
    staged_model = model0.copy()
    committed = model0.copy()
    pending: list[tuple[int, int, Model]] = []  # (start offset, end offset, model after the batch)
    kept_log: list[tuple[int, tuple]] = []  # changelog records in offset order (aborted ones removed)
    leo = 0
    for _ in range(rng.randrange(4, 14)):
        n = rng.randrange(1, 25)
        rows = [random_row(rng, keys) for _ in range(n)]
        ops = [1 if rng.random() < 0.25 else 0 for _ in range(n)]
        targets = None
        if partial and rng.random() < 0.6:
            targets = frozenset([0] + [c for c in range(1, 6) if rng.random() < 0.5])
        expected = []
        for row, op in zip(rows, ops, strict=True):
            expected += staged_model.delete(row, targets) if op else staged_model.upsert(row, targets)
        changelog = tablet.prepare_batch(
            to_batch(rows), np.array(ops, dtype=np.uint8), targets and sorted(targets), leo
        )
        assert changelog_records(changelog) == expected
        start, leo = leo, leo + len(expected)
        kept_log += expected
        pending.append((start, leo, staged_model.copy()))

        action = rng.random()
        if action < 0.2 and pending:  # the log append of the newest batches failed
            cut = rng.randrange(len(pending))
            abort_at = pending[cut][0]
            tablet.abort_from(abort_at)
            del kept_log[abort_at:]
            leo = abort_at
            pending = pending[:cut]
            staged_model = pending[-1][2].copy() if pending else committed.copy()
        elif action < 0.6 and pending:  # the high watermark advanced past some batches
            cut = rng.randrange(len(pending))
            hw = pending[cut][1]
            tablet.flush_up_to(hw)
            committed = pending[cut][2].copy()
            pending = pending[cut + 1 :]
            assert tablet.flushed_offset >= hw
        assert _lookup_state(tablet, range(keys)) == committed.rows
        assert tablet.row_count == len(committed.rows)

    tablet.flush_up_to(leo)
    assert _lookup_state(tablet, range(keys)) == staged_model.rows
    scanned, offset = tablet.scan_all()
    assert state_of(scanned) == staged_model.rows
    assert offset == leo
    assert tablet.row_count == len(staged_model.rows)

    # Recovery with no snapshot: replaying the whole changelog gives the same state.
    replica = KvTablet.open(tmp_path / "replay", SCHEMA, 1, props)
    if kept_log:
        cts = np.array([ct for ct, _ in kept_log], dtype=np.uint8)
        replica.apply_changelog(to_batch([r for _, r in kept_log]), cts, leo)
    assert state_of(replica.scan_all()[0]) == staged_model.rows
    assert replica.flushed_offset == leo
    assert replica.row_count == len(staged_model.rows)
    replica.close()
    tablet.close()
