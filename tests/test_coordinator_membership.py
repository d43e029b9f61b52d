"""How the coordinator reads tablet-server membership from ZooKeeper registrations (``membership_changes``)."""

from fluss.server.coordinator.context import membership_changes


def test_new_and_gone_servers():
    assert membership_changes({0: 10, 1: 11}, {1: 11, 2: 12}) == ([0], [2])


def test_an_unchanged_membership_changes_nothing():
    assert membership_changes({0: 10, 1: 11}, {0: 10, 1: 11}) == ([], [])


def test_a_restart_seen_as_the_same_ids_is_a_loss_and_a_join():
    """ZooKeeper reported the old node's removal and the new node's creation as one unchanged list of ids: the
    new register time still tells the coordinator that server 1 is a new process that knows no buckets yet."""
    assert membership_changes({0: 10, 1: 11}, {0: 10, 1: 99}) == ([1], [1])


def test_a_restart_next_to_other_changes():
    assert membership_changes({0: 10, 1: 11, 2: 12}, {1: 50, 2: 12, 3: 13}) == ([0, 1], [1, 3])
