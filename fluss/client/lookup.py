"""Point and prefix lookups on primary-key tables: ``table.new_lookup()`` → ``Lookuper`` / ``PrefixLookuper``.

``Lookuper.lookup(pk)`` returns the row with that primary key (a dict) or None;
``new_lookup().lookup_by(columns).create_lookuper()`` gives a ``PrefixLookuper`` whose ``lookup(prefix)``
returns every row whose key starts with the prefix (a list of dicts). The lookup columns of a prefix lookup
are the bucket key (which must be a leading part of the primary key without the partition keys) plus, for
a partitioned table, the partition keys: all rows of one prefix live in one bucket of one partition.

A key is converted and encoded on the caller's thread (``fluss.key.encoding``; the same bytes the tablet
server stores, so they are the full primary key in primary-key order) and its bucket computed with the
shared bucket function. The encoded key then goes to a ``LookupSender`` on the client's I/O loop, which
batches: pending keys are sent when ``lookup.max-batch-size`` of them wait, or when ``lookup.batch-timeout``
has passed since the first of them arrived, as one Lookup (PrefixLookup) request per bucket leader with the
keys grouped per bucket. Many concurrent ``lookup()`` calls therefore become a few RPCs. Per-bucket errors
that are retriable (a leader moved, a server restarted) refresh the metadata and send the keys again until
``request.timeout`` passes; other errors fail the lookups of that bucket. A key of a partition that does
not exist has no row: ``None`` (``[]`` for a prefix).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from fluss.client.cluster_client import ClusterClient
from fluss.client.io_thread import IoThread
from fluss.errors import ErrorCode, FlussError
from fluss.key.bucketing import bucket_ids, bucket_of
from fluss.key.encoding import encode_key, encode_keys
from fluss.key.partition import partition_names_of
from fluss.metadata import TableBucket, TableInfo
from fluss.record.log_batch import LogBatch
from fluss.row_convert import batch_to_pylist, rows_to_batch
from fluss.rpc.errors import to_error
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.types import RowSchema

log = logging.getLogger(__name__)

LOOKUP = "Lookup"
PREFIX_LOOKUP = "PrefixLookup"


def _require_primary_key(info: TableInfo) -> None:
    if not info.has_primary_key():
        raise FlussError(f"Table '{info.table_path}' has no primary key: lookups need a primary-key table",
                         ErrorCode.NON_PRIMARY_KEY_TABLE_EXCEPTION)


class TableLookup:
    """Builder of a ``Lookuper`` (by primary key) or, after ``lookup_by``, a ``PrefixLookuper``."""

    def __init__(self, table, lookup_columns: list[str] | None = None) -> None:
        self._table = table
        self._columns = lookup_columns

    def lookup_by(self, columns: list[str]) -> TableLookup:
        """Look up by a bucket-key prefix of the primary key (plus the partition keys of a partitioned table)."""
        if isinstance(columns, str) or not isinstance(columns, Sequence):
            raise FlussError("lookup_by takes a list of column names", ErrorCode.CLIENT_ERROR)
        return TableLookup(self._table, list(columns))

    def create_lookuper(self) -> Lookuper | PrefixLookuper:
        info = self._table.get_table_info()
        _require_primary_key(info)
        if self._columns is None or self._columns == info.get_primary_keys():
            return Lookuper(self._table._conn, info)
        return PrefixLookuper(self._table._conn, info, self._columns)

    def __repr__(self) -> str:
        return f"TableLookup({self._table.get_table_path()}, lookup_columns={self._columns})"


_FAST_PYTHON_TYPES = {"TINYINT": int, "SMALLINT": int, "INT": int, "BIGINT": int, "STRING": str, "BYTES": bytes}


class _KeyCodec:
    """Turns user key values (dict by name, or list/tuple in ``columns`` order) into (partition, bucket, bytes)."""

    def __init__(self, info: TableInfo, columns: list[str], encoded: list[str], what: str) -> None:
        schema = info.row_schema
        self.info = info
        self.columns = columns
        self.what = what
        # every key column is NOT NULL here, so a null value is refused by name
        self.schema = RowSchema([schema.column(c) for c in columns], list(columns))
        self.encode_idx = [columns.index(c) for c in encoded]
        self.bucket_idx = [columns.index(c) for c in info.get_bucket_keys()]
        self.partition_idx = [columns.index(c) for c in info.get_partition_keys()]
        self.num_buckets = info.num_buckets
        self.types = [c.data_type for c in self.schema.columns]
        # the scalar encoders (byte-identical to the Arrow path, ~30x cheaper for one key) serve plain keys
        self.fast_types = [_FAST_PYTHON_TYPES.get(t.root) for t in self.types]
        self.fast = not self.partition_idx and all(self.fast_types)

    def _encode_fast(self, values: Sequence) -> tuple[None, int, bytes] | None:
        """(None, bucket, key) for keys of plain ints/strings/bytes; None when the Arrow path must decide."""
        if len(values) != len(self.types):
            return None
        for v, kind in zip(values, self.fast_types, strict=True):
            if type(v) is not kind:  # exact types only: bool, float, None, numpy ... take the checked path
                return None
        bucket_key = encode_key([values[i] for i in self.bucket_idx], [self.types[i] for i in self.bucket_idx])
        key = encode_key([values[i] for i in self.encode_idx], [self.types[i] for i in self.encode_idx])
        return None, bucket_of(bucket_key, self.num_buckets), key

    def encode(self, values: Mapping | Sequence) -> tuple[str | None, int, bytes]:
        where = f"{self.what} on table '{self.info.table_path}' (key columns: {', '.join(self.columns)})"
        if isinstance(values, Mapping):
            missing = [c for c in self.columns if c not in values]
            if missing:
                raise FlussError(f"{where}: key column '{missing[0]}' is missing from {dict(values)!r}",
                                 ErrorCode.CLIENT_ERROR)
            row: Mapping | Sequence = {c: values[c] for c in self.columns}
        elif isinstance(values, list | tuple):
            if len(values) != len(self.columns):
                raise FlussError(f"{where}: expected {len(self.columns)} key values in that order, got "
                                 f"{len(values)}", ErrorCode.CLIENT_ERROR)
            row = values
        else:
            raise FlussError(f"{where}: expected a dict, list or tuple, got {type(values).__name__}",
                             ErrorCode.CLIENT_ERROR)
        if self.fast:
            plain = [row[c] for c in self.columns] if isinstance(row, Mapping) else list(row)
            encoded = self._encode_fast(plain)
            if encoded is not None:
                return encoded
        try:
            batch = rows_to_batch([row], self.schema)
            partition = partition_names_of(batch, self.partition_idx)[0] if self.partition_idx else None
        except FlussError as e:
            raise FlussError(f"{where}: {e.message}", e.error_code) from None
        bucket = int(bucket_ids(batch, self.bucket_idx, self.num_buckets)[0])
        return partition, bucket, encode_keys(batch, self.encode_idx)[0]


class Lookuper:
    """Looks up rows by primary key (batched with other lookups under the hood)."""

    def __init__(self, connection, table: TableInfo) -> None:
        _require_primary_key(table)
        pks = table.get_primary_keys()
        self._table = table
        self._codec = _KeyCodec(table, pks, pks, "lookup")
        self._io: IoThread = connection.io_thread()
        self._sender = LookupSender(self._io, table, LOOKUP, connection.config)
        self._bridge = _LoopBridge(self._io, self._sender)
        connection.register(self)

    async def lookup(self, pk: dict | list | tuple) -> dict | None:
        """The row with this primary key (a dict with the key columns, or their values in primary-key order),
        or None when there is none. For a partitioned table the key includes the partition columns."""
        partition, bucket, key = self._codec.encode(pk)
        return await self._bridge.call(partition, bucket, key)

    async def aclose(self) -> None:
        await self._io.wait(self._sender.close())

    def __repr__(self) -> str:
        return f"Lookuper({self._table.table_path})"


class PrefixLookuper:
    """Looks up all rows whose primary key starts with a bucket-key prefix."""

    def __init__(self, connection, table: TableInfo, lookup_columns: list[str]) -> None:
        _require_primary_key(table)
        encoded = check_prefix_columns(table, lookup_columns)
        self._table = table
        self._columns = list(lookup_columns)
        self._codec = _KeyCodec(table, self._columns, encoded, "prefix lookup")
        self._io: IoThread = connection.io_thread()
        self._sender = LookupSender(self._io, table, PREFIX_LOOKUP, connection.config)
        self._bridge = _LoopBridge(self._io, self._sender)
        connection.register(self)

    async def lookup(self, prefix: dict | list | tuple) -> list[dict]:
        """Every row whose key has this prefix (a dict by column name, or the values in ``lookup_by`` order)."""
        partition, bucket, key = self._codec.encode(prefix)
        return await self._bridge.call(partition, bucket, key)

    async def aclose(self) -> None:
        await self._io.wait(self._sender.close())

    def __repr__(self) -> str:
        return f"PrefixLookuper({self._table.table_path}, lookup_columns={self._columns})"


def check_prefix_columns(info: TableInfo, columns: list[str]) -> list[str]:
    """Validates the columns of a prefix lookup; returns the primary-key columns whose encoding is the prefix.

    The columns must be the bucket key plus the partition keys, and the bucket key must be a leading part of
    the primary key without the partition keys, so that every key with the prefix is in one bucket.
    """
    path = info.table_path
    names = info.get_column_names()
    unknown = [c for c in columns if c not in names]
    if unknown:
        raise FlussError(f"Lookup column(s) {unknown} do not exist in table '{path}' (columns: {', '.join(names)})",
                         ErrorCode.CLIENT_ERROR)
    if not columns or len(set(columns)) != len(columns):
        raise FlussError(f"Lookup columns {columns} of table '{path}' must be distinct and not empty",
                         ErrorCode.CLIENT_ERROR)
    pks = info.get_primary_keys()
    partition_keys = info.get_partition_keys()
    bucket_keys = info.get_bucket_keys()
    physical = [k for k in pks if k not in partition_keys]
    if bucket_keys != physical[:len(bucket_keys)]:
        raise FlussError(f"Cannot prefix-lookup table '{path}': its bucket key {bucket_keys} is not a leading part "
                         f"of its primary key {physical} (without partition keys)", ErrorCode.CLIENT_ERROR)
    expected = set(bucket_keys) | set(partition_keys)
    if set(columns) != expected:
        extra = [c for c in columns if c not in expected]
        missing = [c for c in bucket_keys + partition_keys if c not in columns]
        detail = "; ".join(x for x in (f"missing {missing}" if missing else "",
                                        f"not allowed {extra}" if extra else "") if x)
        need = f"bucket key {bucket_keys}" + (f" and partition keys {partition_keys}" if partition_keys else "")
        raise FlussError(f"Cannot prefix-lookup table '{path}' by {columns}: the lookup columns must be the {need} "
                         f"({detail}; primary key {pks})", ErrorCode.CLIENT_ERROR)
    last = max(pks.index(c) for c in bucket_keys)
    return pks[:last + 1]


@dataclass
class _Query:
    partition: str | None
    bucket: int
    key: bytes
    future: asyncio.Future
    deadline: float
    tb: TableBucket | None = None


@dataclass
class _Request:
    """The keys of one request to one leader, grouped per bucket."""

    buckets: dict[TableBucket, list[_Query]] = field(default_factory=lambda: defaultdict(list))


class LookupSender:
    """Batches lookups of one table and sends them to the bucket leaders; lives on the I/O loop."""

    def __init__(self, io: IoThread, table: TableInfo, method: str, config) -> None:
        self.io = io
        self.client: ClusterClient = io.client
        self.table = table
        self.method = method
        self.max_batch = max(1, int(config.lookup_max_batch_size))
        self.batch_timeout_s = max(0, int(config.lookup_batch_timeout_ms)) / 1000
        self.arrow_schema = table.row_schema.to_arrow()
        self.requests_sent = 0
        self._pending: list[_Query] = []
        self._timer: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task] = set()

    # ------------------------------------------------------------ batching

    async def lookup(self, partition: str | None, bucket: int, key: bytes):
        future = asyncio.get_running_loop().create_future()
        self._add(_Query(partition, bucket, key, future, time.monotonic() + self.client.request_timeout_s))
        return await future

    def _add(self, query: _Query) -> None:
        self._pending.append(query)
        if len(self._pending) >= self.max_batch:
            self._flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.batch_timeout_s, self._flush)

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        queries, self._pending = self._pending, []
        if queries:
            self._spawn(self._send_all(queries))

    def _spawn(self, coro) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ------------------------------------------------------------ sending

    async def _send_all(self, queries: list[_Query]) -> None:
        try:
            retry = await self._route_and_send(queries)
        except Exception as e:  # noqa: BLE001 - the lookups carry the error
            err = e if isinstance(e, FlussError) else FlussError(f"{type(e).__name__}: {e}", ErrorCode.CLIENT_ERROR)
            for q in queries:
                _fail(q, err)
            return
        if retry:
            await asyncio.sleep(0.05)
            try:
                await self._refresh(retry)
            except FlussError as e:
                log.debug("metadata refresh before a lookup retry failed: %s", e)
            for q in retry:
                self._add(q)

    async def _route_and_send(self, queries: list[_Query]) -> list[_Query]:
        """Sends every query to its leader; returns those to try again."""
        partition_ids = await self._partition_ids({q.partition for q in queries if q.partition is not None})
        meta = await self.client.table(self.table.table_path)
        by_leader: dict[str, _Request] = defaultdict(_Request)
        retry: list[_Query] = []
        for q in queries:
            if q.partition is not None:
                pid = partition_ids.get(q.partition)
                if pid is None:  # no such partition: no such row
                    _resolve(q, None if self.method == LOOKUP else [])
                    continue
                q.tb = TableBucket(self.table.table_id, q.bucket, pid)
            else:
                q.tb = TableBucket(self.table.table_id, q.bucket)
            addr = self.client.leader_address(meta, q.tb)
            if addr is None:
                retry.append(q)
            else:
                by_leader[addr].buckets[q.tb].append(q)
        results = await asyncio.gather(*(self._send(addr, req) for addr, req in by_leader.items()))
        for failed in results:
            retry.extend(failed)
        now = time.monotonic()
        expired = [q for q in retry if now >= q.deadline]
        for q in expired:
            _fail(q, FlussError(f"{self.method} on table '{self.table.table_path}' bucket {q.tb} did not succeed "
                                "within request.timeout (no leader reachable)", ErrorCode.REQUEST_TIME_OUT))
        return [q for q in retry if now < q.deadline]

    async def _send(self, addr: str, req: _Request) -> list[_Query]:
        if self.method == LOOKUP:
            msg = pb.LookupRequest(table_id=self.table.table_id, buckets=[
                pb.LookupBucketPb(partition_id=tb.partition_id_or_none_value, bucket_id=tb.bucket_id,
                                  keys=[q.key for q in qs]) for tb, qs in req.buckets.items()])
        else:
            msg = pb.PrefixLookupRequest(table_id=self.table.table_id, buckets=[
                pb.PrefixLookupBucketPb(partition_id=tb.partition_id_or_none_value, bucket_id=tb.bucket_id,
                                        prefixes=[q.key for q in qs]) for tb, qs in req.buckets.items()])
        self.requests_sent += 1
        try:
            resp = await self.client.tablet_call(addr, self.method, msg, self.client.request_timeout_s)
        except FlussError as err:
            return self._failed([q for qs in req.buckets.values() for q in qs], err)
        answered = {TableBucket(self.table.table_id, r.bucket_id, r.partition_id): r for r in resp.buckets}
        retry: list[_Query] = []
        for tb, qs in req.buckets.items():
            r = answered.get(tb)
            if r is None:
                retry.extend(self._failed(qs, FlussError(f"no result for bucket {tb}", ErrorCode.NETWORK_EXCEPTION)))
                continue
            err = to_error(r.error)
            if err is not None:
                retry.extend(self._failed(qs, err))
                continue
            try:
                self._deliver(tb, qs, r)
            except FlussError as e:
                for q in qs:
                    _fail(q, e)
        return retry

    def _failed(self, queries: list[_Query], err: FlussError) -> list[_Query]:
        if err.is_retriable:
            return queries
        for q in queries:
            _fail(q, err)
        return []

    def _deliver(self, tb: TableBucket, queries: list[_Query], r) -> None:
        rows = self._rows(r.rows)
        if self.method == LOOKUP:
            if len(r.found) != len(queries) or sum(r.found) != len(rows):
                raise FlussError(f"Malformed Lookup answer for {tb}: {len(queries)} keys, {len(r.found)} flags, "
                                 f"{sum(r.found)} found, {len(rows)} rows", ErrorCode.CORRUPT_MESSAGE)
            it = iter(rows)
            for q, found in zip(queries, r.found, strict=True):
                _resolve(q, next(it) if found else None)
            return
        if len(r.counts) != len(queries) or sum(r.counts) != len(rows):
            raise FlussError(f"Malformed PrefixLookup answer for {tb}: {len(queries)} prefixes, {len(r.counts)} "
                             f"counts adding up to {sum(r.counts)}, {len(rows)} rows", ErrorCode.CORRUPT_MESSAGE)
        start = 0
        for q, count in zip(queries, r.counts, strict=True):
            _resolve(q, rows[start:start + count])
            start += count

    def _rows(self, data: bytes) -> list[dict]:
        if not data:
            return []
        batch = LogBatch(data).to_arrow(self.arrow_schema)
        return batch_to_pylist(batch)

    async def _partition_ids(self, names: set[str]) -> dict[str, int]:
        if not names:
            return {}
        path = self.table.table_path
        meta = await self.client.table(path)
        missing = [n for n in names if n not in meta.partitions]
        for name in missing:  # one by one: a partition that does not exist fails its own request only
            try:
                await self.client.update_metadata([path], partitions=[(path, name)])
            except FlussError as e:
                if e.error_code != ErrorCode.PARTITION_NOT_EXISTS:
                    raise
        meta = self.client.tables[path]
        return {n: meta.partitions[n] for n in names if n in meta.partitions}

    async def _refresh(self, queries: list[_Query]) -> None:
        pids = sorted({q.tb.partition_id for q in queries if q.tb is not None and q.tb.partition_id is not None})
        await self.client.update_metadata([self.table.table_path], partition_ids=pids)

    async def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        err = FlussError(f"Lookuper of table '{self.table.table_path}' closed", ErrorCode.CLIENT_ERROR)
        for q in self._pending:
            _fail(q, err)
        self._pending = []
        for task in list(self._tasks):
            task.cancel()


class _LoopBridge:
    """Carries lookups from the caller's event loop to the I/O loop and results back, one hop per batch.

    ``call`` parks the key in a thread-safe inbox; the first call since the last drain schedules one drain on
    the I/O loop, which hands every parked key to the sender. Results go back the same way: parked per caller
    loop and delivered by one scheduled callback. (A hop per key cost more than the lookup itself.)
    """

    def __init__(self, io: IoThread, sender: LookupSender) -> None:
        self._io = io
        self._sender = sender
        self._lock = threading.Lock()
        self._inbox: list[tuple[str | None, int, bytes, asyncio.AbstractEventLoop, asyncio.Future]] = []
        self._outbox: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future, object, BaseException | None]]] = {}

    async def call(self, partition: str | None, bucket: int, key: bytes):
        loop = asyncio.get_running_loop()
        caller_future = loop.create_future()
        with self._lock:
            self._inbox.append((partition, bucket, key, loop, caller_future))
            first = len(self._inbox) == 1
        if first:
            self._io.loop.call_soon_threadsafe(self._drain)
        return await caller_future

    def _drain(self) -> None:  # on the I/O loop
        with self._lock:
            items, self._inbox = self._inbox, []
        deadline = time.monotonic() + self._sender.client.request_timeout_s
        io_loop = asyncio.get_running_loop()
        for partition, bucket, key, loop, caller_future in items:
            inner = io_loop.create_future()
            inner.add_done_callback(lambda f, loop=loop, cf=caller_future: self._finished(loop, cf, f))
            self._sender._add(_Query(partition, bucket, key, inner, deadline))

    def _finished(self, loop: asyncio.AbstractEventLoop, caller_future: asyncio.Future, inner: asyncio.Future) -> None:
        result = (None, inner.exception()) if inner.exception() is not None else (inner.result(), None)
        with self._lock:
            parked = self._outbox.setdefault(loop, [])
            parked.append((caller_future, *result))
            first = len(parked) == 1
        if first:
            loop.call_soon_threadsafe(self._deliver, loop)

    def _deliver(self, loop: asyncio.AbstractEventLoop) -> None:  # on the caller's loop
        with self._lock:
            parked = self._outbox.pop(loop, [])
        for caller_future, value, error in parked:
            if caller_future.done():
                continue
            if error is not None:
                caller_future.set_exception(error)
            else:
                caller_future.set_result(value)


def _resolve(q: _Query, value) -> None:
    if not q.future.done():
        q.future.set_result(value)


def _fail(q: _Query, err: FlussError) -> None:
    if not q.future.done():
        q.future.set_exception(err)


__all__ = ["Lookuper", "PrefixLookuper", "TableLookup", "check_prefix_columns"]
