"""Point and prefix lookups on primary-key tables: ``table.new_lookup()`` → ``Lookuper`` / ``PrefixLookuper``.

``await Lookuper.lookup(pk)`` gives the row with that primary key (a dict) or None;
``new_lookup().lookup_by(columns).create_lookuper()`` gives a ``PrefixLookuper`` whose ``lookup(prefix)``
gives every row whose key starts with the prefix (a list of dicts). As in the official client, ``lookup``
is a plain method returning an ``asyncio.Future`` (a key of the wrong shape raises at the call), so a
``gather`` of thousands of lookups creates no task per key. The lookup columns of a prefix lookup
are the bucket key (which must be a leading part of the primary key without the partition keys) plus, for
a partitioned table, the partition keys: all rows of one prefix live in one bucket of one partition.

How a lookup travels (every step works on a whole batch of keys, never a hop or an RPC per key):

1. ``lookup()`` checks the shape of the key on the caller's thread and parks it with a new future of the
   caller's event loop. The first key parked in a loop iteration schedules one hand-over (``call_soon``),
   so every lookup the loop issues in that iteration (e.g. all of an ``asyncio.gather``) goes together.
2. The hand-over encodes the parked keys at once (``fluss.key.encoding``: the same bytes the tablet server
   stores, so they are the full primary key in primary-key order), computes their buckets (with the table's
   bucket function, ``fluss.key.bucket_function``) and partitions with the shared functions (a lone plain
   key with the scalar encoder, without building a batch), and passes them to the ``LookupSender`` on the
   client's I/O loop in one ``call_soon_threadsafe``.
3. The sender sends pending keys right away when no request of it is in flight, else once
   ``lookup.max-batch-size`` keys wait, the in-flight request completes, or ``lookup.batch-timeout`` has
   passed since the first of them arrived (so a lone key is never held back, and keys arriving while a
   request is out are batched). A send is one Lookup (PrefixLookup) request per bucket leader, with the
   keys grouped per bucket (at most ``lookup.max-batch-size`` keys per bucket entry). A send of one bucket's
   keys whose leader is cached (every lone lookup after the first) starts its gRPC call right there; other
   sends route in their task (metadata and partition look-ups may have to wait).
4. Each response's rows are decoded into dicts and its futures resolved with one ``call_soon_threadsafe`` per
   caller loop. A tablet server answers up to 16 rows of one schema id with the stored KV values (a row-format
   batch); those are read field by field (``fluss.record.row_scalar``: a lone lookup touches no Arrow at all),
   larger answers come as Arrow and are converted column-wise.

Per-bucket errors are handled by the client's retry policy (``fluss.client.retry``): a leader that moved or a
server that restarted refreshes the metadata and sends the keys again, until ``request-timeout`` has passed since
the keys were handed over (then the lookups fail with the last error); other errors, and a dropped table, fail the
lookups of that bucket at once. A key of a
partition that does not exist has no row: ``None`` (``[]`` for a prefix).
"""

from __future__ import annotations

import asyncio
import logging
import operator
import time
from collections import defaultdict, deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from fluss.client.cluster_client import ClusterClient
from fluss.client.io_thread import IoThread
from fluss.client.retry import GONE_CODES, RetryAction, RetryPolicy, RetryState, refresh_table
from fluss.client.schema_reader import SchemaReader
from fluss.errors import ErrorCode, FlussError
from fluss.key.bucket_function import DefaultBucketing, bucketing_of
from fluss.key.bucketing import bucket_of, buckets_of_hashes, murmur3_32_batch
from fluss.key.encoding import encode_key, encode_key_buffers, encode_keys
from fluss.key.partition import partition_names_of
from fluss.metadata import TableBucket, TableInfo
from fluss.record.log_batch import LogBatch
from fluss.record.row_scalar import SCALAR_ROWS_MAX, body_rows, row_decoder
from fluss.row_convert import _column_to_python, rows_to_batch
from fluss.rpc.errors import to_error
from fluss.rpc.gen import fluss_api_pb2 as pb
from fluss.types import RowSchema

log = logging.getLogger(__name__)

LOOKUP = "Lookup"
PREFIX_LOOKUP = "PrefixLookup"

#: Below this many keys per hand-over the scalar encoders are cheaper than building an Arrow batch.
VECTOR_ENCODE_MIN = 16


def _require_primary_key(info: TableInfo) -> None:
    if not info.has_primary_key():
        raise FlussError(f"Table '{info.table_path}' has no primary key: lookups need a primary-key table",
                         ErrorCode.NON_PRIMARY_KEY_TABLE_EXCEPTION)


def returns_awaitable(fn):
    """Marks a method that is ``async`` in the official client's stub and returns an awaitable here without
    being a coroutine function (an ``asyncio.Future``, as pyo3's ``future_into_py`` gives the official one)."""
    fn.__fluss_awaitable__ = True
    return fn


class TableLookup:
    """Builder of a ``Lookuper`` (by primary key), or with ``lookup_by`` of a ``PrefixLookuper``."""

    def __init__(self, table) -> None:
        self._table = table

    def create_lookuper(self) -> Lookuper:
        info = self._table.get_table_info()
        _require_primary_key(info)
        return Lookuper(self._table._conn, info)

    def lookup_by(self, column_names: list[str]) -> TablePrefixLookup:
        """Prefix lookups by these columns: the table's partition keys (if any), then its bucket key, in order."""
        if isinstance(column_names, str) or not isinstance(column_names, Sequence):
            raise FlussError("lookup_by takes a list of column names", ErrorCode.CLIENT_ERROR)
        return TablePrefixLookup(self._table, list(column_names))

    def __repr__(self) -> str:
        return "TableLookup()"


