"""``python -m reliability.call_floor``: both echo servers answer, and every mode reports its round trips and CPU."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_call_floor_reports_each_echo_kind_back_to_back_and_paced():
    done = subprocess.run([sys.executable, "-m", "reliability.call_floor", "--calls", "30", "--gap-ms", "2"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(r["kind"], r["gap_ms"]) for r in lines] == [
        ("grpc.aio echo", 0.0), ("grpc.aio echo", 2.0), ("asyncio TCP echo", 0.0), ("asyncio TCP echo", 2.0)]
    for r in lines:
        assert r["calls"] == 30
        assert 0 < r["rtt_p50_ms"] <= r["rtt_p90_ms"]
        assert r["server_cpu_us_per_call"] >= 0 and r["client_cpu_us_per_call"] > 0
