"""The rebalance planner (docs/cluster-operations.md, "Rebalance"): a pure function from the cluster's layout to the
buckets that should move, with Fluss's goal types.

Input: each bucket's replicas (the assignment, preferred leader first) and its actual leader; the live servers with
their racks; the servers tagged ``PERMANENT_OFFLINE`` (they get nothing: every replica on them moves) and
``TEMPORARY_OFFLINE`` (they keep replicas but lead nothing); the goals in priority order.

* Replicas on servers that are not live are left alone and not counted (they may come back); replicas on
  ``PERMANENT_OFFLINE`` servers always move (whatever the goals), to the least loaded eligible server.
* ``RACK_AWARE``: a bucket whose replicas crowd a rack while another rack has fewer (more than one apart, or two on
  one rack while a rack has none) gets a replica moved to the least used rack. Racks are honored by every goal
  whether or not it is listed: a move never puts a replica on a rack that already holds more of the bucket than
  another rack does.
* ``REPLICA_DISTRIBUTION``: while the most and least loaded eligible servers differ by two replicas or more, one
  replica moves from a most loaded server to a least loaded one (a follower before a leader; when sizes are known,
  the bucket whose move brings the two servers' bytes closest). Each move lowers the spread, so the number of moves is close to the minimum.
  Then, when bucket sizes are known (``BucketLayout.size``, bytes; 0 = unknown or empty, counted as nothing), the
  bytes: a server's bytes are the sizes of the replicas it holds. While the servers with the most and the fewest
  bytes differ by more than the tolerance (:data:`BYTE_TOLERANCE_RATIO` of the mean bytes per server, at least
  ``byte_margin_min``), a bucket's replica moves (or two buckets' replicas swap) from one to the other, the action
  bringing the pair closest first, and only if it brings them closer by ``byte_margin_min`` or more; at most
  :data:`MAX_BYTE_ACTIONS` actions. An action never widens the replica count spread (beyond 1), never makes a
  ``TEMPORARY_OFFLINE`` server a leader, honors racks, and - unless ``LEADER_DISTRIBUTION`` comes later in the
  goals and rebalances leaders anyway - never widens the leader count spread (beyond 1). Ties break on bucket keys,
  so the plan is deterministic. Fluss has no byte goal: bytes are part of ``REPLICA_DISTRIBUTION`` here.
* ``LEADER_DISTRIBUTION``: a bucket led by a tagged server gets another replica as leader; then, while leader counts
  differ by two or more, a bucket changes its leader to another of its replicas on a server with fewer leaders
  (only the order of the replicas changes: no data moves).

Output: per bucket whose replica list (leader first) changes, the new list; its first replica is the new leader.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Hashable, Mapping
from dataclasses import dataclass

from fluss.errors import ErrorCode, FlussError
from fluss.metadata import GoalType

#: Servers whose bytes differ by less than this share of the mean bytes per server are balanced ...
BYTE_TOLERANCE_RATIO = 0.05
#: ... or by less than this many bytes (the planner's default ``byte_margin_min``), which is also the least a
#: byte-balancing action must bring two servers closer: small differences cause no churn.
BYTE_MARGIN_MIN = 1 << 20
#: The most byte-balancing actions (a move or a swap of two buckets) one plan makes.
MAX_BYTE_ACTIONS = 64

#: Used when a request names no goal (Fluss's recommended order).
DEFAULT_GOALS = (GoalType.RACK_AWARE, GoalType.REPLICA_DISTRIBUTION, GoalType.LEADER_DISTRIBUTION)


def parse_goals(values: list[int]) -> list[GoalType]:
    """The goals of a request (wire numbers), checked: known, each once; empty means :data:`DEFAULT_GOALS`."""
    if not values:
        return list(DEFAULT_GOALS)
    goals: list[GoalType] = []
    for v in values:
        try:
            g = GoalType(v)
        except ValueError:
            raise FlussError(f"Unknown rebalance goal {v}: expected "
                             f"{', '.join(f'{t.value} ({t.name})' for t in GoalType)}",
                             ErrorCode.INVALID_CONFIG_EXCEPTION) from None
        if g in goals:
            raise FlussError(f"Rebalance goal {g.name} listed more than once", ErrorCode.INVALID_CONFIG_EXCEPTION)
        goals.append(g)
    return goals


@dataclass(frozen=True)
class BucketLayout:
    replicas: list[int]  # the assignment, preferred leader first
    leader: int  # -1: none
    size: int = 0  # bytes, 0 when unknown


@dataclass(frozen=True)
class BucketMove:
    original_replicas: list[int]
    original_leader: int
    new_replicas: list[int]  # the new leader first

    @property
    def new_leader(self) -> int:
        return self.new_replicas[0]


def plan_rebalance(buckets: Mapping[Hashable, BucketLayout], racks: Mapping[int, str | None],
                   goals: list[GoalType], permanent_offline: set[int] = frozenset(),
                   temporary_offline: set[int] = frozenset(),
                   byte_margin_min: int = BYTE_MARGIN_MIN) -> dict[Hashable, BucketMove]:
    """The moves balancing ``buckets`` over the live servers ``racks`` (server id -> rack or None)."""
    live = set(racks)
    eligible = sorted(live - set(permanent_offline))
    leaders_ok = [s for s in eligible if s not in temporary_offline]
    use_racks = bool(eligible) and all(racks.get(s) for s in eligible)
    state: dict[Hashable, list[int]] = {}
    for key, b in buckets.items():
        reps = list(b.replicas)
        if b.leader in reps:
            reps.remove(b.leader)
            reps.insert(0, b.leader)
        state[key] = reps
    start = {k: list(v) for k, v in state.items()}
    sizes = {k: b.size for k, b in buckets.items()}
    if not eligible:
        return {}

    load = Counter({s: 0 for s in eligible})
    for reps in state.values():
        load.update(r for r in reps if r in load)

    def rack_of(s: int) -> str | None:
        return racks.get(s) if use_racks else None

    def rack_ok(reps: list[int], leaving: int, to: int) -> bool:
        """Moving ``leaving``'s replica to ``to`` puts it on a rack holding no more of the bucket than any other."""
        if not use_racks:
            return True
        others = Counter(rack_of(r) for r in reps if r != leaving and r in live)
        all_racks = {rack_of(s) for s in eligible}
        least = min(others.get(rk, 0) for rk in all_racks)
        return others.get(rack_of(to), 0) <= least

    def move(key: Hashable, leaving: int, to: int) -> None:
        reps = state[key]
        reps[reps.index(leaving)] = to
        if leaving in load:
            load[leaving] -= 1
        load[to] += 1

    def best_target(key: Hashable, leaving: int, candidates: list[int]) -> int | None:
        reps = state[key]
        free = [c for c in candidates if c not in reps and rack_ok(reps, leaving, c)]
        return min(free, key=lambda c: (load[c], c)) if free else None

    # Replicas on servers being retired always move.
    for key in sorted(state, key=repr):
        for r in [r for r in state[key] if r in permanent_offline and r in live]:
            to = best_target(key, r, eligible)
            if to is not None:
                move(key, r, to)

    for goal in goals:
        if goal == GoalType.RACK_AWARE and use_racks:
            _spread_racks(state, eligible, rack_of, load, move)
        elif goal == GoalType.REPLICA_DISTRIBUTION:
            _balance_replicas(state, eligible, load, sizes, rack_ok, move)
            if any(sizes.values()):
                later = goals[goals.index(goal) + 1:]
                _balance_bytes(state, eligible, set(leaders_ok), load, sizes, rack_ok, move, byte_margin_min,
                               keep_leaders=GoalType.LEADER_DISTRIBUTION not in later)
        elif goal == GoalType.LEADER_DISTRIBUTION:
            _balance_leaders(state, leaders_ok, set(eligible))

    return {k: BucketMove(list(buckets[k].replicas), buckets[k].leader, reps)
            for k, reps in state.items() if reps != start[k]}


