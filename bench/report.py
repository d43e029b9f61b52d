"""Turns one run's measurements into the scenario table (terminal) and ``bench/results/latest.json``.

Ratios are always *this project's figure / the other figure*: above 1 is better for throughput, below 1 is
better for latency (``better`` says which). Spread is min-max of the rounds (the JSON also has the quartiles).
For appends the ``x raw`` column shows the paired ratio (marked ``*``): the median over rounds of this round's
rate / the raw append of the same batch right after it, which is steadier on a shared machine than the ratio of
two medians measured minutes apart (also in the JSON, as ``raw_limit.ratio``).
"""

from __future__ import annotations

import json
from pathlib import Path

from bench.model import NOT_AVAILABLE, OK, Measurement
from bench.scenarios import GOALS, NOT_LANDED, PAIRED_RAW, PEERS, SCENARIOS

RESULTS = Path(__file__).resolve().parent / "results" / "latest.json"
SHORT = {"kafka-java": "kjava", "kafka-python": "kpy", "apache-fluss": "apache"}


def _find(measurements: list[Measurement], system: str, key: str) -> Measurement | None:
    """The measurement of ``system`` for ``key``, else the failure that stands for it (a failed step whose key is a
    prefix of ``key``, or a whole family's ``*``), else None."""
    exact = next((m for m in measurements if m.system == system and m.key == key), None)
    if exact is not None:
        return exact
    return next((m for m in measurements if m.system == system and m.status != OK
                 and (m.key == "*" or key.startswith(m.key + "."))), None)


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 4) if a is not None and b else None


def _side(m: Measurement | None, mine: float | None) -> dict:
    if m is None:
        return {"status": "not measured"}
    return {"key": m.key, "status": m.status, "median": m.median, "spread": m.spread(), "ratio": _ratio(mine, m.median),
            "note": m.note, "rss_peak_mb": m.rss_peak_mb}


def build(measurements: list[Measurement]) -> list[dict]:
    """One JSON object per scenario of the catalogue."""
    out = []
    for sc in SCENARIOS:
        mine = None
        if sc.available:
            mine = _find(measurements, "fluss", sc.id) or Measurement("fluss", sc.id, sc.unit, status="not measured")
        status = mine.status if mine else NOT_AVAILABLE
        median = mine.median if mine else None
        raw = _find(measurements, "raw", sc.raw) if sc.raw else None
        paired = _find(measurements, "fluss", sc.id.removesuffix(".mb") + ".paired_raw") if mine else None
        raw_side = _side(raw, median) if raw else None
        if raw_side is not None and paired is not None and paired.status == OK:
            raw_side["paired_ratio"] = paired.median
            raw_side["paired_spread"] = paired.spread()
        out.append({
            "id": sc.id, "title": sc.title, "unit": sc.unit, "better": sc.better, "status": status,
            "figure": {"median": median, "spread": mine.spread() if mine else None,
                       "rounds": mine.rounds if mine else []},
            "note": "; ".join(x for x in (mine.note if mine else NOT_LANDED, sc.note) if x),
            "raw_limit": raw_side,
            "peers": {p: _side(_find(measurements, p, key), median) for p, key in sc.peers.items()},
            "rss_peak_mb": mine.rss_peak_mb if mine else {},
        })
    return out


def goals(scenarios: list[dict]) -> list[dict]:
    """Each goal of issue 3 with its measured ratio and whether it is met."""
    by_id = {s["id"]: s for s in scenarios}

    def value(ref: str) -> float | None:
        return by_id[ref]["figure"]["median"] if ref in by_id else None

    out = []
    for g in GOALS:
        if g.denominator == PAIRED_RAW:  # the ratio measured round by round against the raw append
            r = ((by_id.get(g.numerator) or {}).get("raw_limit") or {}).get("paired_ratio")
            r = None if r is None else round(r, 4)
        else:
            r = _ratio(value(g.numerator), value(g.denominator))
        out.append({"goal": g.text, "ratio": r, "target": g.at_least, "met": None if r is None else r >= g.at_least})
    return out


def _fmt(v: float | None, unit: str = "") -> str:
    if v is None:
        return "-"
    if unit == "ms" or abs(v) < 100:
        return f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"
    for div, suffix in ((1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return f"{v / div:.2f}{suffix}"
    return f"{v:.0f}"


def _rss(s: dict) -> str:
    rss = s["rss_peak_mb"]
    if not rss:
        return "-"
    servers = [v for k, v in rss.items() if k != "client"]
    return f"{rss.get('client', 0):.0f}/{max(servers):.0f}" if servers else f"{rss.get('client', 0):.0f}/-"


def table(scenarios: list[dict]) -> str:
    """The terminal table (plain text, also pasted into docs/benchmarks.md)."""
    head = ["scenario", "unit", "fluss", "min-max", "raw", "x raw"]
    for p in PEERS:
        head += [p, "x " + SHORT.get(p, p)]
    head.append("RSS MB cli/srv")
    rows = [head]
    for s in scenarios:
        f = s["figure"]
        spread = f["spread"]
        if s["status"] == OK:
            row = [s["title"], s["unit"], _fmt(f["median"], s["unit"]),
                   f"{_fmt(spread['min'], s['unit'])}-{_fmt(spread['max'], s['unit'])}" if spread else "-"]
        else:
            row = [s["title"], s["unit"], s["status"], ""]
        rl = s["raw_limit"] or {}
        ratio = rl.get("paired_ratio", rl.get("ratio"))
        row += [_fmt(rl.get("median"), s["unit"]), _fmt(ratio) + ("*" if "paired_ratio" in rl else "")]
        for p in PEERS:
            side = s["peers"].get(p)
            if side is None:
                row += ["", ""]
            elif side["status"] != OK:
                row += [side["status"], ""]
            else:
                row += [_fmt(side["median"], s["unit"]), _fmt(side["ratio"])]
        row.append(_rss(s))
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = [" | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def write(doc: dict, path: Path = RESULTS) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2, sort_keys=False) + "\n")
    return path