class TablePrefixLookup:
    """Builder of a ``PrefixLookuper`` (``table.new_lookup().lookup_by(columns)``)."""

    def __init__(self, table, column_names: list[str]) -> None:
        self._table = table
        self._columns = column_names

    def create_lookuper(self) -> PrefixLookuper:
        return PrefixLookuper(self._table._conn, self._table.get_table_info(), self._columns)

    def __repr__(self) -> str:
        return "TablePrefixLookup()"


_FAST_PYTHON_TYPES = {"TINYINT": int, "SMALLINT": int, "INT": int, "BIGINT": int, "STRING": str, "BYTES": bytes}

Encoded = tuple[str | None, int, bytes]  # (partition name, bucket, encoded key)


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
        # a partition's own bucket count (ALTER TABLE SET bucket.num changes later partitions only): the client's
        # cached metadata, peeked without waiting; the sender re-routes keys encoded with a count gone stale
        self.partition_buckets: Callable[[str], int] = lambda _name: self.num_buckets
        self.bucketing = bucketing_of(info)  # the table's bucket function (follows its lake format)
        # the project's own function hashes the key bytes: when the bucket key is the encoded key, reuse them
        self.hash_encoded_key = isinstance(self.bucketing, DefaultBucketing) and self.bucket_idx == self.encode_idx
        self.types = [c.data_type for c in self.schema.columns]
        # the scalar encoders (byte-identical to the Arrow path, ~30x cheaper for one key) serve plain keys
        self.fast_types = [_FAST_PYTHON_TYPES.get(t.root) for t in self.types]
        self.fast = not self.partition_idx and all(self.fast_types)
        self.where = f"{what} on table '{info.table_path}' (key columns: {', '.join(columns)})"
        self._get = operator.itemgetter(*columns)  # the values of a dict key, in C

    def normalize(self, values: Mapping | Sequence) -> tuple:
        """The key values in ``columns`` order; raises naming the problem for a missing column or wrong shape."""
        columns = self.columns
        kind = type(values)
        if kind is tuple or kind is list:
            if len(values) == len(columns):
                return tuple(values)
        elif kind is dict or isinstance(values, Mapping):
            try:
                got = self._get(values)
                return (got,) if len(columns) == 1 else got
            except KeyError:
                missing = next((c for c in columns if c not in values), columns[0])
                raise FlussError(f"{self.where}: key column '{missing}' is missing from {dict(values)!r}",
                                 ErrorCode.CLIENT_ERROR) from None
        if isinstance(values, list | tuple):
            if len(values) != len(columns):
                raise FlussError(f"{self.where}: expected {len(columns)} key values in that order, got "
                                 f"{len(values)}", ErrorCode.CLIENT_ERROR)
            return tuple(values)
        raise FlussError(f"{self.where}: expected a dict, list or tuple, got {type(values).__name__}",
                         ErrorCode.CLIENT_ERROR)

    def encode_fast(self, values: tuple) -> Encoded | None:
        """(None, bucket, key) for keys of plain ints/strings/bytes; None when the Arrow path must decide."""
        for v, kind in zip(values, self.fast_types, strict=True):
            if type(v) is not kind:  # exact types only: bool, float, None, numpy ... take the checked path
                return None
        key = encode_key([values[i] for i in self.encode_idx], [self.types[i] for i in self.encode_idx])
        if self.hash_encoded_key:
            return None, bucket_of(key, self.num_buckets), key
        bucket = self.bucketing.bucket_of([values[i] for i in self.bucket_idx],
                                          [self.types[i] for i in self.bucket_idx], self.num_buckets)
        return None, bucket, key

    def encode(self, values: Mapping | Sequence) -> Encoded:
        """One key (shape checked with :meth:`normalize`)."""
        return self.encode_row(self.normalize(values))

    def encode_row(self, row: tuple, counts: dict[str, int] | None = None,
                   count_of: Callable[[str], int] | None = None) -> Encoded:
        """One normalized key; raises naming the column for a value of the wrong type or a null. ``counts``
        collects the bucket count used for each partition."""
        if self.fast:
            encoded = self.encode_fast(row)
            if encoded is not None:
                return encoded
        try:
            batch = rows_to_batch([row], self.schema)
            partition = partition_names_of(batch, self.partition_idx)[0] if self.partition_idx else None
        except FlussError as e:
            raise FlussError(f"{self.where}: {e.message}", e.error_code) from None
        num_buckets = self.num_buckets if partition is None else self._count(partition, counts, count_of)
        bucket = int(self.bucketing.bucket_ids(batch, self.bucket_idx, num_buckets)[0])
        return partition, bucket, encode_keys(batch, self.encode_idx)[0]

    def _count(self, partition: str, counts: dict[str, int] | None, count_of: Callable[[str], int] | None) -> int:
        count_of = count_of or self.partition_buckets
        if counts is None:
            return count_of(partition)
        if partition not in counts:
            counts[partition] = count_of(partition)
        return counts[partition]

    def encode_many(self, rows: list[tuple], bucket_count: int | None = None) -> KeyBatch:
        """Every normalized key, vectorised; a key that cannot be encoded gets its own error. The bucket count of
        each partition is ``partition_buckets``' (recorded in the result), or ``bucket_count`` when given."""
        counts: dict[str, int] | None = {} if self.partition_idx else None
        count_of = self.partition_buckets if bucket_count is None else (lambda _name: bucket_count)
        return self._encode_many(rows, counts, count_of)

    def _encode_many(self, rows: list[tuple], counts: dict[str, int] | None,
                     count_of: Callable[[str], int]) -> KeyBatch:
        if len(rows) >= VECTOR_ENCODE_MIN:
            try:
                batch = rows_to_batch(rows, self.schema)
                partitions = partition_names_of(batch, self.partition_idx) if self.partition_idx else None
            except FlussError:
                pass  # some key is bad: find which, one by one
            else:
                encoded = encode_key_buffers(batch, self.encode_idx)
                if partitions is not None:
                    for name in dict.fromkeys(partitions):
                        self._count(name, counts, count_of)
                uniform = set(counts.values()) if counts else {self.num_buckets}
                if len(uniform) > 1:  # partitions of different bucket counts: each by its own
                    names = np.asarray(partitions, dtype=object)
                    buckets = np.empty(len(rows), dtype=np.int64)
                    for name, n in counts.items():
                        idx = np.nonzero(names == name)[0]
                        buckets[idx] = self.bucketing.bucket_ids(batch.take(pa.array(idx)), self.bucket_idx, n)
                    return KeyBatch(partitions, buckets, encoded.to_list(), {}, counts)
                num_buckets = uniform.pop()
                if self.hash_encoded_key and num_buckets > 1:  # hash the keys just encoded
                    buckets = buckets_of_hashes(murmur3_32_batch(encoded), num_buckets)
                else:
                    buckets = self.bucketing.bucket_ids(batch, self.bucket_idx, num_buckets)
                return KeyBatch(partitions, buckets, encoded.to_list(), {}, counts)
        partitions, buckets, keys, errors = [], [], [], {}
        for i, row in enumerate(rows):
            try:
                partition, bucket, key = self.encode_row(row, counts, count_of)
            except FlussError as e:
                errors[i] = e
                partition, bucket, key = None, -1, b""
            partitions.append(partition)
            buckets.append(bucket)
            keys.append(key)
        return KeyBatch(partitions if self.partition_idx else None, np.array(buckets, dtype=np.int64), keys,
                        errors, counts)


