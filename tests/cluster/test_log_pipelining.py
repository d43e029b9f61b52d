"""Several produce requests in flight per bucket (idempotent writers), and the sticky bucket per batch.

The first tests drive the writer's ``Sender`` against a scripted leader (no cluster): order, retries and the
renumbering after a batch fails for good. The others use the shared cluster: a leader holds back a request
that arrives before its predecessor, and a large write keeps its order in every bucket it spreads over.
"""

from __future__ import annotations

import asyncio
import random
from types import SimpleNamespace

import pyarrow as pa
import pytest

import fluss
from fluss import EARLIEST_OFFSET, ErrorCode, FlussError, OffsetSpec, Schema, TableDescriptor, TablePath
from fluss.client.config import Config
from fluss.client.writer import MemoryBudget, Sender, _Chunk, _PendingBatch
from fluss.metadata import TableBucket
from fluss.record.log_batch import assign_writer, build_batch, iter_batches
from fluss.rpc.gen import fluss_api_pb2 as pb

pytestmark = pytest.mark.asyncio(loop_scope="session")

SCHEMA = pa.schema([("v", pa.int64())])
TB = TableBucket(1, 0)


def _batch(values) -> bytes:
    return build_batch(pa.record_batch([pa.array(list(values), pa.int64())], schema=SCHEMA), schema_id=1)


class ScriptedLeader:
    """Appends a writer's batches in sequence order like a tablet server, answering a gap with
    OUT_OF_ORDER_SEQUENCE at once (UNKNOWN_WRITER_ID when no batch of the writer is in the log yet); ``fail`` maps
    a value to the errors its batch gets on successive sends; ``forget_at``: values whose batch finds the writer
    forgotten (its batches expired from the log) on its first send; ``late``: values whose batch takes
    ``late_s`` on its first send (it is overtaken by the next ones)."""

    def __init__(self, fail: dict[int, list[int]] | None = None, slow: float = 0.0, forget_at: set[int] = frozenset(),
                 late: set[int] = frozenset(), late_s: float = 0.3) -> None:
        self.slow = slow  # the share of requests answered only after a retry's back-off (a loaded server)
        self.fail = {k: list(v) for k, v in (fail or {}).items()}
        self.forget_at, self.late, self.late_s = set(forget_at), set(late), late_s
        self.restarts = 0  # times a writer started again at sequence 0 after being forgotten
        self.log: list[int] = []  # first value of each appended batch
        self.last_seq = -1
        self.in_flight = self.max_in_flight = 0
        self.gapped_requests = 0

    async def call(self, addr: str, payload: bytes) -> pb.ProduceLogResponse:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            # requests overtake each other; a slow one is still in flight when a failed one is sent again
            await asyncio.sleep(random.uniform(0.3, 0.4) if random.random() < self.slow else random.uniform(0, 0.003))
            req = pb.ProduceLogRequest.FromString(payload)
            values = {b.to_arrow(SCHEMA).column(0)[0].as_py() for bucket in req.buckets
                      for b in iter_batches(bucket.records)}
            if values & self.late:
                self.late -= values
                await asyncio.sleep(self.late_s)
            out = []
            for b in req.buckets:
                out.append(pb.ProduceBucketResultPb(bucket_id=b.bucket_id, partition_id=b.partition_id,
                                                    error=pb.ErrorInfo(code=self._append(b.records))))
            return pb.ProduceLogResponse(buckets=out)
        finally:
            self.in_flight -= 1

    def _append(self, records: bytes) -> int:
        batches = list(iter_batches(records, validate=True))
        sequences = [b.batch_sequence for b in batches]
        if sequences != list(range(sequences[0], sequences[0] + len(sequences))):
            self.gapped_requests += 1  # the tablet server refuses a request whose own sequences have a gap
            return ErrorCode.OUT_OF_ORDER_SEQUENCE_EXCEPTION
        if self.last_seq >= 0 and self.forget_at & {b.to_arrow(SCHEMA).column(0)[0].as_py() for b in batches}:
            self.forget_at -= {b.to_arrow(SCHEMA).column(0)[0].as_py() for b in batches}
            self.last_seq = -1  # the writer's batches expired from the log: the bucket has no state of it
        fresh = [b for b in batches if b.batch_sequence > self.last_seq]
        if fresh and self.last_seq < 0 and fresh[0].batch_sequence > 0:
            return ErrorCode.UNKNOWN_WRITER_ID_EXCEPTION
        if fresh and fresh[0].batch_sequence != self.last_seq + 1:
            return ErrorCode.OUT_OF_ORDER_SEQUENCE_EXCEPTION
        if fresh and fresh[0].batch_sequence == 0 and self.log:
            self.restarts += 1
        for b in fresh:
            value = b.to_arrow(SCHEMA).column(0)[0].as_py()
            errors = self.fail.get(value)
            if errors:
                return errors.pop(0)
        for b in fresh:
            self.log.append(b.to_arrow(SCHEMA).column(0)[0].as_py())
            self.last_seq = b.batch_sequence
        return 0


