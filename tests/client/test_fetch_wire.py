"""``fluss.rpc.fetch_wire``: a FetchLog response split into its records views and the rest parses exactly as
protobuf parses the whole response, and the views are views of the received bytes (no copy)."""

from __future__ import annotations

import pytest

from fluss import ErrorCode, FlussError
from fluss.rpc.fetch_wire import encode_fetch_response, passing_encoded, split_fetch_response
from fluss.rpc.gen import fluss_api_pb2 as pb


def _response() -> pb.FetchLogResponse:
    buckets = [pb.FetchBucketResultPb(partition_id=-1, bucket_id=0, high_watermark=300, log_start_offset=0,
                                      records=bytes(range(256)) * 40),
               pb.FetchBucketResultPb(partition_id=-1, bucket_id=1, high_watermark=7,
                                      error=pb.ErrorInfo(code=15, message="not the leader")),
               pb.FetchBucketResultPb(partition_id=-1, bucket_id=2, high_watermark=9, records=b"\x01" * 200,
                                      remote_log_fetch_info=pb.RemoteLogFetchInfoPb(), tiered_offset=3)]
    return pb.FetchLogResponse(tables=[pb.FetchTableResultPb(table_id=5, buckets=buckets[:2]),
                                       pb.FetchTableResultPb(table_id=6, buckets=buckets[2:])])


def test_split_equals_the_protobuf_parse_and_views_the_received_bytes():
    whole = _response()
    data = whole.SerializeToString()
    rest, records = split_fetch_response(data)
    assert [len(t) for t in records] == [2, 1]
    for t, table in enumerate(whole.tables):
        for b, bucket in enumerate(table.buckets):
            assert bytes(records[t][b]) == bucket.records
            assert records[t][b].obj is data  # a view of what gRPC handed over, not a copy
            without = pb.FetchBucketResultPb()
            without.CopyFrom(bucket)
            without.ClearField("records")
            assert rest.tables[t].buckets[b] == without
            assert rest.tables[t].table_id == table.table_id
    assert not rest.HasField("error")


def test_a_request_level_error_and_an_empty_response_come_through():
    resp = pb.FetchLogResponse(error=pb.ErrorInfo(code=3, message="bad"))
    rest, records = split_fetch_response(resp.SerializeToString())
    assert rest == resp and records == []
    rest, records = split_fetch_response(b"")
    assert rest == pb.FetchLogResponse() and records == []


@pytest.mark.parametrize("cut", [1, 5, 40])
def test_a_truncated_response_is_a_corrupt_message(cut):
    data = _response().SerializeToString()
    with pytest.raises(FlussError) as e:
        split_fetch_response(data[:-cut])
    assert e.value.error_code == ErrorCode.CORRUPT_MESSAGE


def test_the_servers_encoding_is_what_protobuf_parses_and_writes():
    whole = _response()
    tables = []
    for table in whole.tables:
        buckets = []
        for bucket in table.buckets:
            without = pb.FetchBucketResultPb()
            without.CopyFrom(bucket)
            without.ClearField("records")
            buckets.append((without, memoryview(bucket.records) if bucket.records else b""))
        tables.append((table.table_id, buckets))
    encoded = encode_fetch_response(tables)
    assert pb.FetchLogResponse.FromString(encoded.data) == whole
    assert encoded.error is None
    serialize = passing_encoded(pb.FetchLogResponse.SerializeToString)
    assert serialize(encoded) is encoded.data
    assert serialize(whole) == whole.SerializeToString()
    assert encode_fetch_response([]).data == b""