def _spread_racks(state, eligible, rack_of, load, move) -> None:
    all_racks = sorted({rack_of(s) for s in eligible})
    for key in sorted(state, key=repr):
        while True:
            reps = state[key]
            counts = Counter({rk: 0 for rk in all_racks})
            counts.update(rack_of(r) for r in reps if r in eligible)
            most = max(all_racks, key=lambda rk: (counts[rk], rk))
            least = min(all_racks, key=lambda rk: (counts[rk], rk))
            if counts[most] - counts[least] < 2 and not (counts[most] > 1 and counts[least] == 0):
                break
            leaving = max((r for r in reps if r in eligible and rack_of(r) == most), key=lambda r: (load[r], r))
            free = [s for s in eligible if rack_of(s) == least and s not in reps]
            if not free:
                break
            move(key, leaving, min(free, key=lambda s: (load[s], s)))


def _balance_replicas(state, eligible, load, sizes, rack_ok, move) -> None:
    bytes_on = server_bytes(state, sizes)
    while True:
        order = sorted(eligible, key=lambda s: (load[s], s))
        moved = False
        for src in reversed(order):
            for dst in order:
                if load[src] - load[dst] < 2:
                    break
                options = [k for k, reps in state.items() if src in reps and dst not in reps
                           and rack_ok(reps, src, dst)]
                if options:
                    # a follower before a leader, then the bucket bringing the two servers' bytes closest (none
                    # when sizes are unknown), then a stable order
                    gap = bytes_on[src] - bytes_on[dst]
                    key = min(options, key=lambda k: (state[k][0] == src, abs(gap - 2 * sizes.get(k, 0)), repr(k)))
                    move(key, src, dst)
                    bytes_on[src] -= sizes.get(key, 0)
                    bytes_on[dst] += sizes.get(key, 0)
                    moved = True
                    break
            if moved:
                break
        if not moved:
            return


