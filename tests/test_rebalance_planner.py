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
    BucketLayout,
    parse_goals,
    plan_rebalance,
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
