"""KvTablet behaviour: merge-engine validation, bad input, the pre-write buffer and the high watermark,
lookups, prefix lookups, snapshot scans and restart."""

from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pytest
from kv_model import AGG_PROPS, SCHEMA, changelog_records, state_of, to_batch

from fluss.errors import ErrorCode, FlussError
from fluss.key.encoding import encode_key
from fluss.server.kv import tablet as tablet_module
from fluss.server.kv.merge import AggregationEngine, MergeEngine, physical_rows
from fluss.server.kv.tablet import KvTablet
from fluss.types import Column, DataTypes, RowSchema

INT = SCHEMA.columns[0].data_type


def key(k: int) -> bytes:
    return encode_key([k], [INT])


def row(k, name="x", v=1, ts=1, f=1.0, flag=True):
    return (k, name, v, ts, f, flag)


@pytest.fixture
def tablet(tmp_path):
    t = KvTablet.open(tmp_path / "kv", SCHEMA, 1, {})
    yield t
    t.close()


# ------------------------------------------------------------------------------------------- config


@pytest.mark.parametrize(
    ("props", "code", "names"),
    [
        ({"table.merge-engine": "newest"}, ErrorCode.INVALID_CONFIG_EXCEPTION, "newest"),
        ({"table.merge-engine": "versioned"}, ErrorCode.INVALID_CONFIG_EXCEPTION, "ver-column"),
        (
            {"table.merge-engine": "versioned", "table.merge-engine.versioned.ver-column": "nope"},
            ErrorCode.INVALID_CONFIG_EXCEPTION,
            "nope",
        ),
        (
            {"table.merge-engine": "versioned", "table.merge-engine.versioned.ver-column": "name"},
            ErrorCode.INVALID_CONFIG_EXCEPTION,
            "'name'",
        ),
        (
            {"table.merge-engine": "aggregation", "fields.v.agg": "median"},
            ErrorCode.INVALID_CONFIG_EXCEPTION,
            "median",
        ),
        (
            {"table.merge-engine": "aggregation", "fields.id.agg": "sum"},
            ErrorCode.INVALID_CONFIG_EXCEPTION,
            "'id'",
        ),
        (
            {"table.merge-engine": "aggregation", "fields.name.agg": "sum"},
            ErrorCode.INVALID_CONFIG_EXCEPTION,
            "'name'",
        ),
        (
            {"table.merge-engine": "aggregation", "fields.v.agg": "bool_and"},
            ErrorCode.INVALID_CONFIG_EXCEPTION,
            "'v'",
        ),
        (
            {"table.merge-engine": "aggregation", "fields.v.agg": "listagg"},
            ErrorCode.INVALID_CONFIG_EXCEPTION,
            "'v'",
        ),
        (
            {"table.merge-engine": "aggregation", "fields.zz.agg": "sum"},
            ErrorCode.INVALID_CONFIG_EXCEPTION,
            "'zz'",
        ),
        (
            {"table.merge-engine": "first_row", "table.delete.behavior": "ALLOW"},
            ErrorCode.INVALID_CONFIG_EXCEPTION,
            "table.delete.behavior",
        ),
        ({"table.delete.behavior": "SOMETIMES"}, ErrorCode.INVALID_CONFIG_EXCEPTION, "table.delete.behavior"),
        ({"table.changelog.image": "HALF"}, ErrorCode.INVALID_CONFIG_EXCEPTION, "table.changelog.image"),
    ],
)
def test_bad_merge_engine_config_is_rejected_naming_it(tmp_path, props, code, names):
    with pytest.raises(FlussError) as e:
        KvTablet.open(tmp_path / "kv", SCHEMA, 1, props)
    assert e.value.error_code == code
    assert names in e.value.message
    assert not (tmp_path / "kv").exists()


