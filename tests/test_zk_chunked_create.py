"""Tables and partitions of many buckets are written to ZooKeeper in bounded transactions, the nodes that make them
visible last (``ZooKeeperClient._create_in_chunks``), against a real ZooKeeper server: a reader never sees a table
or partition whose assignment is incomplete, a failure in the middle leaves nothing behind, and a transaction whose
answer was lost is not written twice."""

from __future__ import annotations

import pytest
from kazoo.exceptions import ConnectionLoss

from fluss.errors import FlussError
from fluss.server.zk import client as zk_client
from fluss.server.zk import paths
from fluss.server.zk.client import ZooKeeperClient
from fluss.server.zk.data import (
    Assignment,
    LeaderAndIsr,
    PartitionRegistration,
    TableRegistration,
)

BUCKETS = 300  # 602 nodes: three transactions of at most 256 nodes (the bound is lowered to 256 here)


@pytest.fixture(autouse=True)
def bound(monkeypatch):
    monkeypatch.setattr(zk_client, "MAX_TRANSACTION_OPS", 256)


real_commit = zk_client._commit


class CommitSpy:
    """Records every transaction the client commits, and checks after each one that the table (or partition) is
    not visible before the last one; optionally fails a given one."""

    def __init__(self, zk: ZooKeeperClient, monkeypatch, visible_path: str, fail_at: int | None = None,
                 drop_at: int | None = None, lose_answer_at: int | None = None) -> None:
        self.zk, self.visible_path = zk, visible_path
        self.sizes: list[int] = []
        self.visible_after: list[bool] = []
        self.fail_at, self.drop_at, self.lose_answer_at = fail_at, drop_at, lose_answer_at
        real = zk_client._commit

        def commit(tx, what):
            n = len(self.sizes)
            if n in (self.fail_at, self.drop_at):
                self.sizes.append(len(tx.operations))
                self.visible_after.append(False)
                if n == self.fail_at:  # refused (e.g. a node exists)
                    raise FlussError(f"Cannot {what}: injected", 0)
                raise FlussError(f"Cannot {what}: connection dropped", 0) from ConnectionLoss()  # not applied
            real(tx, what)
            self.sizes.append(len(tx.operations))
            self.visible_after.append(zk._zk.exists(self.visible_path) is not None)
            if n == self.lose_answer_at:  # applied, but the answer never reached the client
                raise FlussError(f"Cannot {what}: answer lost", 0) from ConnectionLoss()

        monkeypatch.setattr(zk_client, "_commit", commit)


def table_parts(table_id: int, buckets: int) -> tuple[TableRegistration, Assignment, dict[int, LeaderAndIsr]]:
    reg = TableRegistration(table_id, 1, [], buckets, [], None, {}, {}, 0, 0)
    assignment = Assignment(table_id, {b: [b % 3] for b in range(buckets)})
    leaders = {b: LeaderAndIsr(b % 3, 0, [b % 3], 1) for b in range(buckets)}
    return reg, assignment, leaders


def test_table_of_many_buckets_becomes_visible_complete(zk, monkeypatch):
    reg, assignment, leaders = table_parts(7, BUCKETS)
    spy = CommitSpy(zk, monkeypatch, paths.table("db", "t"))
    zk.create_table("db", "t", reg, {"columns": []}, assignment, leaders)

    assert len(spy.sizes) == 3 and max(spy.sizes) <= zk_client.MAX_TRANSACTION_OPS
    assert sum(spy.sizes) == 2 + 2 * BUCKETS + 4  # assignment root, buckets/, two per bucket, the table's four
    assert spy.visible_after == [False, False, True]  # the table node came with the last transaction
    assert zk.get_table("db", "t")[0].table_id == 7
    assert zk.get_assignment(7, -1).buckets == assignment.buckets
    got = zk.get_leaders_and_isr([(7, -1, b) for b in range(BUCKETS)])
    assert got == [leaders[b] for b in range(BUCKETS)]


def test_failure_in_the_middle_leaves_no_table_and_a_retry_works(zk, monkeypatch):
    reg, assignment, leaders = table_parts(8, BUCKETS)
    spy = CommitSpy(zk, monkeypatch, paths.table("db", "t"), fail_at=1)
    with pytest.raises(FlussError, match="injected"):
        zk.create_table("db", "t", reg, {"columns": []}, assignment, leaders)
    assert len(spy.sizes) == 2  # the second transaction was refused: nothing after it
    assert zk.get_table("db", "t") is None
    assert zk.list_tables("db") == []
    assert zk.get_assignment(8, -1) is None  # the first transaction's nodes were removed
    assert zk._zk.exists(paths.table_assignment(8)) is None

    monkeypatch.setattr(zk_client, "_commit", real_commit)
    reg, assignment, leaders = table_parts(9, BUCKETS)  # the coordinator's retry allocates a new table id
    zk.create_table("db", "t", reg, {"columns": []}, assignment, leaders)
    assert zk.get_table("db", "t")[0].table_id == 9 and len(zk.get_assignment(9, -1).buckets) == BUCKETS
    assert spy.sizes[0] == zk_client.MAX_TRANSACTION_OPS


