"""FetchLog responses with their records neither copied into nor out of protobuf messages.

A fetch response is mostly the ``records`` bytes of its buckets (megabytes per response). Through protobuf those
bytes are copied into the bucket message, again into the response (``buckets.append``, ``tables=``), again by
the serialization, and on the client once more by each read of ``FetchBucketResultPb.records``. Both ends
therefore handle the records beside the messages, in protobuf's own wire format (tag = field number << 3 | wire
type; varints; length-delimited fields), for ``FetchLogResponse.tables`` (1) -> ``FetchTableResultPb.buckets``
(2) -> ``FetchBucketResultPb.records`` (6) of ``fluss_api.proto``. What goes on the wire is a valid encoding of
the same message (protobuf's, with the records field last in its bucket), so every reader of the message
(followers, the Java connector) parses it as usual.

* The tablet server serializes each bucket's result without its records and joins it with the records' field
  into the response in one copy (``encode_fetch_response``), returned as an :class:`EncodedResponse`, which the
  server's error door (``fluss.rpc.interceptors``) sends as it is.
* The client takes the response as the raw bytes gRPC received (``split_fetch_response``): every bucket's
  records become a ``memoryview`` of them, and the rest of the message (a few small fields per bucket, and any
  field this client does not know) is parsed by protobuf as usual, from a copy of the response without records.
"""

from __future__ import annotations

from fluss.errors import ErrorCode, FlussError
from fluss.rpc.gen import fluss_api_pb2 as pb

FETCH_LOG_METHOD = "/fluss.rpc.TabletService/FetchLog"
_TABLES = 1  # FetchLogResponse.tables
_BUCKETS = 2  # FetchTableResultPb.buckets
_RECORDS = 6  # FetchBucketResultPb.records
_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5


def _varint(buf: memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise FlussError("Malformed FetchLog response (truncated varint)", ErrorCode.CORRUPT_MESSAGE)
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _fields(buf: memoryview):
    """(field number, wire type, the field's whole bytes, its payload) of each top-level field of ``buf``."""
    pos, end = 0, len(buf)
    while pos < end:
        start = pos
        tag, pos = _varint(buf, pos)
        number, wire = tag >> 3, tag & 7
        if wire == _VARINT:
            _, pos = _varint(buf, pos)
            payload = None
        elif wire == _LEN:
            length, pos = _varint(buf, pos)
            if pos + length > end:
                raise FlussError("Malformed FetchLog response (a field runs past its message)",
                                 ErrorCode.CORRUPT_MESSAGE)
            payload = buf[pos:pos + length]
            pos += length
        elif wire in (_I64, _I32):
            pos += 8 if wire == _I64 else 4
            payload = None
        else:
            raise FlussError(f"Malformed FetchLog response (wire type {wire})", ErrorCode.CORRUPT_MESSAGE)
        if pos > end:
            raise FlussError("Malformed FetchLog response (truncated field)", ErrorCode.CORRUPT_MESSAGE)
        yield number, wire, buf[start:pos], payload


def length_delimited(number: int, size: int) -> bytes:
    """The tag and length of a length-delimited field ``number`` whose payload is ``size`` bytes."""
    return _encode_varint(number << 3 | _LEN) + _encode_varint(size)


def _nested(number: int, body: bytes) -> bytes:
    return length_delimited(number, len(body)) + body


def split_fetch_response(data: bytes) -> tuple[pb.FetchLogResponse, list[list[memoryview]]]:
    """The response without its records, and ``records[t][b]``: the records of ``tables[t].buckets[b]`` as a view
    of ``data`` (empty when the bucket has none)."""
    view = memoryview(data)
    rest = bytearray()
    records: list[list[memoryview]] = []
    for number, wire, whole, payload in _fields(view):
        if number != _TABLES or wire != _LEN:
            rest += whole
            continue
        table = bytearray()
        found: list[memoryview] = []
        for t_number, t_wire, t_whole, t_payload in _fields(payload):
            if t_number != _BUCKETS or t_wire != _LEN:
                table += t_whole
                continue
            bucket = bytearray()
            bucket_records = view[0:0]
            for b_number, b_wire, b_whole, b_payload in _fields(t_payload):
                if b_number == _RECORDS and b_wire == _LEN:
                    bucket_records = b_payload  # the last one wins, as in protobuf
                else:
                    bucket += b_whole
            table += _nested(_BUCKETS, bytes(bucket))
            found.append(bucket_records)
        rest += _nested(_TABLES, bytes(table))
        records.append(found)
    return pb.FetchLogResponse.FromString(bytes(rest)), records


class EncodedResponse:
    """A response message already in wire form; ``error`` is None as for a response without a request-level
    error (what the interceptors read)."""

    __slots__ = ("data",)
    error = None

    def __init__(self, data: bytes) -> None:
        self.data = data


def passing_encoded(serializer):
    """``serializer`` that sends an :class:`EncodedResponse` as it is."""
    if serializer is None:
        return None

    def serialize(response):
        return response.data if type(response) is EncodedResponse else serializer(response)

    return serialize


Records = bytes | memoryview


def encode_fetch_response(tables: list[tuple[int, list[tuple[pb.FetchBucketResultPb, Records]]]]
                          ) -> EncodedResponse:
    """The FetchLogResponse of ``(table id, [(bucket result without records, its records), ...])`` per table;
    the records are copied once, into the joined response."""
    parts: list[Records] = []
    for table_id, buckets in tables:
        head = pb.FetchTableResultPb(table_id=table_id).SerializeToString()
        table_parts: list[Records] = [head]
        size = len(head)
        for bucket, data in buckets:
            body = bucket.SerializeToString()
            field = length_delimited(_RECORDS, len(data)) if data else b""
            length = len(body) + len(field) + len(data)
            prefix = length_delimited(_BUCKETS, length)
            table_parts += (prefix, body, field, data)
            size += len(prefix) + length
        parts.append(length_delimited(_TABLES, size))
        parts += table_parts
    return EncodedResponse(b"".join(parts))


__all__ = ["FETCH_LOG_METHOD", "Records", "EncodedResponse", "encode_fetch_response", "length_delimited", "passing_encoded",
           "split_fetch_response"]
