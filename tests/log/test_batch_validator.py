"""BatchValidator (fluss/server/log/validator.py): what the leader checks before it appends a writer's batches.
Every bad batch here has a valid CRC: only the checks beyond the checksum can catch it."""

from __future__ import annotations

import struct

import crc32c
import numpy as np
import pyarrow as pa
import pytest

from fluss.errors import ErrorCode, FlussError
from fluss.record.change_type import ChangeType
from fluss.record.ipc_projection import read_message
from fluss.record.log_batch import (
    COMPRESSION_LZ4_FRAME,
    COMPRESSION_NONE,
    COMPRESSION_ZSTD,
    HEADER_SIZE,
    assign_writer,
    build_batch,
)
from fluss.server.log.validator import BatchValidator

LOG = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("price", pa.decimal128(10, 2))])
KV = pa.schema([pa.field("k", pa.int32(), nullable=False), pa.field("v", pa.string(), nullable=False),
                ("note", pa.string())])


def log_rows(n: int = 3) -> pa.RecordBatch:
    return pa.record_batch([pa.array(range(n), pa.int64()), pa.array([f"n{i}" for i in range(n)]),
                            pa.array([None] * n, pa.decimal128(10, 2))], schema=LOG)


def kv_batch(keys, values, types, notes=None) -> bytes:
    rb = pa.record_batch([pa.array(keys, pa.int32()), pa.array(values, pa.string()),
                          pa.array(notes or [None] * len(keys), pa.string())], schema=KV)
    return build_batch(rb, schema_id=1, change_types=np.array(types, np.uint8))


def recrc(buf: bytes | bytearray) -> bytes:
    buf = bytearray(buf)
    struct.pack_into("<I", buf, 0, crc32c.crc32c(bytes(buf[4:])))
    return bytes(buf)


def patched(batch: bytes, fmt: str, offset: int, value: int) -> bytes:
    buf = bytearray(batch)
    struct.pack_into(fmt, buf, offset, value)
    return recrc(buf)


@pytest.fixture
def log_validator():
    return BatchValidator("table db.t bucket 0", 1, LOG)


@pytest.fixture
def kv_validator():
    return BatchValidator("table db.kv bucket 0", 1, KV, primary_key=[0])


def refused(validator, records, *mentions, code=ErrorCode.CORRUPT_RECORD_EXCEPTION, targets=None) -> str:
    with pytest.raises(FlussError) as e:
        validator.validate(records, targets)
    assert e.value.error_code == code, e.value
    for m in mentions:
        assert m in e.value.message, e.value.message
    return e.value.message


@pytest.mark.parametrize("compression", [COMPRESSION_NONE, COMPRESSION_ZSTD, COMPRESSION_LZ4_FRAME])
def test_good_batches_pass_and_come_back_decoded(log_validator, compression):
    one, two = build_batch(log_rows(3), schema_id=1, compression=compression), \
        build_batch(log_rows(5), schema_id=1, compression=compression)
    out = log_validator.validate(one + assign_writer(two, 7, 0))
    assert [v.rows.num_rows for v in out] == [3, 5]
    assert out[1].batch.writer_id == 7 and out[1].rows.column("name").to_pylist()[-1] == "n4"


def test_framing(log_validator):
    good = build_batch(log_rows(), schema_id=1)
    refused(log_validator, b"", "holds no batch")
    refused(log_validator, good + good[:20], "batch 2", "20 trailing bytes")
    refused(log_validator, good[:-8], "batch 1", "batch length")
    refused(log_validator, patched(good, "<i", 16, len(good) + 4), "multiple of 8")


@pytest.mark.parametrize("field,fmt,offset,value,mention", [
    ("magic", "<B", 4, 2, "magic 2"),
    ("attributes", "<B", 5, 0x08 | 0x30 | 1, "attributes 0x39"),
    ("codec", "<B", 5, 0x08 | 5, "attributes 0x0d"),
    ("reserved", "<H", 6, 1, "reserved"),
    ("reserved tail", "<I", 52, 1, "reserved"),
    ("zero records", "<i", 20, 0, "record count 0"),
    ("negative records", "<i", 20, -3, "record count -3"),
    ("sequence without writer", "<i", 48, 4, "writer id -1 with batch sequence 4"),
    ("writer without sequence", "<q", 32, 9, "writer id 9 with batch sequence -1"),
])
def test_header_fields_out_of_range(log_validator, field, fmt, offset, value, mention):
    refused(log_validator, patched(build_batch(log_rows(), schema_id=1), fmt, offset, value), mention, "batch 1")


