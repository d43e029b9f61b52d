"""The Flink bench's round schedule: the INSERT and its datagen -> blackhole limit go first equally often."""

from bench.flink_sql import counted_rounds, job_order

INSERT, BLACKHOLE, READ = ("insert", "i"), ("blackhole", "b"), ("read", "r")


def test_counted_rounds_are_even_and_at_least_asked() -> None:
    for asked in range(1, 7):
        n = counted_rounds(asked)
        assert n % 2 == 0 and asked <= n <= asked + 1


def test_insert_and_blackhole_take_turns_going_first() -> None:
    for asked in (2, 3):
        rounds = range(1, counted_rounds(asked) + 1)
        firsts = [job_order(r, INSERT, BLACKHOLE, READ)[0] for r in rounds]
        assert firsts.count(INSERT) == firsts.count(BLACKHOLE) == len(firsts) // 2


def test_every_round_runs_each_job_once_and_reads_after_the_insert() -> None:
    for r in range(6):
        order = job_order(r, INSERT, BLACKHOLE, READ)
        assert sorted(order) == sorted([INSERT, BLACKHOLE, READ])
        assert order.index(READ) > order.index(INSERT)
