"""Projection of Arrow IPC record-batch messages without decoding (fluss/record/ipc_projection.py) and the
fast path of ``project_batch`` built on it: values, column order, compression, header fields, CRC, fallbacks."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import fluss.record.log_batch as log_batch
from fluss.errors import ErrorCode, FlussError
from fluss.record.ipc_projection import ProjectionUnsupported, project_message, read_message
from fluss.record.log_batch import (
    COMPRESSION_LZ4_FRAME,
    COMPRESSION_NONE,
    COMPRESSION_ZSTD,
    HEADER_SIZE,
    LogBatch,
    assign_offsets,
    build_batch,
    project_batch,
    project_records,
)
from fluss.types import ROOTS, Column, RowSchema

COMPRESSIONS = [COMPRESSION_NONE, COMPRESSION_ZSTD, COMPRESSION_LZ4_FRAME]

# Every root of fluss/types.py, with several parameters where the Arrow layout or unit changes.
TYPES = [
    "BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "CHAR(5)", "STRING",
    "DECIMAL(10, 2)", "DECIMAL(38, 10)", "DATE", "TIME(0)", "TIME(3)", "TIME(6)", "TIME(9)", "TIME(2)",
    "TIMESTAMP(0)", "TIMESTAMP(3)", "TIMESTAMP(6)", "TIMESTAMP(9)", "TIMESTAMP(4)", "TIMESTAMP_LTZ(3)",
    "TIMESTAMP_LTZ(6)", "TIMESTAMP_LTZ(9)", "BINARY(4)", "BYTES", "STRING NOT NULL", "BIGINT NOT NULL",
    "ARRAY<INT>", "MAP<STRING, ARRAY<BIGINT NOT NULL>>", "ROW<a INT, b STRING, c ROW<d DOUBLE>>",
    "ARRAY<ROW<x DOUBLE NOT NULL, y ARRAY<STRING>>> NOT NULL",
]  # fmt: skip
ROW_SCHEMA = RowSchema([Column(f"c{i}", t) for i, t in enumerate(TYPES)])
SCHEMA = ROW_SCHEMA.to_arrow()
N = len(SCHEMA)

_INT_RANGE = {8: 2**7, 16: 2**15, 32: 2**31, 64: 2**62}
_TEXT = np.array(["", "a", "héllo", "日本語", "x" * 40, "a\x00b"], dtype=object)


def _column(field: pa.Field, n: int, rng: np.random.Generator, null_fraction: float) -> pa.Array:
    """Random values of ``field``'s type with about ``null_fraction`` nulls (none if NOT NULL)."""
    t = field.type
    mask = rng.random(n) < null_fraction if field.nullable else None
    if null_fraction >= 1 and field.nullable:
        return pa.nulls(n, t)
    if pa.types.is_boolean(t):
        return pa.array(rng.random(n) < 0.5, t, mask=mask)
    if pa.types.is_integer(t):
        r = _INT_RANGE[t.bit_width]
        return pa.array(rng.integers(-r, r, n), pa.int64(), mask=mask).cast(t)
    if pa.types.is_floating(t):
        return pa.array(rng.standard_normal(n) * 1e6, pa.float64(), mask=mask).cast(t)
    if pa.types.is_string(t):
        return pa.array(list(rng.choice(_TEXT, n)), t, mask=mask)
    if pa.types.is_binary(t):
        return pa.array([s.encode() for s in rng.choice(_TEXT, n)], t, mask=mask)
    if pa.types.is_fixed_size_binary(t):
        raw = rng.integers(0, 256, n * t.byte_width, dtype=np.uint8).tobytes()
        return pa.array([raw[i * t.byte_width : (i + 1) * t.byte_width] for i in range(n)], t, mask=mask)
    if pa.types.is_decimal(t):
        wide = pa.array(rng.integers(-(10**7), 10**7, n), pa.int64(), mask=mask).cast(pa.decimal128(38, t.scale))
        return wide.cast(t)
    if pa.types.is_date32(t):
        return pa.array(rng.integers(-100_000, 100_000, n, dtype=np.int32), pa.int32(), mask=mask).cast(t)
    if pa.types.is_time32(t):
        limit = 86_400 * (1000 if t.unit == "ms" else 1)
        return pa.array(rng.integers(0, limit, n, dtype=np.int32), pa.int32(), mask=mask).cast(t)
    if pa.types.is_time64(t):
        limit = 86_400 * (10**6 if t.unit == "us" else 10**9)
        return pa.array(rng.integers(0, limit, n), pa.int64(), mask=mask).cast(t)
    if pa.types.is_timestamp(t):
        return pa.array(rng.integers(-(2**40), 2**40, n), pa.int64(), mask=mask).cast(t)
    if pa.types.is_list(t) or pa.types.is_map(t):
        offsets = np.concatenate([[0], np.cumsum(rng.integers(0, 4, n))]).astype(np.int32)
        total = int(offsets[-1])
        validity = None if mask is None else pa.array(~mask).buffers()[1]
        if pa.types.is_list(t):
            child = _column(t.value_field, total, rng, null_fraction)
        else:
            child = pa.StructArray.from_arrays([_column(t.key_field, total, rng, 0), _column(t.item_field, total, rng,
                                                                                           null_fraction)],
                                               fields=[t.key_field, t.item_field])
        return pa.Array.from_buffers(t, n, [validity, pa.py_buffer(offsets)], null_count=-1, children=[child])
    if pa.types.is_struct(t):
        children = [_column(t.field(i), n, rng, null_fraction) for i in range(t.num_fields)]
        return pa.StructArray.from_arrays(children, fields=list(t), mask=None if mask is None else pa.array(mask))
    raise AssertionError(f"no generator for {t}")


