"""Runs the families of one benchmark run in order and assembles the result document.

Order: raw limits first (nothing else running), then this project's clusters (log and KV scenarios, KV
recovery, lake tiering, Flink SQL), then each peer, one at a time, so no two systems share the 2 cores. A family
that fails is recorded as failed (under the key prefix of its scenarios); the run goes on.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime

import pyarrow as pa

from bench import (
    flink_sql,
    fluss_failover,
    fluss_log,
    fluss_metrics,
    fluss_reassignment,
    fluss_recovery,
    fluss_remote,
    fluss_security,
    gateway,
    kafka_peer,
    kafka_rf3,
    lake_tiering,
    raw,
    redis_peer,
    report,
    upstream,
)
from bench.data import LOGICAL_ROW_BYTES, PROJECTED, SCHEMA, arrow_bytes_per_row, make_batch
from bench.model import FAILED, Measurement, Profile
from bench.monitor import CpuSteal
from bench.setup import KAFKA_LIB

FAMILIES = ("raw", "fluss", "security", "gateway", "recovery", "reassign", "remote", "tiering", "flink", "metrics",
            "redis", "kafka", "kafka3", "upstream")


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


def _guard(system: str, keys: tuple[str, ...], fn: Callable[[], list[Measurement]]) -> list[Measurement]:
    """``fn()``, or failed measurements standing for every figure of ``system`` under ``keys`` (``*``: all)."""
    try:
        return fn()
    except Exception as e:  # a family that breaks is reported, the run goes on
        return [Measurement(system, key, "", status=FAILED, note=f"{type(e).__name__}: {e}") for key in keys]


def run(profile: Profile, families: tuple[str, ...] = FAMILIES) -> dict:
    """Every selected family, then the scenario table; returns the JSON document (also written to disk)."""
    started = time.monotonic()
    measurements: list[Measurement] = []
    resolved: dict[str, str] = {}
    timings: dict[str, float] = {}
    steals: dict[str, float | None] = {}  # the hypervisor's share of the CPU time during each family (percent)
    # family, its function, and the system and key prefixes that a failure of the whole family stands for
    steps: list[tuple[str, Callable[[], list[Measurement]], str, tuple[str, ...]]] = [
        ("raw", lambda: raw.run(profile), "raw", ("*",)),
        ("fluss", lambda: fluss_log.run(profile), "fluss", ("log", "kv.upsert", "kv.lookup")),
        ("security", lambda: fluss_security.run(profile), "fluss", ("security",)),
        ("gateway", lambda: gateway.run(profile), "fluss", ("gateway",)),
        ("recovery", lambda: fluss_recovery.run(profile) + fluss_failover.run(profile), "fluss",
         ("kv.recovery", "log.failover")),
        ("remote", lambda: fluss_remote.run(profile), "fluss", ("remote",)),
        ("reassign", lambda: fluss_reassignment.run(profile), "fluss", ("log.reassign", "kv.reassign", "rebalance")),
        ("tiering", lambda: lake_tiering.run(profile), "fluss", ("tiering",)),
        ("flink", lambda: flink_sql.run(profile), "fluss", ("flink",)),
        ("metrics", lambda: fluss_metrics.run(profile), "fluss", ("metrics",)),
        ("redis", lambda: redis_peer.run(profile), "redis", ("*",)),
        ("kafka", lambda: kafka_peer.run(profile), "kafka-java", ("*",)),
        ("kafka3", lambda: kafka_rf3.run(profile), "kafka-java", ("log.append.rf3",)),
    ]
    for name, fn, system, keys in steps:
        if name in families:
            print(f"[bench] {name} ...", flush=True)
            t0 = time.monotonic()
            with CpuSteal() as steal:
                measurements += _guard(system, keys, fn)
            timings[name] = round(time.monotonic() - t0, 1)
            steals[name] = steal.percent
    if "upstream" in families:
        print("[bench] upstream (Apache Fluss) ...", flush=True)
        t0 = time.monotonic()
        with CpuSteal() as steal:
            resolved, upstream_measurements = upstream.run(profile)
        measurements += upstream_measurements
        timings["upstream"] = round(time.monotonic() - t0, 1)
        steals["upstream"] = steal.percent
    scenarios = report.build(measurements)
    sample = make_batch(1000)
    kafka_jars = sorted(KAFKA_LIB.glob("kafka_2.13-*.jar")) if KAFKA_LIB.is_dir() else []
    flink_version = _version([sys.executable, "-c", "import pyflink.version as v; print(v.__version__)"])
    paimon_version = _version([sys.executable, "-c", "import importlib.metadata as m; print(m.version('pypaimon'))"])
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
            "kafka-java": {"version": kafka_jars[-1].stem if kafka_jars else None,
                           "rf3": f"{kafka_rf3.NODES} KRaft nodes (broker + controller), {kafka_rf3.TOPIC_CONFIG}"},
            "apache-fluss": resolved,
            "flink": {"version": flink_version, "pyflink": "PyFlink local mini cluster, batch mode"},
            "paimon": {"pypaimon": paimon_version},
        },
        "scenarios": scenarios,
        "goals": report.goals(scenarios),
        "measurements": [m.to_json() for m in measurements],
        "family_seconds": timings,
        "family_cpu_steal_percent": steals,
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
          f"run took {doc['duration_s']}s ({doc['family_seconds']}); CPU steal by the hypervisor, percent: "
          f"{doc.get('family_cpu_steal_percent', {})}")
