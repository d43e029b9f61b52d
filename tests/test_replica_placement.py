"""Replica placement (fluss.server.coordinator.assignment): without racks as before, with racks spread over them."""

from __future__ import annotations

from collections import Counter

import pytest

from fluss import ErrorCode, FlussError
from fluss.server.coordinator.assignment import assign_replicas, rack_alternated


def _racks_spanned(replicas: list[int], racks: dict[int, str]) -> int:
    return len({racks[s] for s in replicas})


def test_without_racks_placement_is_unchanged():
    # the layout tables created before racks existed got (tests and docs rely on the leader rotation)
    assert assign_replicas(4, 2, [0, 1, 2], 0) == {0: [0, 1], 1: [1, 2], 2: [2, 0], 3: [0, 1]}
    assert assign_replicas(3, 3, {0: None, 1: None, 2: None}, 5) == assign_replicas(3, 3, [0, 1, 2], 5)


def test_servers_are_arranged_one_rack_after_another():
    assert rack_alternated({0: "a", 1: "a", 2: "b", 3: "c", 4: "b", 5: "a"}) == [0, 2, 3, 1, 4, 5]


@pytest.mark.parametrize("seed", [0, 1, 7, 12, 101])
@pytest.mark.parametrize("racks", [
    {0: "a", 1: "a", 2: "b", 3: "b", 4: "c", 5: "c"},   # as many racks as replicas
    {0: "a", 1: "b", 2: "c", 3: "d"},                     # more racks than replicas
    {0: "a", 1: "a", 2: "a", 3: "b", 4: "c"},             # uneven racks
])
def test_each_bucket_spans_as_many_racks_as_it_can(racks, seed):
    rf = 3
    placement = assign_replicas(24, rf, racks, seed)
    n_racks = len(set(racks.values()))
    for replicas in placement.values():
        assert len(set(replicas)) == rf
        assert _racks_spanned(replicas, racks) == min(n_racks, rf), replicas
    # leaders rotate over every server: each leads the same number of buckets, whatever the racks' sizes
    leaders = Counter(r[0] for r in placement.values())
    assert set(leaders) == set(racks) and max(leaders.values()) - min(leaders.values()) <= 1


@pytest.mark.parametrize("seed", [0, 3, 9])
def test_fewer_racks_than_replicas_spreads_evenly(seed):
    racks = {0: "a", 1: "a", 2: "a", 3: "b", 4: "b", 5: "b"}
    for replicas in assign_replicas(12, 3, racks, seed).values():
        per_rack = Counter(racks[s] for s in replicas)
        assert sorted(per_rack.values()) == [1, 2], replicas  # both racks, never all three on one
    racks4 = {0: "a", 1: "a", 2: "b", 3: "b"}
    for replicas in assign_replicas(8, 4, racks4, seed).values():
        assert Counter(racks4[s] for s in replicas) == {"a": 2, "b": 2}


def test_a_small_rack_gets_what_it_can_hold():
    racks = {0: "a", 1: "b", 2: "b", 3: "b"}
    for replicas in assign_replicas(8, 4, racks, 2).values():
        assert sorted(replicas) == [0, 1, 2, 3]


def test_follower_sets_differ_between_buckets_and_tables():
    racks = {i: f"r{i % 3}" for i in range(9)}
    one = assign_replicas(9, 3, racks, 4)
    assert len({tuple(sorted(r)) for r in one.values()}) > 3
    assert one != assign_replicas(9, 3, racks, 5)


def test_a_mix_of_servers_with_and_without_racks_is_refused():
    with pytest.raises(FlussError) as e:
        assign_replicas(3, 2, {0: "a", 1: "b", 2: None}, 0)
    assert e.value.error_code == ErrorCode.INVALID_SERVER_RACK_INFO_EXCEPTION
    assert "[2]" in str(e.value) and "tablet-server.rack" in str(e.value)


def test_invalid_replication_factor_names_the_live_servers():
    with pytest.raises(FlussError, match="between 1 and the number of live tablet servers \\(2\\)"):
        assign_replicas(1, 3, {0: "a", 1: "b"}, 0)
