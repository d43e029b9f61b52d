"""Validation of a writer's batches on the bucket leader, before anything is appended (Kafka's LogValidator).

A CRC only proves that bytes were not damaged on the way; a program that knows the format can send a batch with a
valid CRC whose header contradicts its body. The leader therefore checks every batch of a ProduceLog or PutKv
request, and appends nothing if one fails (``CORRUPT_RECORD_EXCEPTION``, or ``SCHEMA_NOT_EXIST`` for a schema id
the table does not have, naming the batch and what was wrong):

* **Framing**: the payload is whole batches, at least one, no trailing bytes.
* **Header**: magic, known attribute bits (compression codec, APPEND_ONLY, body format), reserved fields zero, length
  a multiple of 8, record count > 0, writer id and batch sequence both set (>= 0) or both -1, a schema id the table
  has (any version since creation: ALTER TABLE ADD keeps older writers working), CRC.
* **Change types**: a log table takes append-only batches (+A); PutKv takes a change-type vector of +I/+U
  (upsert) and -D (delete), with zero padding.
* **Body format** (attribute bits 4-5): ARROW, or the table's ``table.log.format`` (INDEXED, COMPACTED) for a
  row-format log; another row format is refused, and a row-format body is uncompressed. The leader re-encodes a
  validated ARROW batch for a row-format log from its validated rows (``ValidatedBatch.encoded_in``).
* **Arrow body**: one encapsulated record-batch message that ends where the batch ends, with the codec the
  attributes declare, the row count of the header, and the field nodes and buffers of the columns of the batch's
  schema id (the first ``n_k`` columns, ``fluss.record.schema_evolution``); it is decoded with that schema and
  validated in full (buffer sizes, offsets, UTF-8, decimal precision), so a
  reader can always decode what was acknowledged. A NOT NULL column holds no null (on PutKv: key columns always;
  other columns in the rows an upsert writes).
* **Row body** (INDEXED, COMPACTED): the row lengths and rows fill the body to its 8-byte padding (zeros); the
  rows are decoded column-wise with the format's codec (``fluss.record.log_format.row_codec_of``; every row
  must carry the batch's schema id; its columns are that schema id's), validated in full like an Arrow body, and must be byte for byte the codec's
  encoding of what they decode to: bytes a reader would skip or read differently (a field running into the
  next row, trailing bytes, non-zero slots of null values) are refused. The same NOT NULL rules apply.

What cannot be told from the bytes is not checked: a body written for another schema with the same physical
layout (e.g. DOUBLE where the table has BIGINT) decodes as other values.

The work is per batch and per column (Arrow's own validation, the row codecs' vectorised decode and encode),
never per row in Python. Decoding a compressed body costs its decompression: a ZSTD body of flat columns is
decompressed with one reused ZSTD context per thread (``fluss.record.ipc_zstd_decode``; Arrow's reader sets up a
context per buffer), any other through Arrow's reader. ``validate`` returns the decoded record batches so the KV
write path does not decode twice.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from fluss.errors import ErrorCode, FlussError
from fluss.record.arrow_validation import validate_full
from fluss.record.change_type import ChangeType
from fluss.record.ipc_projection import (
    CODEC_LZ4_FRAME,
    CODEC_ZSTD,
    ProjectionUnsupported,
    read_message,
    schema_layout,
)
from fluss.record.ipc_zstd_decode import decode_zstd_batch, handles
from fluss.record.log_batch import (
    APPEND_ONLY_FLAG,
    BODY_FORMAT_MASK,
    BODY_FORMAT_SHIFT,
    BODY_FORMATS,
    COMPRESSION_LZ4_FRAME,
    COMPRESSION_MASK,
    COMPRESSION_NONE,
    COMPRESSION_ZSTD,
    CURRENT_MAGIC,
    HEADER_SIZE,
    LENGTH_OFFSET,
    Buffer,
    LogBatch,
    build_batch,
    compression_name,
)
from fluss.record.log_format import ARROW, row_codec_of
from fluss.record.schema_evolution import SchemaHistory

UPSERT_CHANGE_TYPES = (ChangeType.Insert, ChangeType.UpdateAfter)
KV_CHANGE_TYPES = (*UPSERT_CHANGE_TYPES, ChangeType.Delete)

_KNOWN_ATTRIBUTES = COMPRESSION_MASK | APPEND_ONLY_FLAG | BODY_FORMAT_MASK
_BODY_FORMAT_NAMES = {code: name for name, code in BODY_FORMATS.items()}
_CODECS = {COMPRESSION_NONE: None, COMPRESSION_ZSTD: CODEC_ZSTD, COMPRESSION_LZ4_FRAME: CODEC_LZ4_FRAME}
_CODEC_NAMES = {None: "none", CODEC_ZSTD: "ZSTD", CODEC_LZ4_FRAME: "LZ4_FRAME"}
_SINGLE_THREADED = pa.ipc.IpcReadOptions(use_threads=False)
_I32 = struct.Struct("<i")
_RESERVED = struct.Struct("<H")  # bytes 6-7
_RESERVED_TAIL = struct.Struct("<I")  # bytes 52-55


@dataclass(frozen=True)
class _Shape:
    """What a body of one schema id must look like."""

    schema: pa.Schema
    nodes: int
    buffers: int
    not_null: list[int]
    schema_message: bytes
    flat: bool  # every column flat: a ZSTD body is decoded by ``ipc_zstd_decode``

    @classmethod
    def of(cls, schema: pa.Schema) -> _Shape:
        layout = schema_layout(schema)  # Fluss's column types never fall back (ProjectionUnsupported)
        return cls(schema, layout.total_nodes, sum(layout.buffers), [i for i, f in enumerate(schema) if not f.nullable],
                   schema.serialize().to_pybytes(), handles(schema))


@dataclass(frozen=True)
class ValidatedBatch:
    batch: LogBatch
    rows: pa.RecordBatch
    change_types: np.ndarray  # uint8, one per row

    def encoded_in(self, log_format: str) -> bytes:
        """The batch with its body in ``log_format``: its own bytes when it is in that format already, else
        re-encoded from the validated rows (header fields, writer id and sequence kept; new CRC)."""
        b = self.batch
        if b.body_format == log_format:
            return bytes(b.raw)
        return build_batch(self.rows, schema_id=b.schema_id, compression=b.compression,
                           change_types=None if b.append_only else self.change_types, writer_id=b.writer_id,
                           batch_sequence=b.batch_sequence, base_offset=b.base_offset,
                           leader_epoch=b.leader_epoch, commit_timestamp=b.commit_timestamp, log_format=log_format)


class BatchValidator:
    """Validates the batches a writer sends to one bucket of one table (see the module docstring).

    Args:
        bucket: how messages name the bucket, e.g. ``table db.t bucket 3``.
        schema_id: the table's (latest) schema id.
        schema: the Arrow schema of that schema id (nullability from the table's NOT NULL columns).
        primary_key: indexes of the primary-key columns; empty for a log table.
        log_format: the table's ``table.log.format``: a batch body is ARROW or in this format.
        column_counts: the column count of every schema id (``TableInfo.schema_column_counts``); a batch of
            an older id holds that many leading columns. Default: one schema id.
    """

    def __init__(self, bucket: str, schema_id: int, schema: pa.Schema, primary_key: Sequence[int] = (),
                 log_format: str = ARROW, column_counts: Sequence[int] = ()) -> None:
        self.bucket = bucket
        self.log_format = log_format
        self._body_formats = {ARROW, log_format}
        self.schema_id = schema_id
        self.schema = schema
        self.primary_key = tuple(primary_key)
        self.is_kv = bool(self.primary_key)
        self.history = SchemaHistory(schema, column_counts, schema_id, bucket)
        self._shapes: dict[int, _Shape] = {schema_id: _Shape.of(schema)}

    def _shape(self, schema_id: int) -> _Shape:
        shape = self._shapes.get(schema_id)
        if shape is None:
            shape = self._shapes[schema_id] = _Shape.of(self.history.schema_of(schema_id))
        return shape

    def validate(self, records: Buffer, target_columns: Sequence[int] | None = None) -> list[ValidatedBatch]:
        """Every batch of a request, checked and decoded; raises on the first problem (nothing is written)."""
        view = records if isinstance(records, memoryview) else memoryview(records)
        if view.ndim != 1 or view.itemsize != 1:
            view = view.cast("B")
        if not len(view):
            raise self._error(0, "the request holds no batch (empty records)")
        out = []
        position = 0
        while position < len(view):
            index = len(out) + 1
            left = len(view) - position
            if left < HEADER_SIZE:
                raise self._error(index, f"{left} trailing bytes at byte {position}, a batch header needs {HEADER_SIZE}")
            length = _I32.unpack_from(view, position + LENGTH_OFFSET)[0]
            if length < HEADER_SIZE or length % 8 or length > left:
                raise self._error(index, f"batch length {length} at byte {position} (must be a multiple of 8 "
                                         f"between {HEADER_SIZE} and the {left} bytes left)")
            out.append(self._validate_batch(LogBatch(view, position), index, target_columns))
            position += length
        return out

    # ------------------------------------------------------------ one batch

    def _validate_batch(self, batch: LogBatch, index: int,
                        target_columns: Sequence[int] | None) -> ValidatedBatch:
        self._check_header(batch, index)
        shape = self._shape(batch.schema_id)
        if target_columns is not None and any(c >= len(shape.schema) for c in target_columns):
            missing = sorted(self.schema.names[c] for c in target_columns
                             if len(shape.schema) <= c < len(self.schema))
            raise FlussError(f"Batch {index} for {self.bucket} has schema id {batch.schema_id}, which has no column "
                             f"{', '.join(repr(m) for m in missing)} that the partial update targets",
                             ErrorCode.INVALID_TARGET_COLUMN)
        types = self._change_types(batch, index)
        rows = self._decode(batch, index, shape)
        self._check_nulls(rows, types, index, target_columns, shape)
        return ValidatedBatch(batch, rows, types)

    def _check_header(self, b: LogBatch, index: int) -> None:
        raw = b.raw
        if b.magic != CURRENT_MAGIC:
            raise self._error(index, f"unsupported magic {b.magic} (expected {CURRENT_MAGIC})")
        body_code = (b.attributes & BODY_FORMAT_MASK) >> BODY_FORMAT_SHIFT
        if b.attributes & ~_KNOWN_ATTRIBUTES or b.compression not in _CODECS or body_code not in _BODY_FORMAT_NAMES:
            raise self._error(index, f"invalid attributes 0x{b.attributes:02x} (compression bits 0-2: 0 NONE, "
                                     "1 ZSTD, 2 LZ4_FRAME; bit 3 APPEND_ONLY; body format bits 4-5: 0 ARROW, "
                                     "1 INDEXED, 2 COMPACTED; the rest must be 0)")
        body_format = _BODY_FORMAT_NAMES[body_code]
        if body_format not in self._body_formats:
            raise self._error(index, f"the body is {body_format}, but the table's table.log.format is "
                                     f"{self.log_format} (a writer sends ARROW or the table's format)")
        if body_format != ARROW and b.compression != COMPRESSION_NONE:
            raise self._error(index, f"a {body_format} body is not compressed, but the header declares "
                                     f"{compression_name(b.compression)}")
        if _RESERVED.unpack_from(raw, 6)[0] or _RESERVED_TAIL.unpack_from(raw, 52)[0]:
            raise self._error(index, "reserved header bytes 6-7 and 52-55 must be 0")
        if b.record_count <= 0:
            raise self._error(index, f"record count {b.record_count} (a batch holds at least one record)")
        if (b.writer_id < 0) != (b.batch_sequence < 0) or b.writer_id < -1 or b.batch_sequence < -1:
            raise self._error(index, f"writer id {b.writer_id} with batch sequence {b.batch_sequence} (both -1 "
                                     "without idempotence, both >= 0 with it)")
        if not self.history.knows(b.schema_id):
            if b.schema_id < 1:
                raise self._error(index, f"schema id {b.schema_id} (schema ids start at 1)")
            # newer than this server knows: an ALTER TABLE ADD not yet announced here (the writer retries)
            raise FlussError(f"Batch {index} for {self.bucket} uses schema id {b.schema_id}, but this server knows "
                             f"schema ids 1 to {self.history.current_id} of the table (schema changed: retry once the "
                             "server has the new schema)", ErrorCode.SCHEMA_NOT_EXIST)
        actual = b.compute_crc()
        if actual != b.crc:
            raise self._error(index, f"CRC32C is 0x{actual:08x}, header says 0x{b.crc:08x}")

    def _change_types(self, b: LogBatch, index: int) -> np.ndarray:
        if not self.is_kv:
            if not b.append_only:
                raise self._error(index, "a log table takes append-only batches (+A), this one has a change-type "
                                         "vector")
            return np.zeros(b.record_count, dtype=np.uint8)
        if b.append_only:
            raise self._error(index, "PutKv batches carry a change type per record (+U upsert, -D delete); this "
                                     "one is append-only")
        padded = (b.record_count + 7) & ~7
        if HEADER_SIZE + padded > b.size_in_bytes:
            raise self._error(index, f"the change-type vector of {b.record_count} records runs past the batch end")
        vector = np.frombuffer(b.raw, dtype=np.uint8, count=padded, offset=HEADER_SIZE)
        types = vector[: b.record_count]
        bad = ~np.isin(types, KV_CHANGE_TYPES)
        if bad.any():
            first = int(np.argmax(bad))
            raise self._error(index, f"record {first} has change type {int(types[first])}: PutKv takes +I/+U "
                                     "(upsert) and -D (delete)")
        if vector[b.record_count:].any():
            raise self._error(index, "the change-type vector's padding is not zero")
        return types

    def _decode(self, b: LogBatch, index: int, shape: _Shape) -> pa.RecordBatch:
        if b.body_format != ARROW:
            return self._decode_rows(b, index, shape)
        message = b.ipc_message()
        try:
            info = read_message(message)
        except ProjectionUnsupported as e:
            raise self._error(index, f"the Arrow body is not an IPC record-batch message ({e})") from None
        prefix = 8 if bytes(message[:4]) == b"\xff\xff\xff\xff" else 4
        end = prefix + len(info.metadata) + len(info.body)
        if end != len(message):
            raise self._error(index, f"the Arrow message is {end} bytes but the batch leaves {len(message)} for it")
        declared = _CODECS[b.compression]
        if info.codec != declared:
            raise self._error(index, f"the header declares compression {compression_name(b.compression)} but the "
                                     f"Arrow body is compressed with {_CODEC_NAMES.get(info.codec, info.codec)}")
        if info.length != b.record_count:
            raise self._error(index, f"header says {b.record_count} records, the Arrow body has {info.length}")
        schema = shape.schema
        if info.node_count != shape.nodes or info.buffer_count != shape.buffers:
            raise self._error(index, f"the Arrow body has {info.node_count} column nodes and {info.buffer_count} "
                                     f"buffers; the {len(schema)} columns of schema id {b.schema_id} "
                                     f"[{', '.join(schema.names)}] have {shape.nodes} and {shape.buffers}")
        try:
            if info.codec is None:  # zero-copy
                rows = pa.ipc.read_record_batch(pa.py_buffer(message), schema)
            elif info.codec == CODEC_ZSTD and shape.flat:  # one reused ZSTD context (``ipc_zstd_decode``)
                rows = decode_zstd_batch(info, schema)
            else:  # decompressed on this thread: Arrow's thread pool costs more than it saves on small batches
                stream = pa.BufferReader(pa.py_buffer(b"".join((shape.schema_message, message))))
                rows = pa.ipc.open_stream(stream, options=_SINGLE_THREADED).read_next_batch()
            validate_full(rows)
        except (pa.ArrowException, ValueError, OSError) as e:
            raise self._error(index, f"the Arrow body does not decode with the table's columns of schema id "
                                     f"{b.schema_id} "
                                     f"[{', '.join(schema.names)}]: {_first_line(e)}") from None
        if rows.num_rows != b.record_count:
            raise self._error(index, f"header says {b.record_count} records, the Arrow body has {rows.num_rows}")
        return rows

    def _decode_rows(self, b: LogBatch, index: int, shape: _Shape) -> pa.RecordBatch:
        fmt, n = b.body_format, b.record_count
        body = np.frombuffer(b.ipc_message(), dtype=np.uint8)
        if len(body) < 4 * n:
            raise self._error(index, f"the {fmt} body of {len(body)} bytes cannot hold the lengths of {n} rows")
        lengths = body[: 4 * n].view("<u4").astype(np.int64)
        size = 4 * n + int(lengths.sum())
        if (size + 7) & ~7 != len(body) or body[size:].any():
            raise self._error(index, f"the {fmt} body is {len(body)} bytes, but its {n} row lengths and rows take "
                                     f"{size} (padded with zeros to a multiple of 8)")
        data = body[4 * n: size]
        starts = np.zeros(n, dtype=np.int64)
        np.cumsum(lengths[:-1], out=starts[1:])
        codec = row_codec_of(fmt)
        try:
            rows = codec.decode_rows_buffer(data, starts, lengths, shape.schema, b.schema_id)
            validate_full(rows)
            blob, offsets = codec.encode_rows_buffer(rows, b.schema_id)
        except FlussError as e:
            raise self._error(index, f"the {fmt} rows do not decode with the columns of schema id "
                                     f"{b.schema_id} [{', '.join(shape.schema.names)}]: {e.message}") from None
        except (pa.ArrowException, ValueError, IndexError, OverflowError, TypeError) as e:
            raise self._error(index, f"the {fmt} rows do not decode with the columns of schema id "
                                     f"{b.schema_id} [{', '.join(shape.schema.names)}]: {_first_line(e)}") from None
        if rows.num_rows != n:
            raise self._error(index, f"header says {n} records, the {fmt} body has {rows.num_rows}")
        if not (np.array_equal(np.diff(offsets), lengths) and np.array_equal(blob, data)):
            differs = np.flatnonzero(np.diff(offsets) != lengths)
            row = int(differs[0]) if len(differs) else None
            where = f"row {row} is {int(lengths[row])} bytes, its values take {int(offsets[row + 1] - offsets[row])}" \
                if row is not None else "the bytes differ"
            raise self._error(index, f"the {fmt} rows are not the encoding of the values they decode to ({where})")
        return rows

    def _check_nulls(self, rows: pa.RecordBatch, types: np.ndarray, index: int,
                     target_columns: Sequence[int] | None, shape: _Shape) -> None:
        for i in shape.not_null:
            column = rows.column(i)
            if not column.null_count:
                continue
            if self.is_kv and i not in self.primary_key:
                if target_columns is not None and i not in target_columns:
                    continue  # a partial update does not write this column
                upserts = np.isin(types, UPSERT_CHANGE_TYPES)
                nulls = column.is_null().to_numpy(zero_copy_only=False)
                if not (nulls & upserts).any():
                    continue  # only deletes, which carry the key alone
            raise self._error(index, f"column '{self.schema.names[i]}' is NOT NULL but holds "
                                     f"{column.null_count} null(s)")

    def _error(self, index: int, problem: str) -> FlussError:
        where = f"batch {index}" if index else "request"
        return FlussError(f"Invalid {where} for {self.bucket}: {problem}", ErrorCode.CORRUPT_RECORD_EXCEPTION)


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__
