"""The rebalance planner (fluss/server/coordinator/rebalance_planner.py) and the rebalance record's bookkeeping
(rebalance.py): balanced results over many layouts, racks and tags honored, few moves, nothing to do when balanced."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from fluss.errors import ErrorCode, FlussError
from fluss.metadata import GoalType, RebalanceStatus
from fluss.server.coordinator.rebalance import (
    RebalanceBucket,
    RebalanceRecord,
    cancel,
    overall_status,
    settle_in_flight,
)
from fluss.server.coordinator.rebalance_planner import (
    DEFAULT_GOALS,
    MAX_BYTE_ACTIONS,
    BucketLayout,
    parse_goals,
    plan_rebalance,
    server_bytes,
)

ALL = list(DEFAULT_GOALS)


def layout(buckets: int, servers: list[int], rf: int, rng: random.Random) -> dict:
    """Buckets placed at random on ``servers`` (a skewed layout: the first servers get more)."""
    weights = [len(servers) - i for i in range(len(servers))]
    out = {}
    for b in range(buckets):
        reps: list[int] = []
        while len(reps) < rf:
            s = rng.choices(servers, weights)[0]
            if s not in reps:
                reps.append(s)
        out[b] = BucketLayout(reps, reps[0])
    return out


def apply(buckets: dict, plan: dict) -> dict[int, list[int]]:
    return {k: (plan[k].new_replicas if k in plan else [b.leader] + [r for r in b.replicas if r != b.leader])
            for k, b in buckets.items()}


def spread(counts: Counter, servers) -> int:
    return max(counts.get(s, 0) for s in servers) - min(counts.get(s, 0) for s in servers)


@pytest.mark.parametrize("seed", range(40))
def test_replicas_and_leaders_balanced_over_random_layouts(seed):
    rng = random.Random(seed)
    n = rng.randint(3, 7)
    servers = list(range(n))
    rf = rng.randint(1, min(3, n))
    buckets = layout(rng.randint(4, 60), servers[:-1] if n > 3 else servers, rf, rng)  # the last server is new
    plan = plan_rebalance(buckets, {s: None for s in servers}, ALL)
    final = apply(buckets, plan)
    assert all(len(set(r)) == len(r) == rf for r in final.values())
    assert spread(Counter(r for reps in final.values() for r in reps), servers) <= 1
    assert spread(Counter(reps[0] for reps in final.values()), servers) <= 1
    for k, m in plan.items():  # every move keeps the bucket's size and names its origin
        assert m.original_replicas == buckets[k].replicas and m.new_leader == m.new_replicas[0]


@pytest.mark.parametrize("seed", range(20))
def test_racks_are_spread_and_never_crowded(seed):
    rng = random.Random(seed)
    racks = {0: "a", 1: "a", 2: "b", 3: "b", 4: "c", 5: "c"}
    buckets = layout(rng.randint(6, 40), [0, 1, 2, 3], 2, rng)  # servers of rack c are new; some buckets on one rack
    plan = plan_rebalance(buckets, racks, ALL)
    final = apply(buckets, plan)
    for reps in final.values():
        assert len({racks[r] for r in reps}) == 2, reps  # two replicas never share a rack
    assert spread(Counter(r for reps in final.values() for r in reps), racks) <= 1


def test_rack_constraint_holds_without_the_rack_goal():
    racks = {0: "a", 1: "b", 2: "a", 3: "b"}
    buckets = {b: BucketLayout([0, 1], 0) for b in range(8)}
    plan = plan_rebalance(buckets, racks, [GoalType.REPLICA_DISTRIBUTION])
    final = apply(buckets, plan)
    assert all({racks[r] for r in reps} == {"a", "b"} for reps in final.values())
    assert Counter(r for reps in final.values() for r in reps) == {0: 4, 1: 4, 2: 4, 3: 4}


def test_rack_aware_goal_fixes_a_crowded_bucket_only_when_listed():
    racks = {0: "a", 1: "a", 2: "b"}
    buckets = {0: BucketLayout([0, 1], 0)}
    assert plan_rebalance(buckets, racks, [GoalType.LEADER_DISTRIBUTION]) == {}
    plan = plan_rebalance(buckets, racks, [GoalType.RACK_AWARE])
    assert {racks[r] for r in plan[0].new_replicas} == {"a", "b"}


def test_permanent_offline_gets_nothing_and_temporary_offline_leads_nothing():
    servers = {0: None, 1: None, 2: None, 3: None}
    buckets = {b: BucketLayout([b % 4, (b + 1) % 4], b % 4) for b in range(12)}
    plan = plan_rebalance(buckets, servers, ALL, permanent_offline={0}, temporary_offline={1})
    final = apply(buckets, plan)
    assert all(0 not in reps for reps in final.values())
    assert all(reps[0] != 1 for reps in final.values())
    counts = Counter(r for reps in final.values() for r in reps)
    assert spread(counts, [1, 2, 3]) <= 1 and counts[1] > 0  # the tagged-temporary server keeps replicas
    assert spread(Counter(reps[0] for reps in final.values()), [2, 3]) <= 1


def test_retired_replicas_move_whatever_the_goals():
    plan = plan_rebalance({0: BucketLayout([0, 1], 0)}, {0: None, 1: None, 2: None}, [GoalType.LEADER_DISTRIBUTION],
                          permanent_offline={0})
    assert 0 not in plan[0].new_replicas and sorted(plan[0].new_replicas) == [1, 2]


def test_already_balanced_gives_an_empty_plan():
    servers = {s: None for s in range(3)}
    buckets = {b: BucketLayout([b % 3, (b + 1) % 3], b % 3) for b in range(9)}
    assert plan_rebalance(buckets, servers, ALL) == {}
    assert plan_rebalance({}, servers, ALL) == {}


def test_adding_a_server_moves_about_the_minimum():
    # 3 servers, 12 buckets x rf 3 = 36 replicas (12 each); a 4th server should take 9: 9 moves, no more
    servers = {s: None for s in range(4)}
    buckets = {b: BucketLayout([b % 3, (b + 1) % 3, (b + 2) % 3], b % 3) for b in range(12)}
    plan = plan_rebalance(buckets, servers, [GoalType.REPLICA_DISTRIBUTION])
    moved = sum(len(set(m.new_replicas) - set(m.original_replicas)) for m in plan.values())
    assert moved == 9
    final = apply(buckets, plan)
    assert Counter(r for reps in final.values() for r in reps) == {0: 9, 1: 9, 2: 9, 3: 9}


def test_leader_distribution_only_reorders_replicas():
    servers = {s: None for s in range(3)}
    buckets = {b: BucketLayout([0, 1, 2], 0) for b in range(6)}
    plan = plan_rebalance(buckets, servers, [GoalType.LEADER_DISTRIBUTION])
    assert all(sorted(m.new_replicas) == [0, 1, 2] for m in plan.values())
    assert Counter(reps[0] for reps in apply(buckets, plan).values()) == {0: 2, 1: 2, 2: 2}


def test_replicas_on_dead_servers_stay_and_no_live_server_plans_nothing():
    plan = plan_rebalance({0: BucketLayout([5, 1], 1)}, {1: None, 2: None}, ALL)
    assert all(5 in m.new_replicas for m in plan.values())
    assert plan_rebalance({0: BucketLayout([0], 0)}, {0: None}, ALL, permanent_offline={0}) == {}


def test_goals_are_checked():
    assert parse_goals([]) == ALL
    assert parse_goals([2, 0]) == [GoalType.RACK_AWARE, GoalType.REPLICA_DISTRIBUTION]
    with pytest.raises(FlussError, match="Unknown rebalance goal 7") as e:
        parse_goals([7])
    assert e.value.error_code == ErrorCode.INVALID_CONFIG_EXCEPTION
    with pytest.raises(FlussError, match="more than once"):
        parse_goals([0, 0])


MB = 1 << 20


def _sized(buckets: dict, sizes: dict) -> dict:
    return {k: BucketLayout(b.replicas, b.leader, sizes[k]) for k, b in buckets.items()}


def _ratio(final: dict, sizes: dict, servers) -> float:
    per = server_bytes(final, sizes)
    return max(per[s] for s in servers) / min(per[s] for s in servers)


@pytest.mark.parametrize("seed", range(30))
def test_equal_counts_with_skewed_bytes_get_balanced_bytes(seed):
    # 4 servers, 24 buckets x rf 2, counts already even (12 each); bucket sizes 1..80 MB, the big ones crowded on
    # servers 0 and 1, the small ones on 2 and 3: the byte step brings max/min bytes per server to within 1.25, counts stay within 1
    rng = random.Random(seed)
    servers = list(range(4))
    sizes = {b: rng.randint(1, 80) * MB for b in range(24)}
    big_first = sorted(sizes, key=lambda b: -sizes[b])
    buckets = {}
    mixed = [(0, 2), (1, 3), (0, 3), (1, 2)]
    for i, b in enumerate(big_first):  # the 6 biggest on 0 and 1, the 6 smallest on 2 and 3, the rest spread
        reps = list((0, 1) if i < 6 else (2, 3) if i >= 18 else mixed[i % 4])
        buckets[b] = BucketLayout(reps, reps[i % 2])
    before = {k: [b.leader] + [r for r in b.replicas if r != b.leader] for k, b in buckets.items()}
    assert spread(Counter(r for reps in before.values() for r in reps), servers) <= 1
    plan = plan_rebalance(_sized(buckets, sizes), {s: None for s in servers}, ALL)
    final = apply(buckets, plan)
    assert _ratio(final, sizes, servers) <= 1.25 < _ratio(before, sizes, servers)
    assert spread(Counter(r for reps in final.values() for r in reps), servers) <= 1
    assert spread(Counter(reps[0] for reps in final.values()), servers) <= 1
    assert all(len(set(reps)) == 2 for reps in final.values())
    assert plan == plan_rebalance(_sized(buckets, sizes), {s: None for s in servers}, ALL)  # deterministic


@pytest.mark.parametrize("seed, n", [(0, 900), (1, 300), (2, 300)])
def test_a_new_server_gets_its_share_of_bytes_and_replicas(seed, n):
    # n buckets x rf 3 of 1..500 MB on 5 servers, a sixth joins: it takes a sixth of the replicas *and* of the
    # bytes, max/min bytes within 1.1. With 900 buckets the bounded byte step alone could not do it: the count step
    # picks its buckets by bytes too (taking the smallest first ended at 1.37)
    rng = random.Random(seed)
    buckets = {}
    for b in range(n):
        reps = rng.sample(range(5), 3)
        buckets[b] = BucketLayout(reps, reps[0], rng.randint(1, 500) * MB)
    sizes = {k: b.size for k, b in buckets.items()}
    servers = list(range(6))
    final = apply(buckets, plan_rebalance(buckets, {s: None for s in servers}, ALL))
    assert spread(Counter(r for reps in final.values() for r in reps), servers) <= 1
    assert spread(Counter(reps[0] for reps in final.values()), servers) <= 1
    assert _ratio(final, sizes, servers) <= 1.1


def test_one_big_bucket_moves_off_the_heavy_server():
    # counts even (3 servers, 6 buckets of one replica each: 2 each) but server 0 holds 100 MB + 90 MB and server 2
    # holds 1 MB + 1 MB: the swap of a big bucket with a small one evens the bytes out
    sizes = {0: 100 * MB, 1: 90 * MB, 2: 50 * MB, 3: 40 * MB, 4: 1 * MB, 5: 1 * MB}
    buckets = {b: BucketLayout([b // 2], b // 2) for b in range(6)}
    plan = plan_rebalance(_sized(buckets, sizes), {s: None for s in range(3)}, ALL)
    final = apply(buckets, plan)
    assert Counter(reps[0] for reps in final.values()) == {0: 2, 1: 2, 2: 2}
    per = server_bytes(final, sizes)
    assert max(per.values()) - min(per.values()) < 100 * MB  # from 188 MB apart
    assert max(per.values()) / min(per.values()) <= 1.5


@pytest.mark.parametrize("seed", range(15))
def test_byte_balancing_honors_racks_and_tags(seed):
    rng = random.Random(seed)
    racks = {0: "a", 1: "a", 2: "b", 3: "b", 4: "c", 5: "c"}
    buckets = layout(30, [0, 1, 2, 3], 2, rng)
    sizes = {b: (rng.randint(50, 100) if b % 5 == 0 else rng.randint(1, 10)) * MB for b in buckets}
    plan = plan_rebalance(_sized(buckets, sizes), racks, ALL, permanent_offline={5}, temporary_offline={4})
    final = apply(buckets, plan)
    for reps in final.values():
        assert len({racks[r] for r in reps}) == 2, reps
        assert 5 not in reps and reps[0] != 4
    live = [0, 1, 2, 3, 4]
    assert spread(Counter(r for reps in final.values() for r in reps), live) <= 1
    assert spread(Counter(reps[0] for reps in final.values()), [0, 1, 2, 3]) <= 1


@pytest.mark.parametrize("seed", range(20))
def test_unknown_sizes_give_the_count_only_plan(seed):
    # pinned: no sizes (or all 0) -> the same plan as the count-only planner, whatever the layout
    rng = random.Random(seed)
    servers = {s: None for s in range(5)}
    buckets = layout(rng.randint(5, 40), [0, 1, 2, 3], rng.randint(1, 3), rng)
    count_only = plan_rebalance(buckets, servers, ALL)
    assert plan_rebalance(_sized(buckets, {k: 0 for k in buckets}), servers, ALL) == count_only
    final = apply(buckets, count_only)
    assert spread(Counter(r for reps in final.values() for r in reps), servers) <= 1


def test_count_only_plan_pinned():
    servers = {s: None for s in range(4)}
    buckets = {b: BucketLayout([b % 3, (b + 1) % 3], b % 3) for b in range(6)}
    plan = plan_rebalance(buckets, servers, ALL)
    # the plan the count-only planner (before bytes were known) made for this layout
    assert {k: m.new_replicas for k, m in plan.items()} == {0: [3, 0], 1: [1, 3], 2: [2, 3]}


def test_balanced_bytes_or_small_differences_make_no_extra_moves():
    servers = {s: None for s in range(3)}
    buckets = {b: BucketLayout([b % 3, (b + 1) % 3], b % 3) for b in range(9)}
    assert plan_rebalance(_sized(buckets, {b: 10 * MB for b in buckets}), servers, ALL) == {}
    # under the tolerance (5% of the mean bytes per server, at least 1 MiB): no churn
    jitter = {b: 10 * MB + (b * 100_000) for b in buckets}
    assert plan_rebalance(_sized(buckets, jitter), servers, ALL) == {}
    # the same skew over the margin does move
    skewed = {b: (40 if b in (0, 3) else 1) * MB for b in buckets}
    plan = plan_rebalance(_sized(buckets, skewed), servers, ALL)
    final = apply(buckets, plan)
    assert _ratio(final, skewed, servers) < _ratio(apply(buckets, {}), skewed, servers)
    assert Counter(r for reps in final.values() for r in reps) == {0: 6, 1: 6, 2: 6}
    assert plan_rebalance(_sized(buckets, skewed), servers, ALL, byte_margin_min=100 * MB) == {}


def test_byte_actions_are_bounded():
    servers = {s: None for s in range(2)}
    buckets = {b: BucketLayout([b % 2], b % 2) for b in range(400)}
    sizes = {b: (b + 1) * MB if b % 2 == 0 else MB for b in buckets}
    plan = plan_rebalance(_sized(buckets, sizes), servers, [GoalType.REPLICA_DISTRIBUTION])
    assert 0 < len(plan) <= 2 * MAX_BYTE_ACTIONS


def _record(*statuses: RebalanceStatus) -> RebalanceRecord:
    return RebalanceRecord("rebalance-x", [0], RebalanceStatus.NOT_STARTED.value, 0,
                           [RebalanceBucket(1, -1, i, [0], 0, [1], s.value) for i, s in enumerate(statuses)])


def test_record_status_progress_cancel_and_encoding():
    S = RebalanceStatus
    assert overall_status(_record(S.NOT_STARTED, S.NOT_STARTED)) == S.NOT_STARTED
    assert overall_status(_record(S.COMPLETED, S.NOT_STARTED)) == S.REBALANCING
    assert overall_status(_record(S.COMPLETED, S.COMPLETED)) == S.COMPLETED
    assert overall_status(_record(S.COMPLETED, S.FAILED)) == S.FAILED
    assert overall_status(_record()) == S.COMPLETED and _record().progress() == 1.0
    rec = _record(S.COMPLETED, S.REBALANCING, S.NOT_STARTED, S.NOT_STARTED)
    assert rec.progress() == 0.25
    assert cancel(rec) == 2
    assert [b.status for b in rec.buckets] == [S.COMPLETED, S.REBALANCING, S.CANCELED, S.CANCELED]
    assert overall_status(rec) == S.CANCELED and not rec.active
    assert RebalanceRecord.decode(rec.encode()) == rec


def test_settle_in_flight():
    b = RebalanceBucket(1, -1, 0, [0, 1], 0, [2, 1], RebalanceStatus.REBALANCING.value)
    assert settle_in_flight(b, exists=True, moving=True, replicas=[0, 1, 2]) is None
    assert settle_in_flight(b, exists=True, moving=False, replicas=[2, 1]) == RebalanceStatus.COMPLETED
    assert settle_in_flight(b, exists=True, moving=False, replicas=[3, 1]) == RebalanceStatus.FAILED
    assert settle_in_flight(b, exists=False, moving=False, replicas=None) == RebalanceStatus.FAILED