def _batch(n: int = 37, seed: int = 1, null_fraction: float = 0.2, all_null: tuple[int, ...] = ()) -> pa.RecordBatch:
    rng = np.random.default_rng(seed)
    arrays = [_column(f, n, rng, 1.0 if i in all_null else null_fraction) for i, f in enumerate(SCHEMA)]
    return pa.record_batch(arrays, schema=SCHEMA)


def _log_batch(rb: pa.RecordBatch, compression: int, change_types: np.ndarray | None = None) -> LogBatch:
    data = build_batch(rb, schema_id=7, compression=compression, change_types=change_types, writer_id=42,
                       batch_sequence=9)
    return LogBatch(assign_offsets(data, 1000, 3, 1_700_000_000_000))


def _read(message: memoryview | bytes, schema: pa.Schema) -> pa.RecordBatch:
    return pa.ipc.read_record_batch(pa.py_buffer(bytes(message)), schema)


def _sub_schema(cols: list[int]) -> pa.Schema:
    return pa.schema([SCHEMA.field(i) for i in cols])


PROJECTIONS = [
    [1], [8], [N - 1], [7, 8], [8, 7], [0, 3], [26, 25, 0], [4, 9, 10, 21, 22],
    list(range(N - 1, -1, -1)), list(range(0, N, 2)), list(range(1, N, 3))[::-1],
]  # fmt: skip


def test_the_schema_covers_every_fluss_type_root():
    assert {c.data_type.root for c in ROW_SCHEMA.columns} == set(ROOTS)


@pytest.fixture
def forbid_decoding(monkeypatch):
    """Calling it makes decoding or re-encoding a batch fail (the fast path must do neither)."""

    def refuse(*args, **kwargs):
        raise AssertionError("project_batch fell back to decoding")

    def forbid() -> None:
        monkeypatch.setattr(log_batch, "_serialize_ipc", refuse)
        monkeypatch.setattr(LogBatch, "to_arrow", refuse)

    return forbid


