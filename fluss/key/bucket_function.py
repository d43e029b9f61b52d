"""Bucketing functions: which function routes a table's rows to buckets, fixed when the table is created.

A table's bucket function follows its lake format, as Fluss's ``BucketingFunction.of(lakeFormat)``:

* ``default`` - this project's own function (``fluss.key.bucketing``: the order-preserving key encoding of
  ``fluss.key.encoding``, MurmurHash3 seed 0, ``(hash & 0x7fffffff) % n``); tables without a lake format;
* ``paimon`` - Paimon's (``fluss.key.paimon_row``: the bucket key as a Paimon BinaryRow, MurmurHash3 seed 42,
  ``abs(hash % n)``); tables created on a cluster whose ``datalake.format`` is ``paimon``, so that Fluss
  bucket ``b`` and Paimon bucket ``b`` of the lake table hold the same keys.

The coordinator records the choice in the table's properties at creation (:data:`TABLE_BUCKET_FUNCTION`,
system-managed: a user may not set it) and it never changes: the KV store and log of every bucket were routed
with it. Tables created before the property existed have none and keep the ``default`` function they were
created with (also lake tables of that time: their lake tables were written bucket for bucket with it).
Every router reads it from the table info: the Python client (writes, lookups, prefix lookups, Union Read),
the Java connector (sink, lookups), and the tablet servers, which refuse a PutKv batch (and a produce batch of
a log table with a bucket key) holding a row of another bucket (``fluss.server.bucket_check``).

Only the bucket is lake-format specific: the RocksDB key of a row and the bytes of a (prefix) lookup stay this
project's order-preserving key encoding, so prefix lookups work the same for every table.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa

from fluss import table_options
from fluss.errors import ErrorCode, FlussError
from fluss.key.bucketing import (
    bucket_of,
    buckets_of_hashes,
    murmur3_32,
    murmur3_32_batch,
    murmur3_32_flat,
    murmur3_32_matrix,
)
from fluss.key.encoding import EncodedKeys, encode_key, encode_key_buffers
from fluss.key.paimon_row import PAIMON_HASH_SEED, RowGroup, binary_row_groups, encode_binary_row
from fluss.types import DataType

#: Table property naming the table's bucket function; set by the coordinator when the table is created.
TABLE_BUCKET_FUNCTION = table_options.BUCKET_FUNCTION.key
DEFAULT = "default"
PAIMON = "paimon"


def _check_num_buckets(num_buckets: int) -> None:
    if isinstance(num_buckets, bool) or not isinstance(num_buckets, int | np.integer) or num_buckets < 1:
        raise FlussError(f"bucket count must be a positive integer, got {num_buckets!r}", ErrorCode.CLIENT_ERROR)


class BucketingFunction(ABC):
    """Routes rows by their bucket-key values: vectorised over an Arrow batch, or one row of Python values."""

    name: str

    @abstractmethod
    def bucket_ids(self, batch: pa.RecordBatch | pa.Table, column_indices: Sequence[int], num_buckets: int,
                   types: Sequence[DataType] | None = None) -> np.ndarray:
        """The bucket (int32) of every row of ``batch`` (in the table schema's Arrow types) by the given
        bucket-key columns; ``types`` defaults to the Fluss types of those fields."""

    @abstractmethod
    def bucket_of(self, values: Sequence[object], types: Sequence[DataType], num_buckets: int) -> int:
        """The bucket of one row's bucket-key values (Python values)."""

    def __repr__(self) -> str:
        return f"BucketingFunction({self.name})"


class DefaultBucketing(BucketingFunction):
    """This project's own function (``fluss.key.bucketing``, spec in ``docs/keys-and-buckets.md``)."""

    name = DEFAULT

    def bucket_ids(self, batch, column_indices, num_buckets, types=None) -> np.ndarray:
        _check_num_buckets(num_buckets)
        if num_buckets == 1:
            return np.zeros(batch.num_rows, dtype=np.int32)
        return buckets_of_hashes(murmur3_32_batch(encode_key_buffers(batch, column_indices, types)), num_buckets)

    def bucket_of(self, values, types, num_buckets) -> int:
        return bucket_of(encode_key(values, types), num_buckets)


def paimon_hashes(rows: EncodedKeys | list[RowGroup]) -> np.ndarray:
    """Paimon's ``BinaryRow.hashCode()`` of every encoded row (or row group), as signed 32-bit ints."""
    if isinstance(rows, list):
        if len(rows) == 1 and rows[0].rows is None:
            return murmur3_32_matrix(rows[0].matrix, PAIMON_HASH_SEED).view(np.int32)
        n = sum(len(g.rows) for g in rows)
        hashes = np.empty(n, dtype=np.uint32)
        for g in rows:
            hashes[g.rows] = murmur3_32_matrix(g.matrix, PAIMON_HASH_SEED)
        return hashes.view(np.int32)
    if rows.matrix is not None:
        hashes = murmur3_32_matrix(rows.matrix, PAIMON_HASH_SEED)
    else:
        hashes = murmur3_32_flat(rows.data, rows.offsets, PAIMON_HASH_SEED)
    return hashes.view(np.int32)


def paimon_buckets_of_hashes(hashes: np.ndarray, num_buckets: int) -> np.ndarray:
    """``Math.abs(hash % numBuckets)`` with Java's remainder (it takes the sign of the hash)."""
    _check_num_buckets(num_buckets)
    return np.abs(np.fmod(hashes.astype(np.int64), np.int64(num_buckets))).astype(np.int32)


def paimon_bucket_of_row(row: bytes, num_buckets: int) -> int:
    """The bucket of one BinaryRow (``abs(hash % n)`` equals ``abs(hash) % n`` for Java's remainder)."""
    _check_num_buckets(num_buckets)
    h = murmur3_32(row, PAIMON_HASH_SEED)
    return abs(h - (1 << 32) if h >= 1 << 31 else h) % num_buckets


class PaimonBucketing(BucketingFunction):
    """Paimon's fixed-bucket function (``fluss.key.paimon_row``, spec in its docstring)."""

    name = PAIMON

    def bucket_ids(self, batch, column_indices, num_buckets, types=None) -> np.ndarray:
        _check_num_buckets(num_buckets)
        if num_buckets == 1:
            return np.zeros(batch.num_rows, dtype=np.int32)
        return paimon_buckets_of_hashes(paimon_hashes(binary_row_groups(batch, column_indices, types)),
                                        num_buckets)

    def bucket_of(self, values, types, num_buckets) -> int:
        return paimon_bucket_of_row(encode_binary_row(values, types), num_buckets)


BUCKETING_FUNCTIONS: dict[str, BucketingFunction] = {f.name: f for f in (DefaultBucketing(), PaimonBucketing())}
#: Bucket function of the tables of each lake format (``datalake.format``); no lake format: ``default``.
LAKE_FORMAT_BUCKETING = {"paimon": PAIMON}


def bucketing_function(name: str) -> BucketingFunction:
    """The bucket function registered under ``name``; raises naming the allowed ones otherwise."""
    try:
        return BUCKETING_FUNCTIONS[name.strip().lower()]
    except (KeyError, AttributeError):
        raise FlussError(f"Unknown bucket function {name!r} in '{TABLE_BUCKET_FUNCTION}' (known: "
                         f"{', '.join(BUCKETING_FUNCTIONS)})", ErrorCode.INVALID_CONFIG_EXCEPTION) from None


def bucketing_for_lake_format(lake_format: str | None) -> BucketingFunction:
    """The function a new table gets on a cluster with this ``datalake.format`` (None: no lake)."""
    if not lake_format:
        return BUCKETING_FUNCTIONS[DEFAULT]
    name = LAKE_FORMAT_BUCKETING.get(lake_format.strip().lower())
    if name is None:
        raise FlussError(f"Unsupported datalake.format {lake_format!r} (supported: {', '.join(LAKE_FORMAT_BUCKETING)})",
                         ErrorCode.INVALID_CONFIG_EXCEPTION)
    return BUCKETING_FUNCTIONS[name]


def bucketing_of_properties(properties: Mapping[str, str]) -> BucketingFunction:
    """The function recorded in a table's properties (none recorded: a table from before, ``default``)."""
    name = properties.get(TABLE_BUCKET_FUNCTION)
    return BUCKETING_FUNCTIONS[DEFAULT] if name is None else bucketing_function(name)


def bucketing_of(info) -> BucketingFunction:
    """The bucket function of a table (a ``TableInfo``)."""
    return bucketing_of_properties(info.get_properties())


__all__ = [
    "BUCKETING_FUNCTIONS",
    "DEFAULT",
    "PAIMON",
    "TABLE_BUCKET_FUNCTION",
    "BucketingFunction",
    "DefaultBucketing",
    "PaimonBucketing",
    "bucketing_for_lake_format",
    "bucketing_function",
    "bucketing_of",
    "bucketing_of_properties",
    "paimon_bucket_of_row",
    "paimon_buckets_of_hashes",
    "paimon_hashes",
]