def cached_bucket_count(client: ClusterClient, table: TableInfo) -> Callable[[str], int]:
    """A partition's bucket count as the client's metadata cache has it, without waiting (the table's when the
    partition is not cached yet: the lookup sender re-routes such keys once it has the partition's metadata)."""
    path = table.table_path

    def count_of(partition: str) -> int:
        meta = client.tables.get(path)
        pid = meta.partitions.get(partition) if meta is not None else None
        return meta.bucket_count(pid) if pid is not None else table.num_buckets

    return count_of


@dataclass
class KeyBatch:
    """Encoded keys: the partition name (None: not partitioned) and bucket of each, and the errors of keys
    that could not be encoded by index (their bucket is -1)."""

    partitions: list[str | None] | None
    buckets: np.ndarray
    keys: list[bytes]
    errors: dict[int, FlussError]
    bucket_counts: dict[str, int] | None = None  # the bucket count each partition's keys were routed by

    def groups(self) -> list[list[int]]:
        """The indices of the encodable keys per (partition, bucket), in order within each group."""
        ids = self.buckets.astype(np.int64)
        if self.partitions is not None:
            codes: dict[str | None, int] = {}
            part = np.array([codes.setdefault(p, len(codes)) for p in self.partitions], dtype=np.int64)
            ids = np.where(ids < 0, -1, part * (int(ids.max()) + 1) + ids)
        n = len(ids)
        if n == 0:
            return []
        if not self.errors and (ids == ids[0]).all():
            return [list(range(n))]
        order = np.argsort(ids, kind="stable")
        ordered = ids[order]
        bounds = (np.flatnonzero(ordered[1:] != ordered[:-1]) + 1).tolist()
        out = []
        for lo, hi in zip([0, *bounds], [*bounds, n], strict=True):
            if ordered[lo] >= 0:
                out.append(order[lo:hi].tolist())
        return out


class Lookuper:
    """Looks up rows by primary key (batched with other lookups under the hood)."""

    def __init__(self, connection, table: TableInfo) -> None:
        _require_primary_key(table)
        pks = table.get_primary_keys()
        self._table = table
        self._codec = _KeyCodec(table, pks, pks, "lookup")
        self._io: IoThread = connection.io_thread()
        self._sender = LookupSender(self._io, table, LOOKUP, connection.config)
        self._submitter = _Submitter(self._io, self._sender, self._codec)
        self._sender.codec = self._codec
        self._codec.partition_buckets = cached_bucket_count(self._io.client, table)
        connection.register(self)

    @returns_awaitable
    def lookup(self, pk: dict | list | tuple) -> Awaitable[dict | None]:
        """The row with this primary key (a dict with the key columns, or their values in primary-key order),
        or None when there is none. For a partitioned table the key includes the partition columns.

        Like the official client, returns an ``asyncio.Future`` of the running loop (no coroutine, so a
        ``gather`` of many lookups creates no task per key); a key of the wrong shape raises here."""
        return self._submitter.submit(self._codec.normalize(pk))

    async def aclose(self) -> None:
        await self._io.wait(self._sender.close())

    def __repr__(self) -> str:
        return f"Lookuper({self._table.table_path})"


