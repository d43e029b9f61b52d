"""PNG figures of the scale curves (matplotlib, no display): one figure per curve, one panel per unit.

``python -m bench.scale.plot [RESULTS_JSON [DIRECTORY]]`` draws them again from a results file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)


def _label(v: float) -> str:
    if abs(v) >= 1e6:
        return f"{v / 1e6:.2f}M"
    if abs(v) >= 1e4:
        return f"{v / 1e3:.0f}k"
    if abs(v) >= 100:
        return f"{v:.0f}"
    return f"{v:.2f}" if abs(v) < 10 else f"{v:.1f}"


def plot_curve(name: str, curve: dict, directory: Path, mode: str) -> Path:
    """Writes ``scale-<name>.png`` under ``directory``: the curve's series by unit, values written at the points."""
    units: dict[str, list[str]] = {}
    for series, s in curve["series"].items():
        units.setdefault(s["unit"], []).append(series)
    fig, axes = plt.subplots(1, len(units), figsize=(5.2 * len(units), 3.8), squeeze=False)
    xs = curve["x"]  # a linear axis: a curve that should be linear looks it
    for ax, (unit, names) in zip(axes[0], units.items(), strict=True):
        for series in names:
            pts = [(x, v) for x, v in zip(xs, curve["series"][series]["values"], strict=True) if v is not None]
            if not pts:
                continue
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=series)
            for x, v in pts:
                ax.annotate(_label(v), (x, v), textcoords="offset points", xytext=(0, 5), ha="center", fontsize=7)
        ax.set_xticks(xs)
        ax.set_xticklabels([_label(x) if x >= 1e4 else f"{x:g}" for x in xs], fontsize=8)
        ax.minorticks_off()
        ax.set_xlabel(curve["x_label"])
        ax.set_ylabel(unit)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"{curve['title']} [{mode}]", fontsize=10)
    fig.tight_layout()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"scale-{name}.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def plot_all(doc: dict, directory: Path) -> list[Path]:
    """Every measured curve of a results document."""
    return [plot_curve(name, curve, directory, doc["mode"]) for name, curve in doc["curves"].items()
            if curve["status"] == "ok" and curve["x"]]


if __name__ == "__main__":
    from bench.scale.__main__ import IMAGES, RESULTS

    args = sys.argv[1:]
    written = plot_all(json.loads(Path(args[0] if args else RESULTS).read_text()),
                       Path(args[1]) if len(args) > 1 else IMAGES)
    print("\n".join(map(str, written)))