def test_schema_id_of_another_schema_and_a_bad_crc(log_validator):
    refused(log_validator, build_batch(log_rows(), schema_id=2), "schema id 2", code=ErrorCode.SCHEMA_NOT_EXIST)
    bad = bytearray(build_batch(log_rows(), schema_id=1))
    bad[-1] ^= 1
    refused(log_validator, bytes(bad), "CRC32C")


@pytest.mark.parametrize("count", [1, 4, 2**31 - 1])
def test_record_count_must_match_the_arrow_body(log_validator, count):
    refused(log_validator, patched(build_batch(log_rows(3), schema_id=1), "<i", 20, count),
            f"header says {count} records, the Arrow body has 3")


def test_damaged_compressed_data_with_a_valid_crc(log_validator):
    good = bytearray(build_batch(log_rows(200), schema_id=1, compression=COMPRESSION_ZSTD))
    good[-64:-8] = b"\xff" * 56  # inside the last compressed buffer
    refused(log_validator, recrc(good), "batch 1", "does not decode")


def test_string_offsets_pointing_outside_the_data_with_a_valid_crc(log_validator):
    good = bytearray(build_batch(log_rows(200), schema_id=1, compression=COMPRESSION_NONE))
    info = read_message(memoryview(bytes(good))[HEADER_SIZE:])
    body_start = HEADER_SIZE + 8 + len(info.metadata)
    offsets_at = struct.unpack_from("<q", info.metadata, info.buffers_at + 3 * 16)[0]  # 'name': validity, offsets
    struct.pack_into("<i", good, body_start + offsets_at + 4 * 100, 10**6)
    refused(log_validator, recrc(good), "batch 1", "does not decode", "name")


def test_body_of_another_schema(log_validator):
    other = pa.record_batch([pa.array([1, 2], pa.int32()), pa.array(["a", "b"])], names=["x", "y"])
    refused(log_validator, build_batch(other, schema_id=1), "column nodes", "[id, name, price]")
    narrower = pa.record_batch([pa.array([1], pa.int32()), pa.array(["a"]), pa.array([None], pa.decimal128(10, 2))],
                               names=["id", "name", "price"])
    refused(log_validator, build_batch(narrower, schema_id=1), "does not decode with the table's columns")


def test_declared_compression_must_be_the_bodys(log_validator):
    zstd = build_batch(log_rows(), schema_id=1, compression=COMPRESSION_ZSTD)
    refused(log_validator, patched(zstd, "<B", 5, 0x08 | COMPRESSION_LZ4_FRAME), "declares compression LZ4_FRAME",
            "compressed with ZSTD")
    plain = build_batch(log_rows(), schema_id=1, compression=COMPRESSION_NONE)
    refused(log_validator, patched(plain, "<B", 5, 0x08 | COMPRESSION_ZSTD), "declares compression ZSTD")


def test_log_tables_take_append_only_batches_and_not_null_holds(log_validator):
    with_types = build_batch(log_rows(2), schema_id=1, change_types=np.array([1, 4], np.uint8))
    refused(log_validator, with_types, "append-only")
    nulls = pa.record_batch([pa.array([1, None], pa.int64()), pa.array(["a", "b"]),
                             pa.array([None, None], pa.decimal128(10, 2))], schema=LOG)
    refused(log_validator, build_batch(nulls, schema_id=1), "column 'id' is NOT NULL but holds 1 null")


def test_decimal_beyond_its_precision_is_refused(log_validator):
    rows = log_rows(1)
    wide = pa.record_batch([rows.column(0), rows.column(1),
                            pa.array([10**12], pa.decimal128(38, 0)).cast(pa.decimal128(38, 2), safe=False)],
                           names=LOG.names)
    batch = build_batch(wide, schema_id=1)  # a 16-byte decimal like the table's, holding 13 digits for 10
    refused(log_validator, batch, "batch 1")


def test_kv_batches_upsert_and_delete_only(kv_validator):
    out = kv_validator.validate(kv_batch([1, 2], ["a", None], [ChangeType.UpdateAfter, ChangeType.Delete]))
    assert list(out[0].change_types) == [ChangeType.UpdateAfter, ChangeType.Delete]
    refused(kv_validator, build_batch(pa.record_batch([pa.array([1], pa.int32()), pa.array(["a"]),
                                                       pa.array([None], pa.string())], schema=KV), schema_id=1),
            "append-only")
    for bad in (ChangeType.AppendOnly, ChangeType.UpdateBefore, 9):
        batch = patched(kv_batch([1, 2], ["a", "b"], [ChangeType.Insert, ChangeType.Insert]), "<B", HEADER_SIZE + 1,
                        int(bad))
        refused(kv_validator, batch, f"record 1 has change type {int(bad)}")
    padded = bytearray(kv_batch([1], ["a"], [ChangeType.UpdateAfter]))
    padded[HEADER_SIZE + 3] = 1
    refused(kv_validator, recrc(padded), "padding")