def test_every_aggregate_function_is_accepted_with_defaults():
    engine = MergeEngine.from_properties(
        {
            **AGG_PROPS,
            "fields.v.agg": "product",
            "fields.name.agg": "string_agg",
            "fields.flag.agg": "bool_or",
        },
        SCHEMA,
    )
    assert isinstance(engine, AggregationEngine)
    assert engine.function_of("name") == "string_agg"
    assert engine.function_of("id") is None
    default = MergeEngine.from_properties({"table.merge-engine": "aggregation"}, SCHEMA)
    assert default.function_of("v") == "last_value_ignore_nulls"
    assert default.delete_behavior == "IGNORE"


def test_aggregate_functions_fold_values(tmp_path):
    schema = RowSchema(
        [
            Column("id", DataTypes.INT()),
            Column("s", DataTypes.SMALLINT()),
            Column("p", DataTypes.DECIMAL(6, 2)),
            Column("mn", DataTypes.STRING()),
            Column("lv", DataTypes.INT()),
            Column("fv", DataTypes.INT()),
            Column("la", DataTypes.STRING()),
            Column("bo", DataTypes.BOOLEAN()),
        ],
        ["id"],
    )
    props = {
        "table.merge-engine": "aggregation",
        "fields.s.agg": "sum",
        "fields.p.agg": "product",
        "fields.mn.agg": "min",
        "fields.lv.agg": "last_value",
        "fields.fv.agg": "first_value",
        "fields.la.agg": "listagg",
        "fields.bo.agg": "bool_or",
    }
    t = KvTablet.open(tmp_path / "kv", schema, 1, props)
    d = decimal.Decimal
    rows = [
        (1, 32767, d("1.50"), "m", 1, None, "a", False),
        (1, 1, d("1.50"), "b", None, 5, None, None),
        (1, None, None, None, 3, 6, "c", True),
    ]
    batch = pa.RecordBatch.from_pylist(
        [dict(zip(schema.column_names, r, strict=True)) for r in rows], schema=schema.to_arrow()
    )
    changelog = t.prepare_batch(batch, np.zeros(3, np.uint8), None, 0)
    assert changelog.change_types.tolist() == [1, 2, 3, 2, 3]
    t.flush_up_to(5)
    (final,) = physical_rows(t.scan_all()[0])
    # SMALLINT sum wraps like Java; product rounds to the scale (2.25 * 1 = 2.25).
    assert final == [1, -32768, d("2.25"), "b", 3, None, "a,c", True]
    t.close()


# ------------------------------------------------------------------------------------------- bad input


def test_partial_update_without_the_key_names_it(tablet):
    with pytest.raises(FlussError) as e:
        tablet.prepare_batch(to_batch([row(1)]), [0], [1, 2], 0)
    assert e.value.error_code == ErrorCode.INVALID_TARGET_COLUMN
    assert "'id'" in e.value.message


def test_partial_update_on_first_row_is_rejected(tmp_path):
    t = KvTablet.open(tmp_path / "kv", SCHEMA, 1, {"table.merge-engine": "first_row"})
    with pytest.raises(FlussError, match="first_row") as e:
        t.prepare_batch(to_batch([row(1)]), [0], [0, 1], 0)
    assert e.value.error_code == ErrorCode.INVALID_TARGET_COLUMN
    t.close()


def test_partial_update_must_cover_not_null_columns(tmp_path):
    schema = RowSchema(
        [
            Column("id", DataTypes.INT()),
            Column("a", DataTypes.INT().with_nullable(False)),
            Column("b", DataTypes.INT()),
        ],
        ["id"],
    )
    t = KvTablet.open(tmp_path / "kv", schema, 1, {})
    batch = pa.RecordBatch.from_pylist([{"id": 1, "a": 1, "b": 2}], schema=schema.to_arrow())
    with pytest.raises(FlussError, match="'a'"):
        t.prepare_batch(batch, [0], [0, 2], 0)
    t.close()


