"""The coordinator context's bucket look-ups: a table's (or a partition's) buckets come from its assignment, in
bucket order, without the other tables' buckets (its cost is the table's size, not the cluster's)."""

from __future__ import annotations

from fluss.metadata import TableBucket
from fluss.server.coordinator.context import CoordinatorContext
from fluss.server.zk.data import Assignment, LeaderAndIsr


def _add(ctx: CoordinatorContext, table_id: int, partition_id: int, buckets: int) -> None:
    ctx.assignments[(table_id, partition_id)] = Assignment(table_id, {b: [b % 3] for b in reversed(range(buckets))})
    for b in range(buckets):
        ctx.leaders[TableBucket(table_id, b, partition_id)] = (LeaderAndIsr(b % 3, 0, [b % 3], 1), 0)


def test_buckets_of_a_table_or_partition_are_its_own_in_order():
    ctx = CoordinatorContext()
    _add(ctx, 1, -1, 12)
    _add(ctx, 2, -1, 3)
    _add(ctx, 3, 7, 4)
    _add(ctx, 3, 8, 2)
    assert ctx.buckets_of(1, -1) == [TableBucket(1, b) for b in range(12)]
    assert ctx.buckets_of(2, -1) == [TableBucket(2, b) for b in range(3)]
    assert ctx.buckets_of(3, 7) == [TableBucket(3, b, 7) for b in range(4)]
    assert ctx.buckets_of(3, -1) == [] and ctx.buckets_of(9, -1) == []
    assert ctx.buckets_of(1, -1) == sorted(tb for tb in ctx.leaders if tb.table_id == 1)  # the old full scan


def test_removed_buckets_are_gone_from_buckets_of():
    ctx = CoordinatorContext()
    _add(ctx, 1, -1, 4)
    _add(ctx, 3, 7, 4)
    ctx.remove_buckets(lambda tb: tb.table_id == 3 and tb.partition_id_or_none_value == 7)
    assert ctx.buckets_of(3, 7) == []
    del ctx.leaders[TableBucket(1, 2)]  # a bucket without a leader entry is not listed
    assert ctx.buckets_of(1, -1) == [TableBucket(1, b) for b in (0, 1, 3)]
