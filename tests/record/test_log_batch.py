"""The log batch format (fluss/record/log_batch.py): layout, round trips, CRC, change types, projection.

Micro-benchmark (``python tests/record/test_log_batch.py``): build_batch and LogBatch(...).to_arrow for 10 columns
(5 int64, 5 string) x 8192 rows = 0.98 MB of Arrow data; pyarrow 16.1, 2 shared vCPUs, so +-30%:

    compression  batch bytes  build_batch   to_arrow      round trip
    NONE           979,288    ~3,100 MB/s   ~50,000 MB/s  ~2,900 MB/s   (to_arrow is zero-copy)
    ZSTD(3)        370,176    ~140-350 MB/s ~600-1,200    ~110-270 MB/s
    LZ4_FRAME      564,696    ~600 MB/s     ~2,900 MB/s   ~500 MB/s
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import struct

import crc32c
import numpy as np
import pyarrow as pa
import pytest

from fluss.errors import ErrorCode, FlussError
from fluss.record.change_type import ChangeType
from fluss.record.log_batch import (
    APPEND_ONLY_FLAG,
    COMPRESSION_LZ4_FRAME,
    COMPRESSION_NONE,
    COMPRESSION_ZSTD,
    HEADER_SIZE,
    LogBatch,
    assign_offsets,
    build_batch,
    decode_batches,
    iter_batches,
    parse_compression,
    project_batch,
    read_header,
    valid_bytes,
)

COMPRESSIONS = [COMPRESSION_NONE, COMPRESSION_ZSTD, COMPRESSION_LZ4_FRAME]
UTC = dt.UTC


def _all_types_batch() -> pa.RecordBatch:
    n = 7
    columns = {
        "i8": pa.array([-128, 127, 0, None, 1, -1, 5], pa.int8()),
        "i16": pa.array([-32768, 32767, 0, None, 1, -1, 5], pa.int16()),
        "i32": pa.array([-(2**31), 2**31 - 1, 0, None, 1, -1, 5], pa.int32()),
        "i64": pa.array([-(2**63), 2**63 - 1, 0, None, 1, -1, 5], pa.int64()),
        "f32": pa.array([1.5, float("nan"), float("inf"), float("-inf"), None, -0.0, 3.25], pa.float32()),
        "f64": pa.array([1e308, float("nan"), float("inf"), float("-inf"), None, -0.0, 5e-324], pa.float64()),
        "str": pa.array(["", "héllo", None, "x" * 1000, "a\x00b", "日本", "z"], pa.string()),
        "bin": pa.array([b"", b"\x00\xff", None, b"abc" * 100, b"\x01", b"q", b"r"], pa.binary()),
        "dec": pa.array(
            [decimal.Decimal("1234567890123456789012345678.0123456789"), decimal.Decimal("-0.0000000001"),
             None, decimal.Decimal("0E-10"), decimal.Decimal("1.5000000000"), decimal.Decimal("-99.0000000000"),
             decimal.Decimal("0.1234567890")],
            pa.decimal128(38, 10),
        ),
        "date": pa.array([dt.date(1970, 1, 1), dt.date(2024, 2, 29), None, dt.date(1, 1, 1),
                          dt.date(9999, 12, 31), dt.date(2000, 1, 1), dt.date(1969, 12, 31)], pa.date32()),
        "t32": pa.array([0, 86_399_999, None, 1, 2, 3, 4], pa.time32("ms")),
        "t64": pa.array([0, 86_399_999_999_999, None, 1, 2, 3, 4], pa.time64("ns")),
        "ts": pa.array([0, 1_700_000_000_123_456, None, -1, 2, 3, 4], pa.timestamp("us")),
        "ts_tz": pa.array([dt.datetime(2024, 1, 1, 12, 0, tzinfo=UTC), None, dt.datetime(1970, 1, 1, tzinfo=UTC),
                           dt.datetime(2038, 1, 19, 3, 14, 8, tzinfo=UTC), dt.datetime(2000, 6, 1, tzinfo=UTC),
                           dt.datetime(1999, 12, 31, 23, 59, 59, tzinfo=UTC), dt.datetime(2024, 7, 7, tzinfo=UTC)],
                          pa.timestamp("ms", tz="UTC")),
        "ts_ns_tz": pa.array([1, 2, None, 4, 5, 6, 7], pa.timestamp("ns", tz="Asia/Shanghai")),
        "bool": pa.array([True, False, None, True, True, False, False], pa.bool_()),
        "all_null": pa.array([None] * n, pa.int32()),
    }
    return pa.record_batch(columns)


def _same_values(a: pa.Array, b: pa.Array) -> bool:
    """Exact equality that treats NaN as equal to NaN (and distinguishes -0.0 from 0.0 for floats)."""
    if a.type != b.type or len(a) != len(b):
        return False
    for x, y in zip(a.to_pylist(), b.to_pylist(), strict=True):
        if isinstance(x, float) and isinstance(y, float):
            if math.isnan(x) and math.isnan(y):
                continue
            if x != y or math.copysign(1, x) != math.copysign(1, y):
                return False
        elif x != y:
            return False
    return True


def _assert_batches_equal(actual: pa.RecordBatch, expected: pa.RecordBatch) -> None:
    assert actual.schema == expected.schema
    assert actual.num_rows == expected.num_rows
    for name in expected.schema.names:
        assert _same_values(actual.column(name), expected.column(name)), name


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_every_supported_type_round_trips_under_each_compression(compression):
    rb = _all_types_batch()
    data = build_batch(rb, schema_id=7, compression=compression, writer_id=42, batch_sequence=3)
    batch = LogBatch(data)
    batch.ensure_valid()
    assert batch.compression == compression
    assert batch.append_only
    assert (batch.schema_id, batch.writer_id, batch.batch_sequence, batch.record_count) == (7, 42, 3, 7)
    _assert_batches_equal(batch.to_arrow(rb.schema), rb)


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_large_batch_round_trips_and_compression_shrinks_repetitive_data(compression):
    n = 50_000
    rb = pa.record_batch({"id": pa.array(np.arange(n, dtype=np.int64)),
                          "s": pa.array([f"value-{i % 10}" for i in range(n)])})
    data = build_batch(rb, schema_id=1, compression=compression)
    assert LogBatch(data).to_arrow(rb.schema).equals(rb)
    plain = len(build_batch(rb, schema_id=1, compression=COMPRESSION_NONE))
    if compression != COMPRESSION_NONE:
        assert len(data) < plain / 2


@pytest.mark.parametrize("compression", [COMPRESSION_ZSTD, COMPRESSION_LZ4_FRAME])
def test_a_batch_under_min_compressed_bytes_is_written_uncompressed(compression):
    from fluss.record.ipc_projection import read_message

    def codec_of(data: bytes) -> int | None:
        return read_message(LogBatch(data).ipc_message()).codec

    small = pa.record_batch({"id": pa.array(np.arange(100, dtype=np.int64))})  # 800 bytes of values
    large = pa.record_batch({"id": pa.array(np.arange(3000, dtype=np.int64))})  # 24,000
    for rb, expected in ((small, COMPRESSION_NONE), (large, compression)):
        data = build_batch(rb, schema_id=1, compression=compression, min_compressed_bytes=16 * 1024)
        assert LogBatch(data).compression == expected  # the header says what the Arrow body is
        assert (codec_of(data) is None) == (expected == COMPRESSION_NONE)
        assert LogBatch(data).to_arrow(rb.schema).equals(rb)
    # 0 (the default) compresses every batch as asked
    assert LogBatch(build_batch(small, schema_id=1, compression=compression)).compression == compression
    # a slice is measured by the buffers it shares (their total size is an upper bound, cheap to get)
    piece = large.slice(100, 50)
    data = build_batch(piece, schema_id=1, compression=compression, min_compressed_bytes=16 * 1024)
    assert LogBatch(data).compression == compression
    assert LogBatch(data).to_arrow(piece.schema).equals(piece)


def test_header_layout_is_the_documented_little_endian_layout():
    rb = pa.record_batch({"a": pa.array([1, 2, 3], pa.int32())})
    data = build_batch(rb, schema_id=0x0A0B0C0D, compression=COMPRESSION_ZSTD, writer_id=0x1122334455667788,
                       batch_sequence=77, base_offset=1_000_000_000_000, leader_epoch=9,
                       commit_timestamp=1_700_000_000_123)
    assert HEADER_SIZE == 56
    assert len(data) % 8 == 0
    (crc,) = struct.unpack_from("<I", data, 0)
    assert data[4] == 1  # magic
    assert data[5] == COMPRESSION_ZSTD | APPEND_ONLY_FLAG
    assert data[6:8] == b"\0\0"
    assert struct.unpack_from("<q", data, 8)[0] == 1_000_000_000_000
    assert struct.unpack_from("<i", data, 16)[0] == len(data)
    assert struct.unpack_from("<i", data, 20)[0] == 3
    assert struct.unpack_from("<q", data, 24)[0] == 1_700_000_000_123
    assert struct.unpack_from("<q", data, 32)[0] == 0x1122334455667788
    assert struct.unpack_from("<i", data, 40)[0] == 9
    assert struct.unpack_from("<i", data, 44)[0] == 0x0A0B0C0D
    assert struct.unpack_from("<i", data, 48)[0] == 77
    assert data[52:56] == b"\0\0\0\0"
    assert crc == crc32c.crc32c(data[4:])
    # the Arrow IPC message starts right after the header: continuation marker 0xFFFFFFFF
    assert data[56:60] == b"\xff\xff\xff\xff"
    header = read_header(data)
    assert (header.base_offset, header.batch_length, header.record_count, header.leader_epoch) == (
        1_000_000_000_000, len(data), 3, 9)
    batch = LogBatch(data)
    assert (batch.last_offset, batch.next_offset) == (1_000_000_000_002, 1_000_000_000_003)


def test_flipping_any_single_byte_is_detected_by_the_crc():
    rb = pa.record_batch({"a": pa.array(range(20), pa.int64()), "s": pa.array([str(i) for i in range(20)])})
    data = build_batch(rb, schema_id=1, compression=COMPRESSION_NONE,
                       change_types=np.full(20, ChangeType.Insert, dtype=np.uint8))
    assert LogBatch(data).is_valid()
    for position in range(len(data)):
        if 16 <= position < 20:
            continue  # the length field: a changed length makes it a different (incomplete) byte range
        corrupt = bytearray(data)
        corrupt[position] ^= 0x01
        batch = LogBatch(bytes(corrupt))
        assert not batch.is_valid(), position
        with pytest.raises(FlussError) as e:
            batch.ensure_valid()
        assert e.value.error_code == ErrorCode.CORRUPT_RECORD_EXCEPTION
        assert "base offset" in e.value.message


def test_assign_offsets_rewrites_offset_epoch_timestamp_and_crc_only():
    rb = pa.record_batch({"a": pa.array(range(5), pa.int64())})
    data = build_batch(rb, schema_id=3, compression=COMPRESSION_LZ4_FRAME, writer_id=8, batch_sequence=2)
    assigned = assign_offsets(data, base_offset=500, leader_epoch=4, commit_timestamp=1234)
    batch = LogBatch(assigned)
    batch.ensure_valid()
    assert (batch.base_offset, batch.last_offset, batch.leader_epoch, batch.commit_timestamp) == (500, 504, 4, 1234)
    assert (batch.writer_id, batch.batch_sequence, batch.schema_id) == (8, 2, 3)
    assert assigned[HEADER_SIZE:] == data[HEADER_SIZE:]
    assert batch.to_arrow(rb.schema).equals(rb)
    with pytest.raises(FlussError):
        assign_offsets(data + data, 0, 0, 0)


def test_change_types_are_stored_per_record_and_append_only_batches_report_plus_a():
    rb = pa.record_batch({"k": pa.array(range(5), pa.int32())})
    kinds = np.array([ChangeType.Insert, ChangeType.UpdateBefore, ChangeType.UpdateAfter, ChangeType.Delete,
                      ChangeType.Insert], dtype=np.uint8)
    for compression in COMPRESSIONS:
        batch = LogBatch(build_batch(rb, schema_id=1, compression=compression, change_types=kinds))
        batch.ensure_valid()
        assert not batch.append_only
        assert batch.change_types().tolist() == [1, 2, 3, 4, 1]
        assert [ChangeType(c).short_string() for c in batch.change_types()] == ["+I", "-U", "+U", "-D", "+I"]
        assert batch.to_arrow(rb.schema).equals(rb)
    plain = LogBatch(build_batch(rb, schema_id=1))
    assert plain.change_types().tolist() == [0] * 5
    assert ChangeType.AppendOnly.short_string() == "+A"
    with pytest.raises(FlussError, match="Invalid change type value 9"):
        build_batch(rb, schema_id=1, change_types=np.array([1, 1, 9, 1, 1]))
    with pytest.raises(FlussError, match="one value per record"):
        build_batch(rb, schema_id=1, change_types=np.array([1, 1]))


def test_arrow_body_is_eight_byte_aligned_and_uncompressed_reads_are_zero_copy():
    rb = pa.record_batch({"a": pa.array(range(3), pa.int64())})
    for kinds in (None, np.array([1, 3, 4], dtype=np.uint8)):
        data = build_batch(rb, schema_id=1, compression=COMPRESSION_NONE, change_types=kinds)
        assert len(data) % 8 == 0
        batch = LogBatch(data)
        decoded = batch.to_arrow(rb.schema)
        values = decoded.column(0).buffers()[1]
        start = pa.py_buffer(data).address
        assert start <= values.address < start + len(data)  # points into the batch bytes: no copy
        assert values.address % 8 == 0


def test_iter_batches_stops_at_an_incomplete_tail_and_validates_on_request():
    rb = pa.record_batch({"a": pa.array(range(4), pa.int64())})
    batches = [assign_offsets(build_batch(rb, schema_id=1), base_offset=4 * i, leader_epoch=0, commit_timestamp=i)
               for i in range(3)]
    stream = b"".join(batches)
    assert [b.base_offset for b in iter_batches(stream)] == [0, 4, 8]
    assert [b.base_offset for b in iter_batches(stream + batches[0][:30])] == [0, 4, 8]
    assert [b.base_offset for b in iter_batches(stream + batches[0][:-1])] == [0, 4, 8]
    assert valid_bytes(stream + b"\x01\x02") == len(stream)
    corrupt = bytearray(stream)
    corrupt[len(batches[0]) + 100] ^= 0xFF
    assert len(list(iter_batches(bytes(corrupt)))) == 3
    with pytest.raises(FlussError) as e:
        list(iter_batches(bytes(corrupt), validate=True))
    assert e.value.error_code == ErrorCode.CORRUPT_RECORD_EXCEPTION and "base offset 4" in e.value.message
    bad_length = bytearray(stream)
    struct.pack_into("<i", bad_length, 16, 8)
    with pytest.raises(FlussError, match="invalid batch length 8"):
        list(iter_batches(bytes(bad_length)))


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_projection_keeps_only_requested_columns_with_the_same_values_and_header(compression):
    rb = _all_types_batch()
    kinds = np.array([1, 2, 3, 4, 1, 1, 4], dtype=np.uint8)
    data = assign_offsets(build_batch(rb, schema_id=5, compression=COMPRESSION_ZSTD, change_types=kinds,
                                      writer_id=11, batch_sequence=6), 300, 2, 999)
    source = LogBatch(data)
    columns = [6, 0, 8]  # str, i8, dec, in the requested order
    projected = LogBatch(project_batch(source, rb.schema, columns, compression))
    projected.ensure_valid()
    assert projected.compression == compression
    assert (projected.base_offset, projected.record_count, projected.leader_epoch, projected.commit_timestamp,
            projected.writer_id, projected.batch_sequence, projected.schema_id) == (300, 7, 2, 999, 11, 6, 5)
    assert projected.change_types().tolist() == kinds.tolist()
    projected_schema = pa.schema([rb.schema.field(i) for i in columns])
    out = projected.to_arrow(projected_schema)
    assert out.schema.names == ["str", "i8", "dec"]
    for i in columns:
        name = rb.schema.names[i]
        assert _same_values(out.column(name), rb.column(name))
    assert projected.size_in_bytes < source.size_in_bytes


def test_projection_rejects_bad_column_indexes():
    rb = pa.record_batch({"a": pa.array([1]), "b": pa.array(["x"])})
    batch = LogBatch(build_batch(rb, schema_id=1))
    for columns, needle in (([2], "index 2 is out of range"), ([-1], "index -1"), ([0, 0], "more than once"),
                            ([], "empty")):
        with pytest.raises(FlussError, match=needle) as e:
            project_batch(batch, rb.schema, columns, COMPRESSION_NONE)
        assert e.value.error_code == ErrorCode.INVALID_COLUMN_PROJECTION


def test_decode_batches_gives_per_record_offsets_change_types_and_timestamps():
    schema = pa.schema([("a", pa.int64())])
    b1 = assign_offsets(build_batch(pa.record_batch([pa.array([10, 11, 12])], schema=schema), schema_id=1),
                        100, 0, 5000)
    b2 = assign_offsets(build_batch(pa.record_batch([pa.array([13, 14])], schema=schema), schema_id=1,
                                    change_types=np.array([1, 4])), 103, 0, 6000)
    decoded = decode_batches(iter_batches(b1 + b2), schema)
    assert decoded.table.column("a").to_pylist() == [10, 11, 12, 13, 14]
    assert decoded.offsets.tolist() == [100, 101, 102, 103, 104]
    assert decoded.change_types.tolist() == [0, 0, 0, 1, 4]
    assert decoded.timestamps.tolist() == [5000, 5000, 5000, 6000, 6000]
    assert len(decode_batches([], schema)) == 0


def test_decoding_with_the_wrong_schema_says_which_batch_and_schema():
    rb = pa.record_batch({"a": pa.array([1, 2], pa.int64())})
    batch = LogBatch(assign_offsets(build_batch(rb, schema_id=4), 77, 0, 0))
    wrong = pa.schema([("a", pa.int64()), ("b", pa.string())])
    with pytest.raises(FlussError) as e:
        batch.to_arrow(wrong)
    assert e.value.error_code == ErrorCode.CORRUPT_RECORD_EXCEPTION
    assert "base offset 77" in e.value.message and "schema id 4" in e.value.message


def test_parse_compression_accepts_fluss_names_and_names_a_bad_value():
    assert parse_compression("ZSTD") == COMPRESSION_ZSTD
    assert parse_compression("lz4_frame") == COMPRESSION_LZ4_FRAME
    assert parse_compression("NONE") == COMPRESSION_NONE
    with pytest.raises(FlussError, match="'SNAPPY'") as e:
        parse_compression("SNAPPY")
    assert e.value.error_code == ErrorCode.INVALID_CONFIG_EXCEPTION


def test_change_type_short_strings():
    assert [c.short_string() for c in ChangeType] == ["+A", "+I", "-U", "+U", "-D"]
    assert [int(c) for c in ChangeType] == [0, 1, 2, 3, 4]
    assert ChangeType.from_short_string("-U") is ChangeType.UpdateBefore


def _benchmark(rows: int = 8192, repeat: int = 20) -> None:  # pragma: no cover - manual
    import time

    rng = np.random.default_rng(0)
    columns = {f"i{i}": pa.array(rng.integers(0, 1_000_000, rows)) for i in range(5)}
    columns.update({f"s{i}": pa.array([f"user-{x}-{i}" for x in rng.integers(0, 100_000, rows)])
                    for i in range(5)})
    rb = pa.record_batch(columns)
    mb = rb.nbytes / 1e6
    print(f"10 columns x {rows} rows, {mb:.2f} MB of Arrow data")
    for compression in COMPRESSIONS:
        data = build_batch(rb, schema_id=1, compression=compression)
        t0 = time.perf_counter()
        for _ in range(repeat):
            data = build_batch(rb, schema_id=1, compression=compression)
        t1 = time.perf_counter()
        for _ in range(repeat):
            LogBatch(data).to_arrow(rb.schema)
        t2 = time.perf_counter()
        build, read = (t1 - t0) / repeat, (t2 - t1) / repeat
        print(f"{['NONE', 'ZSTD', 'LZ4_FRAME'][compression]:10s} batch {len(data):>9,d} B  "
              f"build {mb / build:8.0f} MB/s  to_arrow {mb / read:8.0f} MB/s  "
              f"round trip {mb / (build + read):8.0f} MB/s")


if __name__ == "__main__":  # pragma: no cover
    _benchmark()


# ============================================================================ row body formats (table.log.format)


def test_row_formats_round_trip_with_change_types_and_keep_their_header_fields():
    import fluss.record.log_batch as lb

    schema = pa.schema([("id", pa.int64()), ("tags", pa.list_(pa.string())), ("s", pa.string())])
    rows = pa.RecordBatch.from_pylist([{"id": i, "tags": ["x"] * i, "s": None if i % 2 else "v"} for i in range(9)],
                                      schema=schema)
    kinds = np.array([1, 2, 3, 4, 1, 1, 3, 2, 4], dtype=np.uint8)
    for fmt in ("INDEXED", "COMPACTED"):
        data = lb.build_batch(rows, schema_id=4, change_types=kinds, writer_id=7, batch_sequence=3, log_format=fmt)
        batch = lb.LogBatch(data)
        batch.ensure_valid()
        assert batch.body_format == fmt and batch.compression == lb.COMPRESSION_NONE
        assert batch.to_arrow(schema).equals(rows)
        assert batch.change_types().tolist() == kinds.tolist()
        arrow = lb.LogBatch(lb.reformat_batch(batch, schema, "ARROW", lb.COMPRESSION_ZSTD))
        assert arrow.body_format == "ARROW" and arrow.to_arrow(schema).equals(rows)
        assert (arrow.writer_id, arrow.batch_sequence, arrow.schema_id) == (7, 3, 4)
        assert lb.reformat_batch(arrow, schema, fmt) == data  # and back, byte for byte


def test_row_format_headers_with_compression_or_unknown_formats_are_corrupt():
    import fluss.record.log_batch as lb

    rows = pa.RecordBatch.from_pylist([{"a": 1}], schema=pa.schema([("a", pa.int32())]))
    data = bytearray(lb.build_batch(rows, schema_id=1, log_format="INDEXED"))
    for attributes in (0x10 | lb.COMPRESSION_ZSTD, 0x30):
        data[5] = attributes
        header = lb.read_header(bytes(data))
        with pytest.raises(FlussError, match="invalid attributes"):
            lb.check_header(header)