def test_kv_not_null_rules(kv_validator):
    refused(kv_validator, kv_batch([1, None], ["a", None], [ChangeType.UpdateAfter, ChangeType.Delete]),
            "column 'k' is NOT NULL")
    refused(kv_validator, kv_batch([1], [None], [ChangeType.UpdateAfter]), "column 'v' is NOT NULL")
    kv_validator.validate(kv_batch([1], [None], [ChangeType.UpdateAfter]), target_columns=[0, 2])  # partial update


def test_the_first_bad_batch_is_named_and_the_request_refused_whole(log_validator):
    good = build_batch(log_rows(), schema_id=1)
    message = refused(log_validator, good + good + patched(good, "<i", 20, 9), "batch 3")
    assert message.startswith("Invalid batch 3 for table db.t bucket 0:")


# ------------------------------------------------------------ row-format logs (table.log.format) and nested bodies

ROW_FORMATS = ["INDEXED", "COMPACTED"]
NESTED = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    ("tags", pa.list_(pa.int32())),
    ("attrs", pa.map_(pa.string(), pa.int32())),
    ("info", pa.struct([("a", pa.int32()), ("b", pa.string())])),
])


def nested_rows(n: int = 4) -> pa.RecordBatch:
    return pa.record_batch([
        pa.array(range(n), pa.int64()),
        pa.array([[i, i + 1, None] if i % 3 else None for i in range(n)], pa.list_(pa.int32())),
        pa.array([[(f"k{i}", i), ("z", None)] for i in range(n)], pa.map_(pa.string(), pa.int32())),
        pa.array([{"a": i, "b": f"s{i}"} if i % 2 else None for i in range(n)],
                 pa.struct([("a", pa.int32()), ("b", pa.string())])),
    ], schema=NESTED)


def body_start(batch: bytes) -> int:
    return HEADER_SIZE  # append-only: no change-type vector


@pytest.mark.parametrize("fmt", ROW_FORMATS)
@pytest.mark.parametrize("schema,rows", [(LOG, log_rows(5)), (NESTED, nested_rows(6))], ids=["flat", "nested"])
def test_row_format_logs_take_their_format_and_arrow(fmt, schema, rows):
    validator = BatchValidator("table db.r bucket 0", 1, schema, log_format=fmt)
    native = build_batch(rows, schema_id=1, log_format=fmt)
    arrow = assign_writer(build_batch(rows, schema_id=1, compression=COMPRESSION_ZSTD), 3, 0)
    out = validator.validate(native + arrow)
    assert [v.batch.body_format for v in out] == [fmt, "ARROW"]
    assert out[0].rows.equals(rows) and out[1].rows.equals(rows)
    assert out[0].encoded_in(fmt) == native  # kept as sent
    converted = out[1].encoded_in(fmt)  # re-encoded from the validated rows, writer id and sequence kept
    again = validator.validate(converted)[0]
    assert again.batch.body_format == fmt and (again.batch.writer_id, again.batch.batch_sequence) == (3, 0)
    assert again.rows.equals(rows)


@pytest.mark.parametrize("log_format,body", [("ARROW", "INDEXED"), ("ARROW", "COMPACTED"),
                                             ("COMPACTED", "INDEXED"), ("INDEXED", "COMPACTED")])
def test_a_body_in_another_row_format_is_refused(log_format, body):
    validator = BatchValidator("table db.r bucket 0", 1, LOG, log_format=log_format)
    refused(validator, build_batch(log_rows(), schema_id=1, log_format=body), f"the body is {body}",
            f"table.log.format is {log_format}")


@pytest.mark.parametrize("fmt", ROW_FORMATS)
def test_row_bodies_are_not_compressed(fmt):
    validator = BatchValidator("table db.r bucket 0", 1, LOG, log_format=fmt)
    batch = build_batch(log_rows(), schema_id=1, log_format=fmt)
    refused(validator, patched(batch, "<B", 5, batch[5] | COMPRESSION_ZSTD), f"a {fmt} body is not compressed")


