"""Server tags (Fluss's ``ServerTag``; docs/cluster-operations.md): what the coordinator does for a tagged server.

* ``PERMANENT_OFFLINE``: the server is drained. Every bucket it hosts is reassigned (``reassignment.py``) to the
  same replicas with this server replaced by another live, untagged server (:func:`drain_target`); new tables and
  partitions get no replica on it; a reassignment may not move replicas onto it. When every replica has moved the
  server can be stopped and retired.
* ``TEMPORARY_OFFLINE``: the server keeps its replicas (they stay in the ISR and keep replicating) but leads
  nothing: its leaderships move to other in-sync replicas, elections prefer other replicas, and a new bucket's
  preferred leader is another replica when it has one. Removing the tag moves the leadership of the buckets whose
  preferred (first) replica it is back to it.

Tags live in ZooKeeper (``/server_tags``), so a new coordinator keeps draining.
"""

from __future__ import annotations

from collections.abc import Mapping

from fluss.errors import ErrorCode, FlussError
from fluss.metadata import ServerTag


def parse_tag(value: int) -> ServerTag:
    try:
        return ServerTag(value)
    except ValueError:
        raise FlussError(f"Unknown server tag {value}: expected {', '.join(f'{t.value} ({t.name})' for t in ServerTag)}",
                         ErrorCode.INVALID_CONFIG_EXCEPTION) from None


def check_tag_request(server_ids: list[int], what: str) -> None:
    if not server_ids:
        raise FlussError(f"No tablet server to {what}", ErrorCode.SERVER_NOT_EXIST_EXCEPTION)
    if len(set(server_ids)) != len(server_ids):
        twice = sorted({s for s in server_ids if server_ids.count(s) > 1})
        raise FlussError(f"Tablet server(s) {twice} listed more than once", ErrorCode.SERVER_NOT_EXIST_EXCEPTION)


def drain_target(replicas: list[int], leaving: int, candidates: list[int], racks: Mapping[int, str | None],
                 load: Mapping[int, int]) -> list[int] | None:
    """``replicas`` with ``leaving`` replaced (in place) by a candidate that holds no replica of the bucket: one on
    a rack the other replicas do not use first (when servers have racks), then the least loaded, then the lowest
    id; None when no candidate is left."""
    others = [r for r in replicas if r != leaving]
    used_racks = {racks.get(r) for r in others if racks.get(r)}
    free = [c for c in candidates if c not in replicas]
    if not free:
        return None
    chosen = min(free, key=lambda c: (bool(racks.get(c)) and racks.get(c) in used_racks, load.get(c, 0), c))
    return [chosen if r == leaving else r for r in replicas]


def leaders_last(candidates: list[int], avoid: set[int]) -> list[int]:
    """The candidates for leadership with the servers that should not lead (tagged) at the end."""
    return [c for c in candidates if c not in avoid] + [c for c in candidates if c in avoid]
