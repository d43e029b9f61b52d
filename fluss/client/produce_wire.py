"""Write requests (ProduceLog, PutKv) encoded straight to protobuf wire bytes, records included as they are.

Building such a request through the protobuf runtime copies every log batch twice (into the message, then into
the serialized bytes); with upb on this machine that costs ~2 ms per MB, more than the rest of the send. Here
the small fields are still serialized by protobuf and only each bucket entry's ``records`` bytes, with the
length prefixes around them, are written by hand, as the protobuf wire format defines a length-delimited field:
its tag (``field_number << 3 | 2``) as a varint, the length as a varint, then the bytes. Fields of a message may
come in any order, so ``request`` + buckets parses to the same message the runtime would build (tested).
"""

from __future__ import annotations

from collections.abc import Sequence

from google.protobuf.message import Message

from fluss.record.log_batch import Buffer

_LENGTH_DELIMITED = 2


def varint(n: int) -> bytes:
    """``n`` (>= 0) as a protobuf base-128 varint."""
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _tag(message_type: type[Message], field: str) -> bytes:
    number = message_type.DESCRIPTOR.fields_by_name[field].number
    return varint(number << 3 | _LENGTH_DELIMITED)


def encode_write_request(request: Message, buckets: Sequence[tuple[Message, Sequence[Buffer]]]) -> bytes:
    """The wire bytes of ``request`` with a ``buckets`` entry per ``(entry, records parts)``.

    ``request`` has no buckets yet and each entry no ``records``; the parts of an entry are concatenated as its
    records (e.g. a batch's re-stamped header and its body). One copy of the records is made, by the final join.
    """
    if len(request.buckets):
        raise ValueError("encode_write_request: the request must not hold buckets already")
    out: list[Buffer] = [request.SerializeToString()]
    if not buckets:
        return out[0]
    buckets_tag = _tag(type(request), "buckets")
    records_tag = _tag(type(buckets[0][0]), "records")
    for entry, parts in buckets:
        if entry.records:
            raise ValueError("encode_write_request: a bucket entry must not hold records already")
        head = entry.SerializeToString()
        size = sum(len(p) for p in parts)
        size_prefix = varint(size)
        out += (buckets_tag, varint(len(head) + len(records_tag) + len(size_prefix) + size), head, records_tag,
                size_prefix, *parts)
    return b"".join(out)
