"""Bucket replica placement: which tablet servers host each bucket, the first replica being the leader.

Without racks (no live server sets ``tablet-server.rack``), buckets of one table rotate over the sorted live servers
starting at an offset derived from the table id (or partition id), so leaders of one table are spread evenly and
different tables start on different servers; followers follow at a per-table step.

With racks (every live server sets one), placement is rack-aware as Fluss documents it: each bucket's replicas span
``min(#racks, replication factor)`` racks, and when racks are fewer than the replication factor the replicas are
spread over them as evenly as the racks' sizes allow (the next replica always goes to a least-loaded rack that still
has a server without one). Servers are arranged rack by rack in
turn (r1's first, r2's first, ..., r1's second, ...); leaders rotate over that arrangement, so every server leads
the same number of buckets whatever the racks' sizes. Each follower is the next server (at a per-table shift) in a
rack that holds fewer of the bucket's replicas than any other rack still having an unused server.

A mix (some live servers with a rack, some without) is refused, as Fluss refuses it: rack awareness needs the rack of
every server.
"""

from __future__ import annotations

from collections.abc import Mapping

from fluss.errors import ErrorCode, FlussError


def assign_replicas(bucket_count: int, replication_factor: int, servers: Mapping[int, str | None] | list[int],
                    seed: int) -> dict[int, list[int]]:
    """``{bucket: [server ids]}``; ``servers`` maps each live server id to its rack (None: no rack), or lists ids."""
    racks = dict(servers) if isinstance(servers, Mapping) else {sid: None for sid in servers}
    live = sorted(racks)
    if not live:
        raise FlussError("No tablet server is available to host the buckets", ErrorCode.INVALID_REPLICATION_FACTOR)
    if replication_factor < 1 or replication_factor > len(live):
        raise FlussError(
            f"Replication factor {replication_factor} is invalid: it must be between 1 and the number of live "
            f"tablet servers ({len(live)})", ErrorCode.INVALID_REPLICATION_FACTOR)
    if rack_aware(racks):
        return _rack_aware(bucket_count, replication_factor, {sid: str(r) for sid, r in racks.items()}, seed)
    return _rotating(bucket_count, replication_factor, live, seed)


def rack_aware(racks: Mapping[int, str | None]) -> bool:
    """Whether placement over these servers (id -> rack) is rack-aware; raises when only some have a rack."""
    without = sorted(sid for sid, rack in racks.items() if not rack)
    if without and len(without) < len(racks):
        raise FlussError(
            f"Tablet servers {without} have no tablet-server.rack while others have one: set tablet-server.rack on "
            "every tablet server (or on none) for rack-aware replica placement",
            ErrorCode.INVALID_SERVER_RACK_INFO_EXCEPTION)
    return bool(racks) and not without


def _rotating(bucket_count: int, replication_factor: int, live: list[int], seed: int) -> dict[int, list[int]]:
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


def rack_alternated(racks: Mapping[int, str]) -> list[int]:
    """Server ids taking one from each rack in turn (racks and ids sorted): ``a1, b1, c1, a2, b2, ...``."""
    by_rack: dict[str, list[int]] = {}
    for sid in sorted(racks):
        by_rack.setdefault(racks[sid], []).append(sid)
    columns = [by_rack[r] for r in sorted(by_rack)]
    return [col[i] for i in range(max(len(c) for c in columns)) for col in columns if i < len(col)]


def _rack_aware(bucket_count: int, replication_factor: int, racks: dict[int, str], seed: int
                ) -> dict[int, list[int]]:
    arranged = rack_alternated(racks)
    n = len(arranged)
    start = seed % n
    shift = (seed // n) % max(1, n - 1)
    out: dict[int, list[int]] = {}
    for bucket in range(bucket_count):
        leader_index = (start + bucket) % n
        if bucket > 0 and leader_index == start:
            shift += 1  # a new round over the servers: other follower sets
        # every other server once, starting at a shift that differs per table and per round
        others = [arranged[(leader_index + 1 + (shift + k) % (n - 1)) % n] for k in range(n - 1)] if n > 1 else []
        replicas = [arranged[leader_index]]
        count = {r: 0 for r in set(racks.values())}
        count[racks[replicas[0]]] += 1
        while len(replicas) < replication_factor:
            unused = [sid for sid in others if sid not in replicas]
            # the racks that can still take a replica; the least loaded of them gets the next one
            fewest = min(count[racks[sid]] for sid in unused)
            chosen = next(sid for sid in unused if count[racks[sid]] == fewest)
            replicas.append(chosen)
            count[racks[chosen]] += 1
        out[bucket] = replicas
    return out
