"""The benchmark's record of CPU steal (``bench.monitor.CpuSteal``): the hypervisor's share of the CPU time."""

from __future__ import annotations

from pathlib import Path

from bench.fluss_log import _steal_per_round
from bench.monitor import CpuSteal, steal_and_total


def _stat(path: Path, user: int, idle: int, steal: int) -> None:
    # cpu user nice system idle iowait irq softirq steal guest guest_nice
    path.write_text(f"cpu  {user} 0 0 {idle} 0 0 0 {steal} 0 0\ncpu0 1 0 0 1 0 0 0 0 0 0\n")


def test_steal_is_the_share_of_all_cpu_time_taken_by_the_hypervisor_during_the_block(tmp_path):
    stat = tmp_path / "stat"
    _stat(stat, user=100, idle=100, steal=0)
    assert steal_and_total(str(stat)) == (0, 200)
    with CpuSteal(str(stat)) as steal:
        _stat(stat, user=130, idle=150, steal=20)  # 100 jiffies passed, 20 of them stolen
    assert steal.percent == 20.0
    assert steal.label() == "CPU steal 20%"


def test_steal_is_unknown_without_proc_stat_and_per_round_marks_tolerate_gaps(tmp_path):
    with CpuSteal(str(tmp_path / "missing")) as steal:
        pass
    assert steal.percent is None and steal.label() == "CPU steal unknown"
    assert _steal_per_round([(0, 100), (10, 200), (10, 300), None]) == "10%, 0%, ?"
    assert _steal_per_round([]) == "?"
