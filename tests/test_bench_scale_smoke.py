"""A short run of the scale curves (``make bench-scale`` runs the quick one): the smallest size of every curve, in
its own process, and the JSON holds every curve with sane values and a figure for each."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

from bench.scale.__main__ import CURVES
from bench.scale.ddl import slope

ROOT = Path(__file__).resolve().parent.parent


def test_every_scale_curve_has_sane_values(tmp_path):
    out, images = tmp_path / "scale.json", tmp_path / "images"
    run = subprocess.run([sys.executable, "-m", "bench.scale", "--smoke", "--output", str(out), "--images",
                          str(images)], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    doc = json.loads(out.read_text())
    expected = {name for names in CURVES.values() for name in names}
    assert set(doc["curves"]) == expected
    for name, curve in doc["curves"].items():
        assert curve["status"] == "ok", (name, curve["status"])
        assert len(curve["x"]) >= 1 and curve["series"], name
        for series, s in curve["series"].items():
            assert len(s["values"]) == len(curve["x"]), (name, series)
            for v in s["values"]:
                assert v is not None and math.isfinite(v) and v >= 0, (name, series, s["values"])
        assert (images / f"scale-{name}.png").stat().st_size > 1000, name
    c = doc["curves"]
    assert c["buckets"]["x"] == [3, 12] and min(c["buckets"]["series"]["append"]["values"]) > 1000
    assert min(c["clients"]["series"]["scan (aggregate)"]["values"]) > 1000
    for name in ("create_buckets", "create_partitions"):
        s = c[name]["series"]
        for returned, usable in zip(s["create call returns"]["values"], s["usable (every leader serves)"]["values"],
                                    strict=True):
            assert 0 < returned <= usable < 60_000, (name, returned, usable)
    meta = c["metadata"]["series"]
    assert all(p50 <= p99 for p50, p99 in zip(meta["one table p50"]["values"], meta["one table p99"]["values"],
                                              strict=True))
    assert c["rss"]["x"][0] == 0 and min(c["rss"]["series"]["tablet servers (sum)"]["values"]) > 50
    kv = c["kv"]["series"]
    assert 0 < kv["lookup p50"]["values"][0] <= kv["lookup p99"]["values"][0]
    assert 0.1 < kv["restart -> serving"]["values"][0] < 120


def test_slope_is_the_least_squares_fit():
    assert slope([0, 1, 2], [1, 3, 5]) == 2
    assert slope([4, 4], [1, 2]) is None
