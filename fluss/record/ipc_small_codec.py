"""ZSTD body compression of small Arrow IPC record-batch messages, with one codec context per thread.

Arrow's IPC writer and reader create a fresh ZSTD context for every buffer they compress or decompress. A batch of
the benchmark's 10 columns has ~25 buffers, so a 20-row batch costs ~100 us to compress and ~100 us to decompress,
almost all of it context set-up, against ~11 us to read the same message uncompressed. Latency-bound traffic is
made of such batches, and each is compressed by the writer, decompressed by the leader's validation and again by
every reader. The functions here do the same work with a thread-local ``zstandard`` context:

- :func:`compress_message` turns an uncompressed encapsulated record-batch message into one with ZSTD ``BUFFER``
  body compression, exactly as Arrow writes it: every non-empty buffer becomes its uncompressed length (int64,
  little-endian) followed by one ZSTD frame; empty buffers stay empty.
- :func:`decompress_message` turns such a message back into an uncompressed one, which Arrow then reads zero-copy
  (``pa.ipc.read_record_batch``). A buffer whose length prefix is -1 is stored raw, as the format allows. It is
  as strict as Arrow's reader and stricter in one way: a buffer must be exactly one frame whose content size
  (when the frame states it) and decompressed size equal the prefix, no trailing bytes, buffers 8-aligned in
  the body; a prefix of 0 with no frame (how Arrow Java writes an empty buffer) is an empty buffer. The declared
  sizes are summed and checked against ``max_bytes`` before anything is allocated, so a hostile prefix cannot make
  the server allocate more than that.

Both only handle ZSTD and messages up to ``max_bytes`` uncompressed; the callers keep Arrow's path for LZ4_FRAME
and for large batches, where the codec's throughput, not its set-up, is the cost.
"""

from __future__ import annotations

import struct
import threading

import zstandard

from fluss.record.ipc_projection import (
    _I64,
    _NODE_SIZE,
    _PREFIX,
    CODEC_ZSTD,
    CONTINUATION,
    MessageInfo,
    _metadata_size,
    _pad8,
    _write_metadata,
    read_message,
)

SMALL_MESSAGE_MAX_BYTES = 64 * 1024  # uncompressed; above it Arrow's own codec path is as cheap per byte
_RAW = -1  # a length prefix meaning "stored uncompressed"
_local = threading.local()


class SmallCodecError(ValueError):
    """The compressed body does not decode: names the buffer and what was wrong."""


def _decompressor() -> zstandard.ZstdDecompressor:
    d = getattr(_local, "decompressor", None)
    if d is None:
        d = _local.decompressor = zstandard.ZstdDecompressor()
    return d


def _compressor(level: int) -> zstandard.ZstdCompressor:
    cache: dict[int, zstandard.ZstdCompressor] | None = getattr(_local, "compressors", None)
    if cache is None:
        cache = _local.compressors = {}
    c = cache.get(level)
    if c is None:
        c = cache[level] = zstandard.ZstdCompressor(level=level)
    return c


def _buffers(info: MessageInfo) -> tuple[int, ...]:
    return struct.unpack_from(f"<{2 * info.buffer_count}q", info.metadata, info.buffers_at)


def _rewrite(info: MessageInfo, parts: list[bytes | memoryview], targets: list[int], body_length: int,
             codec: int | None) -> bytearray:
    """A message with ``info``'s nodes and variadic counts and ``parts`` as its buffers, at ``targets`` (offset,
    length pairs, each part padded to 8 bytes), with body compression ``codec``."""
    nodes = info.metadata[info.nodes_at: info.nodes_at + info.node_count * _NODE_SIZE]
    variadic = list(info.variadic_counts)
    meta_size = _pad8(_metadata_size(info.node_count, len(parts), len(variadic)))
    out = bytearray(8 + meta_size)
    _PREFIX.pack_into(out, 0, CONTINUATION, meta_size)
    _write_metadata(out, 8, info._replace(codec=codec), [nodes], targets, variadic, body_length)
    padding = [b"\0" * (-len(p) % 8) for p in parts]
    out += b"".join([x for pair in zip(parts, padding, strict=True) for x in pair])
    return out