class PrefixLookuper:
    """Looks up all rows whose primary key starts with a bucket-key prefix."""

    def __init__(self, connection, table: TableInfo, lookup_columns: list[str]) -> None:
        if not table.has_primary_key():
            raise FlussError(f"Log table {table.table_path} doesn't support prefix lookup",
                             ErrorCode.NON_PRIMARY_KEY_TABLE_EXCEPTION)
        encoded = check_prefix_columns(table, lookup_columns)
        self._table = table
        self._columns = list(lookup_columns)
        self._codec = _KeyCodec(table, self._columns, encoded, "prefix lookup")
        self._io: IoThread = connection.io_thread()
        self._sender = LookupSender(self._io, table, PREFIX_LOOKUP, connection.config)
        self._submitter = _Submitter(self._io, self._sender, self._codec)
        self._sender.codec = self._codec
        self._codec.partition_buckets = cached_bucket_count(self._io.client, table)
        connection.register(self)

    @returns_awaitable
    def lookup(self, prefix: dict | list | tuple) -> Awaitable[list[dict]]:
        """Every row whose key has this prefix (a dict by column name, or the values in ``lookup_by`` order);
        an ``asyncio.Future``, as :meth:`Lookuper.lookup`."""
        return self._submitter.submit(self._codec.normalize(prefix))

    async def aclose(self) -> None:
        await self._io.wait(self._sender.close())

    def __repr__(self) -> str:
        return f"PrefixLookuper({self._table.table_path}, lookup_columns={self._columns})"


def check_prefix_columns(info: TableInfo, columns: list[str]) -> list[str]:
    """Validates the columns of a prefix lookup (the official client's rules and messages); returns the
    primary-key columns whose encoding is the prefix.

    The columns must be the table's partition keys (if any), then its bucket key in order; the bucket key must
    be a leading part of the primary key without the partition keys, and shorter than it (a lookup by the whole
    key is a point lookup: ``create_lookuper()`` without ``lookup_by``).
    """
    path = info.table_path
    names = info.get_column_names()
    for name in columns:
        if name not in names:
            raise FlussError(f"Unknown column name '{name}' for prefix lookup (table '{path}' has columns "
                             f"{', '.join(names)})", ErrorCode.CLIENT_ERROR)
    pks = info.get_primary_keys()
    partition_keys = info.get_partition_keys()
    bucket_keys = info.get_bucket_keys()
    physical = [k for k in pks if k not in partition_keys]
    where = f"Can not perform prefix lookup on table '{path}'"
    if not bucket_keys:
        raise FlussError(f"{where}, because it has no bucket keys.", ErrorCode.CLIENT_ERROR)
    if bucket_keys != physical[:len(bucket_keys)]:
        raise FlussError(f"{where}, because the bucket keys {bucket_keys} is not a prefix subset of the physical "
                         f"primary keys {physical} (excluded partition fields if present).", ErrorCode.CLIENT_ERROR)
    missing = [k for k in partition_keys if k not in columns]
    if missing:
        raise FlussError(f"{where}, because the lookup columns {columns} must contain all partition fields "
                         f"{partition_keys}.", ErrorCode.CLIENT_ERROR)
    rest = [c for c in columns if c not in partition_keys]
    if rest != bucket_keys:
        raise FlussError(f"{where}, because the lookup columns {columns} must contain all bucket keys "
                         f"{bucket_keys} in order.", ErrorCode.CLIENT_ERROR)
    if bucket_keys == physical:
        raise FlussError(f"{where}, because the lookup columns {columns} equals the physical primary keys "
                         f"{physical}. Please use primary key lookup (Lookuper without lookup_by) instead.",
                         ErrorCode.CLIENT_ERROR)
    last = max(pks.index(c) for c in bucket_keys)
    return pks[:last + 1]


class _Part:
    """Keys of one bucket handed over by one caller loop, and that loop's futures waiting for their results."""

    __slots__ = ("partition", "bucket", "keys", "futures", "loop", "started", "tb", "retry", "rows", "bucket_count")

    def __init__(self, partition: str | None, bucket: int, keys: list[bytes], futures: list[asyncio.Future],
                 loop: asyncio.AbstractEventLoop, started: float, rows: list[tuple] | None = None,
                 bucket_count: int = 0) -> None:
        self.partition = partition
        # of a partition's keys: their values and the bucket count they were routed by, to route them again when
        # the partition turns out to have another count (metadata not cached when they were encoded)
        self.rows = rows
        self.bucket_count = bucket_count
        self.bucket = bucket
        self.keys = keys
        self.futures = futures
        self.loop = loop
        self.started = started  # when the keys were handed over: retries are timed from here
        self.tb: TableBucket | None = None
        self.retry: RetryState | None = None  # created at the first failure

    def slice(self, lo: int, hi: int) -> _Part:
        if lo == 0 and hi == len(self.keys):
            return self
        part = _Part(self.partition, self.bucket, self.keys[lo:hi], self.futures[lo:hi], self.loop, self.started,
                     None if self.rows is None else self.rows[lo:hi], self.bucket_count)
        part.tb = self.tb
        part.retry = self.retry
        return part

    def absorb(self, other: _Part) -> None:
        self.keys = self.keys + other.keys
        self.futures = self.futures + other.futures
        if self.rows is not None and other.rows is not None:
            self.rows = self.rows + other.rows
        if other.started < self.started:
            self.started, self.retry = other.started, other.retry


