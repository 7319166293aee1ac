"""``lstm-data bench --plot``: one bar chart of throughput per stage, ours vs baselines."""
from __future__ import annotations

from pathlib import Path

from bench.timing import Report

__all__ = ["plot_report"]

def plot_report(report: Report, path: str | Path, title: str = "lstm_data bench") -> None:
    """Write a PNG: per stage, horizontal bars of throughput on a log axis.

    Raises
    ------
    ImportError
        matplotlib is not installed (``pip install lstm_data[plot]``).
    """
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("--plot needs matplotlib: pip install 'lstm_data[plot]'") from exc

    rows = [t for t in report.timings if t.get("items") or t.get("bytes")]
    panels: dict[tuple[str, str], list[dict]] = {}
    for t in rows:
        unit = "MB/s" if t.get("bytes") else f"{t['unit']}/s"
        panels.setdefault((t["stage"], unit), []).append(t)
    fig, axes = plt.subplots(len(panels), 1, squeeze=False,
                             figsize=(10, 1.0 + 0.34 * len(rows) + 0.55 * len(panels)),
                             gridspec_kw={"height_ratios": [len(v) + 0.6 for v in panels.values()]})
    for ax, ((stage, unit), items) in zip(axes[:, 0], panels.items()):
        values = [(t["bytes"] / 1e6 if unit == "MB/s" else t["items"]) / t["seconds"] for t in items]
        colours = ["#d1495b" if t.get("ours") else "#8d99ae" for t in items]
        y = list(range(len(items)))
        ax.barh(y, values, color=colours)
        ax.set_xscale("log")
        ax.set_yticks(y, [t["name"] for t in items], fontsize=8)
        ax.invert_yaxis()
        ax.set_title(f"{stage}: {unit} (log scale; red = lstm_data)", fontsize=9, loc="left")
        for yi, v in zip(y, values):
            ax.text(v, yi, f" {v:,.0f}", va="center", fontsize=7)
        ax.set_xlim(min(values) / 2, max(values) * 10)
        ax.grid(axis="x", which="major", alpha=0.3)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
