"""The TabletService: produce, fetch, list-offsets and table stats for clients and followers; notifications from the
coordinator. Per-bucket failures are reported in the response, never as gRPC errors."""

from __future__ import annotations

import asyncio
from typing import NamedTuple

from fluss.errors import ErrorCode, FlussError
from fluss.metadata import TableBucket
from fluss.rpc.errors import OK, error_info
from fluss.rpc.fetch_wire import encode_fetch_response
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.rpc.gen import fluss_api_pb2_grpc as rpc
from fluss.rpc.lookup_wire import bucket_results_response
from fluss.server.metrics.tablet import records_in
from fluss.server.replica.manager import BucketFetch, ReplicaManager

ACKS_ALL = -1


class _BucketRecords(NamedTuple):
    """The fields of a ProduceLog/PutKv bucket entry, read once: every read of a protobuf ``bytes`` field
    (``b.records``) makes a new copy of the records, megabytes per request."""

    partition_id: int
    bucket_id: int
    records: bytes


def _bucket_results(result_cls, buckets, results: list) -> list[tuple]:
    """Per requested bucket of a Lookup/PrefixLookup: (its result's small fields, its flags, its rows), or its
    error with neither."""
    out = []
    for b, result in zip(buckets, results, strict=True):
        if isinstance(result, Exception):
            out.append((result_cls(partition_id=b.partition_id, bucket_id=b.bucket_id, error=error_info(result)),
                        (), b""))
        else:
            out.append((result_cls(partition_id=b.partition_id, bucket_id=b.bucket_id, error=OK), *result))
    return out