class _Submitter:
    """Parks the keys a caller's event loop looks up in one iteration and hands them to the sender together.

    ``submit`` runs on the caller's loop; the first key parked in an iteration schedules ``_hand_over`` with
    ``call_soon``, which therefore runs after every lookup that iteration started (one ``asyncio.gather`` of
    any size is one hand-over). The hand-over encodes the keys in one vectorised pass, groups them per bucket
    and crosses to the I/O loop once. (A thread hop per key cost more than the lookup itself.)
    """

    def __init__(self, io: IoThread, sender: LookupSender, codec: _KeyCodec) -> None:
        self._io = io
        self._sender = sender
        self._codec = codec
        self._parked: dict[asyncio.AbstractEventLoop, tuple[list[tuple], list[asyncio.Future]]] = {}

    def submit(self, row: tuple) -> asyncio.Future:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        parked = self._parked.get(loop)
        if parked is None:
            parked = self._parked[loop] = ([], [])
            loop.call_soon(self._hand_over, loop)
        parked[0].append(row)
        parked[1].append(future)
        return future

    def _hand_over(self, loop: asyncio.AbstractEventLoop) -> None:  # on the caller's loop
        rows, futures = self._parked.pop(loop)
        try:
            parts = self._parts(rows, futures, loop)
        except Exception as e:  # noqa: BLE001 - the lookups carry the error
            _resolve_futures(futures, None, _as_error(e))
            return
        if not parts:
            return
        try:
            self._io.loop.call_soon_threadsafe(self._sender.add, parts)
        except RuntimeError:  # the I/O loop is closed with its connection
            _resolve_futures([f for p in parts for f in p.futures], None, self._sender.closed_error())

    def _parts(self, rows: list[tuple], futures: list[asyncio.Future], loop) -> list[_Part]:
        if len(rows) == 1 and self._codec.fast:  # a lone plain key (every single lookup): no KeyBatch, no numpy
            one = self._codec.encode_fast(rows[0])
            if one is not None:
                return [_Part(None, one[1], [one[2]], futures, loop, time.monotonic())]
        encoded = self._codec.encode_many(rows)
        for i, err in encoded.errors.items():
            if not futures[i].done():
                futures[i].set_exception(err)
        started = time.monotonic()
        return parts_of(encoded, rows, futures, loop, started)


def parts_of(encoded: KeyBatch, rows: list[tuple], futures: list[asyncio.Future], loop: asyncio.AbstractEventLoop,
             started: float) -> list[_Part]:
    """The keys of ``encoded`` grouped per (partition, bucket); a partition's keep their values (``_Part.rows``)."""
    keys, buckets, partitions, counts = encoded.keys, encoded.buckets, encoded.partitions, encoded.bucket_counts
    parts = []
    for idx in encoded.groups():
        first = idx[0]
        partition = None if partitions is None else partitions[first]
        count = counts.get(partition, 0) if counts and partition is not None else 0
        if len(idx) == len(rows):
            parts.append(_Part(partition, int(buckets[first]), keys, futures, loop, started,
                               rows if partition is not None else None, count))
        else:
            parts.append(_Part(partition, int(buckets[first]), [keys[i] for i in idx], [futures[i] for i in idx],
                               loop, started, [rows[i] for i in idx] if partition is not None else None, count))
    return parts


