"""A rebalance's record and its bookkeeping (docs/cluster-operations.md, "Rebalance"), as pure functions the event
processor applies.

The plan (``rebalance_planner.py``) is stored in ZooKeeper (``/rebalance``) with its id, goals, overall status and
each bucket's status before any bucket moves, and rewritten whenever a status changes, so a coordinator that takes
over goes on from where the last one stopped. Each bucket is moved by the reassignment machinery
(``reassignment.py``: online, throttled, itself recorded in ZooKeeper), at most ``max_inflight`` at a time:

``NOT_STARTED`` -> ``REBALANCING`` (its reassignment started; or, when only the leader changes, elected at once)
-> ``COMPLETED`` (its reassignment finished; the first new replica was made leader) or ``FAILED`` (its table or
partition was dropped, or a target server is gone / being retired when it is its turn). Cancel turns every
``NOT_STARTED`` bucket ``CANCELED``; buckets already moving finish their move (not rolled back).

Overall status: ``CANCELED`` once cancelled; else ``NOT_STARTED`` while no bucket started, ``REBALANCING`` while a
bucket is not final, then ``COMPLETED`` (or ``FAILED`` if a bucket failed).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from fluss.metadata import RebalanceStatus

S = RebalanceStatus


@dataclass
class RebalanceBucket:
    table_id: int
    partition_id: int  # -1: not partitioned
    bucket: int
    original_replicas: list[int]
    original_leader: int
    new_replicas: list[int]  # the new leader first
    status: int = S.NOT_STARTED.value
    size: int = 0  # bytes of one replica when planned (its leader's report; 0: unknown)

    @property
    def key(self) -> tuple[int, int, int]:
        return (self.table_id, self.partition_id, self.bucket)


@dataclass
class RebalanceRecord:
    rebalance_id: str
    goals: list[int]
    status: int
    created_time: int
    buckets: list[RebalanceBucket] = field(default_factory=list)

    @property
    def active(self) -> bool:
        return not S(self.status).is_final

    def progress(self) -> float:
        if not self.buckets:
            return 1.0
        return sum(1 for b in self.buckets if S(b.status).is_final) / len(self.buckets)

    def encode(self) -> bytes:
        return json.dumps(asdict(self), separators=(",", ":")).encode()

    @staticmethod
    def decode(data: bytes) -> RebalanceRecord:
        raw = json.loads(data)
        buckets = [RebalanceBucket(**b) for b in raw.pop("buckets", [])]
        return RebalanceRecord(**raw, buckets=buckets)


def overall_status(rec: RebalanceRecord) -> RebalanceStatus:
    """The rebalance's status from its buckets' (a cancelled rebalance stays ``CANCELED``)."""
    if rec.status == S.CANCELED:
        return S.CANCELED
    statuses = [S(b.status) for b in rec.buckets]
    if not all(s.is_final for s in statuses):
        return S.NOT_STARTED if all(s == S.NOT_STARTED for s in statuses) else S.REBALANCING
    return S.FAILED if S.FAILED in statuses else S.COMPLETED


def cancel(rec: RebalanceRecord) -> int:
    """Cancels what has not started; returns how many buckets were cancelled. Moves in flight go on."""
    n = 0
    for b in rec.buckets:
        if b.status == S.NOT_STARTED:
            b.status = S.CANCELED.value
            n += 1
    rec.status = S.CANCELED.value
    return n


def settle_in_flight(b: RebalanceBucket, exists: bool, moving: bool, replicas: list[int] | None) -> S | None:
    """The new status of a ``REBALANCING`` bucket, or None while its move goes on: ``exists`` (its table or
    partition is still there), ``moving`` (its reassignment record is still there), ``replicas`` (its assignment)."""
    if not exists:
        return S.FAILED
    if moving:
        return None
    if replicas is not None and sorted(replicas) == sorted(b.new_replicas):
        return S.COMPLETED
    return S.FAILED  # the move ended elsewhere (e.g. drained by a server tag meanwhile)
