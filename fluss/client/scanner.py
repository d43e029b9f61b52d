"""Log scanners: read buckets from offsets, as records (``poll``) or as Arrow (``poll_arrow`` and friends).

Fetches run on the client's I/O loop and outlive the poll that sent them (as Fluss's and Kafka's fetchers):
a poll sends one FetchLog per bucket leader for the subscribed buckets that have no fetch in flight and no
buffered rows (long-polling on the server up to ``scanner.log.fetch.wait-max-time``), and returns as soon as
*any* answer brought rows, so one poll never waits for another leader's long-poll; the answers still out are
taken up by later polls. The buckets of an answer with rows are fetched again as soon as it arrives, from
where its rows end (at most two answers per bucket wait for a poll), and the others when a poll takes them
up. A bucket is in at most one fetch at a time. Answers only change the scanner's state inside a poll. The
scanner checks batch CRCs (``scanner.log.check-crc``) and decodes whole Arrow batches; columns are projected
by the tablet server. Fetched data beyond ``scanner.log.max-poll-records`` stays
buffered for the next poll. A bucket whose leader moved is fetched again after a metadata refresh; one
that keeps failing for longer than ``request-timeout`` makes ``poll`` raise its last error, and a dropped table
raises TABLE_NOT_EXIST (``fluss.client.retry``); the subscriptions stay, so a later poll carries on.

A bucket whose offset is below its leader's local log start is read from remote storage (the tiered log): the
leader answers with remote segment descriptors, the scanner downloads and reads those segments itself
(``remote_log.py``), projects an ARROW log's columns as the leader would, decodes the batches (of any schema id
and log format) through the scanner's SchemaReader like fetched ones, and then fetches from the leader again.

A bounded read (``to_arrow``, ``to_arrow_batch_reader``) does not wait for its caller between fetches: a driver on
the I/O loop keeps a fetch in flight to every leader with unread buckets (``bounded_read.py``).
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pyarrow as pa

from fluss.client.batch_decode import decode_fetched
from fluss.client.bounded_read import BoundedRead
from fluss.client.cluster_client import ClusterClient
from fluss.client.io_thread import IoThread
from fluss.client.retry import RetryAction, RetryPolicy, RetryState, classify, refresh_table
from fluss.client.schema_reader import SchemaReader
from fluss.errors import ErrorCode, FlussError
from fluss.metadata import EARLIEST_OFFSET, LATEST_OFFSET, TableBucket, TableInfo
from fluss.record.change_type import ChangeType
from fluss.record.log_batch import LogBatch, iter_batches
from fluss.record.log_format import ARROW, log_format_of
from fluss.row_convert import batch_to_pylist
from fluss.rpc.errors import to_error
from fluss.rpc.gen import fluss_api_pb2 as pb


class ScanRecord:
    """One record of a poll: its offset, commit timestamp, change type and row (read-only)."""

    __slots__ = ("_offset", "_timestamp", "_change_type", "_row")

    def __init__(self, offset: int, timestamp: int, change_type: ChangeType, row: dict) -> None:
        self._offset = offset
        self._timestamp = timestamp
        self._change_type = change_type
        self._row = row

    offset = property(lambda self: self._offset, doc="The position of this record in the log.")
    timestamp = property(lambda self: self._timestamp, doc="The commit timestamp of this record (ms).")
    change_type = property(lambda self: self._change_type, doc="+A, +I, -U, +U or -D.")
    row = property(lambda self: self._row, doc="The row as a dict of column name to value.")

    def __repr__(self) -> str:
        return f"ScanRecord(offset={self._offset}, timestamp={self._timestamp}, " \
               f"change_type={self._change_type.short_string()}, row={self._row})"

    __str__ = __repr__


class RecordBatch:
    """An Arrow batch of one bucket with its offsets (read-only; ``change_types`` and ``timestamp`` are this
    client's additions: the change type of each row and the batch's commit timestamp)."""

    __slots__ = ("_batch", "_bucket", "_base_offset", "_last_offset", "change_types", "timestamp")

    def __init__(self, batch: pa.RecordBatch, bucket: TableBucket, base_offset: int, last_offset: int,
                 change_types=None, timestamp: int = 0) -> None:
        self._batch = batch
        self._bucket = bucket
        self._base_offset = base_offset
        self._last_offset = last_offset
        self.change_types = change_types
        self.timestamp = timestamp

    batch = property(lambda self: self._batch, doc="The Arrow RecordBatch.")
    bucket = property(lambda self: self._bucket, doc="The bucket this batch belongs to.")
    base_offset = property(lambda self: self._base_offset, doc="The offset of the first record.")
    last_offset = property(lambda self: self._last_offset, doc="The offset of the last record.")

    def __repr__(self) -> str:
        return f"RecordBatch({self._bucket}, offsets {self._base_offset}..{self._last_offset}, " \
               f"rows={self._batch.num_rows})"

    __str__ = __repr__


class ScanRecords:
    """Records of one poll, grouped by bucket; iterates flat."""

    def __init__(self, by_bucket: dict[TableBucket, list[ScanRecord]]) -> None:
        self._by_bucket = {b: r for b, r in by_bucket.items() if r}
        self._flat: list[ScanRecord] | None = None

    def _all(self) -> list[ScanRecord]:
        if self._flat is None:
            self._flat = [r for recs in self._by_bucket.values() for r in recs]
        return self._flat

    def buckets(self) -> list[TableBucket]:
        return list(self._by_bucket)

    def records(self, bucket: TableBucket) -> list[ScanRecord]:
        return list(self._by_bucket.get(bucket, []))

    def count(self) -> int:
        return sum(len(r) for r in self._by_bucket.values())

    def is_empty(self) -> bool:
        return not self._by_bucket

    def keys(self) -> list[TableBucket]:
        return self.buckets()

    def values(self) -> Iterator[list[ScanRecord]]:
        return iter(self._by_bucket.values())

    def items(self) -> Iterator[tuple[TableBucket, list[ScanRecord]]]:
        return iter(self._by_bucket.items())

    def __len__(self) -> int:
        return self.count()

    def __getitem__(self, index, /):
        """A record by position, a list of records by slice, or a bucket's records by ``TableBucket``."""
        if isinstance(index, TableBucket):
            return self.records(index)
        return self._all()[index]

    def __contains__(self, bucket: object) -> bool:
        return bucket in self._by_bucket

    def __iter__(self) -> Iterator[ScanRecord]:
        return iter(self._all())

    def __repr__(self) -> str:
        return f"ScanRecords(count={self.count()}, buckets={len(self._by_bucket)})"

    __str__ = __repr__


