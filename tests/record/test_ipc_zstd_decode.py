"""The leader's ZSTD decode of flat columns (fluss/record/ipc_zstd_decode.py): the same record batch as Arrow's IPC
reader for every flat type Fluss has, with nulls, all-null columns and empty values; nested schemas are left to
Arrow's reader; damaged bodies are refused by name, and through the validator as CORRUPT_RECORD."""

from __future__ import annotations

import struct

import crc32c
import pyarrow as pa
import pytest
import zstandard
from test_ipc_projection import SCHEMA, _batch

from fluss.errors import ErrorCode, FlussError
from fluss.record.ipc_projection import read_message
from fluss.record.ipc_zstd_decode import ZstdBodyError, _buffer, _decompressor, decode_zstd_batch, handles
from fluss.record.log_batch import COMPRESSION_ZSTD, LogBatch, build_batch
from fluss.server.log.validator import BatchValidator

FLAT = pa.schema([f for f in SCHEMA if handles(pa.schema([f]))])
NESTED = [f.name for f in SCHEMA if not handles(pa.schema([f]))]


def _message(rows: pa.RecordBatch) -> bytearray:
    raw = build_batch(rows, schema_id=1, compression=COMPRESSION_ZSTD)
    return bytearray(LogBatch(memoryview(raw), 0).ipc_message())


def _arrow_reader(message: bytes, schema: pa.Schema) -> pa.RecordBatch:
    return pa.ipc.open_stream(pa.BufferReader(schema.serialize().to_pybytes() + bytes(message))).read_next_batch()


def test_only_nested_columns_are_left_to_arrows_reader():
    assert len(FLAT) == len(SCHEMA) - 4 and NESTED == ["c29", "c30", "c31", "c32"]  # ARRAY, MAP, ROW, ARRAY<ROW>
    assert not handles(SCHEMA)


@pytest.mark.parametrize("n, null_fraction", [(1, 0.0), (37, 0.2), (5000, 0.0), (5000, 0.5), (64, 1.0)])
def test_the_same_batch_as_arrows_reader(n: int, null_fraction: float):
    rows = _batch(n, seed=n, null_fraction=null_fraction).select(FLAT.names)
    rows = pa.RecordBatch.from_arrays(rows.columns, schema=FLAT)
    message = _message(rows)
    ours = decode_zstd_batch(read_message(memoryview(message)), FLAT)
    ours.validate(full=True)
    assert ours.equals(_arrow_reader(message, FLAT)) and ours.equals(rows)
    assert [c.null_count for c in ours.columns] == [c.null_count for c in rows.columns]


def _first_compressed_buffer(message: bytearray) -> tuple[int, int, int]:
    """(position of the buffer in ``message``, its length, its declared decompressed size)."""
    info = read_message(memoryview(message))
    spans = struct.unpack_from(f"<{2 * info.buffer_count}q", info.metadata, info.buffers_at)
    body_at = len(message) - len(info.body)
    for i in range(0, len(spans), 2):
        offset, length = spans[i], spans[i + 1]
        if length > 8:
            size = struct.unpack_from("<q", message, body_at + offset)[0]
            if size > 0:
                return body_at + offset, length, size
    raise AssertionError("no compressed buffer")


def _damaged(how: str) -> bytearray:
    rows = pa.record_batch({"id": pa.array(range(4000), pa.int64()), "s": [f"value-{i}" for i in range(4000)]})
    message = _message(rows)
    at, length, size = _first_compressed_buffer(message)
    if how == "garbage":
        message[at + 8: at + length] = bytes(length - 8)
    elif how == "size":
        struct.pack_into("<q", message, at, size + 8)
    elif how == "huge":
        struct.pack_into("<q", message, at, 1 << 40)
    elif how == "corrupt block":
        message[at + length - 4: at + length] = bytes(4)
    return message


@pytest.mark.parametrize("how, says", [("garbage", "does not decompress with ZSTD"), ("size", "declares"),
                                       ("huge", "declares 1099511627776"),
                                       ("corrupt block", "does not decompress|decompresses to")])
def test_a_damaged_body_is_refused_naming_the_buffer(how: str, says: str):
    message = _damaged(how)
    schema = pa.schema([("id", pa.int64()), ("s", pa.string())])
    with pytest.raises(ZstdBodyError, match=says):
        decode_zstd_batch(read_message(memoryview(message)), schema)
    with pytest.raises((pa.ArrowException, OSError, ValueError)):  # readers could not have read it either
        _arrow_reader(message, schema).validate(full=True)


