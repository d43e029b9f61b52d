"""Online reassignment of buckets' replicas (docs/cluster-operations.md): the checks of a request and the decisions
of each step, as pure functions the event processor applies.

A bucket moves from its ``original`` replicas to ``target`` in three steps, each recorded in ZooKeeper before the
tablet servers are told:

1. **Widen**: the assignment becomes ``original + (target - original)`` together with the reassignment record (one
   transaction). The new replicas are created as followers and catch up by follower fetch; the leader adds each to
   the ISR once it has caught up (AdjustIsr), as for any follower.
2. **Finish**, once every target replica is in the ISR: leadership moves to the first live target replica of the
   ISR if the leader is not a target (leader epoch + 1), the ISR drops the removed replicas (bucket epoch + 1), then
   the assignment becomes ``target`` and the record is deleted (one transaction).
3. **Clean up**: the removed replicas are stopped and their local files deleted (their remote log and KV snapshots
   stay: they belong to the bucket, not to one replica).

Every step is idempotent and derived from ZooKeeper's state, so a coordinator that takes over mid-way reads the
records and goes on from wherever the last one stopped.
"""

from __future__ import annotations

from dataclasses import dataclass

from fluss.errors import ErrorCode, FlussError
from fluss.server.zk.data import LeaderAndIsr

#: The most buckets one request may move (a request is one ZooKeeper transaction).
MAX_BUCKETS_PER_REQUEST = 1000


def check_targets(targets: dict[int, list[int]], bucket_count: int, live: set[int], ineligible: set[int],
                  where: str, retiring: set[int] = frozenset()) -> None:
    """Raises naming the first problem of a request: no bucket, a bucket out of range, an empty replica set,
    a server listed twice, a server that is not a live tablet server, one that is stopping, or one being drained
    (``retiring``: tagged PERMANENT_OFFLINE)."""
    if not targets:
        raise FlussError(f"No bucket to reassign in the request for {where}", ErrorCode.INVALID_REPLICATION_FACTOR)
    if len(targets) > MAX_BUCKETS_PER_REQUEST:
        raise FlussError(f"A reassignment request moves at most {MAX_BUCKETS_PER_REQUEST} buckets "
                         f"({len(targets)} for {where})", ErrorCode.INVALID_REPLICATION_FACTOR)
    for bucket, replicas in sorted(targets.items()):
        if not 0 <= bucket < bucket_count:
            raise FlussError(f"Bucket {bucket} does not exist in {where} (buckets 0..{bucket_count - 1})",
                             ErrorCode.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION)
        if not replicas:
            raise FlussError(f"Bucket {bucket} of {where}: the new replica set is empty",
                             ErrorCode.INVALID_REPLICATION_FACTOR)
        if len(set(replicas)) != len(replicas):
            twice = sorted({r for r in replicas if replicas.count(r) > 1})
            raise FlussError(f"Bucket {bucket} of {where}: tablet server(s) {twice} listed more than once in "
                             f"{replicas}", ErrorCode.INVALID_REPLICATION_FACTOR)
        unknown = [r for r in replicas if r not in live]
        if unknown:
            raise FlussError(f"Bucket {bucket} of {where}: tablet server(s) {unknown} are not live tablet servers "
                             f"(live: {sorted(live)})", ErrorCode.SERVER_NOT_EXIST_EXCEPTION)
        stopping = [r for r in replicas if r in ineligible]
        if stopping:
            raise FlussError(f"Bucket {bucket} of {where}: tablet server(s) {stopping} are shutting down or cannot "
                             "write their disk", ErrorCode.INELIGIBLE_REPLICA_EXCEPTION)
        drained = [r for r in replicas if r in retiring]
        if drained:
            raise FlussError(f"Bucket {bucket} of {where}: tablet server(s) {drained} are tagged PERMANENT_OFFLINE "
                             "(being drained)", ErrorCode.INELIGIBLE_REPLICA_EXCEPTION)


def widened(original: list[int], target: list[int]) -> list[int]:
    """The replica set while a bucket moves: the original replicas (the leader among them) and the new ones."""
    return list(original) + [r for r in target if r not in original]


@dataclass(frozen=True)
class Finish:
    """The bucket's leader and ISR once it has moved (``changed``: they differ from the current ones)."""

    leader_and_isr: LeaderAndIsr
    changed: bool


def finish_step(lai: LeaderAndIsr, target: list[int], live: set[int], ineligible: set[int],
                coordinator_epoch: int, avoid: set[int] = frozenset()) -> Finish | None:
    """What finishes a move, or None while a target replica is outside the ISR (or no target replica can lead).
    A new leader is taken among the target replicas, those in ``avoid`` (tagged servers) last."""
    if any(r not in lai.isr for r in target):
        return None
    if lai.leader in target and lai.leader in live:
        leader = lai.leader
    else:
        ordered = [r for r in target if r not in avoid] + [r for r in target if r in avoid]
        candidates = [r for r in ordered if r in lai.isr and r in live and r not in ineligible]
        if not candidates:
            return None
        leader = candidates[0]
    isr = [r for r in lai.isr if r in target]
    if leader == lai.leader and isr == lai.isr:
        return Finish(lai, False)
    epoch = lai.leader_epoch + (1 if leader != lai.leader else 0)
    return Finish(LeaderAndIsr(leader, epoch, isr, coordinator_epoch, lai.bucket_epoch + 1), True)