def server_bytes(layout: Mapping[Hashable, list[int]], sizes: Mapping[Hashable, int]) -> Counter:
    """Bytes per server: the sizes of the replicas it holds."""
    out: Counter = Counter()
    for key, reps in layout.items():
        for r in reps:
            out[r] += sizes.get(key, 0)
    return out


def _balance_bytes(state, eligible, leaders_ok, load, sizes, rack_ok, move, margin_min, keep_leaders) -> None:
    """Moves or swaps replicas between the servers with the most and the fewest bytes (module docstring)."""
    if len(eligible) < 2:
        return
    bytes_on = server_bytes(state, sizes)
    mean = sum(bytes_on[s] for s in eligible) / len(eligible)
    tolerance = max(margin_min, BYTE_TOLERANCE_RATIO * mean, 1)
    margin = max(margin_min, 1)
    leaders = Counter({s: 0 for s in leaders_ok})
    leaders.update(reps[0] for reps in state.values() if reps and reps[0] in leaders)

    def spread_of(counter, servers) -> int:
        return max(counter[s] for s in servers) - min(counter[s] for s in servers) if servers else 0

    count_limit = max(1, spread_of(load, eligible))
    leader_servers = sorted(leaders_ok)
    leader_limit = max(1, spread_of(leaders, leader_servers))

    def fits(changes: list[tuple[Hashable, int, int]]) -> bool:
        """Whether these replica moves (bucket, from, to) keep counts, leaders, racks and tags as required."""
        new_load, new_leaders = Counter(load), Counter(leaders)
        for key, frm, to in changes:
            reps = state[key]
            if not rack_ok(reps, frm, to):
                return False
            new_load[frm] -= 1
            new_load[to] += 1
            if reps[0] == frm:
                if to not in leaders_ok:
                    return False
                if frm in new_leaders:
                    new_leaders[frm] -= 1
                new_leaders[to] += 1
        return spread_of(new_load, eligible) <= count_limit and (
            not keep_leaders or spread_of(new_leaders, leader_servers) <= leader_limit)

    for _ in range(MAX_BYTE_ACTIONS):
        order = sorted(eligible, key=lambda s: (bytes_on[s], s))
        action = None
        for hi in reversed(order):
            for lo in order:
                gap = bytes_on[hi] - bytes_on[lo]
                if gap <= tolerance:
                    break
                action = _best_byte_action(state, sizes, hi, lo, gap, margin, fits)
                if action is not None:
                    break
            if action is not None:
                break
        if action is None:
            return
        for key, frm, to in action:
            move(key, frm, to)
            bytes_on[frm] -= sizes.get(key, 0)
            bytes_on[to] += sizes.get(key, 0)
        leaders.clear()
        leaders.update({s: 0 for s in leaders_ok})
        leaders.update(reps[0] for reps in state.values() if reps and reps[0] in leaders_ok)