def test_null_primary_key_applies_nothing(tablet):
    batch = to_batch([row(1), (None, "x", 1, 1, 1.0, True)])
    with pytest.raises(FlussError, match="'id' is null in row 1") as e:
        tablet.prepare_batch(batch, [0, 0], None, 0)
    assert e.value.error_code == ErrorCode.CORRUPT_RECORD_EXCEPTION
    assert tablet.staged_count == 0


def test_delete_disabled_rejects_the_whole_batch(tmp_path):
    t = KvTablet.open(tmp_path / "kv", SCHEMA, 1, {"table.delete.behavior": "DISABLE"})
    with pytest.raises(FlussError) as e:
        t.prepare_batch(to_batch([row(1), row(1)]), [0, 1], None, 0)
    assert e.value.error_code == ErrorCode.DELETION_DISABLED_EXCEPTION
    assert "table.delete.behavior" in e.value.message
    assert t.staged_count == 0
    t.close()


def test_delete_disabled_on_versioned_engine(tmp_path):
    props = {
        "table.merge-engine": "versioned",
        "table.merge-engine.versioned.ver-column": "ts",
        "table.delete.behavior": "disable",
    }
    t = KvTablet.open(tmp_path / "kv", SCHEMA, 1, props)
    with pytest.raises(FlussError) as e:
        t.prepare_batch(to_batch([row(1)]), [1], None, 0)
    assert e.value.error_code == ErrorCode.DELETION_DISABLED_EXCEPTION
    t.close()


def test_offsets_must_not_go_backwards(tablet):
    tablet.prepare_batch(to_batch([row(1)]), [0], None, 10)
    with pytest.raises(FlussError, match="below"):
        tablet.prepare_batch(to_batch([row(2)]), [0], None, 10)


# ------------------------------------------------------------------------------------------- buffer + HW


def test_staged_values_are_invisible_until_the_high_watermark_covers_them(tablet):
    tablet.prepare_batch(to_batch([row(1, v=1), row(2, v=2)]), [0, 0], None, 0)  # offsets 0, 1
    assert tablet.lookup([key(1), key(2)]) == [None, None]
    assert tablet.scan_all()[0].num_rows == 0
    tablet.flush_up_to(1)  # HW inside the batch: only offset 0 is committed
    assert tablet.lookup([key(1)])[0] is not None and tablet.lookup([key(2)]) == [None]
    assert tablet.flushed_offset == 1
    # The write path reads through the buffer: an update of key 2 sees the staged row.
    changelog = tablet.prepare_batch(to_batch([row(2, v=3)]), [0], None, 2)
    assert changelog_records(changelog) == [(2, row(2, v=2)), (3, row(2, v=3))]
    tablet.flush_up_to(4)
    assert state_of(tablet.lookup_rows([key(2)]))[2] == row(2, v=3)


def test_large_flushes_reads_and_replays_go_to_rocksdb_in_bounded_calls(tmp_path, monkeypatch):
    """With at most 3 entries per RocksDB call a flush of 20 values takes 7 writes, each completing a prefix of
    the changelog (its flushed offset is the first value it leaves staged); the result is the same as one write."""
    monkeypatch.setattr(tablet_module, "ROCKSDB_CALL_ENTRIES", 3)
    t = KvTablet.open(tmp_path / "kv", SCHEMA, 1, {})
    writes: list[int] = []
    t._db = _CountingDb(t._db, writes)
    t.prepare_batch(to_batch([row(k, v=k) for k in range(20)]), np.zeros(20, np.uint8), None, 0)
    t.prepare_batch(to_batch([row(3, v=33), row(5)]), [0, 1], None, 20)  # -U/+U of 3 at 20/21, -D of 5 at 22
    assert t.flush_up_to(20) == 20
    assert len(writes) == 7 and t.flushed_offset == 20 and t.row_count == 20
    assert len(t.lookup([key(k) for k in range(20)])) == 20 and None not in t.lookup([key(k) for k in range(20)])
    assert t.flush_up_to(23) == 2 and t.flushed_offset == 23  # +U of 3 and -D of 5 (no value for -U)
    assert t.row_count == 19 and t.lookup([key(5)]) == [None]
    assert state_of(t.lookup_rows([key(3)]))[3] == row(3, v=33)
    t._db = t._db.inner
    t.close()
    # a replay of 10 changes: data in calls of 3, the offset and count with the last
    r = KvTablet.open(tmp_path / "replayed", SCHEMA, 1, {})
    replay_writes: list[int] = []
    r._db = _CountingDb(r._db, replay_writes)
    r.apply_changelog(to_batch([row(k, v=k) for k in range(10)]), np.full(10, 1, np.uint8), 10)
    assert len(replay_writes) == 4 and r.flushed_offset == 10 and r.row_count == 10
    assert None not in r.lookup([key(k) for k in range(10)])
    r._db = r._db.inner
    r.close()


