"""Write requests encoded by hand (``fluss.client.produce_wire``) and batch headers re-stamped without copying
the body (``stamped_header``, ``writer_header``): byte-for-byte what the protobuf runtime and the copying
functions produce."""

from __future__ import annotations

import pyarrow as pa
import pytest

from fluss.client.produce_wire import encode_write_request, varint
from fluss.record.log_batch import (
    HEADER_SIZE,
    assign_offsets,
    assign_writer,
    build_batch,
    iter_batches,
    stamped_header,
    writer_header,
)
from fluss.rpc.gen import fluss_api_pb2 as pb


def _batch(n: int, start: int = 0) -> bytes:
    return build_batch(pa.record_batch([pa.array(range(start, start + n), pa.int64())], names=["v"]), schema_id=1)


@pytest.mark.parametrize("n", [1, 127, 128, 300, 2**14, 2**21 + 5, 2**35])
def test_varint_matches_protobuf(n):
    encoded = pb.ProduceLogRequest(table_id=n).SerializeToString()  # field 2, varint: one tag byte, then n
    assert varint(n) == encoded[1:]
    assert varint(0) == b"\x00"


def test_produce_request_parses_to_the_message_protobuf_builds():
    a, b, c = _batch(3), _batch(200, 3), _batch(70_000, 203)  # 70k rows: a length prefix of 3+ bytes
    header = writer_header(c, 42, 7)
    entries = [
        (pb.ProduceBucketPb(partition_id=-1, bucket_id=0), [a, b]),
        (pb.ProduceBucketPb(partition_id=12, bucket_id=3), [header, memoryview(c)[HEADER_SIZE:]]),
    ]
    request = pb.ProduceLogRequest(acks=-1, table_id=9, timeout_ms=30_000)
    wire = encode_write_request(request, entries)
    expected = pb.ProduceLogRequest(acks=-1, table_id=9, timeout_ms=30_000, buckets=[
        pb.ProduceBucketPb(partition_id=-1, bucket_id=0, records=a + b),
        pb.ProduceBucketPb(partition_id=12, bucket_id=3, records=assign_writer(c, 42, 7))])
    assert pb.ProduceLogRequest.FromString(wire) == expected
    assert wire == expected.SerializeToString()  # same field order as the runtime's, so the same bytes


def test_put_kv_request_keeps_its_other_fields():
    records = _batch(5)
    request = pb.PutKvRequest(acks=1, table_id=3, timeout_ms=100, target_columns=[0, 2])
    wire = encode_write_request(request, [(pb.PutKvBucketPb(partition_id=-1, bucket_id=1), [records])])
    assert pb.PutKvRequest.FromString(wire) == pb.PutKvRequest(
        acks=1, table_id=3, timeout_ms=100, target_columns=[0, 2],
        buckets=[pb.PutKvBucketPb(partition_id=-1, bucket_id=1, records=records)])


def test_encoding_refuses_prefilled_messages():
    with pytest.raises(ValueError):
        encode_write_request(pb.ProduceLogRequest(buckets=[pb.ProduceBucketPb()]), [(pb.ProduceBucketPb(), [b"x"])])
    with pytest.raises(ValueError):
        encode_write_request(pb.ProduceLogRequest(), [(pb.ProduceBucketPb(records=b"x"), [b"y"])])


def test_stamped_headers_equal_the_copying_functions():
    data = _batch(1000)
    assert bytes(stamped_header(data, 500, 4, 1234)) + data[HEADER_SIZE:] == assign_offsets(data, 500, 4, 1234)
    assert writer_header(data, 9, 3) + data[HEADER_SIZE:] == assign_writer(data, 9, 3)
    stamped = bytes(stamped_header(data, 7, 1, 99)) + data[HEADER_SIZE:]
    (batch,) = iter_batches(stamped, validate=True)  # the new CRC covers the new header and the old body
    assert (batch.base_offset, batch.leader_epoch, batch.commit_timestamp) == (7, 1, 99)