def compress_message(message: memoryview | bytes, level: int) -> bytearray:
    """The ZSTD body-compressed form of an uncompressed encapsulated record-batch message."""
    info = read_message(memoryview(message))
    if info.codec is not None:
        raise ValueError("the message is already compressed")
    compress = _compressor(level).compress
    body = info.body
    buffers = _buffers(info)
    parts: list[bytes | memoryview] = []
    targets: list[int] = []
    cursor = 0
    pack = _I64.pack
    for i in range(0, len(buffers), 2):
        offset, length = buffers[i], buffers[i + 1]
        part = pack(length) + compress(body[offset: offset + length]) if length else b""
        parts.append(part)
        targets.append(cursor)
        targets.append(len(part))
        cursor += len(part) + (-len(part) % 8)
    return _rewrite(info, parts, targets, cursor, CODEC_ZSTD)


def decompress_message(message: memoryview | bytes, max_bytes: int = SMALL_MESSAGE_MAX_BYTES,
                       info: MessageInfo | None = None) -> bytearray | None:
    """The uncompressed form of a ZSTD body-compressed record-batch message (``info``: its parsed metadata, when
    the caller has it), or None when the message is not ZSTD or holds more than ``max_bytes`` of buffers
    (compressed or not: the caller then uses Arrow's reader). Raises :class:`SmallCodecError` when a buffer does
    not decompress to its declared size; nothing beyond ``max_bytes`` is allocated first."""
    if info is None:
        info = read_message(memoryview(message))
    body = info.body
    size = len(body)
    if info.codec != CODEC_ZSTD or size > max_bytes:
        return None
    decompress = _decompressor().decompress
    content_size = zstandard.frame_content_size
    unpack = _I64.unpack_from
    buffers = _buffers(info)
    parts: list[bytes | memoryview] = []
    targets: list[int] = []
    cursor = 0
    for i in range(0, len(buffers), 2):
        offset, length = buffers[i], buffers[i + 1]
        if not length:
            part: bytes | memoryview = b""
        elif offset < 0 or offset % 8 or length < 8 or offset + length > size:
            raise SmallCodecError(f"buffer {i // 2} [{offset}, +{length}) is not an 8-aligned compressed buffer "
                                  f"(at least 8 bytes) within a body of {size} bytes")
        else:
            declared = unpack(body, offset)[0]
            frame = body[offset + 8: offset + length]
            if declared == _RAW:
                part = frame
            elif declared == 0 and not frame:  # Arrow Java writes an empty buffer as its prefix alone
                part = b""
            elif declared < 0 or cursor + declared > max_bytes:
                if declared < 0:
                    raise SmallCodecError(f"buffer {i // 2} declares {declared} uncompressed bytes")
                return None
            else:
                try:
                    stated = content_size(frame)
                    if stated != declared and (stated != -1 or declared == 0):  # -1: the frame does not state it
                        # (max_output_size 0 would mean "unbounded", so an empty buffer's frame must state 0)
                        raise SmallCodecError(f"buffer {i // 2}: its ZSTD frame states {stated} bytes, "
                                              f"the prefix {declared}")
                    part = decompress(frame, max_output_size=declared, allow_extra_data=False)
                except zstandard.ZstdError as e:
                    raise SmallCodecError(f"buffer {i // 2} is not one ZSTD frame of {declared} bytes ({e})") \
                        from None
                if len(part) != declared:
                    raise SmallCodecError(f"buffer {i // 2} decompressed to {len(part)} bytes, the prefix says "
                                          f"{declared}")
        parts.append(part)
        targets.append(cursor)
        targets.append(len(part))
        cursor += len(part) + (-len(part) % 8)
    return _rewrite(info, parts, targets, cursor, None)
