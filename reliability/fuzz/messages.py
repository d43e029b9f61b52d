"""Request generators of the protocol fuzzer: for any RPC, random and mutated messages as wire bytes.

Kinds (``KINDS``), each a function ``(rng, method, context) -> bytes``:

* ``random-bytes``: bytes that are almost never a valid message.
* ``structured``: a message of the method's type with every field filled from "interesting" values: out-of-range
  ids, offsets and epochs (-1, 2^31-1, -2^63, 10^12, ...), ids of the fuzzed tables and servers, empty, long and
  odd strings, nested messages, repeated fields of 0 to 50 elements, and for ``bytes`` fields log batches (valid
  ones of the scratch table, or corrupt ones).
* ``truncated``: a structured message cut at a random byte.
* ``bit-flipped``: a structured message with a few bits flipped.
* ``wrong-types``: every field of the message sent with another wire type than its declared one.
* ``oversized``: a structured message with a field of 1-4 MiB.
* ``corrupt-arrow``: a ProduceLog/PutKv for a fuzzed table whose batch has a valid CRC but a header or body
  that cannot be right (record count, length, codec, schema id, change types, a garbage or cut Arrow body).

Destructive admin calls never name the protected database (``PROTECTED_DATABASE``): its data must come out of
the run intact, which is checked.
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass, field

import crc32c
import numpy as np
import pyarrow as pa
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from fluss.record.change_type import ChangeType
from fluss.record.log_batch import (
    COMPRESSION_LZ4_FRAME,
    COMPRESSION_NONE,
    COMPRESSION_ZSTD,
    HEADER_SIZE,
    build_batch,
)

PROTECTED_DATABASE = "protected"
MAX_DEPTH = 3

INTS = [0, 1, -1, 2, 3, 7, 63, 64, 255, 1000, 2**31 - 1, -(2**31), 2**32, 10**12, 2**63 - 1, -(2**63)]
STRINGS = ["", "fluss", "scratch", "t", "a" * 201, "x" * 70_000, "../../etc/passwd", "/tmp", "\x00", "表格",
           "a.b", "-", "db name", "NULL", "%s%s%n", "' OR 1=1 --", "bucket.num", "table.log.ttl", "ZSTD",
           "table.datalake.enabled", "-5s", "99", "BIGINT", "STRING NOT NULL", "DECIMAL(99, 200)", "ARRAY<INT>"]
TYPES = ["INT", "BIGINT", "STRING", "BOOLEAN", "DOUBLE", "DECIMAL(10, 2)", "TIMESTAMP(3)", "BYTES", "DATE",
         "nonsense", "INT NOT NULL", "CHAR(0)", "BINARY(-1)"]


@dataclass
class Context:
    """What the generators may aim at: the fuzzed tables and the cluster's servers."""

    table_ids: list[int] = field(default_factory=list)  # protected and scratch tables
    scratch_table_id: int = -1  # a log table that may receive (valid) data
    server_ids: list[int] = field(default_factory=list)
    log_schema: pa.Schema | None = None
    kv_table_ids: list[int] = field(default_factory=list)
    kv_schema: pa.Schema | None = None
    protected_log_table_id: int = -1
    protected_kv_table_id: int = -1


# ------------------------------------------------------------ structured messages


def _int(rng: random.Random, ctx: Context, name: str, bits: int) -> int:
    pool = list(INTS)
    if "table_id" in name:
        pool += ctx.table_ids * 4
    if "server_id" in name or name in ("leader", "follower_id", "id") or "replicas" in name or "isr" in name:
        pool += ctx.server_ids * 4
    if "bucket" in name or "partition_id" in name:
        pool += [0, 1, 2, -1] * 3
    value = rng.choice(pool) if rng.random() < 0.85 else rng.randrange(-1000, 1000)
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    return min(max(value, lo), hi)


def _string(rng: random.Random, name: str) -> str:
    if "data_type" in name:
        return rng.choice(TYPES)
    if name in ("database_name",):  # never the protected database
        value = rng.choice(STRINGS)
        return value if value != PROTECTED_DATABASE else "fuzzed"
    if rng.random() < 0.2:
        return "".join(chr(rng.randrange(32, 0x3000)) for _ in range(rng.randrange(1, 30)))
    return rng.choice(STRINGS)


def _bytes(rng: random.Random, ctx: Context, name: str) -> bytes:
    if name in ("records",) and ctx.log_schema is not None and rng.random() < 0.7:
        # only batches no leader may accept: the request's table id may be a protected table's
        return corrupt_batch(rng, ctx, kv=rng.random() < 0.3)
    choice = rng.random()
    if choice < 0.3:
        return b""
    if choice < 0.6:
        return rng.randbytes(rng.randrange(1, 64))
    if choice < 0.8:
        return rng.randbytes(rng.randrange(64, 4096))
    return struct.pack("<q", rng.choice(INTS))