@pytest.mark.parametrize("compression", COMPRESSIONS)
@pytest.mark.parametrize("cols", PROJECTIONS, ids=str)
def test_projected_message_reads_back_as_the_selected_columns(compression, cols, forbid_decoding):
    rb = _batch(n=37 + compression)
    source = _log_batch(rb, compression)
    forbid_decoding()
    projected = LogBatch(project_batch(source, SCHEMA, cols, compression))
    projected.ensure_valid()
    expected = rb.select(cols)
    got = _read(projected.ipc_message(), _sub_schema(cols))
    assert got.equals(expected)
    assert got.schema.names == [SCHEMA.names[c] for c in cols]
    # the same header, only the length and the CRC are new
    for name in ("magic", "attributes", "base_offset", "record_count", "commit_timestamp", "writer_id",
                 "leader_epoch", "schema_id", "batch_sequence"):
        assert getattr(projected, name) == getattr(source, name), name
    assert projected.size_in_bytes % 8 == 0
    if 2 * len(cols) <= N:
        assert projected.size_in_bytes < source.size_in_bytes


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_every_single_column_alone(compression, forbid_decoding):
    rb = _batch(n=100, seed=3)
    source = _log_batch(rb, compression)
    forbid_decoding()
    for c in range(N):
        projected = LogBatch(project_batch(source, SCHEMA, [c]))
        projected.ensure_valid()
        assert _read(projected.ipc_message(), _sub_schema([c])).equals(rb.select([c])), SCHEMA.field(c)


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_all_null_columns_empty_strings_and_no_nulls(compression, forbid_decoding):
    strings = [i for i, f in enumerate(SCHEMA) if pa.types.is_string(f.type) or pa.types.is_binary(f.type)]
    batches = [
        _batch(n=50, seed=4, all_null=(0, 3, 8, 25, 26)),  # bool, int, string, fixed binary, bytes all null
        _batch(n=50, seed=5, null_fraction=0.0),  # no nulls: validity buffers may be absent
        _batch(n=1, seed=6),
    ]
    sources = [_log_batch(rb, compression) for rb in batches]
    empties = pa.record_batch([pa.array([""] * 9 if pa.types.is_string(SCHEMA.field(c).type) else [b""] * 9,
                                        SCHEMA.field(c).type) for c in strings], schema=_sub_schema(strings))
    empty_source = _log_batch(empties, compression)
    forbid_decoding()
    for rb, source in zip(batches, sources, strict=True):
        for cols in ([8, 0, 3], [26, 25], strings, [N - 2, 8]):
            projected = LogBatch(project_batch(source, SCHEMA, cols))
            projected.ensure_valid()
            assert _read(projected.ipc_message(), _sub_schema(cols)).equals(rb.select(cols))
    sub = empties.schema
    projected = LogBatch(project_batch(empty_source, sub, [2, 0]))
    projected.ensure_valid()
    assert _read(projected.ipc_message(), pa.schema([sub.field(2), sub.field(0)])).equals(empties.select([2, 0]))


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_change_types_of_a_primary_key_changelog_are_kept(compression, forbid_decoding):
    rb = _batch(n=29, seed=7)
    kinds = np.random.default_rng(0).integers(1, 5, rb.num_rows).astype(np.uint8)
    source = _log_batch(rb, compression, change_types=kinds)
    assert not source.append_only
    forbid_decoding()
    projected = LogBatch(project_batch(source, SCHEMA, [8, 4]))
    projected.ensure_valid()
    assert not projected.append_only
    assert projected.change_types().tolist() == kinds.tolist()
    assert bytes(projected.raw[HEADER_SIZE : HEADER_SIZE + 32]) == bytes(source.raw[HEADER_SIZE : HEADER_SIZE + 32])
    assert _read(projected.ipc_message(), _sub_schema([8, 4])).equals(rb.select([8, 4]))


