"""Decoding a ZSTD-compressed Arrow record-batch message of flat columns, with one reused ZSTD context per thread.

Arrow's IPC reader decompresses each buffer with a fresh ZSTD context (``ZSTD_decompress``), which is most of what
the leader's batch validation costs per row (docs/reliability.md, "Cost of the validation"). Here each buffer is
decompressed by python-zstandard with the thread's reused ``ZstdDecompressor`` straight into a buffer of Arrow's
memory pool, which keeps freed memory (fresh memory for every batch cost a page fault per 4 KiB), and the columns
are assembled with ``pa.Array.from_buffers`` from the message's field nodes.

Only flat columns are assembled this way (booleans, numbers, decimals, temporal types, fixed-size binary, strings
and binaries); for a schema with another column type :func:`handles` is false and the caller uses Arrow's reader.
Nothing here validates the values: the caller runs full validation on the result (buffer sizes against lengths,
offsets, UTF-8, null counts), as it does on what Arrow's reader returns. What this checks is what Arrow's
decompression checks: each buffer lies inside the body, is exactly one ZSTD frame (no bytes after it: Arrow's reader
refuses them, so a batch holding them would fail every reader) and decompresses to exactly the length its prefix
declares.
"""

from __future__ import annotations

import struct
import threading

import pyarrow as pa
import zstandard

from fluss.record.ipc_projection import MessageInfo

_I64 = struct.Struct("<q")
_U32 = struct.Struct("<I")
_ZSTD_MAGIC = 0xFD2FB528
_UNCOMPRESSED = -1  # a buffer prefix that says the bytes after it are stored as they are
# No column of a batch the server accepts needs more (a request is far smaller; ZSTD's best ratio is ~1:32k).
MAX_BUFFER_BYTES = 1 << 31
# Buffers of at least this many decompressed bytes go into Arrow's pool (``_decompress_pooled``); smaller ones come
# from the allocator's heap, where one call is cheaper than a stream reader and a frame walk.
POOLED_MIN_BYTES = 128 * 1024
_LOCAL = threading.local()
_FLAT_BUFFERS: dict[pa.DataType, int] = {}
_EMPTY = pa.py_buffer(b"")
_HANDLES: dict[int, tuple[pa.Schema, bool]] = {}


class ZstdBodyError(ValueError):
    """A buffer of the message's body is outside it, or does not decompress to the length it declares."""


def _buffers_of(t: pa.DataType) -> int:
    """Buffers of a flat column of type ``t`` in an IPC message; 0 for a type assembled by Arrow's reader only."""
    known = _FLAT_BUFFERS.get(t)
    if known is not None:
        return known
    types = pa.types
    if (types.is_boolean(t) or types.is_integer(t) or types.is_floating(t) or types.is_decimal(t)
            or types.is_temporal(t) or types.is_fixed_size_binary(t)):
        count = 2
    elif types.is_string(t) or types.is_binary(t) or types.is_large_string(t) or types.is_large_binary(t):
        count = 3
    else:
        count = 0
    _FLAT_BUFFERS[t] = count
    return count


def handles(schema: pa.Schema) -> bool:
    """Whether every column of ``schema`` is flat (see the module docstring); cached by schema object (hashing a
    schema is slow)."""
    hit = _HANDLES.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    flat = all(_buffers_of(f.type) for f in schema)
    if len(_HANDLES) >= 256:
        _HANDLES.clear()
    _HANDLES[id(schema)] = (schema, flat)
    return flat


def _decompressor() -> zstandard.ZstdDecompressor:
    d = getattr(_LOCAL, "decompressor", None)
    if d is None:
        d = _LOCAL.decompressor = zstandard.ZstdDecompressor()
    return d


def _buffer(body: memoryview, offset: int, length: int, d: zstandard.ZstdDecompressor) -> pa.Buffer:
    if offset < 0 or length < 0 or offset + length > len(body):
        raise ZstdBodyError(f"buffer [{offset}, +{length}) is outside a body of {len(body)} bytes")
    if length == 0:
        return _EMPTY
    if length < 8:
        raise ZstdBodyError(f"compressed buffer at {offset} is {length} bytes, shorter than its length prefix")
    size = _I64.unpack_from(body, offset)[0]
    data = body[offset + 8: offset + length]
    if size == _UNCOMPRESSED:
        return pa.py_buffer(data)
    if size < 0 or size > MAX_BUFFER_BYTES:
        raise ZstdBodyError(f"buffer at {offset} declares {size} decompressed bytes")
    if size == 0 and not data:  # an empty buffer as Arrow Java writes it: the prefix alone
        return _EMPTY
    try:
        framed = zstandard.frame_content_size(data)
        if framed not in (-1, size):  # -1: the frame does not say
            raise ZstdBodyError(f"buffer at {offset} declares {size} bytes, its ZSTD frame {framed}")
        if size < POOLED_MIN_BYTES:  # one call; allow_extra_data=False: nothing may follow the frame
            out = d.decompress(data, max_output_size=size, allow_extra_data=False)
            if len(out) != size:
                raise ZstdBodyError(f"buffer at {offset} decompresses to {len(out)} bytes, its prefix says {size}")
            return pa.py_buffer(out)
        return _decompress_pooled(data, size, offset, d)
    except zstandard.ZstdError as e:
        raise ZstdBodyError(f"buffer at {offset} does not decompress with ZSTD: {e}") from None


