"""The log batch: the unit a writer sends, a tablet server stores and a reader fetches.

This docstring is the specification of the format (``docs/log-format.md`` points here); the Java connector
mirrors it.

A log batch is a fixed 56-byte little-endian header, an optional change-type vector, and one Arrow IPC
*encapsulated record-batch message* (no schema message: the schema travels by schema id and the reader is given
the ``pa.Schema``). Batches are simply concatenated in requests, fetch responses and segment files.

Header (all integers little-endian, signed unless marked ``u``)::

    offset size field             meaning
    0      4    crc               u32 CRC32C (Castagnoli) of bytes [4, batch_length): everything after this field
    4      1    magic             u8 format version, currently 1
    5      1    attributes        u8 bits 0-2: compression (0 NONE, 1 ZSTD, 2 LZ4_FRAME); bit 3: APPEND_ONLY;
                                  bits 4-5: body format (0 ARROW, 1 INDEXED, 2 COMPACTED); bits 6-7 reserved (0)
    6      2    reserved          u16, 0
    8      8    base_offset       offset of the first record (assigned by the leader; writers send 0)
    16     4    batch_length      length of the whole batch in bytes, header included (a multiple of 8)
    20     4    record_count      number of records (rows), > 0 in a log
    24     8    commit_timestamp  ms since the epoch, assigned by the leader when it appends the batch
    32     8    writer_id         idempotent writer id, -1 = none
    40     4    leader_epoch      epoch of the leader that appended the batch
    44     4    schema_id         id of the table schema the body was written with
    48     4    batch_sequence    per-writer, per-bucket sequence number, -1 = none
    52     4    reserved          u32, 0

Body:

* If APPEND_ONLY is clear, the change-type vector follows the header: ``record_count`` bytes, one
  :class:`~fluss.record.change_type.ChangeType` value per record (+I=1, -U=2, +U=3, -D=4), zero-padded to a
  multiple of 8 bytes. If APPEND_ONLY is set there is no vector and every record is +A (0).
* Then, for the ARROW body format (``table.log.format``, :mod:`fluss.record.log_format`), the Arrow IPC
  encapsulated message (continuation marker ``0xFFFFFFFF``, metadata length, flatbuffer ``RecordBatch`` metadata,
  body), ending at ``batch_length``. Compression is Arrow IPC body compression (ZSTD or LZ4_FRAME per buffer, as
  recorded in the message metadata; the attribute bits say the same thing). Dictionary-encoded columns are not
  supported.
* For the INDEXED and COMPACTED body formats: ``record_count`` u32 row byte lengths, then the rows one after the
  other in that row layout (:mod:`fluss.record.indexed_rows`, :mod:`fluss.record.compacted_rows`; each row starts
  with the schema id), zero-padded to a multiple of 8 bytes. Compression is NONE.

Every part is a multiple of 8 bytes, so the Arrow body of a batch is 8-byte aligned whenever the batch starts
8-byte aligned; in a segment file and in a Python ``bytes`` object every batch does.

The CRC covers everything but itself, so the leader rewrites ``base_offset``, ``leader_epoch`` and
``commit_timestamp`` and recomputes the CRC when it appends (:func:`assign_offsets`); it checks the writer's CRC
first. The last offset of a batch is ``base_offset + record_count - 1``.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

import crc32c
import numpy as np
import pyarrow as pa

from fluss.errors import ErrorCode, FlussError
from fluss.record.change_type import MAX_CHANGE_TYPE
from fluss.record.ipc_projection import ProjectionUnsupported, project_message, read_message
from fluss.record.ipc_zstd_decode import decode_zstd_batch, handles

CURRENT_MAGIC = 1

COMPRESSION_NONE = 0
COMPRESSION_ZSTD = 1
COMPRESSION_LZ4_FRAME = 2

COMPRESSION_MASK = 0x07
APPEND_ONLY_FLAG = 0x08
BODY_FORMAT_MASK = 0x30
BODY_FORMAT_SHIFT = 4
_KNOWN_ATTRIBUTE_BITS = COMPRESSION_MASK | APPEND_ONLY_FLAG | BODY_FORMAT_MASK

#: Body format codes (attribute bits 4-5), by ``table.log.format`` value.
BODY_FORMATS = {"ARROW": 0, "INDEXED": 1, "COMPACTED": 2}
_BODY_FORMAT_NAMES = {v: k for k, v in BODY_FORMATS.items()}

NO_WRITER_ID = -1
NO_BATCH_SEQUENCE = -1

_HEADER = struct.Struct("<IBBHqiiqqiiiI")
HEADER_SIZE = _HEADER.size  # 56
assert HEADER_SIZE == 56

CRC_OFFSET = 0
CRC_LENGTH = 4
BASE_OFFSET_OFFSET = 8
LENGTH_OFFSET = 16
COMMIT_TIMESTAMP_OFFSET = 24
WRITER_ID_OFFSET = 32
LEADER_EPOCH_OFFSET = 40
BATCH_SEQUENCE_OFFSET = 48

#: Bytes needed to learn a batch's base offset and length (a reader skipping through a file needs only these).
LOG_OVERHEAD = LENGTH_OFFSET + 4

_COMPRESSION_NAMES = {"NONE": COMPRESSION_NONE, "ZSTD": COMPRESSION_ZSTD, "LZ4_FRAME": COMPRESSION_LZ4_FRAME}
_COMPRESSION_BY_CODE = {v: k for k, v in _COMPRESSION_NAMES.items()}
_ARROW_CODEC = {COMPRESSION_ZSTD: "zstd", COMPRESSION_LZ4_FRAME: "lz4"}

_I64 = struct.Struct("<q")
_I32 = struct.Struct("<i")
_U32 = struct.Struct("<I")

Buffer = bytes | bytearray | memoryview


def parse_compression(name: str) -> int:
    """The compression code for ``table.log.arrow.compression.type`` (``ZSTD``, ``LZ4_FRAME`` or ``NONE``)."""
    code = _COMPRESSION_NAMES.get(str(name).strip().upper())
    if code is None:
        raise FlussError(
            f"Unknown log compression {name!r} for 'table.log.arrow.compression.type' "
            f"(expected one of {', '.join(_COMPRESSION_NAMES)})",
            ErrorCode.INVALID_CONFIG_EXCEPTION,
        )
    return code


def compression_name(code: int) -> str:
    return _COMPRESSION_BY_CODE.get(code, f"UNKNOWN({code})")


def _pad8(n: int) -> int:
    return (n + 7) & ~7


class BatchHeader(NamedTuple):
    """The decoded fixed header of one batch."""

    crc: int
    magic: int
    attributes: int
    base_offset: int
    batch_length: int
    record_count: int
    commit_timestamp: int
    writer_id: int
    leader_epoch: int
    schema_id: int
    batch_sequence: int

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.record_count - 1

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.record_count


def read_header(buf: Buffer, position: int = 0) -> BatchHeader:
    """Decode the header at ``position`` (needs ``HEADER_SIZE`` bytes there); no validation."""
    crc, magic, attrs, _r1, base, length, count, ts, writer, epoch, schema_id, seq, _r2 = _HEADER.unpack_from(
        buf, position
    )
    return BatchHeader(crc, magic, attrs, base, length, count, ts, writer, epoch, schema_id, seq)


def check_header(header: BatchHeader, where: str = "") -> None:
    """Structural checks that need only the header; raise ``CORRUPT_RECORD_EXCEPTION`` naming ``where``."""
    problem = None
    if header.magic != CURRENT_MAGIC:
        problem = f"unsupported magic {header.magic} (expected {CURRENT_MAGIC})"
    elif (header.attributes & ~_KNOWN_ATTRIBUTE_BITS or (header.attributes & COMPRESSION_MASK) not in _COMPRESSION_BY_CODE
          or (header.attributes & BODY_FORMAT_MASK) >> BODY_FORMAT_SHIFT not in _BODY_FORMAT_NAMES
          or (header.attributes & BODY_FORMAT_MASK and header.attributes & COMPRESSION_MASK)):
        problem = f"invalid attributes 0x{header.attributes:02x}"
    elif header.batch_length < HEADER_SIZE or header.batch_length % 8:
        problem = f"invalid batch length {header.batch_length}"
    elif header.record_count < 0:
        problem = f"negative record count {header.record_count}"
    elif not header.attributes & APPEND_ONLY_FLAG and HEADER_SIZE + _pad8(header.record_count) > header.batch_length:
        problem = f"change-type vector of {header.record_count} records exceeds batch length {header.batch_length}"
    if problem:
        raise FlussError(f"Corrupt log batch{where}: {problem}", ErrorCode.CORRUPT_RECORD_EXCEPTION)


def _where(base_offset: int, position: int | None = None) -> str:
    at = f" at byte {position}" if position is not None else ""
    return f" (base offset {base_offset}{at})"


class LogBatch:
    """A parsed, zero-copy view over one batch: header fields as attributes, ``raw`` is the whole batch."""

    __slots__ = (
        "raw", "crc", "magic", "attributes", "base_offset", "size_in_bytes", "record_count",
        "commit_timestamp", "writer_id", "leader_epoch", "schema_id", "batch_sequence",
    )

    def __init__(self, buf: Buffer, position: int = 0) -> None:
        view = buf if isinstance(buf, memoryview) else memoryview(buf)
        if view.ndim != 1 or view.itemsize != 1:
            view = view.cast("B")
        if len(view) - position < HEADER_SIZE:
            raise FlussError(
                f"Corrupt log batch at byte {position}: {len(view) - position} bytes left, header needs {HEADER_SIZE}",
                ErrorCode.CORRUPT_RECORD_EXCEPTION,
            )
        (self.crc, self.magic, self.attributes, _r1, self.base_offset, self.size_in_bytes, self.record_count,
         self.commit_timestamp, self.writer_id, self.leader_epoch, self.schema_id, self.batch_sequence,
         _r2) = _HEADER.unpack_from(view, position)
        end = position + self.size_in_bytes
        if self.size_in_bytes < HEADER_SIZE or end > len(view):
            raise FlussError(
                f"Corrupt log batch{_where(self.base_offset, position)}: batch length {self.size_in_bytes} "
                f"but {len(view) - position} bytes available",
                ErrorCode.CORRUPT_RECORD_EXCEPTION,
            )
        self.raw = view[position:end]

    # -- header-derived properties -------------------------------------------------------------------------
    @property
    def last_offset(self) -> int:
        return self.base_offset + self.record_count - 1

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.record_count

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def append_only(self) -> bool:
        return bool(self.attributes & APPEND_ONLY_FLAG)

    @property
    def body_format(self) -> str:
        """ARROW, INDEXED or COMPACTED (``table.log.format`` of the writer)."""
        return _BODY_FORMAT_NAMES.get((self.attributes & BODY_FORMAT_MASK) >> BODY_FORMAT_SHIFT, "UNKNOWN")

    @property
    def header(self) -> BatchHeader:
        return BatchHeader(self.crc, self.magic, self.attributes, self.base_offset, self.size_in_bytes,
                           self.record_count, self.commit_timestamp, self.writer_id, self.leader_epoch,
                           self.schema_id, self.batch_sequence)

    @property
    def _ipc_position(self) -> int:
        return HEADER_SIZE if self.append_only else HEADER_SIZE + _pad8(self.record_count)

    # -- validation -----------------------------------------------------------------------------------------
    def compute_crc(self) -> int:
        return crc32c.crc32c(self.raw[CRC_LENGTH:])

    def is_valid(self) -> bool:
        try:
            self.ensure_valid()
        except FlussError:
            return False
        return True

    def ensure_valid(self) -> None:
        """Header sanity and CRC check; raises ``FlussError(CORRUPT_RECORD_EXCEPTION)``."""
        where = _where(self.base_offset)
        check_header(self.header, where)
        actual = self.compute_crc()
        if actual != self.crc:
            raise FlussError(
                f"Corrupt log batch{where}: CRC32C is 0x{actual:08x}, header says 0x{self.crc:08x}",
                ErrorCode.CORRUPT_RECORD_EXCEPTION,
            )

    # -- payload --------------------------------------------------------------------------------------------
    def change_types(self) -> np.ndarray:
        """One ``uint8`` ChangeType per record (a read-only view when the batch has a change-type vector)."""
        if self.append_only:
            return np.zeros(self.record_count, dtype=np.uint8)
        return np.frombuffer(self.raw, dtype=np.uint8, count=self.record_count, offset=HEADER_SIZE)

    def ipc_message(self) -> memoryview:
        """The Arrow IPC encapsulated record-batch message (zero-copy)."""
        return self.raw[self._ipc_position:]

    def body(self) -> memoryview:
        """The body after the change-type vector (zero-copy): the IPC message of an ARROW batch, the row lengths
        and rows of an INDEXED or COMPACTED one."""
        return self.raw[self._ipc_position:]

    def to_arrow(self, schema: pa.Schema) -> pa.RecordBatch:
        """Decode the body with ``schema`` (zero-copy for uncompressed ARROW batches; row formats are decoded
        column-wise)."""
        fmt = self.body_format
        try:
            if fmt == "ARROW":
                message = self.ipc_message()
                if self.compression == COMPRESSION_NONE or len(message) >= THREADED_DECOMPRESSION_MIN_BYTES:
                    rb = pa.ipc.read_record_batch(pa.py_buffer(message), schema)
                elif self.compression == COMPRESSION_ZSTD and handles(schema):  # one reused ZSTD context
                    rb = decode_zstd_batch(read_message(message), schema)
                    rb.validate()  # lengths against buffer sizes
                else:
                    rb = _decompress_here(message, schema)
            else:
                rb = self._rows_to_arrow(schema, fmt)
        except (pa.ArrowException, ValueError, FlussError) as e:
            raise FlussError(
                f"Cannot decode log batch{_where(self.base_offset)} (schema id {self.schema_id}, {fmt}) with schema "
                f"of {len(schema)} columns [{', '.join(schema.names)}]: {getattr(e, 'message', e)}",
                ErrorCode.CORRUPT_RECORD_EXCEPTION,
            ) from e
        if rb.num_rows != self.record_count:
            raise FlussError(
                f"Corrupt log batch{_where(self.base_offset)}: header says {self.record_count} records, "
                f"body has {rb.num_rows}",
                ErrorCode.CORRUPT_RECORD_EXCEPTION,
            )
        return rb

    def _rows_to_arrow(self, schema: pa.Schema, fmt: str) -> pa.RecordBatch:
        from fluss.record.log_format import row_codec_of

        body = np.frombuffer(self.raw, dtype=np.uint8, offset=self._ipc_position)
        n = self.record_count
        if len(body) < 4 * n:
            raise FlussError(f"a {fmt} body of {len(body)} bytes cannot hold {n} row lengths",
                             ErrorCode.CORRUPT_RECORD_EXCEPTION)
        lengths = body[: 4 * n].view("<u4").astype(np.int64)
        starts = np.zeros(n, dtype=np.int64)
        if n > 1:
            np.cumsum(lengths[:-1], out=starts[1:])
        rows = body[4 * n:]
        if n and int(starts[-1] + lengths[-1]) > len(rows):
            raise FlussError(f"{fmt} rows of {int(lengths.sum())} bytes do not fit a body of {len(rows)}",
                             ErrorCode.CORRUPT_RECORD_EXCEPTION)
        return row_codec_of(fmt).decode_rows_buffer(rows, starts, lengths, schema)

    def __len__(self) -> int:
        return self.size_in_bytes

    def __repr__(self) -> str:
        return (
            f"LogBatch(base_offset={self.base_offset}, record_count={self.record_count}, "
            f"size={self.size_in_bytes}, schema_id={self.schema_id}, leader_epoch={self.leader_epoch}, "
            f"compression={compression_name(self.compression)}, append_only={self.append_only})"
        )


def iter_batches(buf: Buffer, *, validate: bool = False) -> Iterator[LogBatch]:
    """The batches in ``buf`` in order; stops quietly at an incomplete tail.

    With ``validate`` every header is sanity-checked and every CRC verified (``CORRUPT_RECORD_EXCEPTION``).
    A batch length that cannot be skipped over (shorter than the header) always raises.
    """
    view = buf if isinstance(buf, memoryview) else memoryview(buf)
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast("B")
    end = len(view)
    position = 0
    while end - position >= HEADER_SIZE:
        length = _I32.unpack_from(view, position + LENGTH_OFFSET)[0]
        if length < HEADER_SIZE:
            base = _I64.unpack_from(view, position + BASE_OFFSET_OFFSET)[0]
            raise FlussError(
                f"Corrupt log batch{_where(base, position)}: invalid batch length {length}",
                ErrorCode.CORRUPT_RECORD_EXCEPTION,
            )
        if position + length > end:
            return
        batch = LogBatch(view, position)
        if validate:
            batch.ensure_valid()
        yield batch
        position += length


def valid_bytes(buf: Buffer) -> int:
    """Length of the prefix of ``buf`` made of complete batches (an incomplete tail is excluded)."""
    total = 0
    for batch in iter_batches(buf):
        total += batch.size_in_bytes
    return total


# ---------------------------------------------------------------------------------------------------------------
# Building


# Batches of fewer Arrow bytes than this are compressed on the calling thread (``_serialize_ipc``), and compressed
# bodies of fewer bytes than that are decompressed on it (``LogBatch.to_arrow``): Arrow's thread pool costs more
# than it saves on small batches (a 100-row batch: 125 vs 220 us of CPU to encode, 70 vs 190 us to decode), and
# each hand-over releases the GIL, which a busy client waits for. A small ZSTD body of flat columns is decompressed
# with one reused ZSTD context (``fluss.record.ipc_zstd_decode``: 49-60 instead of 182 us for 20 benchmark rows);
# larger ones stay with Arrow's threaded reader, which a full scan's client ran faster (14.96M against 12.40M
# rows/s, ``reliability.scan_ab``, 2026-12-04).
THREADED_COMPRESSION_MIN_BYTES = 256 * 1024
THREADED_DECOMPRESSION_MIN_BYTES = 64 * 1024
# Writers send a batch whose buffers hold fewer bytes than this uncompressed, whatever the table's codec
# (``build_batch(min_compressed_bytes=...)``, the client's ``writer.compression.min-batch-size``): compressing costs
# a fixed ~250 us of CPU per batch (a codec context per buffer) for a few KB saved (docs/log-format.md, "Small
# batches").
COMPRESSION_MIN_BATCH_BYTES = 16 * 1024
_SINGLE_THREADED_READ = pa.ipc.IpcReadOptions(use_threads=False)


@functools.lru_cache(maxsize=64)
def _schema_message(schema: pa.Schema) -> bytes:
    return schema.serialize().to_pybytes()


def _decompress_here(message: memoryview | bytes, schema: pa.Schema) -> pa.RecordBatch:
    """A compressed record-batch message decoded on this thread: read as a stream of ``schema``'s message and it
    (the one-message reader, ``pa.ipc.read_record_batch``, always uses Arrow's thread pool)."""
    stream = pa.BufferReader(pa.py_buffer(b"".join((_schema_message(schema), message))))
    return pa.ipc.open_stream(stream, options=_SINGLE_THREADED_READ).read_next_batch()


def _serialize_ipc(batch: pa.RecordBatch, compression: int, zstd_level: int) -> pa.Buffer:
    """The encapsulated record-batch IPC message of ``batch``, body-compressed as asked."""
    if compression == COMPRESSION_NONE:
        return batch.serialize()
    codec_name = _ARROW_CODEC.get(compression)
    if codec_name is None:
        raise FlussError(f"Unknown log compression code {compression}", ErrorCode.INVALID_CONFIG_EXCEPTION)
    codec = pa.Codec(codec_name, zstd_level) if compression == COMPRESSION_ZSTD else pa.Codec(codec_name)
    # Arrow compresses the buffers of a batch on its thread pool: for a small batch handing ~25 buffers of a few
    # hundred bytes to other threads costs more than compressing them here (125 vs 220 us of CPU for 100 rows)
    threaded = (batch.get_total_buffer_size() >= THREADED_COMPRESSION_MIN_BYTES  # an upper bound, cheap to get
                and batch.nbytes >= THREADED_COMPRESSION_MIN_BYTES)
    options = pa.ipc.IpcWriteOptions(compression=codec, use_threads=threaded)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema, options=options) as writer:
        writer.write_batch(batch)
    stream = sink.getvalue()
    reader = pa.BufferReader(stream)
    pa.ipc.read_message(reader)  # the schema message
    start = reader.tell()
    message = pa.ipc.read_message(reader)
    if message.type != "record batch":
        raise FlussError(
            f"Cannot build a log batch from columns that need an IPC '{message.type}' message "
            f"(dictionary-encoded columns are not supported): {batch.schema}",
            ErrorCode.CLIENT_ERROR,
        )
    return stream.slice(start, reader.tell() - start)