async def _run_sender(leader: ScriptedLeader, n: int, **settings) -> tuple[list[_PendingBatch], Sender]:
    client = SimpleNamespace(request_timeout_s=5, leader_address=lambda meta, tb: "leader:1", metrics=None)
    config = Config({"writer.retries": "20", **settings})
    sender = Sender(SimpleNamespace(client=client), SimpleNamespace(table_id=1, table_path=None), config,
                    MemoryBudget(1 << 30, 10))
    sender._call = leader.call

    async def no_refresh() -> None:
        return None

    sender._refresh = no_refresh
    sender._wakeup, sender._idle, sender.writer_id = asyncio.Event(), asyncio.Event(), 77
    task = asyncio.create_task(sender._run())
    pending = []
    try:
        for i in range(n):
            chunk = _Chunk(pending_batches=1)
            pending.append(_PendingBatch(TB, None, _batch([i * 10, i * 10 + 1]), chunk))
            sender.enqueue([pending[-1]])
            if i % 3 == 0:
                await asyncio.sleep(0)
        await asyncio.wait_for(sender.wait_idle(), 20)
    finally:
        task.cancel()
    return pending, sender


async def test_pipelined_batches_arrive_in_order_through_retries_and_reordering():
    random.seed(3)
    leader = ScriptedLeader(fail={30: [ErrorCode.NOT_LEADER_OR_FOLLOWER], 70: [ErrorCode.REQUEST_TIME_OUT] * 2})
    pending, sender = await _run_sender(leader, 20)
    assert leader.log == [i * 10 for i in range(20)]
    assert all(p.chunk.done.result() is None for p in pending)
    assert leader.max_in_flight > 1 and not sender.in_flight[TB]
    assert sender.next_sequence[TB] == 20


@pytest.mark.parametrize("seed", range(4))  # seed 2 sent 0, 1, 4 in one request before the fix
async def test_a_request_never_carries_a_gap_in_a_buckets_sequences(seed):
    """A failed request goes back to the queue while a later one is still in flight: the retry must not carry the
    failed batches together with new ones past the batches in flight (sequences 0, 1, 4 in one request, which
    the tablet server refuses as out of order in one request)."""
    random.seed(seed)
    leader = ScriptedLeader(fail={v * 10: [ErrorCode.REQUEST_TIME_OUT] for v in range(0, 30, 4)}, slow=0.3)
    pending, sender = await _run_sender(leader, 30)
    assert leader.gapped_requests == 0
    assert leader.log == [i * 10 for i in range(30)]
    assert all(p.chunk.done.result() is None for p in pending)


async def test_a_batch_that_fails_for_good_is_dropped_and_the_later_ones_are_renumbered():
    random.seed(5)
    leader = ScriptedLeader(fail={40: [ErrorCode.RECORD_TOO_LARGE_EXCEPTION]})
    pending, sender = await _run_sender(leader, 10)
    failed = [i for i, p in enumerate(pending) if p.chunk.done.exception() is not None]
    assert 4 in failed  # with the batches sent in the same request (a request fails as a whole)
    for i in failed:
        assert pending[i].chunk.done.exception().error_code == ErrorCode.RECORD_TOO_LARGE_EXCEPTION
    assert leader.log == [i * 10 for i in range(10) if i not in failed]
    assert sender.next_sequence[TB] == 10 - len(failed)  # the sequences stay gapless


async def test_a_first_batch_overtaken_by_the_next_ones_is_waited_for():
    """Batch 0's first send is slow (a loaded machine): batches 1, 2, ... reach the leader first and get
    UNKNOWN_WRITER_ID (no batch of the writer in the bucket yet); the writer sends them again after batch 0, and
    every batch lands, in order. Before the fix they failed at once."""
    random.seed(7)
    leader = ScriptedLeader(late={0}, late_s=0.5)
    pending, sender = await _run_sender(leader, 12, **{"writer.max-inflight-requests-per-bucket": "5"})
    assert leader.max_in_flight > 1
    assert all(p.chunk.done.result() is None for p in pending)
    assert leader.log == [i * 10 for i in range(12)] and leader.restarts == 0
    assert sender.next_sequence[TB] == 12