@pytest.mark.parametrize("fmt", ROW_FORMATS)
def test_hostile_row_bodies_with_a_valid_crc(fmt):
    validator = BatchValidator("table db.r bucket 0", 1, LOG, log_format=fmt)
    good = build_batch(log_rows(3), schema_id=1, log_format=fmt)
    start = body_start(good)
    first_len = struct.unpack_from("<I", good, start)[0]
    rows_at = start + 4 * 3
    refused(validator, patched(good, "<I", start, first_len + 1), f"the {fmt} ")  # rows shifted by one byte
    refused(validator, patched(good, "<I", start, first_len + 64), f"the {fmt} body")  # lengths past the rows
    refused(validator, patched(good, "<I", start, 2**32 - 1), f"the {fmt} body")
    refused(validator, patched(good, "<i", 20, 2), f"the {fmt} body")  # record count of the header
    refused(validator, patched(good, "<h", rows_at, 7), "schema id 7")  # a row of another schema
    padded = bytearray(good)
    if struct.unpack_from("<i", good, 16)[0] > rows_at + sum(struct.unpack_from("<3I", good, start)):
        padded[-1] = 1
        refused(validator, recrc(padded), "padded with zeros")
    name_at = bytes(good).index(b"n1")
    refused(validator, patched(good, "<B", name_at, 0xFF), f"the {fmt} rows do not decode", "UTF8")
    # a string's length reaching into the next row: the next row no longer decodes as its own
    length_at = name_at - (4 if fmt == "INDEXED" else 1)
    refused(validator, patched(good, "<B", length_at, 4), f"the {fmt} rows")


@pytest.mark.parametrize("fmt", ROW_FORMATS)
def test_a_null_value_with_bytes_behind_it_is_refused(fmt):
    """A reader skips the bytes of a null value: the leader refuses bytes it would store without checking."""
    validator = BatchValidator("table db.r bucket 0", 1, LOG, log_format=fmt)
    good = build_batch(log_rows(1), schema_id=1, log_format=fmt)  # price is null
    if fmt == "INDEXED":  # the null decimal's fixed slot (8 bytes) comes after the id's (8): zeros when null
        bad = patched(good, "<q", HEADER_SIZE + 4 + 2 + 1 + 8, 12345)
        refused(validator, bad, "not the encoding of the values they decode to")
    else:  # COMPACTED stores no bytes for a null: an extra byte makes the row longer than its values
        rows = log_rows(1)
        blob = bytearray(build_batch(rows, schema_id=1, log_format=fmt))
        length = struct.unpack_from("<I", blob, HEADER_SIZE)[0]
        body = bytes(blob[HEADER_SIZE + 4: HEADER_SIZE + 4 + length]) + b"\x05"
        size = 4 + len(body)
        new = bytearray(blob[:HEADER_SIZE]) + struct.pack("<I", len(body)) + body + b"\0" * (-size % 8)
        struct.pack_into("<i", new, 16, len(new))
        refused(validator, recrc(new), f"the {fmt} rows")


@pytest.mark.parametrize("fmt", ROW_FORMATS)
def test_nested_row_body_with_a_huge_element_count_is_refused_without_allocating_it(fmt):
    validator = BatchValidator("table db.r bucket 0", 1, NESTED, log_format=fmt)
    rows = nested_rows(2)
    good = build_batch(rows, schema_id=1, log_format=fmt)
    count_at = bytes(good).index(struct.pack("<I", 3))  # row 1's tags: [1, 2, None]
    refused(validator, patched(good, "<I", count_at, 2**31 - 2), f"the {fmt} rows")


@pytest.mark.parametrize("fmt", ["ARROW", *ROW_FORMATS])
@pytest.mark.parametrize("schema,rows", [(LOG, log_rows(3)), (NESTED, nested_rows(3))], ids=["flat", "nested"])
def test_any_damaged_body_byte_is_refused_or_read_back_as_validated(fmt, schema, rows):
    """Every single-byte change of the body, re-checksummed: the leader refuses it with a FlussError, or what it
    accepted is exactly what a reader decodes from the stored bytes."""
    validator = BatchValidator("table db.r bucket 0", 1, schema, log_format=fmt)
    good = build_batch(rows, schema_id=1, log_format=fmt, compression=COMPRESSION_NONE)
    accepted = 0
    for at in range(HEADER_SIZE, len(good)):
        for flip in (0x01, 0x80):
            bad = bytearray(good)
            bad[at] ^= flip
            try:
                out = validator.validate(recrc(bad))
            except FlussError as e:
                assert e.error_code == ErrorCode.CORRUPT_RECORD_EXCEPTION, e
                continue
            accepted += 1
            stored = out[0].encoded_in(fmt)
            from fluss.record.log_batch import LogBatch
            assert LogBatch(stored).to_arrow(schema).equals(out[0].rows)
    assert accepted < 2 * (len(good) - HEADER_SIZE)  # most changes are caught