@pytest.mark.parametrize("tail", [bytes(8), b"frame", b"header"])
@pytest.mark.parametrize("count", [5000, 50_000])  # a heap buffer, and one of Arrow's pool (POOLED_MIN_BYTES)
def test_bytes_after_the_frame_are_refused_as_arrows_reader_refuses_them(tail: bytes, count: int):
    """A buffer is exactly one ZSTD frame: Arrow's reader fails on anything after it (a second frame, a frame
    header, zeros), so a leader that accepted such a buffer would store a batch no reader can read."""
    values = b"".join(i.to_bytes(8, "little") for i in range(count))
    frame = pa.compress(values, codec="zstd", asbytes=True)
    tail = {b"frame": frame, b"header": frame[:5]}.get(tail, tail)
    body = memoryview(struct.pack("<q", len(values)) + frame + tail)
    assert _buffer(body[:8 + len(frame)], 0, 8 + len(frame), _decompressor()).to_pybytes() == values
    with pytest.raises(ZstdBodyError, match="after its prefix, its ZSTD frame|unused data"):
        _buffer(body, 0, len(body), _decompressor())
    with pytest.raises((pa.ArrowException, OSError)):
        pa.decompress(frame + tail, decompressed_size=len(values), codec="zstd")


def test_the_validator_refuses_a_damaged_zstd_body_as_corrupt():
    schema = pa.schema([("id", pa.int64()), ("s", pa.string())])
    rows = pa.record_batch({"id": pa.array(range(4000), pa.int64()), "s": [f"value-{i}" for i in range(4000)]})
    raw = bytearray(build_batch(rows, schema_id=1, compression=COMPRESSION_ZSTD))
    batch = LogBatch(memoryview(raw), 0)
    ipc_at = len(raw) - len(batch.ipc_message())
    at, length, _ = _first_compressed_buffer(bytearray(batch.ipc_message()))
    raw[ipc_at + at + 8: ipc_at + at + length] = bytes(length - 8)
    # the header's CRC covers everything after it: recomputed, so only the body is wrong
    struct.pack_into("<I", raw, 0, crc32c.crc32c(bytes(raw[4:])))
    validator = BatchValidator("table db.t bucket 0", 1, schema)
    assert validator.validate(build_batch(rows, schema_id=1, compression=COMPRESSION_ZSTD))[0].rows.equals(rows)
    with pytest.raises(FlussError) as e:
        validator.validate(bytes(raw))
    assert e.value.error_code == ErrorCode.CORRUPT_RECORD_EXCEPTION
    assert "does not decompress with ZSTD" in e.value.message


def test_a_reader_decodes_a_small_zstd_batch_with_it_and_refuses_a_damaged_one():
    schema = pa.schema([("id", pa.int64()), ("s", pa.string())])
    rows = pa.record_batch({"id": pa.array(range(300), pa.int64()), "s": [f"value-{i}" for i in range(300)]},
                           schema=schema)
    raw = bytearray(build_batch(rows, schema_id=1, compression=COMPRESSION_ZSTD))
    assert LogBatch(memoryview(bytes(raw)), 0).to_arrow(schema).equals(rows)
    batch = LogBatch(memoryview(raw), 0)
    ipc_at = len(raw) - len(batch.ipc_message())
    at, length, size = _first_compressed_buffer(bytearray(batch.ipc_message()))
    struct.pack_into("<q", raw, ipc_at + at, size - 8)  # declares fewer bytes than its frame holds
    with pytest.raises(FlussError) as e:
        LogBatch(memoryview(bytes(raw)), 0).to_arrow(schema)
    assert e.value.error_code == ErrorCode.CORRUPT_RECORD_EXCEPTION and "declares" in e.value.message


def test_an_empty_buffer_may_be_its_prefix_alone_or_an_empty_frame():
    """Arrow Java (the Flink connector's writer) writes an empty buffer as the 8-byte prefix 0 and no frame, Arrow
    C++ as a frame of no content; Arrow's reader takes both, and so does the leader. Anything else after a prefix 0
    is refused."""
    for data in (b"", pa.compress(b"", codec="zstd", asbytes=True)):
        body = memoryview(struct.pack("<q", 0) + data)
        assert _buffer(body, 0, len(body), _decompressor()).size == 0
        assert pa.decompress(data, decompressed_size=0, codec="zstd").size == 0
    body = memoryview(struct.pack("<q", 0) + b"garbage!")
    with pytest.raises(ZstdBodyError, match="does not decompress with ZSTD"):
        _buffer(body, 0, len(body), _decompressor())


@pytest.mark.parametrize("count", [1000, 50_000])  # a heap buffer, and one of Arrow's pool
def test_a_frame_without_its_content_size_decodes_to_exactly_the_declared_length(count: int):
    """Some writers' frames do not record their content size (a streaming encoder's, e.g. arrow-rs'): the prefix
    alone bounds them, and a frame holding more than the prefix says is refused."""
    values = b"".join(i.to_bytes(8, "little") for i in range(count))
    frame = zstandard.ZstdCompressor(write_content_size=False, write_checksum=True).compress(values)
    assert zstandard.frame_content_size(frame) == -1
    body = memoryview(struct.pack("<q", len(values)) + frame)
    assert _buffer(body, 0, len(body), _decompressor()).to_pybytes() == values
    short = memoryview(struct.pack("<q", len(values) - 8) + frame)
    with pytest.raises(ZstdBodyError, match="decompress"):
        _buffer(short, 0, len(short), _decompressor())