@pytest.mark.parametrize("seed", range(3))
async def test_a_writer_the_leader_forgot_starts_its_sequences_again_at_0(seed):
    """The writer's batches expired from the bucket's log (retention, or a log restarted without writer state):
    the leader answers the writer's next sequence with UNKNOWN_WRITER_ID; every earlier batch was acknowledged,
    so the writer restarts the bucket's sequences at 0 and nothing is lost or reordered."""
    random.seed(seed)
    leader = ScriptedLeader(forget_at={80, 150}, slow=0.1)
    pending, sender = await _run_sender(leader, 20)
    assert all(p.chunk.done.result() is None for p in pending)
    assert leader.log == [i * 10 for i in range(20)]
    assert leader.restarts == 2
    assert sender.next_sequence[TB] == leader.last_seq + 1 < 12  # counted again from 0 at the second restart
    assert not sender._renumber_from


async def test_without_idempotence_one_request_is_in_flight_per_bucket():
    leader = ScriptedLeader()
    leader._append = lambda records: (leader.log.extend(  # no sequences to check
        b.to_arrow(SCHEMA).column(0)[0].as_py() for b in iter_batches(records)) or 0)
    _, sender = await _run_sender(leader, 12, **{"writer.enable-idempotence": "false"})
    assert leader.log == [i * 10 for i in range(12)] and leader.max_in_flight == 1


async def test_max_in_flight_above_the_servers_dedup_window_is_refused():
    client = SimpleNamespace(request_timeout_s=5, metrics=None)
    config = Config({"writer.max-inflight-requests-per-bucket": "6"})
    with pytest.raises(FlussError) as e:
        Sender(SimpleNamespace(client=client), SimpleNamespace(table_id=1), config, MemoryBudget(1, 1))
    assert e.value.error_code == ErrorCode.INVALID_CONFIG_EXCEPTION
    config = Config({"writer.max-inflight-requests-per-bucket": "6", "writer.enable-idempotence": "false"})
    Sender(SimpleNamespace(client=client), SimpleNamespace(table_id=1), config, MemoryBudget(1, 1))


# ---------------------------------------------------------------------------------------------- on a cluster


async def _leader_of(conn, path, bucket=0) -> str:
    meta = await conn.run(conn.cluster.table(path, refresh=True))
    return conn.cluster.leader_address(meta, TableBucket(meta.info.table_id, bucket))


async def _produce(conn, leader, table_id, records, timeout_ms=5000) -> pb.ProduceBucketResultPb:
    req = pb.ProduceLogRequest(acks=-1, table_id=table_id, timeout_ms=timeout_ms,
                               buckets=[pb.ProduceBucketPb(partition_id=-1, bucket_id=0, records=records)])
    return (await conn.run(conn.cluster.tablet_call(leader, "ProduceLog", req))).buckets[0]


async def _values(table) -> list[int]:
    scanner = await table.new_scan().create_record_batch_log_scanner()
    scanner.subscribe(0, EARLIEST_OFFSET)
    return (await scanner.to_arrow()).column("v").to_pylist()


async def test_leader_holds_a_request_until_its_predecessor_is_appended(conn, admin, database):
    path = TablePath(database, "ordered")
    await admin.create_table(path, TableDescriptor(Schema(SCHEMA), bucket_count=1))
    table = await conn.get_table(path)
    table_id = table.get_table_info().table_id
    leader = await _leader_of(conn, path)
    for _ in range(50):  # the new bucket's leader may not know it yet
        if (await _produce(conn, leader, table_id, assign_writer(_batch([0]), 991, 0))).error.code == 0:
            break
        await asyncio.sleep(0.1)
    later = asyncio.create_task(_produce(conn, leader, table_id, assign_writer(_batch([2, 3]), 991, 2)))
    await asyncio.sleep(0.3)
    assert not later.done()  # sequence 1 is missing: held, not rejected
    first = await _produce(conn, leader, table_id, assign_writer(_batch([1]), 991, 1))
    second = await later
    assert (first.error.code, first.base_offset, second.error.code, second.base_offset) == (0, 1, 0, 2)
    assert await _values(table) == [0, 1, 2, 3]

    start = asyncio.get_running_loop().time()  # a gap never filled: rejected after the wait (half the timeout)
    gap = await _produce(conn, leader, table_id, assign_writer(_batch([9]), 991, 7), timeout_ms=600)
    assert gap.error.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_EXCEPTION
    assert 0.25 < asyncio.get_running_loop().time() - start < 5
    assert await _values(table) == [0, 1, 2, 3]