def _change_type_vector(change_types: np.ndarray | Iterable[int], num_rows: int) -> bytes:
    ct = np.asarray(change_types)
    if ct.ndim != 1 or len(ct) != num_rows:
        raise FlussError(
            f"Change-type vector has shape {ct.shape}, expected one value per record ({num_rows})",
            ErrorCode.CLIENT_ERROR,
        )
    if num_rows and (ct.min() < 0 or ct.max() > MAX_CHANGE_TYPE):
        bad = int(ct[(ct < 0) | (ct > MAX_CHANGE_TYPE)][0])
        raise FlussError(f"Invalid change type value {bad} (valid: 0..{int(MAX_CHANGE_TYPE)})", ErrorCode.CLIENT_ERROR)
    data = ct.astype(np.uint8, copy=False).tobytes()
    return data + b"\0" * (_pad8(num_rows) - num_rows)


def _assemble(
    ipc: Buffer, change_vector: bytes | None, *, attributes: int, base_offset: int, record_count: int,
    commit_timestamp: int, writer_id: int, leader_epoch: int, schema_id: int, batch_sequence: int,
) -> bytes:
    length = HEADER_SIZE + (len(change_vector) if change_vector is not None else 0) + len(ipc)
    header = _HEADER.pack(0, CURRENT_MAGIC, attributes, 0, base_offset, length, record_count, commit_timestamp,
                          writer_id, leader_epoch, schema_id, batch_sequence, 0)
    parts = [memoryview(header)[CRC_LENGTH:]]
    if change_vector is not None:
        parts.append(change_vector)
    parts.append(ipc)
    crc = 0
    for part in parts:
        crc = crc32c.crc32c(part, crc)
    return b"".join([_U32.pack(crc), *parts])