class _CountingDb:
    """A RocksDB handle that counts writes (everything else goes to the real one)."""

    def __init__(self, inner, writes: list[int]) -> None:
        self.inner = inner
        self.writes = writes

    def write(self, batch, options):
        self.writes.append(1)
        return self.inner.write(batch, options)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_abort_drops_staged_values_and_later_batches_build_on_committed_state(tablet):
    tablet.prepare_batch(to_batch([row(1, v=1)]), [0], None, 0)
    tablet.flush_up_to(1)
    tablet.prepare_batch(to_batch([row(1, v=2)]), [0], None, 1)  # -U at 1, +U at 2
    tablet.abort_from(1)
    assert tablet.staged_count == 0
    changelog = tablet.prepare_batch(to_batch([row(1, v=9)]), [0], None, 1)
    assert changelog_records(changelog) == [(2, row(1, v=1)), (3, row(1, v=9))]
    tablet.flush_up_to(3)
    assert state_of(tablet.lookup_rows([key(1)]))[1] == row(1, v=9)


def test_delete_of_missing_key_emits_nothing(tablet):
    changelog = tablet.prepare_batch(to_batch([row(5)]), [1], None, 0)
    assert changelog.num_records == 0
    assert changelog.batch.schema.equals(SCHEMA.to_arrow())


def test_partial_delete_nulls_targets_and_removes_row_when_all_values_null(tablet):
    tablet.prepare_batch(to_batch([row(1, "n", 5, 6, 7.0, True)]), [0], None, 0)
    cl = tablet.prepare_batch(to_batch([row(1)]), [1], [0, 1, 2], 1)
    assert changelog_records(cl) == [(2, row(1, "n", 5, 6, 7.0, True)), (3, (1, None, None, 6, 7.0, True))]
    cl = tablet.prepare_batch(to_batch([row(1)]), [1], [0, 3, 4, 5], 3)
    assert changelog_records(cl) == [(4, (1, None, None, 6, 7.0, True))]


# ------------------------------------------------------------------------------------------- reads


def test_prefix_lookup_on_a_bucket_key_prefix(tmp_path):
    schema = RowSchema(
        [Column("a", DataTypes.INT()), Column("b", DataTypes.STRING()), Column("v", DataTypes.INT())],
        ["a", "b"],
    )
    t = KvTablet.open(tmp_path / "kv", schema, 1, {})
    rows = [{"a": a, "b": b, "v": a * 10 + i} for a in (1, 2, 3) for i, b in enumerate(["x", "y", "yy"])]
    batch = pa.RecordBatch.from_pylist(rows, schema=schema.to_arrow())
    t.prepare_batch(batch, np.zeros(len(rows), np.uint8), None, 0)
    prefix = encode_key([2], [schema.columns[0].data_type])
    assert t.prefix_lookup(prefix) == []  # not committed yet
    t.flush_up_to(len(rows))
    found = t.codec.decode_rows(t.prefix_lookup(prefix), schema.to_arrow()).to_pylist()
    assert found == [r for r in rows if r["a"] == 2]
    assert t.prefix_lookup(encode_key([4], [schema.columns[0].data_type])) == []
    t.close()