async def test_large_write_spreads_over_buckets_in_order_with_requests_in_flight(conn, admin, database):
    path = TablePath(database, "spread")
    await admin.create_table(path, TableDescriptor(Schema(SCHEMA), bucket_count=3))
    small = await fluss.FlussConnection.create(fluss.Config({
        "bootstrap.servers": conn.config.bootstrap_servers, "writer.batch-size": "16kb"}))
    try:
        writer = (await small.get_table(path)).new_append().create_writer()
        for start in range(0, 200_000, 50_000):
            writer.write_arrow(pa.table({"v": pa.array(range(start, start + 50_000), pa.int64())}))
        await writer.flush()
    finally:
        await small.aclose()
    scanner = await (await conn.get_table(path)).new_scan().create_record_batch_log_scanner()
    scanner.subscribe_buckets(dict.fromkeys(range(3), EARLIEST_OFFSET))
    rows = await scanner.to_arrow()
    assert sorted(rows.column("v").to_pylist()) == list(range(200_000))
    offsets = await admin.list_offsets(path, [0, 1, 2], OffsetSpec.latest())
    assert all(n > 0 for n in offsets.values()), offsets  # one write went to every bucket
    for bucket in range(3):
        scanner = await (await conn.get_table(path)).new_scan().create_record_batch_log_scanner()
        scanner.subscribe(bucket, EARLIEST_OFFSET)
        values = (await scanner.to_arrow()).column("v").to_pylist()
        assert values == sorted(values), f"bucket {bucket} out of write order"


async def test_a_new_writers_later_batch_never_overtakes_its_first(conn, admin, database):
    """A writer's first two batches pipelined, batch 1 reaching the leader past the gap wait before batch 0 (a
    loaded machine): batch 1 must not start the writer's history at 1, which refused batch 0 for good (its rows
    lost to the writer) and put batch 1's rows before batch 0's. It gets UNKNOWN_WRITER_ID; resent after batch
    0, both are appended in order."""
    path = TablePath(database, "first_batches")
    await admin.create_table(path, TableDescriptor(Schema(SCHEMA), bucket_count=1))
    table = await conn.get_table(path)
    table_id = table.get_table_info().table_id
    leader = await _leader_of(conn, path)
    for _ in range(50):  # the new bucket's leader may not know it yet
        if (await _produce(conn, leader, table_id, _batch([-1]))).error.code == 0:  # not idempotent
            break
        await asyncio.sleep(0.1)
    start = asyncio.get_running_loop().time()
    early = await _produce(conn, leader, table_id, assign_writer(_batch([1]), 993, 1), timeout_ms=600)
    assert asyncio.get_running_loop().time() - start > 0.25  # it waited for sequence 0 first
    assert early.error.code == ErrorCode.UNKNOWN_WRITER_ID_EXCEPTION, early
    assert "has sequence 1, not 0" in early.error.message
    first = await _produce(conn, leader, table_id, assign_writer(_batch([0]), 993, 0))
    again = await _produce(conn, leader, table_id, assign_writer(_batch([1]), 993, 1))
    assert (first.error.code, again.error.code) == (0, 0), (first, again)
    assert await _values(table) == [-1, 0, 1]


async def test_a_writer_whose_state_the_leader_lost_keeps_writing(conn, admin, database):
    """The leader has no batch of the writer while the writer is at sequence N > 0 of the bucket (its batches
    expired from the log, or the log restarted without writer state): the writer is stamped here with a fresh
    writer id the leader has never seen, its sequences left where they were. The leader answers
    UNKNOWN_WRITER_ID; every earlier batch was acknowledged, so the writer restarts the bucket at sequence 0 and
    the rows land, in order."""
    path = TablePath(database, "forgotten_writer")
    await admin.create_table(path, TableDescriptor(Schema(SCHEMA), bucket_count=1))
    table = await conn.get_table(path)
    writer = table.new_append().create_writer()
    writer.write_arrow(pa.table({"v": pa.array(range(100), pa.int64())}))
    await writer.flush()
    sender = writer._sender
    tb = TableBucket(table.get_table_info().table_id, 0)
    assert sender.next_sequence[tb] > 0
    sender.writer_id = (await conn.run(conn.cluster.admin_call("InitWriter", pb.InitWriterRequest()))).writer_id
    started = asyncio.get_running_loop().time()
    for start in range(100, 400, 100):
        writer.write_arrow(pa.table({"v": pa.array(range(start, start + 100), pa.int64())}))
    await writer.flush()  # UNKNOWN_WRITER_ID failed it before the fix
    assert asyncio.get_running_loop().time() - started < 15  # one gap wait of the leader (2 s), then a restart
    assert 0 < sender.next_sequence[tb] <= 3
    assert await _values(table) == list(range(400))