def _serialize_rows(batch: pa.RecordBatch, fmt: str, schema_id: int) -> bytes:
    """The body of a row-format batch: u32 row lengths, the rows, zero padding to 8 bytes."""
    from fluss.record.log_format import row_codec_of

    blob, offsets = row_codec_of(fmt).encode_rows_buffer(batch, schema_id)
    lengths = np.diff(offsets).astype("<u4")
    size = 4 * len(lengths) + len(blob)
    return b"".join([lengths.tobytes(), blob.tobytes(), b"\0" * (_pad8(size) - size)])


def build_row_batch(rows: list[bytes], fmt: str, schema_id: int) -> bytes:
    """One append-only log batch whose body is ``rows``, already encoded in the row format ``fmt`` (INDEXED or
    COMPACTED) with ``schema_id``: stored KV values sent back as they are, with no decode or encode."""
    body_format = BODY_FORMATS.get(fmt)
    if not body_format:
        raise FlussError(f"{fmt!r} is not a row format (INDEXED or COMPACTED)", ErrorCode.CLIENT_ERROR)
    n = len(rows)
    size = 4 * n + sum(map(len, rows))
    body = b"".join([struct.pack(f"<{n}I", *map(len, rows)), *rows, b"\0" * (_pad8(size) - size)])
    return _assemble(body, None, attributes=(body_format << BODY_FORMAT_SHIFT) | APPEND_ONLY_FLAG, base_offset=0,
                     record_count=n, commit_timestamp=0, writer_id=NO_WRITER_ID, leader_epoch=0,
                     schema_id=schema_id, batch_sequence=NO_BATCH_SEQUENCE)