def _best_byte_action(state, sizes, hi, lo, gap, margin, fits):
    """The move (hi -> lo) or swap (hi <-> lo) that brings the two servers' bytes closest, if it gains ``margin``
    (moving ``d`` bytes turns the gap into ``|gap - 2d|``) and ``fits``; ties: a move before a swap, then keys."""
    here = sorted((sizes.get(k, 0), repr(k), k) for k, reps in state.items() if hi in reps and lo not in reps)
    there = sorted((sizes.get(k, 0), repr(k), k) for k, reps in state.items() if lo in reps and hi not in reps)
    there_sizes = [t[0] for t in there]
    candidates = []

    def nearest(target: float, width: int = 4) -> range:
        i = bisect.bisect_left(there_sizes, target)
        return range(max(0, i - width), min(len(there_sizes), i + width))

    def add(d: int, changes: list, keys: tuple) -> None:
        after = abs(gap - 2 * d)
        if d > 0 and gap - after >= margin:
            candidates.append((after, len(changes), keys, changes))

    for size, name, key in here:  # moves
        add(size, [(key, hi, lo)], (name,))
    for size, name, key in here:  # swaps: for each bucket, the one from lo whose size is nearest to size - gap / 2
        for j in nearest(size - gap / 2):
            other_size, other_name, other = there[j]
            if other_size < size:
                add(size - other_size, [(key, hi, lo), (other, lo, hi)], (name, other_name))
    candidates.sort(key=lambda c: c[:3])
    return next((c[3] for c in candidates if fits(c[3])), None)


def _balance_leaders(state, leaders_ok: list[int], eligible: set[int]) -> None:
    if not leaders_ok:
        return
    ok = set(leaders_ok)
    for key in sorted(state, key=repr):  # leaders off tagged (or retired) servers first
        reps = state[key]
        if reps and reps[0] not in ok:
            other = next((r for r in reps if r in ok), None)
            if other is not None:
                reps.remove(other)
                reps.insert(0, other)
    leaders = Counter({s: 0 for s in leaders_ok})
    leaders.update(reps[0] for reps in state.values() if reps and reps[0] in ok)
    led_by: dict[int, list] = {s: sorted((k for k, reps in state.items() if reps and reps[0] == s), key=repr)
                               for s in leaders_ok}
    while True:
        path = None
        for src in sorted(leaders_ok, key=lambda s: (-leaders[s], s)):
            path = _transfer_path(src, leaders, led_by, state, ok)
            if path:
                break
        if not path:
            return
        for key, frm, to in path:  # each server on the way gives one leadership and takes one
            reps = state[key]
            reps.remove(to)
            reps.insert(0, to)
            led_by[frm].remove(key)
            led_by[to].append(key)
        leaders[path[0][1]] -= 1
        leaders[path[-1][2]] += 1


def _transfer_path(src, leaders, led_by, state, ok):
    """The shortest chain of leadership changes from ``src`` to a server with at least two leaderships fewer
    (bucket led by ``a`` -> its replica on ``b``, then a bucket led by ``b`` -> ..., breadth first)."""
    came: dict[int, tuple | None] = {src: None}
    frontier = [src]
    while frontier:
        nxt = []
        for u in frontier:
            for key in led_by[u]:
                for v in state[key][1:]:
                    if v not in ok or v in came:
                        continue
                    came[v] = (key, u)
                    if leaders[v] <= leaders[src] - 2:
                        path, node = [], v
                        while came[node] is not None:
                            k, prev = came[node]
                            path.append((k, prev, node))
                            node = prev
                        return path[::-1]
                    nxt.append(v)
        frontier = nxt
    return None


def replica_counts(layout: Mapping[Hashable, list[int]]) -> Counter:
    return Counter(r for reps in layout.values() for r in reps)