def test_the_tablets_own_keys_are_never_rows(tmp_path):
    """Found by the protocol fuzzer: an empty (or 0xff) prefix reached the tablet's reserved keys and returned
    their values as rows (KV_STORAGE_EXCEPTION: "a stored KV value has 8 bytes ...")."""
    from fluss.server.kv.tablet import FLUSHED_OFFSET_KEY, ROW_COUNT_KEY

    schema = RowSchema([Column("a", DataTypes.INT()), Column("v", DataTypes.INT())], ["a"])
    t = KvTablet.open(tmp_path / "kv", schema, 1, {})
    rows = [{"a": a, "v": i} for i, a in enumerate([-5, 7, 2**31 - 1, 2**31 - 2])]
    t.prepare_batch(pa.RecordBatch.from_pylist(rows, schema=schema.to_arrow()), np.zeros(4, np.uint8), None, 0)
    t.flush_up_to(4)
    int_type = schema.columns[0].data_type
    scanned, _ = t.scan_all()
    assert sorted(r["a"] for r in scanned.to_pylist()) == sorted(r["a"] for r in rows)
    assert t.codec.decode_rows(t.prefix_lookup(encode_key([2**31 - 1], [int_type])), schema.to_arrow()).to_pylist() == \
        [rows[2]]
    assert len(t.prefix_lookup(b"")) == 4 and t.prefix_lookup(b"\xff\xff") == []
    assert t.lookup([FLUSHED_OFFSET_KEY, ROW_COUNT_KEY, encode_key([7], [int_type])])[:2] == [None, None]
    assert t.row_count == 4
    t.close()


def test_scan_all_with_limit_and_offset(tablet):
    tablet.prepare_batch(to_batch([row(k) for k in range(10)]), np.zeros(10, np.uint8), None, 0)
    tablet.flush_up_to(10)
    tablet.prepare_batch(to_batch([row(11)]), [0], None, 10)  # staged, not visible
    batch, offset = tablet.scan_all(limit=4)
    assert batch.column(0).to_pylist() == [0, 1, 2, 3]
    assert offset == 10
    assert tablet.scan_all()[0].num_rows == 10


def test_state_and_flushed_offset_survive_restart(tmp_path):
    t = KvTablet.open(tmp_path / "kv", SCHEMA, 1, {})
    t.prepare_batch(to_batch([row(1), row(2)]), [0, 0], None, 0)
    t.flush_up_to(2)
    t.prepare_batch(to_batch([row(3)]), [0], None, 2)  # above the HW: lost on restart, replayed from the log
    instance = t.instance_id
    t.close()
    t = KvTablet.open(tmp_path / "kv", SCHEMA, 1, {})
    assert t.flushed_offset == 2
    assert t.instance_id == instance
    assert sorted(state_of(t.scan_all()[0])) == [1, 2]
    t.apply_changelog(to_batch([row(3)]), [1], 3)
    assert sorted(state_of(t.scan_all()[0])) == [1, 2, 3] and t.flushed_offset == 3
    t.close()


def test_apply_changelog_ignores_update_before_and_rejects_append_only(tablet):
    rows = [row(1, v=1), row(1, v=1), row(1, v=2), row(2), row(2)]
    tablet.apply_changelog(to_batch(rows), [1, 2, 3, 1, 4], 5)
    assert state_of(tablet.scan_all()[0]) == {1: row(1, v=2)}
    with pytest.raises(FlussError, match="change type 0"):
        tablet.apply_changelog(to_batch([row(3)]), [0], 6)


# ------------------------------------------------------------------------------------------- row count