def build_batch(
    batch: pa.RecordBatch,
    *,
    schema_id: int,
    compression: int = COMPRESSION_ZSTD,
    zstd_level: int = 3,
    change_types: np.ndarray | None = None,
    writer_id: int = NO_WRITER_ID,
    batch_sequence: int = NO_BATCH_SEQUENCE,
    base_offset: int = 0,
    leader_epoch: int = 0,
    commit_timestamp: int = 0,
    log_format: str = "ARROW",
    min_compressed_bytes: int = 0,
) -> bytes:
    """Encode ``batch`` as one log batch in ``log_format`` (ARROW, INDEXED or COMPACTED; the row formats ignore
    ``compression``). ``change_types=None`` makes an append-only (+A) batch. A batch whose buffers hold fewer
    than ``min_compressed_bytes`` (a slice counts the whole buffers it shares) is written uncompressed
    (``COMPRESSION_MIN_BATCH_BYTES``); 0 compresses every batch as ``compression`` says."""
    fmt = str(log_format).upper()
    if fmt not in BODY_FORMATS:
        raise FlussError(f"Unknown log format {log_format!r} (expected ARROW, INDEXED or COMPACTED)",
                         ErrorCode.INVALID_CONFIG_EXCEPTION)
    if min_compressed_bytes and compression != COMPRESSION_NONE \
            and batch.get_total_buffer_size() < min_compressed_bytes:  # 1-2 us; ``nbytes`` would take ~50
        compression = COMPRESSION_NONE
    if fmt == "ARROW":
        ipc = _serialize_ipc(batch, compression, zstd_level)
        attributes = compression
    else:
        ipc = _serialize_rows(batch, fmt, schema_id)
        attributes = BODY_FORMATS[fmt] << BODY_FORMAT_SHIFT
    change_vector = None
    if change_types is None:
        attributes |= APPEND_ONLY_FLAG
    else:
        change_vector = _change_type_vector(change_types, batch.num_rows)
    return _assemble(
        ipc, change_vector, attributes=attributes, base_offset=base_offset, record_count=batch.num_rows,
        commit_timestamp=commit_timestamp, writer_id=writer_id, leader_epoch=leader_epoch, schema_id=schema_id,
        batch_sequence=batch_sequence,
    )


