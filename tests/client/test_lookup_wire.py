"""``fluss.rpc.lookup_wire``: a Lookup/PrefixLookup response written beside protobuf parses as exactly the message
protobuf builds from the same fields, with the flags packed by hand where they fit one byte each."""

from __future__ import annotations

from fluss.rpc.errors import OK
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.rpc.lookup_wire import PROTOBUF_FLAGS_MAX, bucket_results_response, encode_bucket_results

NOT_LEADER = pb.ErrorInfo(code=15, message="not the leader")


def _parsed(response_cls, results):
    return response_cls.FromString(encode_bucket_results(results).data)


def test_lookup_answers_parse_as_the_protobuf_message():
    found = [True, False, True] * 500
    rows = bytes(range(256)) * 50
    results = [(pb.LookupBucketResultPb(partition_id=0, bucket_id=0, error=OK), found, rows),
               (pb.LookupBucketResultPb(partition_id=7, bucket_id=1, error=NOT_LEADER), (), b""),
               (pb.LookupBucketResultPb(partition_id=0, bucket_id=2, error=OK), [False, False], b""),
               (pb.LookupBucketResultPb(partition_id=0, bucket_id=3, error=OK), [], b"")]
    expected = pb.LookupResponse(buckets=[
        pb.LookupBucketResultPb(partition_id=0, bucket_id=0, error=OK, found=found, rows=rows),
        pb.LookupBucketResultPb(partition_id=7, bucket_id=1, error=NOT_LEADER),
        pb.LookupBucketResultPb(partition_id=0, bucket_id=2, error=OK, found=[False, False]),
        pb.LookupBucketResultPb(partition_id=0, bucket_id=3, error=OK)])
    parsed = _parsed(pb.LookupResponse, results)
    assert parsed == expected
    assert list(parsed.buckets[0].found) == found and parsed.buckets[0].rows == rows
    assert not parsed.HasField("error")


def test_prefix_counts_of_any_size_parse_as_the_protobuf_message():
    small, large = [0, 1, 127, 3], [2, 128, 0, 70_000]  # a count of 128 or more takes more than one varint byte
    results = [(pb.PrefixLookupBucketResultPb(bucket_id=0, error=OK), small, b"\x05" * 9),
               (pb.PrefixLookupBucketResultPb(bucket_id=1, error=OK), large, b"\x06" * 300)]
    parsed = _parsed(pb.PrefixLookupResponse, results)
    assert [list(b.counts) for b in parsed.buckets] == [small, large]
    assert parsed == pb.PrefixLookupResponse(buckets=[
        pb.PrefixLookupBucketResultPb(bucket_id=0, error=OK, counts=small, rows=b"\x05" * 9),
        pb.PrefixLookupBucketResultPb(bucket_id=1, error=OK, counts=large, rows=b"\x06" * 300)])


def test_an_empty_answer_is_an_empty_message():
    assert encode_bucket_results([]).data == b""
    assert _parsed(pb.LookupResponse, []) == pb.LookupResponse()


def test_small_answers_are_built_by_protobuf_and_large_ones_written_beside_it():
    def results(n):
        return [(pb.LookupBucketResultPb(bucket_id=0, error=OK), [True] * n, b"\x07" * n)]

    small = bucket_results_response(pb.LookupResponse, results(PROTOBUF_FLAGS_MAX))
    large = bucket_results_response(pb.LookupResponse, results(PROTOBUF_FLAGS_MAX + 1))
    assert isinstance(small, pb.LookupResponse)
    assert list(small.buckets[0].found) == [True] * PROTOBUF_FLAGS_MAX
    assert small.buckets[0].rows == b"\x07" * PROTOBUF_FLAGS_MAX
    assert pb.LookupResponse.FromString(large.data) == pb.LookupResponse(buckets=[pb.LookupBucketResultPb(
        bucket_id=0, error=OK, found=[True] * (PROTOBUF_FLAGS_MAX + 1), rows=b"\x07" * (PROTOBUF_FLAGS_MAX + 1))])
