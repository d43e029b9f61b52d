"""Bucket replica placement: which tablet servers host each bucket, the first replica being the leader.

Buckets of one table rotate over the sorted live servers starting at an offset derived from the table id
(or partition id), so leaders of one table are spread evenly and different tables start on different servers.
"""

from __future__ import annotations

from fluss.errors import ErrorCode, FlussError


def assign_replicas(bucket_count: int, replication_factor: int, servers: list[int], seed: int) -> dict[int, list[int]]:
    live = sorted(servers)
    if not live:
        raise FlussError("No tablet server is available to host the buckets", ErrorCode.INVALID_REPLICATION_FACTOR)
    if replication_factor < 1 or replication_factor > len(live):
        raise FlussError(
            f"Replication factor {replication_factor} is invalid: it must be between 1 and the number of live "
            f"tablet servers ({len(live)})", ErrorCode.INVALID_REPLICATION_FACTOR)
    n = len(live)
    start = seed % n
    # followers shift by a per-table step so that replica sets differ between buckets
    step = 1 + (seed // n) % max(1, n - 1) if n > 1 else 0
    out: dict[int, list[int]] = {}
    for bucket in range(bucket_count):
        leader_index = (start + bucket) % n
        replicas = [live[leader_index]]
        for i in range(1, replication_factor):
            replicas.append(live[(leader_index + i * step) % n] if step else live[(leader_index + i) % n])
        if len(set(replicas)) != len(replicas):  # step collided: fall back to consecutive servers
            replicas = [live[(leader_index + i) % n] for i in range(replication_factor)]
        out[bucket] = replicas
    return out