def assign_offsets_in_place(
    buf: bytearray | memoryview, position: int, base_offset: int, leader_epoch: int, commit_timestamp: int
) -> None:
    """Rewrite base offset, leader epoch and commit timestamp of the batch at ``position`` and re-CRC it."""
    _I64.pack_into(buf, position + BASE_OFFSET_OFFSET, base_offset)
    _I32.pack_into(buf, position + LEADER_EPOCH_OFFSET, leader_epoch)
    _I64.pack_into(buf, position + COMMIT_TIMESTAMP_OFFSET, commit_timestamp)
    length = _I32.unpack_from(buf, position + LENGTH_OFFSET)[0]
    view = memoryview(buf)[position + CRC_LENGTH : position + length]
    _U32.pack_into(buf, position + CRC_OFFSET, crc32c.crc32c(view))


def _restamped_header(batch: Buffer, fields: tuple[tuple[struct.Struct, int, int], ...]) -> bytearray:
    """A copy of the header of ONE batch with ``(struct, offset, value)`` fields written and the CRC recomputed
    over the new header and the batch's body (which is only read, never copied)."""
    view = memoryview(batch)
    header = bytearray(view[:HEADER_SIZE])
    for fmt, offset, value in fields:
        fmt.pack_into(header, offset, value)
    length = _I32.unpack_from(header, LENGTH_OFFSET)[0]
    crc = crc32c.crc32c(memoryview(header)[CRC_LENGTH:])
    _U32.pack_into(header, CRC_OFFSET, crc32c.crc32c(view[HEADER_SIZE:length], crc))
    return header