class TabletServicer(rpc.TabletServiceServicer):
    def __init__(self, manager: ReplicaManager, max_request_bytes: int) -> None:
        self.m = manager
        self.metrics = manager.metrics
        self.max_request_bytes = max_request_bytes

    async def ProduceLog(self, request, context):
        return pb.ProduceLogResponse(buckets=await self._write(request, self.m.produce))

    async def PutKv(self, request, context):
        return pb.PutKvResponse(buckets=await self._write(request, self.m.put_kv))

    async def _write(self, request, write) -> list[pb.ProduceBucketResultPb]:
        """The shared path of ProduceLog and PutKv: validate acks, write each bucket, wait for acks=all."""
        if request.acks not in (0, 1, ACKS_ALL):
            err = pb.ErrorInfo(code=ErrorCode.INVALID_REQUIRED_ACKS,
                               message=f"Invalid acks {request.acks}: use 0, 1 or -1 (all)")
            return [pb.ProduceBucketResultPb(partition_id=b.partition_id, bucket_id=b.bucket_id, error=err)
                    for b in request.buckets]
        return list(await asyncio.gather(*(self._write_bucket(request, b, write) for b in request.buckets)))

    async def _write_bucket(self, request, b, write) -> pb.ProduceBucketResultPb:
        res = pb.ProduceBucketResultPb(partition_id=b.partition_id, bucket_id=b.bucket_id, error=OK)
        kv = write == self.m.put_kv
        info = self.m.tables.get(request.table_id)
        table_metrics = self.metrics.table(info) if info is not None else None
        try:
            bucket = _BucketRecords(b.partition_id, b.bucket_id, b.records)
            if len(bucket.records) > self.max_request_bytes:
                raise FlussError(f"Records for bucket {b.bucket_id} are {len(bucket.records)} bytes, more than the "
                                 f"server's maximum request size {self.max_request_bytes}",
                                 ErrorCode.RECORD_TOO_LARGE_EXCEPTION)
            replica, appended = await write(request, bucket)
            if table_metrics is not None:  # PutKv counts the rows sent; ProduceLog the records appended
                table_metrics.written(records_in(bucket.records) if kv else appended.record_count,
                                      len(bucket.records))
            res.base_offset = appended.first_offset
            timeout_s = (request.timeout_ms or 30_000) / 1000
            if request.acks == ACKS_ALL and appended.last_offset >= 0:
                self.metrics.delayed_writes += 1
                try:
                    await self.m.wait_for_high_watermark(replica, appended.last_offset, timeout_s)
                finally:
                    self.metrics.delayed_writes -= 1
            if kv and request.acks != 0 and appended.last_offset >= 0:
                # what the high watermark covers reaches the KV store on the KV executor: acknowledge it once
                # lookups can see it (read-your-writes)
                await self.m.wait_for_kv_visible(replica, appended.last_offset, timeout_s)
        except Exception as e:  # noqa: BLE001
            res.error.CopyFrom(error_info(e))
        if table_metrics is not None:
            total, failed = (table_metrics.put_kv, table_metrics.put_kv_failed) if kv and table_metrics.put_kv \
                else (table_metrics.produce, table_metrics.produce_failed)
            total.count += 1
            if res.error.code:
                failed.count += 1
        return res

    def _count_kv_requests(self, table_id: int, which: str, results: list) -> None:
        """Per-table counts of a Lookup / PrefixLookup / ScanKv: one per bucket entry, failed ones apart."""
        info = self.m.tables.get(table_id)
        if info is None:
            return
        tm = self.metrics.table(info)
        total, failed = getattr(tm, which), getattr(tm, which + "_failed")
        if total is None:
            return
        total.count += len(results)
        failed.count += sum(1 for r in results if isinstance(r, Exception))

    async def Lookup(self, request, context):
        """Every bucket entry of the request at once (one hop to a worker thread, one multi-get per bucket)."""
        results = await self.m.lookup_many(
            [(TableBucket(request.table_id, b.bucket_id, b.partition_id), list(b.keys)) for b in request.buckets])
        self._count_kv_requests(request.table_id, "lookup", results)
        return bucket_results_response(pb.LookupResponse,
                                       _bucket_results(pb.LookupBucketResultPb, request.buckets, results))

    async def PrefixLookup(self, request, context):
        results = await self.m.lookup_many(
            [(TableBucket(request.table_id, b.bucket_id, b.partition_id), list(b.prefixes)) for b in request.buckets],
            prefix=True)
        self._count_kv_requests(request.table_id, "prefix_lookup", results)
        return bucket_results_response(pb.PrefixLookupResponse,
                                       _bucket_results(pb.PrefixLookupBucketResultPb, request.buckets, results))

    async def ScanKv(self, request, context):
        try:
            rows, offset = await self.m.scan_kv(TableBucket(request.table_id, request.bucket_id, request.partition_id),
                                                request.limit or None)
            self._count_kv_requests(request.table_id, "limit_scan", [None])
            return pb.ScanKvResponse(error=OK, rows=rows, log_offset=offset)
        except Exception as e:  # noqa: BLE001
            self._count_kv_requests(request.table_id, "limit_scan", [e])
            return pb.ScanKvResponse(error=error_info(e))

    async def FetchLog(self, request, context):
        fetches = []
        for t in request.tables:
            projection = list(t.projected_fields) if t.projection_enabled else None
            for b in t.buckets:
                fetches.append(BucketFetch(TableBucket(t.table_id, b.bucket_id, b.partition_id), b.fetch_offset,
                                           b.max_bytes or request.max_bytes or 16 << 20, projection,
                                           t.as_arrow and request.follower_id < 0))
        results, records = await self.m.fetch(request.follower_id, fetches, request.min_bytes,
                                              request.max_wait_ms, request.max_bytes or 16 << 20)
        by_table: dict[int, list] = {}
        for f in fetches:  # the records join the response uncopied (``fetch_wire``)
            by_table.setdefault(f.bucket.table_id, []).append((results[f.bucket], records.get(f.bucket, b"")))
        return encode_fetch_response(list(by_table.items()))

    async def ListOffsets(self, request, context):
        out = []
        for bucket_id in request.bucket_ids:
            res = pb.ListOffsetsBucketResultPb(bucket_id=bucket_id, error=OK)
            try:
                tb = TableBucket(request.table_id, bucket_id, request.partition_id)
                res.offset = await self.m.list_offset(tb, request.offset_type, request.timestamp, request.follower_id)
            except Exception as e:  # noqa: BLE001
                res.error.CopyFrom(error_info(e))
            out.append(res)
        return pb.ListOffsetsResponse(buckets=out)

    async def GetTableStats(self, request, context):
        out = []
        for b in request.buckets:
            res = pb.TableStatsBucketResultPb(partition_id=b.partition_id, bucket_id=b.bucket_id, error=OK)
            try:
                res.row_count = self.m.row_count(TableBucket(request.table_id, b.bucket_id, b.partition_id))
            except Exception as e:  # noqa: BLE001
                res.error.CopyFrom(error_info(e))
            out.append(res)
        return pb.GetTableStatsResponse(buckets=out)

    async def DescribeLog(self, request, context):
        out = []
        for b in request.buckets:
            try:
                out.append(await self.m.describe_log(TableBucket(request.table_id, b.bucket_id, b.partition_id)))
            except Exception as e:  # noqa: BLE001
                out.append(pb.DescribeLogBucketPb(partition_id=b.partition_id, bucket_id=b.bucket_id,
                                                  error=error_info(e)))
        return pb.DescribeLogResponse(error=OK, buckets=out)

    async def OffsetForLeaderEpoch(self, request, context):
        try:
            tb = TableBucket(request.table_id, request.bucket_id, request.partition_id)
            epoch, end = self.m.offset_for_leader_epoch(tb, request.leader_epoch)
            return pb.OffsetForLeaderEpochResponse(error=OK, leader_epoch=epoch, end_offset=end)
        except Exception as e:  # noqa: BLE001
            return pb.OffsetForLeaderEpochResponse(error=error_info(e))

    async def NotifyLeaderAndIsr(self, request, context):
        try:
            results = await self.m.apply_leader_and_isr(request)
            return pb.NotifyLeaderAndIsrResponse(error=OK, buckets=results)
        except Exception as e:  # noqa: BLE001
            return pb.NotifyLeaderAndIsrResponse(error=error_info(e))

    async def StopReplica(self, request, context):
        try:
            await self.m.stop_replicas(request)
            return pb.StopReplicaResponse(error=OK)
        except Exception as e:  # noqa: BLE001
            return pb.StopReplicaResponse(error=error_info(e))