def test_row_count_moves_with_committed_inserts_and_deletes_only(tablet):
    tablet.prepare_batch(to_batch([row(k) for k in range(5)]), np.zeros(5, np.uint8), None, 0)  # +I x5 at 0..4
    assert tablet.row_count == 0  # staged, not committed
    tablet.flush_up_to(3)
    assert tablet.row_count == 3
    # an update (no change), a delete (-1), a delete of a missing key (nothing), a new key (+1), in one batch
    cl = tablet.prepare_batch(to_batch([row(1, v=9), row(2), row(42), row(7)]), [0, 1, 1, 0], None, 5)
    assert changelog_records(cl) == [(2, row(1)), (3, row(1, v=9)), (4, row(2)), (1, row(7))]
    tablet.flush_up_to(9)
    assert tablet.row_count == 5  # 0, 1, 3, 4, 7
    tablet.prepare_batch(to_batch([row(8), row(9)]), [0, 0], None, 9)
    tablet.abort_from(10)  # the second insert's append failed
    tablet.flush_up_to(11)
    assert tablet.row_count == 6 == tablet.scan_all()[0].num_rows


def test_row_count_survives_restart_and_moves_with_a_replayed_changelog(tmp_path):
    t = KvTablet.open(tmp_path / "kv", SCHEMA, 1, {})
    t.prepare_batch(to_batch([row(k) for k in range(4)]), np.zeros(4, np.uint8), None, 0)
    t.flush_up_to(4)
    t.close()
    t = KvTablet.open(tmp_path / "kv", SCHEMA, 1, {})
    assert t.row_count == 4
    # replay: +I 10, -U/+U of 1, -D 2 and -D 3
    t.apply_changelog(to_batch([row(10), row(1), row(1, v=5), row(2), row(3)]), [1, 2, 3, 4, 4], 9)
    assert t.row_count == 3 == t.scan_all()[0].num_rows
    t.close()


def test_row_count_of_a_store_written_without_it_is_counted_on_open(tmp_path):
    from fluss.server.kv.tablet import ROW_COUNT_KEY

    t = KvTablet.open(tmp_path / "kv", SCHEMA, 1, {})
    t.prepare_batch(to_batch([row(k) for k in range(6)]), np.zeros(6, np.uint8), None, 0)
    t.flush_up_to(6)
    t.db.delete(ROW_COUNT_KEY)  # as an older version left it
    t.close()
    t = KvTablet.open(tmp_path / "kv", SCHEMA, 1, {})
    assert t.row_count == 6
    t.close()


def test_recount_after_a_replay_that_skipped_lost_records(tmp_path):
    t = KvTablet.open(tmp_path / "kv", SCHEMA, 1, {})
    t.prepare_batch(to_batch([row(1), row(2)]), [0, 0], None, 0)
    t.flush_up_to(2)
    # records 2..9 were lost (the log starts at 10); a replay from there deletes key 5, which the state never had
    t.apply_changelog(to_batch([row(5), row(6)]), [4, 1], 12)
    assert t.row_count == 2  # +1 -1: no longer the truth
    assert t.recount_rows() == 3 == t.scan_all()[0].num_rows == t.row_count
    t.close()
    t = KvTablet.open(tmp_path / "kv", SCHEMA, 1, {})
    assert t.row_count == 3
    t.close()


def test_size_in_bytes_grows_with_committed_data_and_is_zero_when_closed(tmp_path):
    # what a primary-key bucket reports as kv_size (DescribeLog) for the rebalance's byte balancing
    t = KvTablet.open(tmp_path / "kv", SCHEMA, 1, {})
    empty = t.size_in_bytes
    t.prepare_batch(to_batch([row(k, name="n" * 200) for k in range(500)]), np.zeros(500, np.uint8), None, 0)
    assert t.size_in_bytes == empty  # staged only: nothing in RocksDB yet
    t.flush_up_to(500)
    assert t.size_in_bytes >= empty + 500 * 200
    t.close()
    assert t.size_in_bytes == 0