def test_nested_arrow_bodies_use_the_nested_column_layout():
    validator = BatchValidator("table db.n bucket 0", 1, NESTED)
    out = validator.validate(build_batch(nested_rows(5), schema_id=1))
    assert out[0].rows.equals(nested_rows(5))
    flat = pa.record_batch([pa.array([1], pa.int64()), pa.array([1], pa.int32()), pa.array(["x"]),
                            pa.array([2], pa.int32())], names=NESTED.names)
    refused(validator, build_batch(flat, schema_id=1), "column nodes", "[id, tags, attrs, info]")
    other = pa.record_batch([pa.array([1], pa.int64()), pa.array([["a"]], pa.list_(pa.string())),
                             pa.array([[("k", 1)]], pa.map_(pa.string(), pa.int32())),
                             pa.array([{"a": 1, "b": "s"}], pa.struct([("a", pa.int32()), ("b", pa.string())]))],
                            names=NESTED.names)  # list<string> where the table has list<int>: other buffers
    refused(validator, build_batch(other, schema_id=1), "batch 1")


def test_nested_list_offsets_outside_the_child_are_refused():
    validator = BatchValidator("table db.n bucket 0", 1, NESTED)
    good = bytearray(build_batch(nested_rows(4), schema_id=1, compression=COMPRESSION_NONE))
    info = read_message(memoryview(bytes(good))[HEADER_SIZE:])
    start = HEADER_SIZE + 8 + len(info.metadata)
    # buffers: id validity, id data, tags validity, tags offsets, ...
    offsets_at, offsets_len = struct.unpack_from("<qq", info.metadata, info.buffers_at + 3 * 16)
    struct.pack_into("<i", good, start + offsets_at + 4 * 3, 10**6)
    refused(validator, recrc(good), "batch 1", "does not decode")


@pytest.mark.parametrize("fmt", ["ARROW", *ROW_FORMATS])
def test_kv_batches_in_the_tables_log_format(fmt):
    validator = BatchValidator("table db.kv bucket 0", 1, KV, primary_key=[0], log_format=fmt)
    rb = pa.record_batch([pa.array([1, 2], pa.int32()), pa.array(["a", None]), pa.array([None, None], pa.string())],
                         schema=KV)
    batch = build_batch(rb, schema_id=1, change_types=np.array([ChangeType.UpdateAfter, ChangeType.Delete],
                                                                 np.uint8), log_format=fmt)
    out = validator.validate(batch)
    assert out[0].rows.equals(rb) and list(out[0].change_types) == [ChangeType.UpdateAfter, ChangeType.Delete]
    bad = build_batch(rb, schema_id=1, change_types=np.array([ChangeType.UpdateAfter] * 2, np.uint8),
                      log_format=fmt)
    refused(validator, bad, "column 'v' is NOT NULL")


def test_batches_of_every_retained_schema_id_are_checked_against_that_schema():
    """After ALTER TABLE ADD (schema id 2 adds ``price``), a batch of schema id 1 holds ``id, name`` only."""
    validator = BatchValidator("table db.t bucket 0", 2, LOG, column_counts=[2, 3])
    old = log_rows().select([0, 1])
    [v] = validator.validate(build_batch(old, schema_id=1))
    assert v.rows.schema.names == ["id", "name"] and v.rows.num_rows == 3
    [v] = validator.validate(build_batch(log_rows(), schema_id=2))
    assert v.rows.num_columns == 3
    # a body that does not match its own schema id: the full row under id 1, the short one under id 2
    refused(validator, build_batch(log_rows(), schema_id=1), "schema id 1", "[id, name]")
    refused(validator, build_batch(old, schema_id=2), "schema id 2", "[id, name, price]")
    refused(validator, build_batch(old, schema_id=3), "schema id 3", "1 to 2", code=ErrorCode.SCHEMA_NOT_EXIST)
    refused(validator, build_batch(old, schema_id=0), "schema id 0")


def test_a_partial_update_of_an_old_schema_id_cannot_target_a_later_column():
    validator = BatchValidator("table db.kv bucket 0", 2, KV, primary_key=[0], column_counts=[2, 3])
    rb = pa.record_batch([pa.array([1], pa.int32()), pa.array(["v"])], schema=pa.schema(list(KV)[:2]))
    old = build_batch(rb, schema_id=1, change_types=np.array([ChangeType.UpdateAfter], np.uint8))
    assert validator.validate(old, [0, 1])[0].rows.num_columns == 2
    refused(validator, old, "schema id 1", "'note'", code=ErrorCode.INVALID_TARGET_COLUMN, targets=[0, 2])
