"""A follower appends a small fetched chunk on its event loop (``fluss.server.log.loop_work``), as a leader appends a
small produce: a larger chunk, or a log another thread holds (a roll, a checkpoint, a worker's append), goes to a
worker thread; the follower's log is the leader's either way."""

from __future__ import annotations

import asyncio
import random
import threading
from types import SimpleNamespace

import pyarrow as pa

from fluss.metadata import TableBucket
from fluss.record.log_batch import build_batch, iter_batches
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.server.log.config import LogConfig
from fluss.server.log.loop_work import SMALL_LOG_WORK_BYTES
from fluss.server.log.tablet import LogTablet
from fluss.server.replica.fetcher import ReplicaFetcherManager
from tests.held_log import held_by_another_thread

SCHEMA = pa.schema([("v", pa.int64())])
CONFIG = LogConfig(segment_bytes=1 << 20, index_interval_bytes=4096)
TB = TableBucket(7, 0)


def _client_batch(values: list[int]) -> bytes:
    return build_batch(pa.record_batch([pa.array(values, pa.int64())], schema=SCHEMA), schema_id=1)


def _values(log: LogTablet) -> list[int]:
    records = log.read(0, 1 << 30).records
    return [v for b in iter_batches(records) for v in b.to_arrow(SCHEMA).column("v").to_pylist()]


class _Leader:
    """A FetchLog stub answering from a leader's log, as the leader's ReplicaManager would."""

    def __init__(self, log: LogTablet) -> None:
        self.log = log

    async def FetchLog(self, request, timeout=None):  # noqa: N802 - the gRPC method name
        fetch = request.tables[0].buckets[0]
        records = self.log.read(fetch.fetch_offset, fetch.max_bytes).records
        return pb.FetchLogResponse(tables=[pb.FetchTableResultPb(table_id=TB.table_id, buckets=[
            pb.FetchBucketResultPb(bucket_id=TB.bucket_id, partition_id=-1, records=bytes(records),
                                   high_watermark=self.log.log_end_offset)])])


def test_small_chunks_append_on_the_loop_larger_or_contended_ones_on_a_worker(tmp_path):
    leader = LogTablet.open(tmp_path / "leader", CONFIG)
    follower = LogTablet.open(tmp_path / "follower", CONFIG)
    appends: list[str] = []
    append = follower.append_as_follower

    def recorded(records):
        appends.append(threading.current_thread().name)
        return append(records)

    follower.append_as_follower = recorded
    replica = SimpleNamespace(bucket=TB, log=follower, is_leader=False, tiered_offset=-1)
    manager = SimpleNamespace(server_id=2, remote_log=None, replicas={TB: replica},
                              disk=SimpleNamespace(failure=None, observe=lambda e: e),
                              metrics=SimpleNamespace(replication_bytes_in=SimpleNamespace(count=0)))
    rng = random.Random(5)

    async def scenario() -> None:
        fetcher = ReplicaFetcherManager(manager, lambda _: None, 100)
        fetcher._buckets[1] = {TB}
        loop_thread = threading.current_thread().name
        stub = _Leader(leader)
        try:
            leader.append_as_leader(_client_batch([1, 2, 3]), 1)
            await fetcher._fetch_once(1, stub)
            assert appends == [loop_thread]
            big = [rng.getrandbits(62) for _ in range(SMALL_LOG_WORK_BYTES // 8 + 500)]  # does not compress
            leader.append_as_leader(_client_batch(big), 1)
            await fetcher._fetch_once(1, stub)
            assert len(appends) == 2 and appends[1] != loop_thread, "a large chunk was appended on the loop"
            leader.append_as_leader(_client_batch([9]), 1)
            with held_by_another_thread(follower):
                fetch = asyncio.ensure_future(fetcher._fetch_once(1, stub))
                await asyncio.sleep(0.2)  # the loop goes on while a worker waits for the log
                assert not fetch.done()
            await asyncio.wait_for(fetch, 5)
            assert len(appends) == 3 and appends[2] != loop_thread, "the loop appended to a log another thread held"
            assert _values(follower) == _values(leader) == [1, 2, 3, *big, 9]
            assert follower.high_watermark == leader.log_end_offset
        finally:
            await fetcher.close()

    try:
        asyncio.run(scenario())
    finally:
        leader.close()
        follower.close()