class LookupSender:
    """Batches lookups of one table and sends them to the bucket leaders; lives on the I/O loop."""

    def __init__(self, io: IoThread, table: TableInfo, method: str, config) -> None:
        self.io = io
        self.client: ClusterClient = io.client
        self.table = table
        self.method = method
        self.policy = RetryPolicy.from_config(config)
        self.max_batch = max(1, int(config.lookup_max_batch_size))
        self.batch_timeout_s = max(0, int(config.lookup_batch_timeout_ms)) / 1000
        self.reader = SchemaReader(table, None, self._latest_info)  # rows of any schema id, this lookuper's columns
        self.arrow_schema = self.reader.schema
        self.requests_sent = 0
        metrics = self.client.metrics  # client.metrics.enabled: counted per request
        self.metrics = metrics.lookuper(table.table_path) if metrics is not None else None
        self._make_row = _dict_maker(self.arrow_schema.names)
        self._scalar_decoders: dict[tuple[int, str], Callable | None] = {}  # by (schema id, body format)
        self._pending: list[_Part] = []
        self._pending_keys = 0
        self._timer: asyncio.TimerHandle | None = None
        self._in_flight = 0
        self._tasks: set[asyncio.Task] = set()
        self._closed = False
        self.codec: _KeyCodec | None = None  # set by the lookuper: routes a partition's keys again

    # ------------------------------------------------------------ batching

    def add(self, parts: list[_Part]) -> None:
        """Queues keys; sends at once when nothing is in flight or a batch is full (see the module doc)."""
        if self._closed:
            _fail(parts, self.closed_error())
            return
        self._pending.extend(parts)
        self._pending_keys += sum(len(p.keys) for p in parts)
        if self._in_flight == 0 or self._pending_keys >= self.max_batch:
            self._flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.batch_timeout_s, self._flush)

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        parts, self._pending, self._pending_keys = self._pending, [], 0
        if parts:
            self._in_flight += 1
            task = asyncio.get_running_loop().create_task(self._send_all(parts, self._started(parts)))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def closed_error(self) -> FlussError:
        return FlussError(f"Lookuper of table '{self.table.table_path}' closed", ErrorCode.CLIENT_ERROR)

    # ------------------------------------------------------------ sending

    def _started(self, parts: list[_Part]) -> tuple[str, list[_Part], object] | None:
        """The request of a send of one bucket's keys (every lone lookup), started right here when its route is
        known without waiting (metadata cached, leader known): (leader, entries, gRPC call). None for every other
        send, which routes in its task (``_route_and_send``)."""
        if len(parts) != 1:
            return None
        p = parts[0]
        meta = self.client.tables.get(self.table.table_path)
        if p.partition is not None or len(p.keys) > self.max_batch or meta is None:
            return None
        tb = TableBucket(self.table.table_id, p.bucket)
        addr = self.client.leader_address(meta, tb)
        if addr is None:
            return None
        p.tb = tb
        try:
            return addr, parts, self._start(addr, parts)
        except Exception:  # noqa: BLE001 - the task sends it again the usual way and reports what fails
            return None

    def _start(self, addr: str, entries: list[_Part]):
        self.requests_sent += 1
        return self.client.start_tablet_call(addr, self.method, self._request(entries), self.client.request_timeout_s)

    async def _send_all(self, parts: list[_Part], started: tuple[str, list[_Part], object] | None = None) -> None:
        retry: list[_Part] = []
        try:
            retry = await (self._route_and_send(parts) if started is None else self._send(*started))
        except asyncio.CancelledError:
            _fail(parts, self.closed_error())
            raise
        except Exception as e:  # noqa: BLE001 - the lookups carry the error
            _fail(parts, _as_error(e))
        finally:
            self._in_flight -= 1
            if self._pending and self._in_flight == 0 and not self._closed:
                self._flush()  # what queued up while this request was out
        if not retry:
            return
        try:
            await asyncio.sleep(min(p.retry.delay_s() for p in retry))
            retry = await self._refresh(retry)
        except asyncio.CancelledError:
            _fail(retry, self.closed_error())
            raise
        except FlussError as e:
            if e.error_code in GONE_CODES:  # the table was dropped (or re-created): retrying cannot help
                _fail(retry, e)
                return
            log.debug("metadata refresh before a lookup retry failed: %s", e)
        except Exception as e:  # noqa: BLE001 - the retry goes ahead with the metadata it has
            log.debug("metadata refresh before a lookup retry failed: %s", e)
        if retry:
            self.add(retry)

    async def _route_and_send(self, parts: list[_Part]) -> list[_Part]:
        """Sends every key to its leader; returns the parts to try again."""
        names = {p.partition for p in parts if p.partition is not None}
        partition_ids = await self._partition_ids(names) if names else {}
        meta = self.client.tables.get(self.table.table_path) or await self.client.table(self.table.table_path)
        if names:
            parts = self._rerouted(parts, partition_ids, meta)
        merged: dict[tuple, _Part] = {}
        for p in parts:  # keys of one bucket that queued up in several hand-overs travel together
            k = (p.partition, p.bucket, p.loop)
            if k in merged:
                merged[k].absorb(p)
            else:
                merged[k] = p
        table_id = self.table.table_id
        by_leader: dict[str, list[_Part]] = defaultdict(list)
        retry: list[_Part] = []
        for p in merged.values():
            if p.partition is None:
                p.tb = TableBucket(table_id, p.bucket)
            else:
                pid = partition_ids.get(p.partition)
                if pid is None:  # no such partition: no such row
                    _settle([(p, [None if self.method == LOOKUP else [] for _ in p.keys])])
                    continue
                p.tb = TableBucket(table_id, p.bucket, pid)
            addr = self.client.leader_address(meta, p.tb)
            if addr is None:
                retry.extend(self._failed([p], FlussError(
                    f"Bucket {p.bucket} of table '{self.table.table_path}' has no leader",
                    ErrorCode.LEADER_NOT_AVAILABLE_EXCEPTION)))
            else:
                by_leader[addr].append(p)
        if len(by_leader) == 1:  # one leader (every lone lookup): no task to gather
            results = [await self._send(*next(iter(by_leader.items())))]
        else:
            results = await asyncio.gather(*(self._send(addr, ps) for addr, ps in by_leader.items()))
        for failed in results:
            retry.extend(failed)
        return retry

    def _rerouted(self, parts: list[_Part], partition_ids: dict[str, int], meta) -> list[_Part]:
        """The parts again, those of a partition whose bucket count is not the one their keys were routed by
        (it was not cached when they were encoded) split anew by the partition's own count."""
        out = []
        for p in parts:
            pid = partition_ids.get(p.partition) if p.partition is not None else None
            if pid is None or p.rows is None or self.codec is None or meta.bucket_count(pid) == p.bucket_count:
                out.append(p)
                continue
            encoded = self.codec.encode_many(p.rows, meta.bucket_count(pid))
            for part in parts_of(encoded, p.rows, p.futures, p.loop, p.started):
                part.retry = p.retry
                out.append(part)
        return out

    def _request(self, entries: list[_Part]):
        if self.method == LOOKUP:
            return pb.LookupRequest(table_id=self.table.table_id, buckets=[
                pb.LookupBucketPb(partition_id=p.tb.partition_id_or_none_value, bucket_id=p.bucket, keys=p.keys)
                for p in entries])
        return pb.PrefixLookupRequest(table_id=self.table.table_id, buckets=[
            pb.PrefixLookupBucketPb(partition_id=p.tb.partition_id_or_none_value, bucket_id=p.bucket,
                                    prefixes=p.keys) for p in entries])

    async def _send(self, addr: str, parts: list[_Part], call=None) -> list[_Part]:
        """One request to one leader: every bucket's keys, in entries of at most ``max_batch`` keys (``call``: the
        request of ``parts``, which are its entries, already started by ``_started``)."""
        if call is None:
            m = self.max_batch
            entries = [p.slice(lo, min(lo + m, len(p.keys))) for p in parts for lo in range(0, len(p.keys), m)]
            call = self._start(addr, entries)
        else:
            entries = parts
        try:
            resp = await self.client.tablet_result(addr, self.method, call)
        except FlussError as err:
            return self._failed(entries, err)
        answered: dict[tuple[int, int], deque] = defaultdict(deque)
        for r in resp.buckets:  # in request order; a bucket may have several entries
            answered[(r.partition_id, r.bucket_id)].append(r)
        retry: list[_Part] = []
        ok: list[tuple[_Part, object]] = []
        for p in entries:
            waiting = answered.get((p.tb.partition_id_or_none_value, p.bucket))
            if not waiting:
                retry.extend(self._failed([p], FlussError(f"no result for bucket {p.tb}", ErrorCode.NETWORK_EXCEPTION)))
                continue
            r = waiting.popleft()
            err = to_error(r.error)
            if err is not None:
                retry.extend(self._failed([p], err))
            else:
                ok.append((p, r))
        metrics = self.metrics
        if metrics is not None:  # before the callers wake up: what they read afterwards includes this request
            metrics.requests.count += 1
            metrics.lookups.count += sum(len(p.keys) for p, _ in ok)
            metrics.latency.update((time.monotonic() - min(p.started for p in entries)) * 1000)
        if ok:
            batches = [LogBatch(r.rows) if r.rows else None for _, r in ok]
            if not self.reader.knows_all(b for b in batches if b is not None):
                try:
                    await self.reader.learn(b for b in batches if b is not None)
                except FlussError as err:  # the table info could not be fetched: the entries are retried
                    return retry + self._failed([p for p, _ in ok], err)
            self._deliver(ok, batches)
        return retry

    async def _latest_info(self) -> TableInfo:
        return (await self.client.table(self.table.table_path, refresh=True)).info

    def _failed(self, parts: list[_Part], err: FlussError) -> list[_Part]:
        """Records a failed attempt of each part (``retry.RetryPolicy``); returns those to try again and fails the
        others with their final error."""
        again = []
        for p in parts:
            if p.retry is None:
                p.retry = self.policy.start(f"{self.method} on bucket {p.bucket} of table '{self.table.table_path}'",
                                            p.started)
            if p.retry.failed(err) is RetryAction.FAIL:
                _fail([p], p.retry.final_error())
            else:
                again.append(p)
        return again

    def _deliver(self, answers: list[tuple[_Part, object]], batches: list[LogBatch | None]) -> None:
        """Resolves the answered entries of one response (``batches``: each one's rows, parsed); the rows of all
        of them are decoded in one pass."""
        lookup = self.method == LOOKUP
        rows = self._rows([b for b in batches if b is not None])
        settled: list[tuple[_Part, list]] = []
        start = 0
        for (p, r), batch in zip(answers, batches, strict=True):
            shape = list(r.found) if lookup else list(r.counts)
            n = batch.record_count if batch is not None else 0
            mine = rows[start:start + n]
            start += n
            if len(shape) != len(p.keys) or sum(shape) != n:
                what = "found flags" if lookup else "counts"
                _fail([p], FlussError(f"Malformed {self.method} answer for {p.tb}: {len(p.keys)} keys, {len(shape)} "
                                      f"{what} adding up to {sum(shape)}, {n} rows", ErrorCode.CORRUPT_MESSAGE))
                continue
            if lookup:
                if n != len(shape):
                    it = iter(mine)
                    mine = [next(it) if f else None for f in shape]
            else:
                at = 0
                per_prefix = []
                for count in shape:
                    per_prefix.append(mine[at:at + count])
                    at += count
                mine = per_prefix
            settled.append((p, mine))
        _settle(settled)

    def _rows(self, parsed: list[LogBatch]) -> list[dict]:
        if not parsed:
            return []
        if sum(b.record_count for b in parsed) <= SCALAR_ROWS_MAX:
            rows = self._scalar_rows(parsed)
            if rows is not None:
                return rows
        batches = [self.reader.read_rows(b) for b in parsed]
        return _to_dicts(batches[0] if len(batches) == 1 else pa.Table.from_batches(batches), self._make_row)

    def _scalar_rows(self, batches: list[LogBatch]) -> list[dict] | None:
        """The rows of a few row-format batches (the stored values a tablet server answers small lookups with)
        read field by field (``fluss.record.row_scalar``); None when a batch is Arrow or has a column type the
        per-field decoder does not handle (the caller decodes through Arrow)."""
        out: list[dict] = []
        make_row = self._make_row
        for b in batches:
            key = (b.schema_id, b.body_format)
            decode = self._scalar_decoders.get(key, False)
            if decode is False:
                decode = self._scalar_decoders[key] = self._scalar_decoder(*key)
            if decode is None:
                return None
            out.extend(make_row(*decode(row)) for row in body_rows(b.body(), b.record_count))
        return out

    def _scalar_decoder(self, schema_id: int, fmt: str) -> Callable[[memoryview], list] | None:
        """Reads one stored row of ``schema_id`` as this lookuper's columns (those added after the row was
        written are None, those added after the lookuper was created dropped)."""
        history, columns = self.reader.history, self.reader.columns
        if fmt == "ARROW" or self.reader.projection is not None or not history.knows(schema_id):
            return None
        held = history.column_count(schema_id)
        decode = row_decoder(pa.schema([history.schema.field(c) for c in range(held)]), fmt)
        if decode is None:
            return None
        if columns == list(range(held)):
            return decode
        return lambda row: (lambda values: [values[c] if c < held else None for c in columns])(decode(row))

    async def _partition_ids(self, names: set[str]) -> dict[str, int]:
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

    async def _refresh(self, parts: list[_Part]) -> list[_Part]:
        """Refreshes the table's metadata; keys of a partition dropped meanwhile have no row (None / [])."""
        pids = {p.tb.partition_id for p in parts if p.tb is not None and p.tb.partition_id is not None}
        gone = await refresh_table(self.client, self.table, pids)
        if not gone:
            return parts
        empty = [p for p in parts if p.tb is not None and p.tb.partition_id in gone]
        _settle([(p, [None if self.method == LOOKUP else [] for _ in p.keys]) for p in empty])
        return [p for p in parts if p not in empty]

    async def close(self) -> None:
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        pending, self._pending, self._pending_keys = self._pending, [], 0
        _fail(pending, self.closed_error())
        for task in list(self._tasks):
            task.cancel()