@pytest.mark.parametrize("compression", [COMPRESSION_ZSTD, COMPRESSION_LZ4_FRAME])
def test_compressed_buffers_are_copied_as_they_are(compression):
    rb = _batch(n=500, seed=8)
    source = _log_batch(rb, compression)
    cols = [8, 1]
    out = project_message(source.ipc_message(), SCHEMA, cols)
    src, dst = read_message(source.ipc_message()), read_message(memoryview(out))
    assert dst.codec == src.codec == {COMPRESSION_ZSTD: 1, COMPRESSION_LZ4_FRAME: 0}[compression]
    assert dst.length == src.length == 500
    assert len(dst.body) % 8 == 0 and len(out) % 8 == 0
    src_buffers = np.frombuffer(src.metadata, np.int64, src.buffer_count * 2, src.buffers_at).reshape(-1, 2)
    dst_buffers = np.frombuffer(dst.metadata, np.int64, dst.buffer_count * 2, dst.buffers_at).reshape(-1, 2)
    # validity + offsets + data for strings, validity + values for the others, in schema order
    widths = [3 if pa.types.is_string(f.type) or pa.types.is_binary(f.type) else 2 for f in SCHEMA]
    first = [sum(widths[:c]) for c in range(N)]
    picked = [*range(first[8], first[8] + 3), *range(first[1], first[1] + 2)]
    assert len(dst_buffers) == len(picked)
    for (d_off, d_len), i in zip(dst_buffers, picked, strict=True):
        s_off, s_len = src_buffers[i]
        assert d_off % 8 == 0 and d_len == s_len
        assert bytes(dst.body[d_off : d_off + d_len]) == bytes(src.body[s_off : s_off + s_len])
    assert bytes(dst.metadata[dst.nodes_at : dst.nodes_at + 32]) == (
        bytes(src.metadata[src.nodes_at + 16 * 8 : src.nodes_at + 16 * 9])
        + bytes(src.metadata[src.nodes_at + 16 : src.nodes_at + 32])
    )


def test_identity_projection_returns_the_batch_unchanged():
    source = _log_batch(_batch(), COMPRESSION_ZSTD)
    assert project_batch(source, SCHEMA, list(range(N))) == bytes(source.raw)


def test_project_records_projects_every_batch(forbid_decoding):
    batches = [_log_batch(_batch(n=10 + i, seed=i), c) for i, c in enumerate(COMPRESSIONS)]
    data = b"".join(bytes(b.raw) for b in batches)
    expected = [b.to_arrow(SCHEMA).select([8, 2]) for b in batches]
    forbid_decoding()
    out = list(log_batch.iter_batches(project_records(data, SCHEMA, [8, 2]), validate=True))
    assert [b.record_count for b in out] == [10, 11, 12]
    assert [b.compression for b in out] == COMPRESSIONS
    for got, want in zip(out, expected, strict=True):
        assert _read(got.ipc_message(), _sub_schema([8, 2])).equals(want)


def test_a_corrupt_source_batch_is_refused_not_re_crced():
    source = _log_batch(_batch(n=64), COMPRESSION_ZSTD)
    data = bytearray(source.raw)
    data[-20] ^= 0x01
    with pytest.raises(FlussError) as e:
        project_batch(LogBatch(bytes(data)), SCHEMA, [8, 1])
    assert e.value.error_code == ErrorCode.CORRUPT_RECORD_EXCEPTION


def test_another_compression_is_re_encoded():
    rb = _batch(n=40)
    source = _log_batch(rb, COMPRESSION_ZSTD)
    projected = LogBatch(project_batch(source, SCHEMA, [9, 8], COMPRESSION_LZ4_FRAME))
    projected.ensure_valid()
    assert projected.compression == COMPRESSION_LZ4_FRAME
    assert read_message(projected.ipc_message()).codec == 0
    assert projected.to_arrow(_sub_schema([9, 8])).equals(rb.select([9, 8]))


def test_validation_errors_are_unchanged():
    source = _log_batch(_batch(n=5), COMPRESSION_ZSTD)
    for cols in ([N], [-1], [3, 3], []):
        with pytest.raises(FlussError) as e:
            project_batch(source, SCHEMA, cols)
        assert e.value.error_code == ErrorCode.INVALID_COLUMN_PROJECTION


