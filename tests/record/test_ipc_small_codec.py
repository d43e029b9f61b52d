"""The small-message ZSTD codec writes what Arrow reads, reads what Arrow writes, and refuses what it cannot prove."""

from __future__ import annotations

import struct

import pyarrow as pa
import pytest
import zstandard

from fluss.record.ipc_projection import CODEC_ZSTD, read_message
from fluss.record.ipc_small_codec import (
    SMALL_MESSAGE_MAX_BYTES,
    SmallCodecError,
    _buffers,
    _rewrite,
    compress_message,
    decompress_message,
)


def _rows(n: int) -> pa.RecordBatch:
    return pa.record_batch([
        pa.array(range(n), pa.int64()),
        pa.array([None if i % 3 == 0 else f"v{i}é" for i in range(n)]),
        pa.array([[i, i + 1] for i in range(n)], pa.list_(pa.int32())),
        pa.array([{"a": i, "b": str(i)} for i in range(n)]),
        pa.array([i % 2 == 0 for i in range(n)]),
    ], names=["id", "s", "l", "st", "b"])


def _arrow_message(rows: pa.RecordBatch, codec: str) -> bytes:
    """The record-batch message Arrow's own IPC writer makes of ``rows`` with body compression ``codec``."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, rows.schema, options=pa.ipc.IpcWriteOptions(compression=codec)) as writer:
        writer.write_batch(rows)
    reader = pa.BufferReader(sink.getvalue())
    pa.ipc.read_message(reader)  # the schema
    return pa.ipc.read_message(reader).serialize().to_pybytes()


def _arrow_compressed(rows: pa.RecordBatch) -> bytes:
    return _arrow_message(rows, "zstd")


def _with_buffers(message: bytes, edit) -> bytes:
    """The message with each non-empty buffer's bytes replaced by ``edit(index, bytes)`` (offsets recomputed)."""
    info = read_message(memoryview(message))
    buffers = _buffers(info)
    parts, targets, cursor = [], [], 0
    for i in range(0, len(buffers), 2):
        offset, length = buffers[i], buffers[i + 1]
        part = edit(i // 2, bytes(info.body[offset: offset + length])) if length else b""
        parts.append(part)
        targets += [cursor, len(part)]
        cursor += len(part) + (-len(part) % 8)
    return bytes(_rewrite(info, parts, targets, cursor, info.codec))


def _first_compressed(message: bytes) -> int:
    info = read_message(memoryview(message))
    buffers = _buffers(info)
    return next(i // 2 for i in range(0, len(buffers), 2) if buffers[i + 1])


@pytest.mark.parametrize("n", [0, 1, 20, 300])
def test_round_trips_with_arrow_in_both_directions(n: int) -> None:
    rows = _rows(n)
    ours = bytes(compress_message(rows.serialize(), 3))
    assert read_message(memoryview(ours)).codec == CODEC_ZSTD
    assert pa.ipc.read_record_batch(pa.py_buffer(ours), rows.schema).equals(rows)  # Arrow reads ours
    plain = decompress_message(_arrow_compressed(rows))  # we read Arrow's
    assert plain is not None and read_message(memoryview(plain)).codec is None
    assert pa.ipc.read_record_batch(pa.py_buffer(plain), rows.schema).equals(rows)


def test_raw_buffers_marked_minus_one_are_taken_as_they_are() -> None:
    rows = _rows(10)
    raw = _with_buffers(rows.serialize().to_pybytes(), lambda i, b: struct.pack("<q", -1) + b)
    info = read_message(memoryview(raw))
    marked = _rewrite(info, [bytes(info.body[o: o + ln]) for o, ln in zip(_buffers(info)[::2], _buffers(info)[1::2],
                                                                          strict=True)],
                      list(_buffers(info)), len(info.body), CODEC_ZSTD)
    assert pa.ipc.read_record_batch(pa.py_buffer(bytes(marked)), rows.schema).equals(rows)  # Arrow agrees
    assert pa.ipc.read_record_batch(pa.py_buffer(decompress_message(bytes(marked))), rows.schema).equals(rows)


def test_not_zstd_or_too_large_is_left_to_arrow() -> None:
    rows = _rows(50)
    assert decompress_message(rows.serialize().to_pybytes()) is None  # uncompressed
    assert decompress_message(_arrow_message(rows, "lz4")) is None
    big = pa.record_batch([pa.array(range(SMALL_MESSAGE_MAX_BYTES), pa.int64())], names=["x"])
    assert decompress_message(_arrow_compressed(big)) is None
    assert decompress_message(_arrow_compressed(_rows(50)), max_bytes=64) is None


def _refused(message: bytes, match: str) -> None:
    with pytest.raises(SmallCodecError, match=match):
        decompress_message(message)


def test_a_frame_that_does_not_decompress_to_its_prefix_is_refused() -> None:
    message = _arrow_compressed(_rows(40))
    target = _first_compressed(message)

    def edit(change):
        return _with_buffers(message, lambda i, b: change(b) if i == target else b)

    _refused(edit(lambda b: b[:-3]), "not one ZSTD frame")  # truncated frame
    _refused(edit(lambda b: b + b"\0" * 5), "not one ZSTD frame")  # trailing bytes after the frame
    _refused(edit(lambda b: b + b[8:]), "not one ZSTD frame")  # a second frame
    _refused(edit(lambda b: struct.pack("<q", struct.unpack_from("<q", b)[0] + 1) + b[8:]), "states")
    _refused(edit(lambda b: b[:8] + bytes(len(b) - 8)), "not one ZSTD frame")  # garbage frame
    _refused(edit(lambda b: struct.pack("<q", -7) + b[8:]), "declares -7")
    _refused(edit(lambda b: b[:5]), "at least 8 bytes")


def test_a_frame_without_content_size_is_bounded_by_its_prefix() -> None:
    values = bytes(range(200)) * 2
    unsized = zstandard.ZstdCompressor(write_content_size=False).compress(values)
    rows = pa.record_batch([pa.array([values], pa.binary())], names=["v"])
    message = _arrow_compressed(rows)
    info = read_message(memoryview(message))
    data_buffer = len(_buffers(info)) // 2 - 1  # validity, offsets, data

    def with_frame(declared: int):
        return _with_buffers(message, lambda i, b: struct.pack("<q", declared) + unsized if i == data_buffer else b)

    assert pa.ipc.read_record_batch(pa.py_buffer(decompress_message(with_frame(len(values)))),
                                    rows.schema).equals(rows)
    _refused(with_frame(len(values) - 1), "not one ZSTD frame")  # decompresses past the prefix
    _refused(with_frame(0), "states")  # an empty buffer's frame must state 0: no unbounded output


def test_misaligned_buffers_are_refused() -> None:
    message = bytearray(_arrow_compressed(_rows(10)))
    info = read_message(memoryview(bytes(message)))
    buffers = list(_buffers(info))
    buffers[2 * _first_compressed(bytes(message))] += 4
    struct.pack_into(f"<{len(buffers)}q", message, 8 + info.buffers_at, *buffers)  # 8: marker and length
    _refused(bytes(message), "8-aligned")


def test_an_empty_buffer_written_as_its_prefix_alone_is_empty() -> None:
    """Arrow Java compresses an empty buffer to the 8-byte prefix 0 and no frame; Arrow C++ reads it as empty."""
    rows = pa.record_batch([pa.array([1, 2, 3], pa.int64()), pa.array(["", "", ""])], names=["i", "s"])
    message = _arrow_compressed(rows)
    info = read_message(memoryview(message))
    data_buffer = len(_buffers(info)) // 2 - 1  # the string column's (empty) data
    java_like = _with_buffers(message, lambda i, b: struct.pack("<q", 0) if i == data_buffer else b)
    assert pa.ipc.read_record_batch(pa.py_buffer(java_like), rows.schema).equals(rows)  # Arrow agrees
    assert pa.ipc.read_record_batch(pa.py_buffer(decompress_message(java_like)), rows.schema).equals(rows)
