"""The checker: from the history and the final state alone, what went wrong (Jepsen-style).

Log table (rows are ``(writer, seq)``, unique by construction):

* **lost**: an acknowledged row that is not in the final log;
* **duplicated**: a row that appears more than once;
* **unexpected**: a row no operation ever wrote;
* **reordered**: a writer's rows whose order in its bucket differs from their ``seq`` order (an idempotent writer
  with one request in flight per bucket must append in order);
* **lost reads**: a row a reader saw at an offset that holds another row (or none) at the end (readers see only
  what is below the high watermark, which must never be lost);
* **offsets backwards**: a reader that saw an offset of a bucket at or below one it had already seen.

Primary-key table (writer ``w`` alone writes its keys, one operation at a time, ``seq`` growing):

* **wrong final value**: a key whose final row is not the one of its last acknowledged operation (a failed
  operation after it may have taken effect: its value is accepted too);
* **lost lookups**: a lookup that returned ``seq`` s for a key whose final state comes from an older operation
  (the value was later lost), or a value no operation wrote.

Availability: for every fault, the longest time during the fault and until the next one without any
acknowledged write (``max_unavailability_s`` per fault kind).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from reliability.chaos.workload import KEYS_PER_WRITER

EXAMPLES = 5  # anomalies listed per kind in the report


def check(events: list[dict[str, Any]], final: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    result.update(_check_log(events, final))
    result.update(_check_kv(events, final))
    result["availability"] = _availability(events)
    result["failed_operations"] = failures(events)
    anomalies = ("lost", "duplicated", "unexpected", "reordered", "lost_reads", "offsets_backwards",
                 "wrong_final_values", "lost_lookups")
    result["anomalies"] = {k: result[k]["count"] for k in anomalies}
    result["valid"] = not any(result["anomalies"].values())
    return result


def _anomaly(items: list) -> dict[str, Any]:
    return {"count": len(items), "examples": items[:EXAMPLES]}


# ------------------------------------------------------------ log table


def _check_log(events: list[dict[str, Any]], final: dict[str, Any]) -> dict[str, Any]:
    acked: set[tuple[int, int]] = set()
    maybe: set[tuple[int, int]] = set()
    ops = Counter()
    for e in events:
        if e.get("f") != "append" or e["type"] not in ("ok", "fail"):
            continue
        ops[e["type"]] += 1
        ids = {(e["writer"], s) for s in range(e["first"], e["first"] + e["count"])}
        (acked if e["type"] == "ok" else maybe).update(ids)
    present = Counter()
    at_offset: dict[tuple[int, int], tuple[int, int]] = {}
    order: dict[int, list[int]] = defaultdict(list)
    for bucket, rows in final["log"].items():
        for offset, writer, seq in rows:
            present[(writer, seq)] += 1
            at_offset[(int(bucket), offset)] = (writer, seq)
            order[writer].append(seq)
    lost = sorted(acked - set(present))
    duplicated = sorted(i for i, n in present.items() if n > 1)
    unexpected = sorted(set(present) - acked - maybe)
    reordered = [w for w, seqs in sorted(order.items()) if seqs != sorted(seqs)]
    lost_reads, backwards = [], []
    last_seen: dict[int, int] = {}
    reads = 0
    for e in events:
        if e.get("f") != "read" or e["type"] != "ok":
            continue
        bucket = e["bucket"]
        for i, (w, s) in enumerate(zip(e["writers"], e["seqs"], strict=True)):
            reads += 1
            offset = e["first_offset"] + i
            if offset <= last_seen.get(bucket, -1):
                backwards.append({"bucket": bucket, "offset": offset, "after": last_seen[bucket]})
            last_seen[bucket] = max(offset, last_seen.get(bucket, -1))
            if at_offset.get((bucket, offset)) != (w, s):
                lost_reads.append({"bucket": bucket, "offset": offset, "read": [w, s],
                                   "final": at_offset.get((bucket, offset))})
    return {
        "log": {"append_ok": ops["ok"], "append_failed": ops["fail"], "acked_rows": len(acked),
                "indeterminate_rows": len(maybe), "final_rows": sum(present.values()), "rows_read": reads},
        "lost": _anomaly([list(i) for i in lost]),
        "duplicated": _anomaly([list(i) for i in duplicated]),
        "unexpected": _anomaly([list(i) for i in unexpected]),
        "reordered": _anomaly(reordered),
        "lost_reads": _anomaly(lost_reads),
        "offsets_backwards": _anomaly(backwards),
    }


# ------------------------------------------------------------ primary-key table


def _check_kv(events: list[dict[str, Any]], final: dict[str, Any]) -> dict[str, Any]:
    # per key, the operations that touched it in invocation order (per writer they are sequential)
    history: dict[int, list[tuple[int, str, str]]] = defaultdict(list)  # key -> [(seq, kind, outcome)]
    ops = Counter()
    for e in events:
        if e.get("f") not in ("upsert", "delete") or e["type"] not in ("ok", "fail"):
            continue
        ops[f"{e['f']}_{e['type']}"] += 1
        for k in e["keys"]:
            history[k].append((e["seq"], e["f"], e["type"]))
    wrong = []
    final_seq: dict[int, int] = {}  # the seq of the operation the final state comes from (0: none)
    for k, state in final["kv"].items():
        k = int(k)
        touched = sorted(history.get(k, []))
        last_ok = max((i for i, (_, _, outcome) in enumerate(touched) if outcome == "ok"), default=-1)
        allowed = touched[max(last_ok, 0):] if last_ok >= 0 else touched  # the last ack, or any later failure
        candidates = {(None if kind == "delete" else seq) for seq, kind, _ in allowed}
        if last_ok < 0:
            candidates.add(None)  # never acknowledged: absent is fine
        got = None if state is None else state[1]
        if state is not None and state[0] != k // KEYS_PER_WRITER:
            wrong.append({"key": k, "final": list(state), "expected_writer": k // KEYS_PER_WRITER})
        elif got not in candidates:
            wrong.append({"key": k, "final": got, "allowed": sorted(candidates, key=lambda x: -1 if x is None else x)})
        if state is not None:
            final_seq[k] = state[1]
        else:
            deletes = [seq for seq, kind, _ in allowed if kind == "delete"]
            final_seq[k] = max(deletes, default=0)
    lost_lookups = []
    lookups = 0
    for e in events:
        if e.get("f") != "lookup" or e["type"] != "ok" or not e.get("found"):
            continue
        lookups += 1
        k, seq = e["key"], e["seq"]
        wrote = any(s == seq and kind == "upsert" for s, kind, _ in history.get(k, []))
        if not wrote or e["writer"] != k // KEYS_PER_WRITER or final_seq.get(k, 0) < seq:
            lost_lookups.append({"key": k, "read_seq": seq, "final_seq": final_seq.get(k), "written": wrote})
    return {
        "kv": {**ops, "keys": len(final["kv"]), "lookups_found": lookups},
        "wrong_final_values": _anomaly(wrong),
        "lost_lookups": _anomaly(lost_lookups),
    }


# ------------------------------------------------------------ availability


def _longest_gap(start: float, until: float, times: list[float]) -> float:
    window = [t for t in times if start <= t <= until]
    return max((b - a for a, b in zip([start, *window], [*window, until], strict=True)), default=0.0)


def _availability(events: list[dict[str, Any]]) -> dict[str, Any]:
    """Per fault kind: ``max_unavailability_s``, the longest time from a fault's start until the next fault
    without any acknowledged write; ``max_writer_stall_s``, the longest time one writer went without an
    acknowledgement in those windows (a writer stuck on one bucket shows here, not in the first)."""
    writes = [e for e in events if e["type"] == "ok" and e.get("f") in ("append", "upsert", "delete")]
    acks = sorted(e["time"] for e in writes)
    by_writer: dict[str, list[float]] = defaultdict(list)
    for e in writes:
        by_writer[e["process"]].append(e["time"])
    faults = sorted((e for e in events if e["type"] == "fault" and e["phase"] == "start"), key=lambda e: e["time"])
    ends = {(e["f"], e["start"]): e["time"] for e in events if e["type"] == "fault" and e["phase"] == "end"}
    out: dict[str, dict[str, Any]] = {}
    for i, f in enumerate(faults):
        start = f["time"]
        until = faults[i + 1]["time"] if i + 1 < len(faults) else (acks[-1] if acks else start)
        stat = out.setdefault(f["f"], {"count": 0, "max_unavailability_s": 0.0, "max_writer_stall_s": 0.0,
                                       "total_fault_s": 0.0})
        stat["count"] += 1
        stat["max_unavailability_s"] = round(max(stat["max_unavailability_s"], _longest_gap(start, until, acks)), 2)
        stall = max((_longest_gap(start, until, sorted(t)) for t in by_writer.values()), default=0.0)
        stat["max_writer_stall_s"] = round(max(stat["max_writer_stall_s"], stall), 2)
        stat["total_fault_s"] = round(stat["total_fault_s"] + ends.get((f["f"], start), start) - start, 2)
    return out


def failures(events: list[dict[str, Any]]) -> dict[str, Any]:
    """Operations the client gave up on, by kind and error (the most frequent errors)."""
    by_kind: Counter = Counter()
    errors: Counter = Counter()
    for e in events:
        if e["type"] == "fail" and e.get("op") is not None:
            by_kind[e["f"]] += 1
            errors[e.get("error", "")[:160]] += 1
    return {"by_kind": dict(by_kind), "errors": dict(errors.most_common(5))}