# ---------------------------------------------------------------------------------------------- other layouts


def _ipc(rb: pa.RecordBatch, codec: str | None) -> memoryview:
    """The encapsulated record-batch message of ``rb`` as pyarrow writes it."""
    options = pa.ipc.IpcWriteOptions(compression=codec)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, rb.schema, options=options) as writer:
        writer.write_batch(rb)
    reader = pa.BufferReader(sink.getvalue())
    pa.ipc.read_message(reader)
    start = reader.tell()
    pa.ipc.read_message(reader)
    return memoryview(sink.getvalue().to_pybytes()[start : reader.tell()])


def _nested_batch() -> pa.RecordBatch:
    point = pa.struct([("x", pa.int32()), ("name", pa.string())])
    return pa.record_batch({
        "id": pa.array([1, 2, None, 4, 5], pa.int64()),
        "tags": pa.array([["a", ""], None, [], ["b", None, "c"], ["d"]], pa.list_(pa.string())),
        "point": pa.array([{"x": 1, "name": "p"}, None, {"x": None, "name": ""}, {"x": 4, "name": None},
                           {"x": 5, "name": "q"}], point),
        "attrs": pa.array([[("k", 1)], None, [], [("a", 2), ("b", None)], [("z", 9)]],
                          pa.map_(pa.string(), pa.int32())),
        "pair": pa.array([[1, 2], None, [3, None], [5, 6], [7, 8]], pa.list_(pa.int16(), 2)),
        "big": pa.array([[1.5], [], None, [2.5, 3.5], [4.5]], pa.large_list(pa.float64())),
        "nothing": pa.nulls(5),
        "text": pa.array(["x", None, "", "yy", "zzz"], pa.large_string()),
    })


@pytest.mark.parametrize("codec", [None, "zstd", "lz4"])
def test_nested_and_other_layouts(codec):
    rb = _nested_batch()
    message = _ipc(rb, codec)
    n = rb.num_columns
    for cols in ([1], [2, 0], [3], [4, 5], [7, 6, 3, 2, 1, 0], list(range(n))[::-1], [5, 3, 1]):
        out = project_message(message, rb.schema, cols, num_rows=5)
        got = _read(out, pa.schema([rb.schema.field(c) for c in cols]))
        assert got.equals(rb.select(cols)), cols


@pytest.mark.parametrize("codec", [None, "zstd"])
def test_view_columns_carry_their_variadic_buffer_counts(codec):
    long = "a string longer than twelve bytes"
    rb = pa.record_batch({
        "a": pa.array([1, 2, 3], pa.int32()),
        "sv": pa.array([long, "short", None], pa.string_view()),
        "b": pa.array(["x", None, "y"], pa.string()),
        "bv": pa.array([b"tiny", None, long.encode() * 2], pa.binary_view()),
    })
    try:
        message = _ipc(rb, codec)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid) as e:
        pytest.skip(f"this pyarrow cannot write view types to IPC: {e}")
    assert read_message(message).variadic_counts
    for cols in ([1], [3, 1], [2, 0], [3, 2, 1, 0], [0, 2]):
        out = project_message(message, rb.schema, cols)
        assert _read(out, pa.schema([rb.schema.field(c) for c in cols])).equals(rb.select(cols)), cols


def test_unsupported_columns_fall_back_to_decoding():
    dense = pa.UnionArray.from_dense(pa.array([0, 1, 0], pa.int8()), pa.array([0, 0, 1], pa.int32()),
                                     [pa.array([1, 2]), pa.array(["x"])])
    rb = pa.record_batch({"a": pa.array([1, 2, 3]), "u": dense, "s": pa.array(["p", "q", None])})
    with pytest.raises(ProjectionUnsupported, match="union"):
        project_message(_ipc(rb, "zstd"), rb.schema, [2, 0])
    source = LogBatch(build_batch(rb, schema_id=1, compression=COMPRESSION_ZSTD))
    projected = LogBatch(project_batch(source, rb.schema, [2, 0]))  # decoded and re-encoded
    projected.ensure_valid()
    assert projected.to_arrow(pa.schema([rb.schema.field(2), rb.schema.field(0)])).equals(rb.select([2, 0]))


