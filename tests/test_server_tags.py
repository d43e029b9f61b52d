"""Server tag decisions (fluss.server.coordinator.server_tags) and the reassignment checks, without a cluster."""

from __future__ import annotations

import pytest

from fluss import ErrorCode, FlussError, ServerTag
from fluss.server.coordinator.reassignment import check_targets, finish_step, widened
from fluss.server.coordinator.server_tags import check_tag_request, drain_target, leaders_last, parse_tag
from fluss.server.zk.data import LeaderAndIsr


def test_drain_replaces_the_leaving_server_in_place_by_the_least_loaded_free_one():
    assert drain_target([2, 0, 1], 0, [1, 3, 4], {}, {3: 5, 4: 2}) == [2, 4, 1]
    assert drain_target([0, 1], 0, [1, 2, 3], {}, {}) == [2, 1]  # lowest id among equals
    assert drain_target([0, 1], 0, [1], {}, {}) is None  # nowhere to go


def test_drain_keeps_the_rack_spread():
    racks = {0: "a", 1: "b", 2: "b", 3: "a"}
    # server 0 (rack a) leaves a bucket on [0, 1]: server 3 (rack a) keeps both racks, though 2 is less loaded
    assert drain_target([0, 1], 0, [2, 3], racks, {2: 0, 3: 9}) == [3, 1]


def test_tagged_servers_lead_last():
    assert leaders_last([3, 1, 2], {1}) == [3, 2, 1]
    lai = LeaderAndIsr(0, 4, [0, 1, 2], 1, 7)
    done = finish_step(lai, [1, 2], {0, 1, 2}, set(), 1, avoid={1})
    assert done is not None and done.leader_and_isr.leader == 2 and done.leader_and_isr.leader_epoch == 5


def test_tag_requests_are_checked():
    assert parse_tag(1) is ServerTag.TEMPORARY_OFFLINE
    with pytest.raises(FlussError, match="Unknown server tag 7"):
        parse_tag(7)
    with pytest.raises(FlussError, match="listed more than once"):
        check_tag_request([1, 1], "tag")
    with pytest.raises(FlussError, match="No tablet server"):
        check_tag_request([], "tag")


def test_a_move_finishes_only_when_every_target_replica_is_in_sync():
    lai = LeaderAndIsr(0, 3, [0, 1], 1, 5)
    assert widened([0, 1], [2, 1]) == [0, 1, 2]
    assert finish_step(lai, [2, 1], {0, 1, 2}, set(), 1) is None  # 2 not in the ISR yet
    done = finish_step(LeaderAndIsr(0, 3, [0, 1, 2], 1, 6), [2, 1], {0, 1, 2}, set(), 2)
    assert done.leader_and_isr == LeaderAndIsr(2, 4, [1, 2], 2, 7)
    same = finish_step(LeaderAndIsr(1, 3, [1, 2], 1, 6), [2, 1], {1, 2}, set(), 2)
    assert same is not None and not same.changed  # only the order changes: nothing to elect


def test_reassignment_targets_are_checked():
    live = {0, 1, 2}
    check_targets({0: [2, 1]}, 2, live, set(), "t")
    for targets, message in [({0: [3]}, "[3] are not live"), ({0: [1, 1]}, "more than once"),
                             ({2: [1]}, "Bucket 2 does not exist"), ({0: []}, "empty"), ({}, "No bucket")]:
        with pytest.raises(FlussError, match=message.replace("[", r"\[").replace("]", r"\]")):
            check_targets(targets, 2, live, set(), "t")
    with pytest.raises(FlussError) as e:
        check_targets({0: [1, 2]}, 2, live, set(), "t", retiring={2})
    assert e.value.error_code == ErrorCode.INELIGIBLE_REPLICA_EXCEPTION and "PERMANENT_OFFLINE" in e.value.message