def fill(rng: random.Random, msg: Message, ctx: Context, depth: int = 0) -> Message:
    """Fills every field of ``msg`` (nested messages down to ``MAX_DEPTH``) with random interesting values."""
    for f in msg.DESCRIPTOR.fields:
        if rng.random() < 0.15:
            continue  # left unset
        repeated = f.label == FieldDescriptor.LABEL_REPEATED
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            target = getattr(msg, f.name)
            for _ in range(rng.choice([0, 1, 2, 5])):
                key = _string(rng, "key")
                value_field = f.message_type.fields_by_name["value"]
                if value_field.type == FieldDescriptor.TYPE_STRING:
                    target[key] = _string(rng, "value")
            continue
        count = rng.choice([0, 1, 1, 2, 3, 50]) if repeated else 1
        for _ in range(count):
            value = _value(rng, f, ctx, depth, msg)
            if value is None:
                continue
            if repeated:
                if f.type == FieldDescriptor.TYPE_MESSAGE:
                    getattr(msg, f.name).add().CopyFrom(value)
                else:
                    getattr(msg, f.name).append(value)
            elif f.type == FieldDescriptor.TYPE_MESSAGE:
                getattr(msg, f.name).CopyFrom(value)
            else:
                setattr(msg, f.name, value)
    return msg


def _value(rng: random.Random, f: FieldDescriptor, ctx: Context, depth: int, parent: Message):
    t = f.type
    if t == FieldDescriptor.TYPE_MESSAGE:
        if depth >= MAX_DEPTH:
            return None
        return fill(rng, getattr(__import__("fluss.rpc.gen.fluss_api_pb2", fromlist=["x"]), f.message_type.name)(),
                    ctx, depth + 1)
    if t in (FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_SINT64, FieldDescriptor.TYPE_SFIXED64):
        return _int(rng, ctx, f.name, 64)
    if t in (FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_SINT32, FieldDescriptor.TYPE_SFIXED32):
        return _int(rng, ctx, f.name, 32)
    if t == FieldDescriptor.TYPE_BOOL:
        return rng.random() < 0.5
    if t == FieldDescriptor.TYPE_STRING:
        return _string(rng, f.name)
    if t == FieldDescriptor.TYPE_BYTES:
        return _bytes(rng, ctx, f.name)
    return None


def structured(rng: random.Random, request_type: type, ctx: Context) -> Message:
    return fill(rng, request_type(), ctx)


# ------------------------------------------------------------ log batches


def scratch_batch(rng: random.Random, ctx: Context) -> bytes:
    """A valid batch of the scratch log table (it may be appended)."""
    n = rng.randrange(1, 20)
    rows = pa.record_batch([pa.array(range(n), pa.int64()), pa.array([f"fuzz-{i}" for i in range(n)])],
                           schema=ctx.log_schema)
    return build_batch(rows, schema_id=1, compression=rng.choice([COMPRESSION_NONE, COMPRESSION_ZSTD,
                                                                  COMPRESSION_LZ4_FRAME]))


def _recrc(buf: bytearray) -> bytes:
    struct.pack_into("<I", buf, 0, crc32c.crc32c(bytes(buf[4:])))
    return bytes(buf)


def corrupt_batch(rng: random.Random, ctx: Context, kv: bool = False) -> bytes:
    """A batch with a valid CRC that no leader may accept (see the module docstring)."""
    schema = ctx.kv_schema if kv else ctx.log_schema
    n = rng.randrange(2, 30)
    columns = [pa.array(range(n), schema.field(0).type)] + [pa.array([f"c{i}" for i in range(n)], f.type)
                                                            for f in list(schema)[1:]]
    change_types = np.full(n, ChangeType.UpdateAfter, np.uint8) if kv else None
    good = bytearray(build_batch(pa.record_batch(columns, schema=schema), schema_id=1, change_types=change_types,
                                 compression=rng.choice([COMPRESSION_NONE, COMPRESSION_ZSTD, COMPRESSION_LZ4_FRAME])))
    kind = rng.randrange(9)
    if kind == 0:  # record count that disagrees with the body
        struct.pack_into("<i", good, 20, rng.choice([n + 1, n * 2, 2**31 - 1, 0, -1]))
    elif kind == 1:  # a codec other than the body's
        attributes = good[5]
        good[5] = (attributes & ~0x07) | ((attributes & 0x07) + 1) % 3
    elif kind == 2:  # another schema id
        struct.pack_into("<i", good, 44, rng.choice([0, 2, 99, -1]))
    elif kind == 3:  # a garbage Arrow body of the same length
        start = HEADER_SIZE + (((n + 7) & ~7) if kv else 0)
        good[start:] = rng.randbytes(len(good) - start)
    elif kind == 4:  # the body cut short (length fixed up, so framing is fine)
        cut = rng.randrange(8, max(16, len(good) - HEADER_SIZE)) & ~7
        del good[HEADER_SIZE + cut:]
        struct.pack_into("<i", good, 16, len(good))
    elif kind == 5:  # change types a log table cannot have / a KV write cannot carry
        if kv:
            good[HEADER_SIZE] = rng.choice([0, 2, 5, 255])
        else:
            columns_only = pa.record_batch(columns, schema=schema)
            good = bytearray(build_batch(columns_only, schema_id=1, change_types=np.full(n, 4, np.uint8)))
    elif kind == 6:  # reserved bits and bytes
        good[5] |= 0x80
    elif kind == 7:  # an Arrow body of another table
        other = pa.record_batch([pa.array([1.5] * n, pa.float32()), pa.array([True] * n)], names=["f", "b"])
        good = bytearray(build_batch(other, schema_id=1, change_types=change_types))
    else:  # a sequence without a writer id
        struct.pack_into("<i", good, 48, rng.randrange(0, 100))
    return _recrc(good)