def stamped_header(batch: Buffer, base_offset: int, leader_epoch: int, commit_timestamp: int) -> bytearray:
    """The header of ONE batch (``batch`` is the whole batch) with the leader's base offset, leader epoch and
    commit timestamp and the CRC of the result: the batch is ``stamped_header(...) + batch[HEADER_SIZE:]``.

    The body is not copied, so a leader writes a client's batch with a new header straight from the request
    buffer (``os.pwritev``).
    """
    return _restamped_header(batch, ((_I64, BASE_OFFSET_OFFSET, base_offset), (_I32, LEADER_EPOCH_OFFSET, leader_epoch),
                                     (_I64, COMMIT_TIMESTAMP_OFFSET, commit_timestamp)))


def writer_header(batch: Buffer, writer_id: int, batch_sequence: int) -> bytes:
    """The header of ONE batch stamped with an idempotent writer's id and batch sequence (new CRC): what
    :func:`assign_writer` does, without copying the body."""
    return bytes(_restamped_header(batch, ((_I64, WRITER_ID_OFFSET, writer_id),
                                           (_I32, BATCH_SEQUENCE_OFFSET, batch_sequence))))


def assign_writer(data: Buffer, writer_id: int, batch_sequence: int) -> bytes:
    """A copy of ONE batch stamped with an idempotent writer's id and batch sequence (re-CRC'd, no decoding)."""
    buf = bytearray(data)
    if len(buf) < HEADER_SIZE or _I32.unpack_from(buf, LENGTH_OFFSET)[0] != len(buf):
        raise FlussError(
            f"assign_writer expects exactly one batch, got {len(buf)} bytes", ErrorCode.CORRUPT_RECORD_EXCEPTION
        )
    _I64.pack_into(buf, WRITER_ID_OFFSET, writer_id)
    _I32.pack_into(buf, BATCH_SEQUENCE_OFFSET, batch_sequence)
    _U32.pack_into(buf, CRC_OFFSET, crc32c.crc32c(memoryview(buf)[CRC_LENGTH:]))
    return bytes(buf)


