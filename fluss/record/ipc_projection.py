"""Column projection of an Arrow IPC record-batch message without decoding its body.

A projected fetch should not decompress, decode and re-compress whole batches. :func:`project_message` reads
the flatbuffer metadata of one encapsulated IPC message (continuation marker, metadata length, ``Message``
whose header is a ``RecordBatch``: ``length``, ``nodes`` [FieldNode], ``buffers`` [Buffer], ``compression``
and ``variadicBufferCounts``), maps field nodes and buffers to the top-level columns of the schema, and writes
a new message: freshly built metadata holding only the selected columns' nodes and buffers, in the requested
order, with recomputed offsets, then a body made by copying those buffers as they are, each padded to 8
bytes. Compressed buffers (ZSTD or LZ4_FRAME, each with its own 8-byte uncompressed-length prefix) are copied
still compressed; the message keeps the source's codec. Work is per batch and per column, never per row.

Field nodes and buffers appear in pre-order (a column's own, then its children's). Per column::

    null                                        1 node, no buffers
    boolean, integers, floats, decimals,        1 node, validity + values
    date, time, timestamp, duration, interval,
    fixed_size_binary
    string, binary, large_string, large_binary  1 node, validity + offsets + data
    string_view, binary_view                    1 node, validity + views + N data buffers
                                                (N from the next ``variadicBufferCounts`` entry)
    list, large_list, map                       1 node, validity + offsets, then the child (map: the
                                                entries struct with key and item)
    fixed_size_list                             1 node, validity, then the child
    struct                                      1 node, validity, then every child

Fluss's types (``fluss/types.py``) produce scalar columns of the first three kinds and, for ARRAY, MAP and ROW,
list, map and struct columns over them (to any depth). Anything else raises :class:`ProjectionUnsupported` and the caller falls back to decoding: dictionary, union, run-end
encoded and list-view columns, messages other than a RecordBatch, body compression methods other than
BUFFER, and metadata or buffers that do not fit the schema or the message. Message ``custom_metadata`` is
not carried over.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import NamedTuple

import pyarrow as pa

CONTINUATION = 0xFFFFFFFF
MESSAGE_HEADER_RECORD_BATCH = 3
CODEC_LZ4_FRAME = 0
CODEC_ZSTD = 1
METHOD_BUFFER = 0

_U8 = struct.Struct("<B")
_U16 = struct.Struct("<H")
_I16 = struct.Struct("<h")
_I32 = struct.Struct("<i")
_U32 = struct.Struct("<I")
_I64 = struct.Struct("<q")
_PREFIX = struct.Struct("<Ii")
_NODE_SIZE = 16  # FieldNode {length: long, null_count: long}
_BUFFER_SIZE = 16  # Buffer {offset: long, length: long}


class ProjectionUnsupported(ValueError):
    """The message cannot be projected without decoding (the reason is the message)."""


def _pad8(n: int) -> int:
    return (n + 7) & ~7


# ---------------------------------------------------------------------------------------------- schema layout


def _type_layout(t: pa.DataType) -> tuple[int, int, int]:
    """``(field nodes, buffers without variadic ones, view columns)`` of a column of type ``t``."""
    types = pa.types
    if isinstance(t, pa.BaseExtensionType):
        return _type_layout(t.storage_type)
    if types.is_null(t):
        return 1, 0, 0
    if (types.is_boolean(t) or types.is_integer(t) or types.is_floating(t) or types.is_decimal(t)
            or types.is_temporal(t) or types.is_fixed_size_binary(t)):
        return 1, 2, 0
    if types.is_string(t) or types.is_binary(t) or types.is_large_string(t) or types.is_large_binary(t):
        return 1, 3, 0
    if types.is_string_view(t) or types.is_binary_view(t):
        return 1, 2, 1
    if types.is_map(t):
        return _sum_layouts([(1, 2, 0), (1, 1, 0), _type_layout(t.key_type), _type_layout(t.item_type)])
    if types.is_list(t) or types.is_large_list(t):
        return _sum_layouts([(1, 2, 0), _type_layout(t.value_type)])
    if types.is_fixed_size_list(t):
        return _sum_layouts([(1, 1, 0), _type_layout(t.value_type)])
    if types.is_struct(t):
        return _sum_layouts([(1, 1, 0), *(_type_layout(t.field(i).type) for i in range(t.num_fields))])
    raise ProjectionUnsupported(f"columns of type {t} are not projected without decoding")


def _sum_layouts(parts: Sequence[tuple[int, int, int]]) -> tuple[int, int, int]:
    return sum(p[0] for p in parts), sum(p[1] for p in parts), sum(p[2] for p in parts)


class _SchemaLayout(NamedTuple):
    nodes: tuple[int, ...]  # per column
    buffers: tuple[int, ...]  # per column, variadic buffers not included
    views: tuple[int, ...]  # per column: view columns in it (each takes one variadicBufferCounts entry)
    node_starts: tuple[int, ...]
    buffer_starts: tuple[int, ...] | None  # None if buffer positions depend on variadicBufferCounts
    view_starts: tuple[int, ...]
    total_nodes: int
    total_views: int


_LAYOUT_CACHE: dict[int, tuple[pa.Schema, _SchemaLayout | ProjectionUnsupported]] = {}
_LAYOUT_CACHE_MAX = 256


def _starts(counts: Sequence[int]) -> tuple[int, ...]:
    out, total = [], 0
    for c in counts:
        out.append(total)
        total += c
    return tuple(out)


def schema_layout(schema: pa.Schema) -> _SchemaLayout:
    """Nodes and buffers per top-level column of ``schema`` (cached by schema object: hashing one is slow)."""
    hit = _LAYOUT_CACHE.get(id(schema))
    if hit is not None and hit[0] is schema:
        result = hit[1]
    else:
        try:
            per_column = [_type_layout(f.type) for f in schema]
            nodes, buffers, views = (tuple(c[k] for c in per_column) for k in range(3))
            result = _SchemaLayout(
                nodes, buffers, views, _starts(nodes), None if any(views) else _starts(buffers), _starts(views),
                sum(nodes), sum(views),
            )
        except ProjectionUnsupported as e:
            result = e
        if len(_LAYOUT_CACHE) >= _LAYOUT_CACHE_MAX:
            _LAYOUT_CACHE.clear()
        _LAYOUT_CACHE[id(schema)] = (schema, result)
    if isinstance(result, ProjectionUnsupported):
        raise ProjectionUnsupported(str(result))
    return result


# ---------------------------------------------------------------------------------------------- reading


class _Table:
    """A flatbuffer table at ``pos`` of ``fb``."""

    __slots__ = ("fb", "pos", "vtable", "vtable_size")

    def __init__(self, fb: memoryview, pos: int) -> None:
        if pos < 0 or pos + 4 > len(fb):
            raise ProjectionUnsupported(f"bad flatbuffer table at {pos}")
        vtable = pos - _I32.unpack_from(fb, pos)[0]
        if vtable < 0 or vtable + 4 > len(fb):
            raise ProjectionUnsupported(f"bad flatbuffer table at {pos}")
        self.fb, self.pos, self.vtable = fb, pos, vtable
        self.vtable_size = _U16.unpack_from(fb, vtable)[0]

    def _field(self, index: int) -> int:
        entry = 4 + 2 * index
        if entry + 2 > self.vtable_size:
            return 0
        offset = _U16.unpack_from(self.fb, self.vtable + entry)[0]
        return self.pos + offset if offset else 0

    def scalar(self, index: int, fmt: struct.Struct, default: int) -> int:
        at = self._field(index)
        return fmt.unpack_from(self.fb, at)[0] if at else default

    def _target(self, index: int) -> int:
        at = self._field(index)
        return at + _U32.unpack_from(self.fb, at)[0] if at else 0

    def table(self, index: int) -> _Table | None:
        at = self._target(index)
        return _Table(self.fb, at) if at else None

    def vector(self, index: int, element_size: int) -> tuple[int, int]:
        """``(position of the first element, element count)``; ``(0, 0)`` if absent."""
        at = self._target(index)
        if not at:
            return 0, 0
        count = _U32.unpack_from(self.fb, at)[0]
        if at + 4 + count * element_size > len(self.fb):
            raise ProjectionUnsupported("flatbuffer vector runs past the metadata")
        return at + 4, count


class MessageInfo(NamedTuple):
    """What :func:`read_message` found in an encapsulated record-batch message."""

    metadata: memoryview  # the flatbuffer
    body: memoryview  # ``body_length`` bytes
    version: int
    length: int  # rows
    nodes_at: int  # position in ``metadata`` of the FieldNode structs
    node_count: int
    buffers_at: int
    buffer_count: int
    codec: int | None  # None: uncompressed body
    variadic_counts: tuple[int, ...]


def read_message(message: memoryview) -> MessageInfo:
    """Parse the metadata of an encapsulated IPC record-batch message (``ProjectionUnsupported`` if not one)."""
    try:
        return _read_message(message)
    except struct.error as e:
        raise ProjectionUnsupported(f"malformed IPC message metadata: {e}") from None


def _read_message(message: memoryview) -> MessageInfo:
    marker, size = _PREFIX.unpack_from(message, 0)
    prefix = 8
    if marker != CONTINUATION:  # the pre-1.0 format without the continuation marker
        prefix, size = 4, _I32.unpack_from(message, 0)[0]
    if size <= 0 or prefix + size > len(message):
        raise ProjectionUnsupported(f"IPC metadata length {size} does not fit a message of {len(message)} bytes")
    fb = message[prefix : prefix + size]
    root = _Table(fb, _U32.unpack_from(fb, 0)[0])
    header_type = root.scalar(1, _U8, 0)
    if header_type != MESSAGE_HEADER_RECORD_BATCH:
        raise ProjectionUnsupported(f"IPC message header type {header_type} is not a RecordBatch")
    body_length = root.scalar(3, _I64, 0)
    body_start = prefix + size
    if body_length < 0 or body_start + body_length > len(message):
        raise ProjectionUnsupported(f"IPC body of {body_length} bytes does not fit a message of {len(message)}")
    rb = root.table(2)
    if rb is None:
        raise ProjectionUnsupported("IPC message has no RecordBatch header")
    nodes_at, node_count = rb.vector(1, _NODE_SIZE)
    buffers_at, buffer_count = rb.vector(2, _BUFFER_SIZE)
    codec = None
    compression = rb.table(3)
    if compression is not None:
        codec = compression.scalar(0, _U8, CODEC_LZ4_FRAME)
        method = compression.scalar(1, _U8, METHOD_BUFFER)
        if codec not in (CODEC_LZ4_FRAME, CODEC_ZSTD) or method != METHOD_BUFFER:
            raise ProjectionUnsupported(f"IPC body compression codec {codec} method {method}")
    variadic_at, variadic_count = rb.vector(4, 8)
    variadic = struct.unpack_from(f"<{variadic_count}q", fb, variadic_at) if variadic_count else ()
    return MessageInfo(
        fb, message[body_start : body_start + body_length], root.scalar(0, _I16, 0), rb.scalar(0, _I64, 0),
        nodes_at, node_count, buffers_at, buffer_count, codec, variadic,
    )


# ---------------------------------------------------------------------------------------------- writing

# Metadata layout written by ``_metadata`` (positions in the flatbuffer; every table and vector aligned):
#   0  root offset -> Message table at 40
#   4  Message vtable (version, header_type, header, bodyLength)
#   16 RecordBatch vtable (length, nodes, buffers, compression, variadicBufferCounts)
#   30 BodyCompression vtable (codec, method)
#   40 Message table: soffset, header ->, bodyLength, version, header_type
#   64 RecordBatch table: soffset, nodes ->, length, buffers ->, compression ->, variadicBufferCounts ->
#   96 BodyCompression table: soffset, codec, method
#   104 vectors: nodes, buffers, variadicBufferCounts (each a u32 count at 4 mod 8, elements 8-aligned)
_MESSAGE_AT, _BATCH_AT, _COMPRESSION_AT, _VECTORS_AT = 40, 64, 96, 104
_MESSAGE_VTABLE = struct.pack("<6H", 12, 20, 16, 18, 4, 8)
_COMPRESSION_VTABLE = struct.pack("<4H", 8, 6, 4, 5)


def _prelude() -> bytes:
    out = bytearray(_VECTORS_AT)
    _U32.pack_into(out, 0, _MESSAGE_AT)
    out[4:16] = _MESSAGE_VTABLE
    out[30:38] = _COMPRESSION_VTABLE
    _I32.pack_into(out, _MESSAGE_AT, _MESSAGE_AT - 4)
    _U32.pack_into(out, _MESSAGE_AT + 4, _BATCH_AT - (_MESSAGE_AT + 4))
    _U8.pack_into(out, _MESSAGE_AT + 18, MESSAGE_HEADER_RECORD_BATCH)
    _I32.pack_into(out, _BATCH_AT, _BATCH_AT - 16)
    _I32.pack_into(out, _COMPRESSION_AT, _COMPRESSION_AT - 30)
    return bytes(out)


_PRELUDE = _prelude()


def _metadata_size(nodes: int, buffers: int, variadic: int) -> int:
    size = _VECTORS_AT + 8 + nodes * _NODE_SIZE + 8 + buffers * _BUFFER_SIZE
    return size + (8 + variadic * 8 if variadic else 0)


def _write_metadata(
    out: bytearray, base: int, info: MessageInfo, node_bytes: list[memoryview], buffers: list[int],
    variadic: list[int], body_length: int,
) -> None:
    """Write the flatbuffer for the projected message into ``out`` at ``base`` (``out`` is zero-filled)."""
    out[base : base + _VECTORS_AT] = _PRELUDE
    compressed = info.codec is not None
    vtable = (14, 28, 8, 4, 16, 20 if compressed else 0, 24 if variadic else 0)
    struct.pack_into("<7H", out, base + 16, *vtable)
    _I64.pack_into(out, base + _MESSAGE_AT + 8, body_length)
    _I16.pack_into(out, base + _MESSAGE_AT + 16, info.version)
    _I64.pack_into(out, base + _BATCH_AT + 8, info.length)
    if compressed:
        _U8.pack_into(out, base + _COMPRESSION_AT + 4, info.codec)  # method stays BUFFER (0)
    # nodes: count at _VECTORS_AT + 4, structs from _VECTORS_AT + 8
    at = _VECTORS_AT + 4
    _U32.pack_into(out, base + _BATCH_AT + 4, at - (_BATCH_AT + 4))
    node_count = sum(len(b) for b in node_bytes) // _NODE_SIZE
    _U32.pack_into(out, base + at, node_count)
    pos = base + at + 4
    for chunk in node_bytes:
        out[pos : pos + len(chunk)] = chunk
        pos += len(chunk)
    at += 4 + node_count * _NODE_SIZE + 4
    _U32.pack_into(out, base + _BATCH_AT + 16, at - (_BATCH_AT + 16))
    _U32.pack_into(out, base + at, len(buffers) // 2)
    struct.pack_into(f"<{len(buffers)}q", out, base + at + 4, *buffers)
    if compressed:
        _U32.pack_into(out, base + _BATCH_AT + 20, _COMPRESSION_AT - (_BATCH_AT + 20))
    if variadic:
        at += 4 + len(buffers) * 8 + 4
        _U32.pack_into(out, base + _BATCH_AT + 24, at - (_BATCH_AT + 24))
        _U32.pack_into(out, base + at, len(variadic))
        struct.pack_into(f"<{len(variadic)}q", out, base + at + 4, *variadic)


# ---------------------------------------------------------------------------------------------- projection


def project_message(
    message: memoryview, schema: pa.Schema, columns: Sequence[int], *, num_rows: int | None = None,
    headroom: int = 0,
) -> bytearray:
    """A new encapsulated message holding only ``columns`` (validated indexes into ``schema``), in that order.

    The result starts with ``headroom`` zero bytes the caller may fill (a log batch header). Raises
    :class:`ProjectionUnsupported` when the message cannot be projected without decoding, including when its
    row count is not ``num_rows``.
    """
    layout = schema_layout(schema)
    info = read_message(message)
    if num_rows is not None and info.length != num_rows:
        raise ProjectionUnsupported(f"IPC message has {info.length} rows, expected {num_rows}")
    if info.node_count != layout.total_nodes or len(info.variadic_counts) != layout.total_views:
        raise ProjectionUnsupported(
            f"IPC message has {info.node_count} field nodes and {len(info.variadic_counts)} variadic counts, "
            f"the schema needs {layout.total_nodes} and {layout.total_views}"
        )
    buffer_starts = layout.buffer_starts
    buffer_counts = layout.buffers
    if buffer_starts is None:  # view columns: add their variadic buffers
        counts = info.variadic_counts
        buffer_counts = tuple(
            b + sum(counts[s : s + v]) for b, s, v in zip(layout.buffers, layout.view_starts, layout.views,
                                                          strict=True)
        )
        buffer_starts = _starts(buffer_counts)
    if sum(buffer_counts) != info.buffer_count:
        raise ProjectionUnsupported(
            f"IPC message has {info.buffer_count} buffers, the schema needs {sum(buffer_counts)}"
        )
    fb, body = info.metadata, info.body
    node_bytes: list[memoryview] = []
    sources: list[int] = []  # (offset, length) pairs of the selected buffers, flattened
    variadic: list[int] = []
    for c in columns:
        n0 = info.nodes_at + layout.node_starts[c] * _NODE_SIZE
        node_bytes.append(fb[n0 : n0 + layout.nodes[c] * _NODE_SIZE])
        count = buffer_counts[c]
        if count:
            sources.extend(struct.unpack_from(f"<{2 * count}q", fb, info.buffers_at + buffer_starts[c] * 16))
        if layout.views[c]:
            v0 = layout.view_starts[c]
            variadic.extend(info.variadic_counts[v0 : v0 + layout.views[c]])
    targets: list[int] = []
    cursor = 0
    body_length = len(body)
    for i in range(0, len(sources), 2):  # per buffer of the selected columns
        offset, length = sources[i], sources[i + 1]
        if offset < 0 or length < 0 or offset + length > body_length:
            raise ProjectionUnsupported(f"IPC buffer [{offset}, +{length}) is outside a body of {body_length}")
        targets.append(cursor)
        targets.append(length)
        cursor += _pad8(length)
    meta_size = _metadata_size(sum(len(b) for b in node_bytes) // _NODE_SIZE, len(targets) // 2, len(variadic))
    meta_size = _pad8(meta_size)
    body_at = headroom + 8 + meta_size
    out = bytearray(body_at + cursor)
    _PREFIX.pack_into(out, headroom, CONTINUATION, meta_size)
    _write_metadata(out, headroom + 8, info, node_bytes, targets, variadic, cursor)
    for i in range(0, len(sources), 2):
        offset, length = sources[i], sources[i + 1]
        start = body_at + targets[i]
        out[start : start + length] = body[offset : offset + length]
    return out