# ------------------------------------------------------------ wire-level mutations


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def wrong_types(rng: random.Random, request_type: type) -> bytes:
    """Every field number of the message, each encoded with a wire type other than its own."""
    out = bytearray()
    for f in request_type.DESCRIPTOR.fields:
        own = 2 if f.type in (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES,
                              FieldDescriptor.TYPE_MESSAGE) or f.label == FieldDescriptor.LABEL_REPEATED else 0
        wire = rng.choice([w for w in (0, 1, 2, 5) if w != own])
        out += _varint(f.number << 3 | wire)
        if wire == 0:
            out += _varint(rng.choice(INTS))
        elif wire == 1:
            out += rng.randbytes(8)
        elif wire == 5:
            out += rng.randbytes(4)
        else:
            payload = rng.randbytes(rng.randrange(0, 40))
            out += _varint(len(payload)) + payload
    return bytes(out)


def generate(rng: random.Random, kind: str, method: str, request_type: type, ctx: Context) -> bytes:
    """One request of ``kind`` for ``method``, as wire bytes."""
    if kind == "random-bytes":
        return rng.randbytes(rng.randrange(1, 512))
    if kind == "wrong-types":
        return wrong_types(rng, request_type)
    if kind == "corrupt-arrow":
        return corrupt_arrow_request(rng, method, request_type, ctx)
    data = structured(rng, request_type, ctx).SerializeToString()
    if kind == "structured":
        return data
    if kind == "truncated":
        return data[: rng.randrange(0, max(1, len(data)))]
    if kind == "bit-flipped":
        buf = bytearray(data or b"\0")
        for _ in range(rng.randrange(1, 6)):
            i = rng.randrange(len(buf))
            buf[i] ^= 1 << rng.randrange(8)
        return bytes(buf)
    if kind == "oversized":
        big = rng.randbytes(rng.randrange(1 << 20, 4 << 20))
        field_number = rng.choice([f.number for f in request_type.DESCRIPTOR.fields] or [1])
        return data + _varint(field_number << 3 | 2) + _varint(len(big)) + big
    raise ValueError(kind)


def corrupt_arrow_request(rng: random.Random, method: str, request_type: type, ctx: Context) -> bytes:
    """ProduceLog/PutKv for a fuzzed table with a CRC-valid batch that must be refused (others: structured)."""
    from fluss.rpc.gen import fluss_api_pb2 as pb

    if method == "ProduceLog" and rng.random() < 0.1:  # now and then a good write, to the scratch table only
        return pb.ProduceLogRequest(acks=-1, table_id=ctx.scratch_table_id, timeout_ms=5000, buckets=[
            pb.ProduceBucketPb(partition_id=-1, bucket_id=rng.randrange(3), records=scratch_batch(rng, ctx))
        ]).SerializeToString()
    if method == "ProduceLog":
        table_id = rng.choice([ctx.protected_log_table_id, ctx.scratch_table_id])
        batches = [corrupt_batch(rng, ctx)] + [scratch_batch(rng, ctx) for _ in range(rng.randrange(0, 3))]
        rng.shuffle(batches)  # the corrupt batch anywhere in the request: nothing of it may be appended
        records = b"".join(batches)
        return pb.ProduceLogRequest(acks=rng.choice([-1, 1, 0]), table_id=table_id, timeout_ms=5000, buckets=[
            pb.ProduceBucketPb(partition_id=-1, bucket_id=rng.randrange(3), records=records)]).SerializeToString()
    if method == "PutKv":
        return pb.PutKvRequest(acks=-1, table_id=ctx.protected_kv_table_id, timeout_ms=5000, buckets=[
            pb.PutKvBucketPb(partition_id=-1, bucket_id=rng.randrange(3), records=corrupt_batch(rng, ctx, kv=True))
        ]).SerializeToString()
    return structured(rng, request_type, ctx).SerializeToString()


KINDS = ("random-bytes", "structured", "truncated", "bit-flipped", "wrong-types", "oversized", "corrupt-arrow")
