"""Runs the families of one benchmark run in order and assembles the result document.

Order: raw limits first (nothing else running), then this project's cluster, then each peer, one at a time, so
no two systems share the 2 cores. A family that fails is recorded as failed; the run goes on.
"""

from __future__ import annotations

import os
import platform
import subprocess
import time
from collections.abc import Callable
from datetime import UTC, datetime

import pyarrow as pa

from bench import fluss_log, kafka_peer, raw, redis_peer, report, upstream
from bench.data import LOGICAL_ROW_BYTES, PROJECTED, SCHEMA, arrow_bytes_per_row, make_batch
from bench.model import FAILED, Measurement, Profile
from bench.setup import KAFKA_LIB

FAMILIES = ("raw", "fluss", "redis", "kafka", "upstream")


def machine() -> dict:
    """What the figures were measured on."""
    mem_kb = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
    with open("/proc/cpuinfo") as f:
        cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "?")
    return {"nproc": os.cpu_count(), "mem_total_gib": round(mem_kb / 2**20, 1), "cpu": cpu,
            "kernel": platform.release(), "python": platform.python_version(), "pyarrow": pa.__version__}


def _version(cmd: list[str]) -> str | None:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        return None


def _guard(system: str, fn: Callable[[], list[Measurement]]) -> list[Measurement]:
    try:
        return fn()
    except Exception as e:  # a family that breaks is reported, the run goes on
        return [Measurement(system, "*", "", status=FAILED, note=f"{type(e).__name__}: {e}")]


def run(profile: Profile, families: tuple[str, ...] = FAMILIES) -> dict:
    """Every selected family, then the scenario table; returns the JSON document (also written to disk)."""
    started = time.monotonic()
    measurements: list[Measurement] = []
    resolved: dict[str, str] = {}
    timings: dict[str, float] = {}
    steps: list[tuple[str, Callable[[], list[Measurement]]]] = [
        ("raw", lambda: raw.run(profile)),
        ("fluss", lambda: fluss_log.run(profile)),
        ("redis", lambda: redis_peer.run(profile)),
        ("kafka", lambda: kafka_peer.run(profile)),
    ]
    for name, fn in steps:
        if name in families:
            print(f"[bench] {name} ...", flush=True)
            t0 = time.monotonic()
            measurements += _guard(name, fn)
            timings[name] = round(time.monotonic() - t0, 1)
    if "upstream" in families:
        print("[bench] upstream (Apache Fluss) ...", flush=True)
        t0 = time.monotonic()
        resolved, upstream_measurements = upstream.run(profile)
        measurements += upstream_measurements
        timings["upstream"] = round(time.monotonic() - t0, 1)
    scenarios = report.build(measurements)
    sample = make_batch(1000)
    kafka_jars = sorted(KAFKA_LIB.glob("kafka_2.13-*.jar")) if KAFKA_LIB.is_dir() else []
    doc = {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "mode": profile.name,
        "profile": profile.__dict__,
        "machine": machine(),
        "data": {"columns": len(SCHEMA), "schema": str(SCHEMA).splitlines(), "projected": PROJECTED,
                 "logical_bytes_per_row": LOGICAL_ROW_BYTES,
                 "arrow_bytes_per_row": round(arrow_bytes_per_row(sample), 1)},
        "peers": {
            "redis": {"version": _version(["redis-server", "--version"])},
            "kafka-java": {"version": kafka_jars[-1].stem if kafka_jars else None},
            "apache-fluss": resolved,
        },
        "scenarios": scenarios,
        "goals": report.goals(scenarios),
        "measurements": [m.to_json() for m in measurements],
        "family_seconds": timings,
        "duration_s": round(time.monotonic() - started, 1),
    }
    return doc


def print_summary(doc: dict) -> None:
    """The table, the goals, and every figure that is missing with its reason."""
    print()
    print(report.table(doc["scenarios"]))
    print()
    for g in doc["goals"]:
        verdict = {True: "MET", False: "NOT MET", None: "not measured"}[g["met"]]
        ratio = "-" if g["ratio"] is None else f"{g['ratio']:.2f}"
        print(f"goal: {g['goal']}: {ratio} (target {g['target']}) {verdict}")
    missing = {(m["system"], m["status"], m["note"]) for m in doc["measurements"] if m["status"] != "ok"}
    for system, status, note in sorted(missing):
        print(f"{system}: {status}: {note}")
    print(f"machine: {doc['machine']['nproc']} cores, {doc['machine']['mem_total_gib']} GiB; "
          f"run took {doc['duration_s']}s ({doc['family_seconds']})")