def assign_offsets(data: Buffer, base_offset: int, leader_epoch: int, commit_timestamp: int) -> bytes:
    """A copy of ONE batch with the leader's base offset, leader epoch and commit timestamp (no IPC decoding)."""
    buf = bytearray(data)
    if len(buf) < HEADER_SIZE or _I32.unpack_from(buf, LENGTH_OFFSET)[0] != len(buf):
        raise FlussError(
            f"assign_offsets expects exactly one batch, got {len(buf)} bytes", ErrorCode.CORRUPT_RECORD_EXCEPTION
        )
    assign_offsets_in_place(buf, 0, base_offset, leader_epoch, commit_timestamp)
    return bytes(buf)


# ---------------------------------------------------------------------------------------------------------------
# Server-side projection and client-side decoding


def check_projection(schema: pa.Schema, columns: Iterable[int]) -> list[int]:
    """Validate projected column indexes against ``schema`` (``INVALID_COLUMN_PROJECTION``)."""
    cols = [int(c) for c in columns]
    if not cols:
        raise FlussError("Column projection is empty", ErrorCode.INVALID_COLUMN_PROJECTION)
    seen: set[int] = set()
    for c in cols:
        if c < 0 or c >= len(schema):
            raise FlussError(
                f"Projected column index {c} is out of range for a schema of {len(schema)} columns "
                f"[{', '.join(schema.names)}]",
                ErrorCode.INVALID_COLUMN_PROJECTION,
            )
        if c in seen:
            raise FlussError(
                f"Projected column index {c} ({schema.names[c]}) appears more than once",
                ErrorCode.INVALID_COLUMN_PROJECTION,
            )
        seen.add(c)
    return cols