# ---------------------------------------------------------------- rows and futures


def _dict_maker(names: list[str]) -> Callable[..., dict]:
    """A function of one value per column returning the row dict: a compiled dict display, about 3x
    cheaper per row than ``dict(zip(names, values))``. Names enter the source only as ``repr`` literals."""
    params = ", ".join(f"v{i}" for i in range(len(names)))
    items = ", ".join(f"{name!r}: v{i}" for i, name in enumerate(names))
    return eval(f"lambda {params}: {{{items}}}", {})  # noqa: S307


def _to_dicts(batch: pa.RecordBatch | pa.Table, make_row: Callable[..., dict]) -> list[dict]:
    """The rows of ``batch`` as dicts (column-wise conversion to Python values, as ``batch_to_pylist``)."""
    columns = [_column_to_python(batch.column(i)) for i in range(batch.num_columns)]
    return list(map(make_row, *columns))


def _as_error(e: BaseException) -> FlussError:
    return e if isinstance(e, FlussError) else FlussError(f"{type(e).__name__}: {e}", ErrorCode.CLIENT_ERROR)


def _settle(results: list[tuple[_Part, list]]) -> None:
    """Resolves the futures of parts with their values: one ``call_soon_threadsafe`` per caller loop."""
    if len(results) == 1:
        p, values = results[0]
        _call_in(p.loop, _resolve_futures, p.futures, values, None)
        return
    by_loop: dict[asyncio.AbstractEventLoop, list] = defaultdict(list)
    for p, values in results:
        by_loop[p.loop].append((p.futures, values))
    for loop, batches in by_loop.items():
        _call_in(loop, _resolve_batches, batches)


def _fail(parts: list[_Part], err: FlussError) -> None:
    by_loop: dict[asyncio.AbstractEventLoop, list] = defaultdict(list)
    for p in parts:
        by_loop[p.loop].extend(p.futures)
    for loop, futures in by_loop.items():
        _call_in(loop, _resolve_futures, futures, None, err)


def _call_in(loop: asyncio.AbstractEventLoop, fn, *args) -> None:
    try:
        loop.call_soon_threadsafe(fn, *args)
    except RuntimeError:  # the caller's loop is closed: nobody waits for these
        pass


def _resolve_batches(batches: list[tuple[list[asyncio.Future], list]]) -> None:
    for futures, values in batches:
        _resolve_futures(futures, values, None)


def _resolve_futures(futures: list[asyncio.Future], values: list | None, error: BaseException | None) -> None:
    """On the caller's loop: the results (or the error) of a batch of lookups."""
    if error is not None:
        for f in futures:
            if not f.done():
                f.set_exception(error)
        return
    for f, v in zip(futures, values, strict=True):
        if not f.done():
            f.set_result(v)


__all__ = ["Lookuper", "PrefixLookuper", "TableLookup", "check_prefix_columns"]
