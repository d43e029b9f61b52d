"""The bucket function: which bucket of a table (or partition) a row with a bucket key belongs to.

Specification (ARCHITECTURE.md contract 3; pinned by ``docs/key-test-vectors.json``)::

    key    = encode_key(bucket-key values)               (fluss.key.encoding)
    hash   = MurmurHash3_x86_32(key, seed = 0)           (unsigned 32-bit)
    bucket = (hash & 0x7fffffff) % num_buckets

MurmurHash3_x86_32 is Austin Appleby's function: 4-byte little-endian blocks, c1 = 0xcc9e2d51,
c2 = 0x1b873593, rotations 15 and 13, h = h * 5 + 0xe6546b64, the 1-3 byte tail, ``h ^= len`` and the
fmix32 finaliser. In Java it is Guava's ``Hashing.murmur3_32_fixed(0).hashBytes(key).asInt()`` (signed; the
``& 0x7fffffff`` makes it the same number). Known values: ``murmur3_32(b"") == 0``,
``murmur3_32(b"hello") == 0x248bfa47``.

Tables without a bucket key do not use this module (the writer picks buckets sticky or round-robin).

:func:`murmur3_32` is the scalar reference; :func:`murmur3_32_batch` hashes many keys with numpy (one pass
per 4-byte block position over the keys that are that long), and :func:`bucket_ids` is the write hot path.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from fluss.errors import ErrorCode, FlussError
from fluss.key.encoding import EncodedKeys, encode_key_buffers

_C1 = 0xCC9E2D51
_C2 = 0x1B873593
_M32 = 0xFFFFFFFF


def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _fmix32(h: int) -> int:
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    h ^= h >> 16
    return h


def murmur3_32(data: bytes, seed: int = 0) -> int:
    """MurmurHash3 x86 32-bit of ``data`` (scalar reference), as an unsigned int in [0, 2^32)."""
    data = bytes(data)
    length = len(data)
    h = seed & _M32
    nblocks = length // 4
    for i in range(nblocks):
        k = int.from_bytes(data[4 * i : 4 * i + 4], "little")
        k = (k * _C1) & _M32
        k = _rotl32(k, 15)
        k = (k * _C2) & _M32
        h ^= k
        h = _rotl32(h, 13)
        h = (h * 5 + 0xE6546B64) & _M32
    tail = data[4 * nblocks :]
    if tail:
        k = int.from_bytes(tail, "little")
        k = (k * _C1) & _M32
        k = _rotl32(k, 15)
        k = (k * _C2) & _M32
        h ^= k
    h ^= length
    return _fmix32(h)


def _check_num_buckets(num_buckets: int) -> None:
    if isinstance(num_buckets, bool) or not isinstance(num_buckets, int | np.integer) or num_buckets < 1:
        raise FlussError(
            f"bucket count must be a positive integer, got {num_buckets!r}", ErrorCode.CLIENT_ERROR
        )


def bucket_of(key: bytes, num_buckets: int) -> int:
    """The bucket of one encoded key."""
    _check_num_buckets(num_buckets)
    return (murmur3_32(key) & 0x7FFFFFFF) % num_buckets


# ===================================================================================== vectorised

_U32 = np.uint32


def _mix_k(k: np.ndarray) -> np.ndarray:
    """The block mix of k (in place on a fresh uint32 array)."""
    k *= _U32(_C1)
    spill = k >> _U32(17)
    k <<= _U32(15)
    k |= spill
    k *= _U32(_C2)
    return k


def _mix_h(h: np.ndarray, k: np.ndarray) -> np.ndarray:
    """One block step of h with a mixed k (in place on h)."""
    h ^= k
    spill = h >> _U32(19)
    h <<= _U32(13)
    h |= spill
    h *= _U32(5)
    h += _U32(0xE6546B64)
    return h


def _finish(h: np.ndarray, tail: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    h ^= _mix_k(tail)  # a zero tail mixes to zero, so keys without a tail are unaffected
    h ^= lengths.astype(_U32)
    h ^= h >> _U32(16)
    h *= _U32(0x85EBCA6B)
    h ^= h >> _U32(13)
    h *= _U32(0xC2B2AE35)
    h ^= h >> _U32(16)
    return h


_TAIL_MASK = np.array([0, 0xFF, 0xFFFF, 0xFFFFFF], dtype=_U32)


def murmur3_32_matrix(keys: np.ndarray, seed: int = 0) -> np.ndarray:
    """Hashes of equal-length keys given as an (n, L) uint8 matrix."""
    n, length = keys.shape
    nblocks = length // 4
    h = np.full(n, seed & _M32, dtype=_U32)
    if nblocks:
        blocks = np.ascontiguousarray(keys[:, : 4 * nblocks]).view("<u4").reshape(n, nblocks)
        for j in range(nblocks):
            h = _mix_h(h, _mix_k(blocks[:, j].astype(_U32)))
    tail = np.zeros(n, dtype=_U32)
    for j in range(length - 4 * nblocks):
        tail |= keys[:, 4 * nblocks + j].astype(_U32) << _U32(8 * j)
    return _finish(h, tail, np.full(n, length, dtype=np.int64))


def murmur3_32_flat(data: np.ndarray, offsets: np.ndarray, seed: int = 0) -> np.ndarray:
    """Hashes of keys packed as ``data[offsets[i]:offsets[i+1]]``."""
    n = len(offsets) - 1
    lengths = np.diff(offsets)
    if n == 0:
        return np.zeros(0, dtype=_U32)
    padded = np.zeros(len(data) + 4, dtype=np.uint8)
    padded[: len(data)] = data
    # A little-endian uint32 starting at every byte position (unaligned strided view, no copy).
    words = np.ndarray(shape=(len(data) + 1,), dtype="<u4", buffer=padded, strides=(1,))
    nblocks = lengths >> 2
    starts = offsets[:-1].astype(np.int64)
    h = np.full(n, seed & _M32, dtype=_U32)
    if int(nblocks.max()) > 0:
        # Group keys by block count (stable, so each group keeps ascending buffer positions), gather each
        # group's blocks as a (blocks, keys) matrix in one step, then mix block row by block row.
        if int(nblocks.min()) == int(nblocks.max()):
            order = np.arange(n)
        else:
            small = nblocks.astype(np.uint16) if nblocks.max() < 2**16 else nblocks
            order = np.argsort(small, kind="stable")
        group_ends = np.cumsum(np.bincount(nblocks))
        lo = int(group_ends[0])  # keys without a full block need no block steps
        for count in range(1, len(group_ends)):
            hi = int(group_ends[count])
            if hi == lo:
                continue
            rows = order[lo:hi] if hi - lo < n else slice(None)
            block_starts = np.arange(count, dtype=np.int64)[:, None] * 4
            blocks = words[block_starts + starts[rows][None, :]]
            hg = h[rows]
            for j in range(count):
                hg = _mix_h(hg, _mix_k(blocks[j].astype(_U32, copy=False)))  # blocks is scratch
            h[rows] = hg
            lo = hi
    tail = words[starts + 4 * nblocks].astype(_U32) & _TAIL_MASK[lengths & 3]
    return _finish(h, tail, lengths)


def murmur3_32_batch(keys: EncodedKeys | Sequence[bytes], seed: int = 0) -> np.ndarray:
    """Vectorised :func:`murmur3_32` of many keys (uint32 array)."""
    if not isinstance(keys, EncodedKeys):
        blobs = [bytes(k) for k in keys]
        lengths = np.fromiter((len(b) for b in blobs), dtype=np.int64, count=len(blobs))
        offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
        return murmur3_32_flat(np.frombuffer(b"".join(blobs), dtype=np.uint8), offsets, seed)
    if keys.matrix is not None:
        return murmur3_32_matrix(keys.matrix, seed)
    return murmur3_32_flat(keys.data, keys.offsets, seed)


def buckets_of_hashes(hashes: np.ndarray, num_buckets: int) -> np.ndarray:
    _check_num_buckets(num_buckets)
    return ((hashes & _U32(0x7FFFFFFF)) % _U32(num_buckets)).astype(np.int32)


def bucket_ids(
    batch: pa.RecordBatch | pa.Table, column_indices: Sequence[int], num_buckets: int
) -> np.ndarray:
    """The bucket (int32) of every row of ``batch`` by its bucket-key columns.

    ``batch`` must hold the table schema's Arrow types (conform it first).
    """
    _check_num_buckets(num_buckets)
    if num_buckets == 1:
        return np.zeros(batch.num_rows, dtype=np.int32)
    return buckets_of_hashes(murmur3_32_batch(encode_key_buffers(batch, column_indices)), num_buckets)


__all__ = [
    "bucket_ids",
    "bucket_of",
    "buckets_of_hashes",
    "murmur3_32",
    "murmur3_32_batch",
    "murmur3_32_flat",
    "murmur3_32_matrix",
]