def project_batch(
    batch: LogBatch, schema: pa.Schema, columns: list[int], compression: int | None = None, zstd_level: int = 3
) -> bytes:
    """A new batch of only ``columns`` (indexes into ``schema``): same header fields and change types, new CRC.

    ``compression=None`` keeps the batch's own compression. Then (or when it matches ``compression``) the
    selected Arrow buffers are copied still compressed, without decoding
    (:func:`fluss.record.ipc_projection.project_message`), after checking the source CRC
    (``CORRUPT_RECORD_EXCEPTION``) so that the new CRC cannot cover corrupt data. The batch is decoded and
    re-encoded instead when another compression is asked for, or when the message is not one the fast path
    handles (columns of dictionary, union, run-end encoded or list-view type; malformed metadata).
    """
    cols = check_projection(schema, columns)
    if batch.body_format != "ARROW":
        raise FlussError(f"Only the ARROW log format supports column projection; the batch at offset "
                         f"{batch.base_offset} is {batch.body_format}", ErrorCode.INVALID_COLUMN_PROJECTION)
    if compression is None or compression == batch.compression:
        batch.ensure_valid()
        if cols == list(range(len(schema))):
            return bytes(batch.raw)
        headroom = batch._ipc_position
        try:
            out = project_message(batch.ipc_message(), schema, cols, num_rows=batch.record_count,
                                  headroom=headroom)
        except ProjectionUnsupported:
            pass
        else:
            out[:headroom] = batch.raw[:headroom]
            _I32.pack_into(out, LENGTH_OFFSET, len(out))
            _U32.pack_into(out, CRC_OFFSET, crc32c.crc32c(memoryview(out)[CRC_LENGTH:]))
            return bytes(out)
        compression = batch.compression
    projected = batch.to_arrow(schema).select(cols)
    ipc = _serialize_ipc(projected, compression, zstd_level)
    change_vector = None
    attributes = compression | (batch.attributes & APPEND_ONLY_FLAG)
    if not batch.append_only:
        change_vector = bytes(batch.raw[HEADER_SIZE : HEADER_SIZE + _pad8(batch.record_count)])
    return _assemble(
        ipc, change_vector, attributes=attributes, base_offset=batch.base_offset, record_count=batch.record_count,
        commit_timestamp=batch.commit_timestamp, writer_id=batch.writer_id, leader_epoch=batch.leader_epoch,
        schema_id=batch.schema_id, batch_sequence=batch.batch_sequence,
    )


def reformat_batch(batch: LogBatch, schema: pa.Schema, log_format: str, compression: int = COMPRESSION_NONE,
                   zstd_level: int = 3) -> bytes:
    """``batch`` with its body in another format (ARROW, INDEXED or COMPACTED; ``compression`` applies to ARROW):
    same header fields and change types, new CRC. The source CRC is checked first."""
    batch.ensure_valid()
    rows = batch.to_arrow(schema)
    return build_batch(
        rows, schema_id=batch.schema_id, compression=compression, zstd_level=zstd_level,
        change_types=None if batch.append_only else batch.change_types(), writer_id=batch.writer_id,
        batch_sequence=batch.batch_sequence, base_offset=batch.base_offset, leader_epoch=batch.leader_epoch,
        commit_timestamp=batch.commit_timestamp, log_format=log_format,
    )


def project_records(
    buf: Buffer, schema: pa.Schema, columns: list[int], compression: int | None = None, zstd_level: int = 3
) -> bytes:
    """:func:`project_batch` over every complete batch in ``buf``."""
    check_projection(schema, columns)
    return b"".join(project_batch(b, schema, columns, compression, zstd_level) for b in iter_batches(buf))


@dataclass(frozen=True)
class DecodedRecords:
    """Many batches decoded at once: one row per record, with per-row offset, change type and timestamp."""

    table: pa.Table
    offsets: np.ndarray  # int64
    change_types: np.ndarray  # uint8
    timestamps: np.ndarray  # int64, the batch commit timestamp of each record

    def __len__(self) -> int:
        return self.table.num_rows


def decode_batches(batches: Iterable[LogBatch], schema: pa.Schema) -> DecodedRecords:
    """Decode batches into one table plus per-record vectors (loops per batch, never per row)."""
    batches = list(batches)
    record_batches = [b.to_arrow(schema) for b in batches]
    if not batches:
        empty_i64 = np.zeros(0, dtype=np.int64)
        return DecodedRecords(schema.empty_table(), empty_i64, np.zeros(0, dtype=np.uint8), empty_i64)
    counts = np.fromiter((b.record_count for b in batches), dtype=np.int64, count=len(batches))
    bases = np.fromiter((b.base_offset for b in batches), dtype=np.int64, count=len(batches))
    stamps = np.fromiter((b.commit_timestamp for b in batches), dtype=np.int64, count=len(batches))
    # offsets = base of each row's batch + the row's index within its batch
    starts = np.cumsum(counts) - counts
    total = int(counts.sum())
    offsets = np.repeat(bases - starts, counts) + np.arange(total, dtype=np.int64)
    change_types = np.concatenate([b.change_types() for b in batches])
    return DecodedRecords(
        pa.Table.from_batches(record_batches, schema), offsets, change_types, np.repeat(stamps, counts)
    )