def test_messages_that_do_not_fit_the_schema_are_refused():
    rb = pa.record_batch({"a": pa.array([1, 2]), "s": pa.array(["x", "y"])})
    message = _ipc(rb, "zstd")
    with pytest.raises(ProjectionUnsupported, match="field nodes"):
        project_message(message, pa.schema([("a", pa.int64())]), [0])
    with pytest.raises(ProjectionUnsupported, match="buffers"):
        project_message(message, pa.schema([("a", pa.int64()), ("s", pa.int64())]), [0])
    with pytest.raises(ProjectionUnsupported, match="rows"):
        project_message(message, rb.schema, [1], num_rows=3)
    with pytest.raises(ProjectionUnsupported):
        project_message(message[:40], rb.schema, [1])
    schema_message = memoryview(rb.schema.serialize().to_pybytes())
    with pytest.raises(ProjectionUnsupported, match="not a RecordBatch"):
        project_message(schema_message, rb.schema, [1])


# ---------------------------------------------------------------------------------------------- fetch size


def test_a_projected_fetch_fills_its_byte_limit_with_projected_batches(tmp_path):
    """The tablet server's fetch budget counts projected bytes: it reads on past ``max_bytes`` of stored data."""
    from fluss.server.log.tablet import LogConfig, LogTablet
    from fluss.server.replica.manager import BucketFetch, ReplicaManager

    log = LogTablet.open(tmp_path, LogConfig())
    rbs = [_batch(n=300, seed=s) for s in range(12)]
    for rb in rbs:
        log.append_as_leader(build_batch(rb, schema_id=1, compression=COMPRESSION_ZSTD), leader_epoch=0)
    from fluss.record.schema_evolution import SchemaHistory

    replica = type("R", (), {"log": log, "zstd_level": 3, "log_format": "ARROW",
                             "table": type("T", (), {"row_schema": ROW_SCHEMA, "table_path": "db.t"}),
                             "validator": type("V", (), {"history": SchemaHistory(SCHEMA)})})
    manager = ReplicaManager.__new__(ReplicaManager)
    stored = list(log_batch.iter_batches(log.read(0, 1 << 30).records))
    cols = [8, 1]
    sizes = [len(project_batch(b, SCHEMA, cols)) for b in stored]
    assert sum(sizes) < stored[0].size_in_bytes  # projected, all of them fit in one stored batch's bytes

    def fetch(offset: int, max_bytes: int, upper: int | None = None, min_one: bool = True) -> list[int]:
        data = manager._read_one(replica, BucketFetch(None, offset, max_bytes, cols), max_bytes, upper, min_one)
        batches = list(log_batch.iter_batches(data, validate=True))
        for b in batches:
            rb = rbs[b.base_offset // 300]
            assert _read(b.ipc_message(), _sub_schema(cols)).equals(rb.select(cols))
        return [b.base_offset // 300 for b in batches]

    assert fetch(0, stored[0].size_in_bytes) == list(range(12))  # reads on through the stored batches
    assert fetch(0, 1 << 30, upper=1500) == [0, 1, 2, 3, 4]  # whole batches below the high watermark
    budget = sum(sizes[2:6])
    assert fetch(600, budget) == [2, 3, 4, 5]  # exactly fills the limit
    assert fetch(600, budget - 1) == [2, 3, 4]  # a batch that would pass the limit is left for the next fetch
    assert fetch(600, sizes[2] - 1) == [2]  # the first batch even if larger than the limit
    assert fetch(600, sizes[2] - 1, min_one=False) == []  # unless it must not be
    assert fetch(3000, 1 << 20) == [10, 11]  # up to the end of the log
    log.close()