def _decompress_pooled(data: memoryview, size: int, offset: int, d: zstandard.ZstdDecompressor) -> pa.Buffer:
    """A large buffer decompressed straight into memory of Arrow's pool, which keeps freed memory (a fresh
    ``bytes`` of this size costs a page fault per 4 KiB)."""
    frame_length = _frame_length(data, offset)
    if frame_length != len(data):  # Arrow's reader refuses bytes after the frame: so does the leader
        raise ZstdBodyError(f"buffer at {offset} holds {len(data)} bytes after its prefix, its ZSTD frame "
                            f"{frame_length}")
    out = pa.allocate_buffer(size)
    view = memoryview(out)
    filled = 0
    with d.stream_reader(data) as reader:
        while filled < size:
            read = reader.readinto(view[filled:])
            if read == 0:
                break
            filled += read
        more = reader.read(1)
    if filled != size or more:
        raise ZstdBodyError(f"buffer at {offset} decompresses to {'more than ' if more else ''}{filled} bytes, its "
                            f"prefix says {size}")
    return out


def _frame_length(data: memoryview, offset: int) -> int:
    """The length of the ZSTD frame at the start of ``data`` (the buffer at ``offset``), from its header and block
    headers (RFC 8878)."""
    if len(data) < 5 or _U32.unpack_from(data, 0)[0] != _ZSTD_MAGIC:
        raise ZstdBodyError(f"buffer at {offset} is not a ZSTD frame")
    at = zstandard.frame_header_size(data)
    checksum = 4 if data[4] & 0x04 else 0  # Content_Checksum_flag of the frame header descriptor
    while True:
        if at + 3 > len(data):
            raise ZstdBodyError(f"buffer at {offset}: its ZSTD frame is truncated")
        header = data[at] | data[at + 1] << 8 | data[at + 2] << 16
        at += 3
        kind, block_size = (header >> 1) & 3, header >> 3
        if kind == 3:
            raise ZstdBodyError(f"buffer at {offset}: its ZSTD frame has a reserved block type")
        at += 1 if kind == 1 else block_size  # an RLE block stores its one byte
        if header & 1:  # the last block
            return at + checksum


def decode_zstd_batch(info: MessageInfo, schema: pa.Schema) -> pa.RecordBatch:
    """The record batch of a ZSTD-compressed message of ``schema``, whose columns are all flat (:func:`handles`).
    Raises :class:`ZstdBodyError` or Arrow's error."""
    buffer_count = sum(_buffers_of(f.type) for f in schema)
    if info.node_count != len(schema) or info.buffer_count != buffer_count:
        raise ZstdBodyError(f"the message has {info.node_count} field nodes and {info.buffer_count} buffers, the "
                            f"{len(schema)} columns need {len(schema)} and {buffer_count}")
    fb, body = info.metadata, info.body
    nodes = struct.unpack_from(f"<{2 * info.node_count}q", fb, info.nodes_at)
    spans = struct.unpack_from(f"<{2 * info.buffer_count}q", fb, info.buffers_at)
    d = _decompressor()
    buffers = [_buffer(body, spans[i], spans[i + 1], d) for i in range(0, len(spans), 2)]
    arrays = []
    at = 0
    for c, field in enumerate(schema):
        count = _buffers_of(field.type)
        length, null_count = nodes[2 * c], nodes[2 * c + 1]
        if length < 0 or null_count < 0 or null_count > length:
            raise ZstdBodyError(f"column {field.name} has {length} rows and {null_count} nulls")
        own = buffers[at: at + count]
        if null_count == 0:
            own[0] = None  # no validity bitmap, as Arrow's reader leaves it when nothing is null
        arrays.append(pa.Array.from_buffers(field.type, length, own, null_count=null_count))
        at += count
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
