"""``python -m bench.scale [--quick | --full | --smoke] [--only buckets,clients,create,metadata,kv]``: measures the
scale curves, writes ``bench/results/scale.json`` and the figures ``docs/images/scale-*.png``, prints a summary."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from bench.fluss_log import _GrpcPollerNoise, server_pids
from bench.runner import machine
from bench.scale import ddl, kv, throughput
from bench.scale.curve import Curve
from bench.scale.sizes import PROFILES, ScaleProfile

GROUPS = ("buckets", "clients", "create", "metadata", "kv")
#: the curves (JSON keys) each group produces
CURVES = {"buckets": ("buckets",), "clients": ("clients",), "create": ("create_buckets", "create_partitions"),
          "metadata": ("metadata", "rss"), "kv": ("kv",)}
RESULTS = Path(__file__).resolve().parent.parent / "results" / "scale.json"
IMAGES = Path(__file__).resolve().parent.parent.parent / "docs" / "images"


async def _shared_cluster(profile: ScaleProfile, groups: tuple[str, ...]) -> list[Curve]:
    """The curves that share one 3-tablet-server cluster (everything but ``kv``)."""
    from fluss.server.cluster import LocalCluster

    out: list[Curve] = []
    # metadata first: its memory baseline is a cluster that hosts nothing yet
    steps: list[tuple[str, Callable]] = [
        ("metadata", lambda b, pids, tabs: ddl.metadata_curves(b, profile, pids)),
        ("create", lambda b, pids, tabs: ddl.create_curves(b, profile, list(pids.values()))),
        ("buckets", lambda b, pids, tabs: throughput.buckets_curve(b, profile, tabs)),
        ("clients", lambda b, pids, tabs: throughput.clients_curve(b, profile, tabs)),
    ]
    # LocalCluster's 3 s ZooKeeper session: a CREATE TABLE of 1,024 buckets is written in transactions of at most
    # 512 nodes (one of 2,050 nodes stalled ZooKeeper past the session's 2 s read timeout on this loaded machine)
    with LocalCluster(tablet_servers=3) as cluster:
        pids = {k: v for k, v in server_pids(cluster).items() if v}
        tablets = [v for k, v in pids.items() if k.startswith("tablet-server")]
        for group, step in steps:
            if group not in groups:
                continue
            t0 = time.monotonic()
            print(f"[scale] {group} ...", flush=True)
            try:
                got = await step(cluster.bootstrap_servers, pids, tablets)
                out += got if isinstance(got, list) else [got]
            except Exception as e:  # one broken curve must not hide the others
                out += [Curve(name, name, "", status=f"failed: {type(e).__name__}: {e}") for name in CURVES[group]]
            print(f"[scale] {group}: {time.monotonic() - t0:.1f}s", flush=True)
    return out


def run(profile: ScaleProfile, groups: tuple[str, ...]) -> dict:
    started = time.monotonic()
    noise = _GrpcPollerNoise()
    logging.getLogger("asyncio").addFilter(noise)
    try:
        curves = asyncio.run(_shared_cluster(profile, groups)) if set(groups) - {"kv"} else []
        if "kv" in groups:
            print("[scale] kv ...", flush=True)
            t0 = time.monotonic()
            try:
                curves.append(kv.run(profile))
            except Exception as e:
                curves.append(Curve("kv", "kv", "", status=f"failed: {type(e).__name__}: {e}"))
            print(f"[scale] kv: {time.monotonic() - t0:.1f}s", flush=True)
    finally:
        logging.getLogger("asyncio").removeFilter(noise)
    return {"generated_at": datetime.now(UTC).isoformat(timespec="seconds"), "mode": profile.name,
            "profile": profile.__dict__, "machine": machine(),
            "curves": {c.name: c.to_json() for c in curves}, "duration_s": round(time.monotonic() - started, 1)}


def summary(doc: dict) -> str:
    lines = []
    for name, c in doc["curves"].items():
        if c["status"] != "ok":
            lines.append(f"{name}: {c['status']}")
            continue
        lines.append(f"{name} ({c['x_label']}: {', '.join(f'{x:g}' for x in c['x'])})")
        for series, s in c["series"].items():
            values = ", ".join("-" if v is None else f"{v:,.3g}" for v in s["values"])
            lines.append(f"  {series} [{s['unit']}]: {values}")
        lines += [f"  note: {n}" for n in c["notes"]]
    lines.append(f"run took {doc['duration_s']}s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="about 10 minutes (the default; make bench-scale)")
    mode.add_argument("--full", action="store_true", help="larger sizes (10M keys, more rounds)")
    mode.add_argument("--smoke", action="store_true", help="the smallest sizes, under a minute (make test)")
    parser.add_argument("--only", default=",".join(GROUPS), help=f"comma-separated curves of {','.join(GROUPS)}")
    parser.add_argument("--output", default=str(RESULTS), help="where to write the JSON results")
    parser.add_argument("--images", default=str(IMAGES), help="where to write the PNG figures ('' for none)")
    args = parser.parse_args(argv)
    groups = tuple(g.strip() for g in args.only.split(",") if g.strip())
    unknown = set(groups) - set(GROUPS)
    if unknown:
        parser.error(f"unknown curves: {', '.join(sorted(unknown))}")
    profile = PROFILES["full" if args.full else "smoke" if args.smoke else "quick"]
    doc = run(profile, groups)
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1))
    if args.images:
        from bench.scale.plot import plot_all

        plot_all(doc, Path(args.images))
    print(summary(doc))
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