Sink = Callable[[list[RecordBatch]], None]  # takes a response's decoded batches (a bounded read's queue)


@dataclass
class _FetchAnswer:
    """A FetchLog answer (or its failure) waiting for the next poll: the buckets with the offsets they were
    fetched from, their batches, the remote-segment descriptors instead of batches, or the error to raise."""

    offsets: dict[TableBucket, int]
    fetched: list[tuple[TableBucket, int, list[LogBatch]]]
    remote: list[tuple[TableBucket, pb.RemoteLogFetchInfoPb]]
    error: Exception | None = None


class LogScanner:
    """Reads subscribed buckets. ``record_mode`` selects ``poll`` (records) vs the Arrow methods."""

    def __init__(self, connection, table: TableInfo, projection: list[int] | None, record_mode: bool) -> None:
        self._conn = connection
        self._table = table
        self._projection = projection
        self._record_mode = record_mode
        # the tablet server projects ARROW logs; the rows of a row-format log (INDEXED, COMPACTED) are decoded
        # whole and projected here
        self._server_projection = projection if log_format_of(table.get_properties()) == ARROW else None
        self._reader = SchemaReader(table, self._server_projection, self._latest_info,
                                    columns=projection)  # batches of any schema id
        self._read_schema = self._reader.schema
        cfg = connection.config
        self._max_poll_records = cfg.scanner_log_max_poll_records
        self._fetch_max_bytes = cfg.scanner_log_fetch_max_bytes
        self._bucket_max_bytes = cfg.scanner_log_fetch_max_bytes_for_bucket
        self._wait_ms = cfg.scanner_log_fetch_wait_max_time_ms
        self._min_bytes = cfg.scanner_log_fetch_min_bytes
        self._check_crc = cfg.scanner_log_check_crc
        self._io: IoThread = connection.io_thread()
        self._offsets: dict[TableBucket, int] = {}
        self._buffer: deque[RecordBatch] = deque()
        self._busy = False
        # fetches out on the I/O loop: the offset each bucket is being fetched from, answers not yet taken up by
        # a poll, the tasks (cancelled by aclose) and the event that wakes a waiting poll
        self._in_flight: dict[TableBucket, int] = {}
        self._answers: deque[_FetchAnswer] = deque()
        self._fetch_tasks: set[asyncio.Task] = set()
        self._answered: asyncio.Event | None = None
        self._read_ends: dict[TableBucket, int] | None = None  # end offsets of the bounded read in progress
        self._policy = RetryPolicy.from_config(cfg)
        self._retries: dict[TableBucket, RetryState] = {}  # buckets whose fetches fail, since when
        client_metrics = self._client.metrics  # client.metrics.enabled: counted per fetch and per poll
        self._metrics = client_metrics.scanner(table.table_path, lambda: dict(self._offsets),
                                               lambda: self._client.partition_names) \
            if client_metrics is not None else None
        self._reader_active = False  # a to_arrow / to_arrow_batch_reader read is in progress
        self._remote = None  # RemoteLogReader, created at the first remote answer
        connection.register(self)

    @property
    def _client(self) -> ClusterClient:
        return self._io.client

    async def _latest_info(self) -> TableInfo:
        return (await self._client.table(self._table.table_path, refresh=True)).info

    # ------------------------------------------------------------ subscriptions

    def subscribe(self, bucket_id: int, start_offset: int) -> None:
        self._check_not_partitioned()
        self._subscribe(TableBucket(self._table.table_id, bucket_id), start_offset)

    def subscribe_buckets(self, bucket_offsets: dict[int, int]) -> None:
        for b, off in bucket_offsets.items():
            self.subscribe(b, off)

    def subscribe_partition(self, partition_id: int, bucket_id: int, start_offset: int) -> None:
        self._check_partitioned()
        self._subscribe(TableBucket(self._table.table_id, bucket_id, partition_id), start_offset)

    def subscribe_partition_buckets(self, partition_bucket_offsets: dict[tuple[int, int], int]) -> None:
        for (pid, b), off in partition_bucket_offsets.items():
            self.subscribe_partition(pid, b, off)

    def unsubscribe(self, bucket_id: int) -> None:
        self._check_no_reader()
        self._drop(TableBucket(self._table.table_id, bucket_id))

    def unsubscribe_partition(self, partition_id: int, bucket_id: int) -> None:
        self._check_no_reader()
        self._drop(TableBucket(self._table.table_id, bucket_id, partition_id))

    def _subscribe(self, tb: TableBucket, offset: int) -> None:
        self._check_no_reader()
        # a partition has its own bucket count (ALTER TABLE SET bucket.num changes later partitions only)
        num_buckets = (self._table.num_buckets if tb.partition_id is None
                       else self._io.call(self._client.bucket_count(self._table.table_path, tb.partition_id)))
        if num_buckets is not None and (tb.bucket_id < 0 or tb.bucket_id >= num_buckets):
            where = "" if tb.partition_id is None else f"partition {tb.partition_id} of "
            raise FlussError(f"Bucket {tb.bucket_id} does not exist in {where}table '{self._table.table_path}' "
                             f"({num_buckets} buckets)", ErrorCode.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION)
        if offset < 0 and offset not in (EARLIEST_OFFSET, LATEST_OFFSET):
            raise FlussError(f"Invalid start offset {offset} (use >= 0, EARLIEST_OFFSET or -1 for latest)",
                             ErrorCode.LOG_OFFSET_OUT_OF_RANGE_EXCEPTION)
        self._offsets[tb] = offset
        self._buffer = deque(b for b in self._buffer if b.bucket != tb)
        if self._remote is not None:
            self._remote.drop(tb)

    def _drop(self, tb: TableBucket) -> None:
        self._offsets.pop(tb, None)
        self._buffer = deque(b for b in self._buffer if b.bucket != tb)
        if self._remote is not None:
            self._remote.drop(tb)

    def _check_partitioned(self) -> None:
        if not self._table.is_partitioned():
            raise FlussError(f"Table '{self._table.table_path}' is not partitioned: use subscribe()",
                             ErrorCode.TABLE_NOT_PARTITIONED_EXCEPTION)

    def _check_not_partitioned(self) -> None:
        if self._table.is_partitioned():
            raise FlussError(f"Table '{self._table.table_path}' is partitioned: use subscribe_partition()",
                             ErrorCode.PARTITION_NOT_EXISTS)

    # ------------------------------------------------------------ polling

    async def poll(self, timeout_ms: int) -> ScanRecords:
        """Records of the subscribed buckets (empty when none arrive within ``timeout_ms``)."""
        self._check_no_reader()
        return await asyncio.to_thread(self._poll_records, timeout_ms)

    def _poll_records(self, timeout_ms: int) -> ScanRecords:
        if not self._record_mode:
            raise FlussError("poll() needs a record scanner (new_scan().create_log_scanner()); "
                             "use poll_arrow() or poll_record_batch() on a batch scanner", ErrorCode.CLIENT_ERROR)
        batches = self._poll_batches(timeout_ms, self._max_poll_records)
        out: dict[TableBucket, list[ScanRecord]] = {}
        for b in batches:
            rows = batch_to_pylist(b.batch)
            cts = b.change_types
            recs = out.setdefault(b.bucket, [])
            for i, row in enumerate(rows):
                recs.append(ScanRecord(b.base_offset + i, b.timestamp, ChangeType(int(cts[i])), row))
        return ScanRecords(out)

    async def poll_record_batch(self, timeout_ms: int) -> list[RecordBatch]:
        """Arrow batches with their bucket and offsets."""
        self._require_batch_mode("poll_record_batch")
        self._check_no_reader()
        return await asyncio.to_thread(self._poll_batches, timeout_ms, None)

    def poll_record_batch_sync(self, timeout_ms: int) -> list[RecordBatch]:
        """Blocking form of ``poll_record_batch`` for code running off the event loop (e.g. in a worker)."""
        self._require_batch_mode("poll_record_batch_sync")
        return self._poll_batches(timeout_ms, None)

    async def poll_arrow(self, timeout_ms: int) -> pa.Table:
        """The polled batches as one Arrow table (empty, with the schema, when nothing arrived)."""
        self._require_batch_mode("poll_arrow")
        self._check_no_reader()
        batches = await asyncio.to_thread(self._poll_batches, timeout_ms, None)
        return pa.Table.from_batches([b.batch for b in batches], schema=self._read_schema)

    async def to_arrow(self) -> pa.Table:
        """Everything from the subscribed offsets up to the latest offsets at the time of the call; the buckets
        are unsubscribed once read (as the official client's reader does). Every leader is fetched ahead of the
        reader (``bounded_read``)."""
        self._require_batch_mode("to_arrow")
        return await asyncio.to_thread(self._read_all)

    async def to_pandas(self):
        return (await self.to_arrow()).to_pandas()

    def _read_all(self) -> pa.Table:
        return pa.Table.from_batches(list(_ReaderSession(self)), schema=self._read_schema)

    def to_arrow_batch_reader(self) -> pa.RecordBatchReader:
        """A lazy ``pyarrow.RecordBatchReader`` of the subscribed buckets up to their latest offsets now (a
        blocking call: it asks the leaders for those offsets). While it is alive, subscribing, unsubscribing
        and polling this scanner raise; the buckets are unsubscribed when the reader
        is exhausted or dropped."""
        self._require_batch_mode("to_arrow_batch_reader")
        return pa.RecordBatchReader.from_batches(self._read_schema, _ReaderSession(self))

    def _begin_reader(self) -> dict[TableBucket, int]:
        """Marks a bounded read as active and returns the end offset of every subscribed bucket."""
        self._check_no_reader()
        if not self._offsets:
            raise FlussError("No buckets subscribed. Call subscribe() before creating a reader.",
                             ErrorCode.CLIENT_ERROR)
        self._reader_active = True
        try:
            ends = self._io.call(self._end_offsets())
            self._read_ends = ends
            for tb, end in ends.items():
                start = self._offsets.get(tb, end)
                if start > end:  # nothing this read could return: say so instead of returning nothing
                    raise FlussError(f"Start offset {start} of bucket {tb.bucket_id} of '{self._table.table_path}' "
                                     f"is past the end of its log (the latest offset is {end})",
                                     ErrorCode.LOG_OFFSET_OUT_OF_RANGE_EXCEPTION)
            return ends
        except BaseException:
            self._reader_active = False
            self._read_ends = None
            raise

    def _end_reader(self, buckets: list[TableBucket]) -> None:
        """A bounded read ended (exhausted, closed or dropped): its buckets are unsubscribed."""
        for tb in buckets:
            self._drop(tb)
        self._reader_active = False
        self._read_ends = None

    def _check_no_reader(self) -> None:
        if self._reader_active:
            raise FlussError("Cannot modify subscriptions or poll while a RecordBatchLogReader is active. Drop "
                             "the reader first.", ErrorCode.CLIENT_ERROR)

    def _read_to_end(self, read: BoundedRead, ends: dict[TableBucket, int]) -> Iterator[pa.RecordBatch]:
        """The batches of a bounded read (``bounded_read``: every leader fetched ahead of the reader), cut at
        each bucket's end offset; batches a poll left buffered come first."""
        chunks = read.__iter__()
        while True:
            if self._buffer:
                batches = list(self._buffer)
                self._buffer.clear()
            else:
                batches = next(chunks, None)
                if batches is None:
                    return
            if self._metrics is not None:
                self._metrics.polled()
            for b in batches:
                end = ends.get(b.bucket)
                if end is None:
                    continue
                batch = b.batch
                if b.last_offset >= end:  # written after the read started: cut at the end offset
                    batch = batch.slice(0, max(0, end - b.base_offset))
                if batch.num_rows:
                    yield batch

    def _require_batch_mode(self, method: str) -> None:
        if self._record_mode:
            raise FlussError(f"{method}() needs a batch scanner (new_scan().create_record_batch_log_scanner())",
                             ErrorCode.CLIENT_ERROR)

    def _poll_batches(self, timeout_ms: int, max_records: int | None,
                      only: set[TableBucket] | None = None) -> list[RecordBatch]:
        """Buffered batches, or the first fetched ones (of the ``only`` buckets, when given) within ``timeout_ms``;
        a blocking call for a thread other than the I/O loop's."""
        if self._busy:
            raise FlussError("This scanner is already being read (poll or reader in progress)", ErrorCode.CLIENT_ERROR)
        self._busy = True
        if self._metrics is not None:
            self._metrics.polled()
        try:
            return self._io.call(self._poll_on_loop(timeout_ms, max_records, only))
        finally:
            self._busy = False

    def _take(self, max_records: int | None) -> list[RecordBatch]:
        out: list[RecordBatch] = []
        count = 0
        while self._buffer and (max_records is None or count < max_records):
            b = self._buffer[0]
            n = b.batch.num_rows
            if max_records is not None and count + n > max_records:
                k = max_records - count
                out.append(RecordBatch(b.batch.slice(0, k), b.bucket, b.base_offset, b.base_offset + k - 1,
                                       b.change_types[:k], b.timestamp))
                self._buffer[0] = RecordBatch(b.batch.slice(k), b.bucket, b.base_offset + k, b.last_offset,
                                              b.change_types[k:], b.timestamp)
                break
            out.append(self._buffer.popleft())
            count += n
        return out

    # ------------------------------------------------------------ I/O loop side

    async def _refresh(self, buckets: list[TableBucket]) -> None:
        """Refreshes the table's metadata (``retry.refresh_table``: a dropped or re-created table raises
        TABLE_NOT_EXIST); a subscribed partition that was dropped raises PARTITION_NOT_EXISTS."""
        pids = {tb.partition_id for tb in buckets if tb.partition_id is not None}
        gone = await refresh_table(self._client, self._table, pids)
        if gone:
            raise FlussError(f"Partition id(s) {sorted(gone)} of table '{self._table.table_path}' were dropped: "
                             "unsubscribe them", ErrorCode.PARTITION_NOT_EXISTS)

    def _cached_leaders(self, buckets: list[TableBucket]) -> dict[str, list[TableBucket]] | None:
        """The buckets per leader address from the metadata at hand; None when it must be refreshed first."""
        meta = self._client.tables.get(self._table.table_path)
        if meta is None or meta.info.table_id != self._table.table_id:
            return None
        out: dict[str, list[TableBucket]] = {}
        for tb in buckets:
            addr = self._client.leader_address(meta, tb) if tb in meta.leaders else None
            if addr is None:
                return None
            out.setdefault(addr, []).append(tb)
        return out

    async def _leaders(self, buckets: list[TableBucket]) -> dict[str, list[TableBucket]]:
        out = self._cached_leaders(buckets)
        if out is not None:
            return out
        await self._refresh(buckets)
        meta = self._client.tables[self._table.table_path]
        out = {}
        for tb in buckets:
            addr = self._client.leader_address(meta, tb)
            if addr is not None:
                out.setdefault(addr, []).append(tb)
        return out

    def _failed(self, tb: TableBucket, error: FlussError) -> None:
        """A fetch of ``tb`` failed with a retriable error: fine until the bucket has failed for longer than
        ``request-timeout`` (``retry.RetryPolicy``), then this raises its last error (a later poll starts over)."""
        state = self._retries.get(tb)
        if state is None:
            state = self._retries[tb] = self._policy.start(f"Reading bucket {tb.bucket_id} of table "
                                                           f"'{self._table.table_path}'")
        if state.failed(error) is RetryAction.FAIL:
            del self._retries[tb]
            raise state.final_error()

    async def _resolve_offsets(self) -> None:
        unresolved = {tb: o for tb, o in self._offsets.items() if o < 0}
        if unresolved:
            resolved = await self._list_offsets(list(unresolved), lambda tb: 0 if unresolved[tb] == EARLIEST_OFFSET
                                                else 1)
            for tb, off in resolved.items():
                if tb in self._offsets:
                    self._offsets[tb] = off

    async def _end_offsets(self) -> dict[TableBucket, int]:
        await self._resolve_offsets()
        return await self._list_offsets(list(self._offsets), lambda tb: 1)

    async def _list_offsets(self, buckets: list[TableBucket], kind) -> dict[TableBucket, int]:
        out: dict[TableBucket, int] = {}
        state = self._policy.start(f"ListOffsets of table '{self._table.table_path}'")
        todo = list(buckets)
        while todo:
            last: FlussError | None = None
            leaders = await self._leaders(todo)
            for addr, tbs in leaders.items():
                for (pid, k), group in _group(tbs, lambda tb: (tb.partition_id_or_none_value, kind(tb))).items():
                    try:
                        resp = await self._client.tablet_call(addr, "ListOffsets", pb.ListOffsetsRequest(
                            follower_id=-1, offset_type=k, table_id=self._table.table_id, partition_id=pid,
                            bucket_ids=[tb.bucket_id for tb in group]))
                    except FlussError as e:
                        last = e
                        continue
                    for r in resp.buckets:
                        err = to_error(r.error)
                        tb = TableBucket(self._table.table_id, r.bucket_id, pid)
                        if err is None:
                            out[tb] = r.offset
                        elif classify(err) is RetryAction.FAIL:
                            raise err
                        else:
                            last = err
            todo = [tb for tb in buckets if tb not in out]
            if todo:
                error = last or FlussError(f"No leader available for {todo}", ErrorCode.LEADER_NOT_AVAILABLE_EXCEPTION)
                if state.failed(error) is RetryAction.FAIL:
                    raise state.final_error()
                await asyncio.sleep(state.delay_s())
                await self._refresh(todo)
        return out

    async def _poll_on_loop(self, timeout_ms: int, max_records: int | None,
                            only: set[TableBucket] | None) -> list[RecordBatch]:
        """One poll, on the I/O loop: takes up the answers that arrived, sends fetches for the buckets that have
        none in flight, and waits for the first answer with rows (or ``timeout_ms``); then takes the buffered
        batches and fetches their buckets again at once, so the next rows are on their way while the caller
        handles these."""
        deadline = time.monotonic() + max(0, timeout_ms) / 1000
        wait_ms = max(0, min(timeout_ms, self._wait_ms))
        if self._answered is None:
            self._answered = asyncio.Event()
        await self._resolve_offsets()
        while True:
            self._answered.clear()
            await self._take_answers()
            wanted = [tb for tb in self._offsets if only is None or tb in only]
            if self._buffer or not wanted:
                break
            remote = self._remote.buckets() & set(wanted) if self._remote is not None else set()
            if remote:  # segments of the tiered log, read by this client itself
                await self._read_remote(remote, max(wait_ms, 1000))
                if self._buffer:
                    break
            await self._send_fetches(wanted, remote, wait_ms)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            if self._answers:
                continue
            if remote:  # downloads wake no one: look again soon (reading them waited for the first one)
                remaining = min(remaining, 0.01)
            elif not any(tb in self._in_flight for tb in wanted):  # no leader to fetch from
                await asyncio.sleep(min(remaining, 0.1))
                continue
            try:
                await asyncio.wait_for(self._answered.wait(), remaining)
            except TimeoutError:
                pass
        out = self._take(max_records)
        self._send_fetches_now(only, wait_ms)
        return out

    def _fetchable(self, buckets: list[TableBucket], remote: set[TableBucket]) -> list[TableBucket]:
        """The buckets of ``buckets`` to send a fetch for: at a resolved offset, read from the leader (not from
        remote segments), with no fetch from that offset in flight, no rows buffered or answers waiting, and (in
        a bounded read) below their end offset."""
        buffered = {b.bucket for b in self._buffer} | {tb for a in self._answers for tb in a.offsets}
        ends = self._read_ends
        out = []
        for tb in buckets:
            offset = self._offsets.get(tb, -1)
            if offset >= 0 and tb not in remote and tb not in buffered and self._in_flight.get(tb) != offset \
                    and (ends is None or offset < ends.get(tb, offset + 1)):
                out.append(tb)
        return out

    async def _send_fetches(self, wanted: list[TableBucket], remote: set[TableBucket], wait_ms: int) -> None:
        """A FetchLog per leader for the fetchable buckets of ``wanted`` (refreshing the metadata when a leader is
        unknown; a bucket without a leader counts as a failed fetch)."""
        todo = self._fetchable(wanted, remote)
        if not todo:
            return
        leaders = await self._leaders(todo)
        led = {tb for tbs in leaders.values() for tb in tbs}
        for tb in todo:
            if tb not in led:
                self._failed(tb, FlussError(f"Bucket {tb.bucket_id} of table '{self._table.table_path}' has no "
                                            "leader", ErrorCode.LEADER_NOT_AVAILABLE_EXCEPTION))
        for addr, tbs in leaders.items():
            self._start_fetch(addr, tbs, wait_ms)

    def _send_fetches_now(self, only: set[TableBucket] | None, wait_ms: int) -> None:
        """``_send_fetches`` with the metadata at hand, without waiting (when a poll returns); buckets whose
        leader is unknown wait for the next poll."""
        wanted = [tb for tb in self._offsets if only is None or tb in only]
        todo = self._fetchable(wanted, self._remote.buckets() if self._remote is not None else set())
        leaders = self._cached_leaders(todo) if todo else None
        for addr, tbs in (leaders or {}).items():
            self._start_fetch(addr, tbs, wait_ms)

    def _start_fetch(self, addr: str, tbs: list[TableBucket], wait_ms: int,
                     offsets: dict[TableBucket, int] | None = None) -> None:
        offsets = offsets or {tb: self._offsets[tb] for tb in tbs}
        self._in_flight.update(offsets)
        task = asyncio.get_running_loop().create_task(self._fetch_from(addr, offsets, wait_ms))
        self._fetch_tasks.add(task)
        task.add_done_callback(self._fetch_tasks.discard)

    async def _take_answers(self) -> None:
        """Takes up the answers that arrived, in order: their buckets are free to be fetched again, their rows
        decoded into the buffer (all answers' batches together, so large ones decode in parallel), remote
        segment descriptors handed to the remote reader; the first failed fetch is raised (later answers wait
        for the next poll) unless every bucket of it has been moved to another offset or unsubscribed since."""
        fetched: list[tuple[TableBucket, int, list[LogBatch]]] = []
        error: Exception | None = None
        while self._answers and error is None:
            answer = self._answers.popleft()
            for tb, offset in answer.offsets.items():
                if self._in_flight.get(tb) == offset:
                    del self._in_flight[tb]
            if answer.error is not None and any(self._offsets.get(tb) == o for tb, o in answer.offsets.items()):
                error = answer.error  # (a fetch from offsets the caller has since left is not its error)
            for tb, info in answer.remote:
                if self._offsets.get(tb) == answer.offsets[tb]:
                    self._remote_reader().add(tb, info)
            fetched += answer.fetched
        if fetched:
            await self._decode(fetched)
        if error is not None:
            raise error

    def _remote_reader(self):
        if self._remote is None:
            from fluss.client.remote_log import RemoteLogReader

            self._remote = RemoteLogReader(self._conn.remote_files(), self._conn.config.scanner_remote_log_prefetch_num)
        return self._remote

    async def _read_remote(self, buckets: set[TableBucket], wait_ms: int, sink: Sink | None = None) -> None:
        """Reads downloaded remote segments (``remote_log.py``): their batches go the way fetched ones do."""
        try:
            chunks = await self._remote.read(buckets, wait_ms / 1000)
        except FlussError as e:
            raise FlussError(f"Reading the remote log of '{self._table.table_path}' failed: {e.message}",
                             e.error_code) from None
        fetched: list[tuple[TableBucket, int, list[LogBatch]]] = []
        ends: dict[TableBucket, tuple[int, int]] = {}
        for chunk in chunks:
            offset = self._offsets.get(chunk.bucket)
            if offset is None:
                continue
            batches = [b for b in chunk.batches if b.next_offset > offset]
            if self._server_projection is not None and batches:
                await self._reader.learn(batches)  # projecting needs the schema of each batch's id
                batches = await asyncio.to_thread(self._project, batches)
            fetched.append((chunk.bucket, offset, batches))
            if chunk.segment_end is not None:
                ends[chunk.bucket] = (offset, chunk.segment_end)
        if fetched:
            await self._decode(fetched, sink)
        for tb, (before, end) in ends.items():  # a segment read to its end: continue at its end offset
            now = self._offsets.get(tb)
            if now is not None and now >= before:
                self._offsets[tb] = max(now, end)

    def _project(self, batches: list[LogBatch]) -> list[LogBatch]:
        """The tablet server's projection (ARROW logs), applied to batches read from remote storage, so the
        SchemaReader decodes them like fetched ones (row-format logs and unprojected reads go to it unchanged)."""
        from fluss.client.remote_log import project_as_the_leader

        return project_as_the_leader(batches, self._reader.history, self._server_projection)

    async def _fetch_from(self, addr: str, offsets: dict[TableBucket, int], wait_ms: int) -> None:
        """One FetchLog, as a task of its own: its answer (or error) is queued for the next poll, which it wakes."""
        try:
            answer = await self._fetch(addr, offsets, wait_ms)
        except Exception as e:  # noqa: BLE001 - raised by the poll that takes the answer up
            answer = _FetchAnswer(offsets, [], [], e)
        self._answers.append(answer)
        if answer.error is None:
            self._fetch_on(addr, answer, wait_ms)
        if self._answered is not None:
            self._answered.set()

    def _fetch_on(self, addr: str, answer: _FetchAnswer, wait_ms: int) -> None:
        """The buckets of an answer that brought rows are fetched again at once, from where its rows end, before
        a poll takes it up: a consumer that falls behind (a busy or descheduled caller) finds the next rows
        already fetched. At most two answers per bucket wait for a poll; the poll that takes them fetches on."""
        waiting: dict[TableBucket, int] = {}
        for a in self._answers:
            for tb in a.offsets:
                waiting[tb] = waiting.get(tb, 0) + 1
        ends = self._read_ends
        after: dict[TableBucket, int] = {}
        for tb, offset, batches in answer.fetched:
            if not batches or waiting.get(tb, 0) > 1 or self._offsets.get(tb) != offset \
                    or self._in_flight.get(tb) != offset:
                continue
            end = batches[-1].next_offset
            if ends is None or end < ends.get(tb, end + 1):
                after[tb] = end
        if after:
            self._start_fetch(addr, list(after), wait_ms, after)

    async def _fetch_into(self, addr: str, tbs: list[TableBucket], wait_ms: int, sink: Sink) -> None:
        """One FetchLog of a bounded read (``bounded_read``): its rows go straight to ``sink``, not to a poll."""
        answer = await self._fetch(addr, {tb: self._offsets[tb] for tb in tbs}, wait_ms)
        for tb, info in answer.remote:
            if self._offsets.get(tb) == answer.offsets[tb]:
                self._remote_reader().add(tb, info)
        if answer.fetched:
            await self._decode(answer.fetched, sink)

    async def _fetch(self, addr: str, offsets: dict[TableBucket, int], wait_ms: int) -> _FetchAnswer:
        req = pb.FetchLogRequest(follower_id=-1, max_bytes=self._fetch_max_bytes, min_bytes=self._min_bytes,
                                 max_wait_ms=wait_ms)
        table = pb.FetchTablePb(table_id=self._table.table_id, projection_enabled=self._server_projection is not None,
                                projected_fields=self._server_projection or [])
        for tb, offset in offsets.items():
            table.buckets.append(pb.FetchBucketPb(partition_id=tb.partition_id_or_none_value, bucket_id=tb.bucket_id,
                                                  fetch_offset=offset, max_bytes=self._bucket_max_bytes))
        req.tables.append(table)
        metrics = self._metrics
        started = time.perf_counter()
        answer = _FetchAnswer(offsets, [], [])
        tbs = list(offsets)
        try:
            resp, records = await self._client.fetch_log(addr, req, wait_ms / 1000 + 30)
        except FlussError as e:  # leader gone or restarting: refresh and try again next poll
            for tb in tbs:
                self._failed(tb, e)
            await asyncio.sleep(0.05)
            await self._refresh(tbs)
            return answer
        refresh = False
        if metrics is not None:
            metrics.fetches.count += 1
            metrics.fetch_latency.update((time.perf_counter() - started) * 1000)
        nbytes = 0
        for t, table_records in zip(resp.tables, records, strict=True):
            for r, data in zip(t.buckets, table_records, strict=True):
                tb = TableBucket(self._table.table_id, r.bucket_id, r.partition_id)
                offset = offsets.get(tb)
                if offset is None or tb not in self._offsets:
                    continue
                if metrics is not None and not r.error.code:
                    metrics.lag[tb] = r.high_watermark
                err = to_error(r.error)
                if err is not None:
                    if classify(err) is not RetryAction.FAIL:
                        self._failed(tb, err)
                        refresh = True
                        continue
                    raise FlussError(f"Fetching {tb} of '{self._table.table_path}' failed: {err.message}",
                                     err.error_code)
                self._retries.pop(tb, None)
                if r.HasField("remote_log_fetch_info"):
                    answer.remote.append((tb, r.remote_log_fetch_info))
                    continue
                if data:  # a view of the received bytes (``fetch_wire``)
                    nbytes += len(data)
                    answer.fetched.append((tb, offset, [b for b in iter_batches(data) if b.next_offset > offset]))
        if metrics is not None:
            metrics.bytes_per_request.update(nbytes)
        if refresh:
            await self._refresh(tbs)
        return answer

    async def _decode(self, fetched: list[tuple[TableBucket, int, list[LogBatch]]], sink: Sink | None = None) -> None:
        """Decodes every fetched batch (on several cores when the response is large, ``batch_decode``), then
        buffers the rows from each bucket's fetch offset on, in offset order (or hands them to ``sink``, a
        bounded read's, all at once)."""
        flat = [b for _, _, batches in fetched for b in batches]
        await self._reader.learn(flat)  # a batch of a schema id newer than this scanner's table info
        decoded = iter(await decode_fetched(flat, self._reader.read, self._check_crc))
        out: list[RecordBatch] = []
        for tb, offset, batches in fetched:
            parts = [next(decoded) for _ in batches]
            if self._offsets.get(tb) != offset:  # unsubscribed or moved while decoding: drop what was fetched
                continue
            for batch, (rb, cts) in zip(batches, parts, strict=True):
                base = batch.base_offset
                if base < offset:  # the fetch returned the whole batch holding our offset
                    skip = offset - base
                    rb, cts, base = rb.slice(skip), cts[skip:], offset
                out.append(RecordBatch(rb, tb, base, batch.last_offset, cts, batch.commit_timestamp))
                offset = batch.next_offset
            self._offsets[tb] = offset
        if sink is None:
            self._buffer.extend(out)
        else:
            sink(out)

    async def __aiter__(self):
        """Records (record scanner) or RecordBatch objects (batch scanner), polled for ever."""
        while True:
            if self._record_mode:
                for record in await self.poll(self._wait_ms):
                    yield record
            else:
                for batch in await self.poll_record_batch(self._wait_ms):
                    yield batch

    async def aclose(self) -> None:
        self._offsets.clear()
        self._buffer.clear()
        tasks, self._fetch_tasks = list(self._fetch_tasks), set()
        if tasks and not self._io.loop.is_closed():  # fetches still out (long-polls): not needed any more
            self._io.loop.call_soon_threadsafe(lambda: [t.cancel() for t in tasks])
        self._in_flight.clear()
        self._answers.clear()
        if self._metrics is not None and self._client.metrics is not None:
            self._client.metrics.close_scanner(self._metrics)
            self._metrics = None
        if self._remote is not None:
            self._remote.close()

    def __repr__(self) -> str:
        return f"LogScanner({self._table.table_path}, buckets={len(self._offsets)})"


class _ReaderSession:
    """The iterator of one bounded read (``to_arrow``, ``to_arrow_batch_reader``): created when the read starts
    (it takes the end offsets and marks the scanner busy), it ends the read - unsubscribing its buckets - when it
    is exhausted or garbage-collected, also if it was never iterated."""

    def __init__(self, scanner: LogScanner) -> None:
        ends = scanner._begin_reader()
        try:
            read = BoundedRead(scanner, ends)
        except BaseException:
            scanner._end_reader(list(ends))
            raise
        self._batches = scanner._read_to_end(read, ends)
        self._finalizer = weakref.finalize(self, _end_read, scanner, read, list(ends))

    def __iter__(self) -> _ReaderSession:
        return self

    def __next__(self) -> pa.RecordBatch:
        try:
            return next(self._batches)
        except BaseException:
            self._finalizer()
            raise


def _end_read(scanner: LogScanner, read: BoundedRead, buckets: list[TableBucket]) -> None:
    read.close()
    scanner._end_reader(buckets)


def _group(items, key) -> dict:
    out: dict = {}
    for it in items:
        out.setdefault(key(it), []).append(it)
    return out
