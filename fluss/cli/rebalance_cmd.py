"""``fluss cluster rebalance [start|list|cancel]``: Fluss's rebalance from the command line
(docs/cluster-operations.md).

``start`` (the default) plans and starts a rebalance with ``--goals`` (Fluss's goal names, comma separated, in
priority order; default ``RACK_AWARE,REPLICA_DISTRIBUTION,LEADER_DISTRIBUTION``) and prints its id; with ``--wait`` it
prints the progress whenever it changes until the rebalance ends, and exits 0 only when it ``COMPLETED``. ``list``
prints a rebalance's status, progress and each bucket's move (``--id``; default the most recent; ``--json`` for
scripts). ``cancel`` cancels it: buckets not started are cancelled, moves in flight finish.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from fluss.cli.common import client_properties, run_client


def parse_goal_names(text: str | None):
    from fluss.metadata import GoalType

    if not text:
        return []
    goals = []
    for name in (n.strip() for n in text.split(",")):
        try:
            goals.append(GoalType[name.upper()])
        except KeyError:
            raise SystemExit(f"error: unknown rebalance goal {name!r}: expected one of "
                             f"{', '.join(g.name for g in GoalType)}") from None
    return goals


def progress_json(p) -> dict:
    return {"rebalance_id": p.rebalance_id, "status": p.status.name, "progress": round(p.progress, 4),
            "goals": [g.name for g in p.goals],
            "buckets": [{"table": str(b.table_path) if b.table_path else None, "table_id": b.table_id,
                         "partition": b.partition_name, "bucket": b.bucket_id,
                         "original_replicas": b.original_replicas, "new_replicas": b.new_replicas,
                         "original_leader": b.original_leader, "new_leader": b.new_leader, "status": b.status.name}
                        for b in p.buckets]}


def summary(p) -> str:
    from collections import Counter

    counts = Counter(b.status.name for b in p.buckets)
    detail = ", ".join(f"{n} {s.lower()}" for s, n in sorted(counts.items()))
    return f"{p.rebalance_id} {p.status.name} {p.format_as_percentage()} ({len(p.buckets)} buckets: {detail or 'none'})"


def run(args: argparse.Namespace) -> int:
    if len(args.items) > 1 or (args.items and args.items[0] not in ("start", "list", "cancel")):
        print(f"fluss cluster rebalance takes start, list or cancel (got: {' '.join(args.items)})", file=sys.stderr)
        return 2
    what = args.items[0] if args.items else "start"
    goals = parse_goal_names(args.goals) if what == "start" else []

    async def work(conn) -> int:
        admin = conn.get_admin()
        if what == "cancel":
            await admin.cancel_rebalance(args.id)
            print(f"Cancelled {args.id or 'the most recent rebalance'}: buckets not started are cancelled, "
                  "moves in flight finish")
            return 0
        if what == "list":
            p = await admin.list_rebalance(args.id)
            if p is None:
                print(json.dumps(None) if args.json else f"No rebalance {args.id or ''}".rstrip())
                return 1
            if args.json:
                print(json.dumps(progress_json(p), indent=2))
                return 0
            print(summary(p))
            for b in p.buckets:
                where = f"{b.table_path or b.table_id}" + (f"/{b.partition_name}" if b.partition_name else "")
                print(f"  {where} bucket {b.bucket_id}: {b.original_replicas} (leader {b.original_leader}) -> "
                      f"{b.new_replicas} (leader {b.new_leader}) {b.status.name}")
            return 0
        rid = await admin.rebalance(goals)
        print(rid, flush=True)
        if not args.wait:
            return 0
        last = None
        while True:
            p = await admin.list_rebalance(rid)
            line = summary(p)
            if line != last:
                print(line, flush=True)
                last = line
            if p.status.is_final and not any(b.status.name == "REBALANCING" for b in p.buckets):
                return 0 if p.status.name == "COMPLETED" else 1
            await asyncio.sleep(args.poll_interval)

    try:
        return run_client(client_properties(args), work)
    except Exception as e:  # noqa: BLE001 - a refusal from the coordinator, printed for the operator
        print(f"error: {e}", file=sys.stderr)
        return 2