def test_a_transaction_lost_on_the_way_is_sent_again(zk, monkeypatch):
    reg, assignment, leaders = table_parts(12, BUCKETS)
    spy = CommitSpy(zk, monkeypatch, paths.table("db", "t"), drop_at=1)
    zk.create_table("db", "t", reg, {"columns": []}, assignment, leaders)
    assert spy.sizes == [256, 256, 256, 94]  # the second one twice
    assert spy.visible_after == [False, False, False, True]
    assert zk.get_table("db", "t")[0].table_id == 12 and len(zk.get_assignment(12, -1).buckets) == BUCKETS


def test_a_lost_answer_is_not_written_twice(zk, monkeypatch):
    """The connection drops after ZooKeeper applied a transaction: the client finds its last node and goes on
    (sending it again would fail on the existing nodes)."""
    reg, assignment, leaders = table_parts(10, BUCKETS)
    spy = CommitSpy(zk, monkeypatch, paths.table("db", "t"), lose_answer_at=1)
    zk.create_table("db", "t", reg, {"columns": []}, assignment, leaders)
    assert len(spy.sizes) == 3
    assert zk.get_table("db", "t")[0].table_id == 10 and len(zk.get_assignment(10, -1).buckets) == BUCKETS


def test_partitions_become_visible_after_their_assignments(zk, monkeypatch):
    reg, _, _ = table_parts(11, 0)
    reg.partition_keys = ["dt"]
    zk.create_table("db", "p", reg, {"columns": []}, None, {})
    partitions = []
    for k in range(2):
        pid = 100 + k
        assignment = Assignment(11, {b: [0] for b in range(BUCKETS)})
        leaders = {b: LeaderAndIsr(0, 0, [0], 1) for b in range(BUCKETS)}
        partitions.append((f"2026120{k}", PartitionRegistration(pid, 11, {"dt": f"2026120{k}"}, BUCKETS),
                           assignment, leaders))
    spy = CommitSpy(zk, monkeypatch, paths.partition("db", "p", "20261200"))
    zk.create_partitions("db", "p", partitions)
    assert max(spy.sizes) <= zk_client.MAX_TRANSACTION_OPS and len(spy.sizes) == 5
    assert spy.visible_after == [False, False, False, False, True]
    assert set(zk.list_partitions("db", "p")) == {"20261200", "20261201"}
    assert all(len(zk.get_assignment(11, pid).buckets) == BUCKETS for pid in (100, 101))

    # a failure before the partition nodes: neither partition appears, their assignments are removed
    monkeypatch.setattr(zk_client, "_commit", real_commit)
    for k, (_name, preg, _a, _l) in enumerate(partitions):
        preg.partition_id = 200 + k
    renamed = [(f"2026121{k}", *rest) for k, (_n, *rest) in enumerate(partitions)]
    CommitSpy(zk, monkeypatch, paths.partition("db", "p", "20261210"), fail_at=3)
    with pytest.raises(FlussError):
        zk.create_partitions("db", "p", renamed)
    assert set(zk.list_partitions("db", "p")) == {"20261200", "20261201"}
    assert zk.get_assignment(11, 200) is None and zk.get_assignment(11, 201) is None


def test_drop_deletes_a_table_of_many_partitions_in_bounded_transactions(zk, monkeypatch):
    reg, _, _ = table_parts(13, 0)
    reg.partition_keys = ["dt"]
    zk.create_table("db", "big", reg, {"columns": []}, None, {})
    partitions = [(f"p{k}", PartitionRegistration(300 + k, 13, {"dt": f"p{k}"}, 2),
                   Assignment(13, {0: [0], 1: [1]}), {0: LeaderAndIsr(0, 0, [0], 1), 1: LeaderAndIsr(1, 0, [1], 1)})
                  for k in range(100)]
    zk.create_partitions("db", "big", partitions)
    zk._zk.create(paths.kv_snapshot(13, 300, 0), b"{}")  # a node below a bucket goes too
    sizes = []
    real_transaction = zk._zk.transaction

    def transaction():
        tx = real_transaction()
        real_commit_tx = tx.commit

        def commit():
            sizes.append(len(tx.operations))
            return real_commit_tx()

        tx.commit = commit
        return tx

    monkeypatch.setattr(zk._zk, "transaction", transaction)
    zk.delete_table("db", "big", 13, [300 + k for k in range(100)])
    assert zk.list_tables("db") == [] and zk.list_partitions("db", "big") == {}
    assert all(zk._zk.exists(paths.partition_assignment(300 + k)) is None for k in range(100))
    # the table's 4 nodes and its 100 partition nodes: one transaction; 100 x 6 assignment nodes and a snapshot
    # node: three
    assert max(sizes) <= zk_client.MAX_TRANSACTION_OPS and sizes == [104, 256, 256, 89]
