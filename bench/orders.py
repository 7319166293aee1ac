"""What each order costs and mixes (``lstm-data bench --only orders``).

On numu_v3-like data (about 3 png3d prongs per event, a tail past ``max_len`` 20;
``make_dataset(png_mean=2)``), batch size 512, one thread, for each policy: full
shuffle, block shuffle (the data in a zarr store on disk), fixed-size length
bucketing, element-budget batches (``max_elements`` = 512 x 8 png3d slots, in RAM
and block-shuffled, and 512 x 4), automatic bucket lengths (4 shapes) and histogram-reweighted
sampling. Each row: batches per epoch, padded slots per real png3d element, rows cut
by ``max_len``, mixing of rows / lengths (1 = a full shuffle; from
``Batches.stats()``), and events per second building one epoch (median of
interleaved rounds). ``--check`` guards only ratios of our own policies, with margin.
"""
from __future__ import annotations

import statistics
import tempfile
from pathlib import Path
from typing import Any, Callable

import numpy as np

import lstm_data
from lstm_data.batching import Batches
from lstm_data.batching.order.options import Order
from lstm_data.data.concat import ConcatDataset
from lstm_data.data.synthetic import make_dataset

from bench.bucketing import BUCKET_MAX_LEN, _bucket_spec
from bench.data import BenchData
from bench.timing import Report, interleaved_samples, median_of_ratios

__all__ = ["run", "stage_orders", "POLICIES"]

BATCH = 512
BUDGET = BATCH * 8
#: the data comes in this many files (in RAM: parts of one ConcatDataset; on disk: zarr stores)
FILES = 8

#: policy name -> (Order settings, on disk)
POLICIES: dict[str, tuple[dict[str, Any], bool]] = {
    "full": (dict(shuffle=True), False),
    "block": (dict(shuffle="block"), True),
    "bucketed": (dict(shuffle=True, bucket_by="input_png3d"), False),
    "budget": (dict(shuffle=True, bucket_by="input_png3d", max_elements=BUDGET), False),
    "budget, block": (dict(shuffle="block", bucket_by="input_png3d", max_elements=BUDGET), True),
    "budget 512 x 4": (dict(shuffle=True, bucket_by="input_png3d", max_elements=BATCH * 4), False),
    "auto lengths k=4": (dict(shuffle=True, bucket_by="input_png3d", bucket_lengths="auto", max_shapes=4), False),
    "weighted": (dict(shuffle=True, sample={"vars": ["trueE"], "bins": [[float(e) for e in np.linspace(0, 100, 21)]],
                                            "target": "flat"}), False),
}


def _epoch(batches: Batches) -> Callable[[], None]:
    def run() -> None:
        for _ in batches.iter(threads=1):
            pass
    return run


def stage_orders(report: Report, data: BenchData, quick: bool) -> dict[str, dict[str, float]]:
    """Measure every policy of :data:`POLICIES`; returns the table (policy -> figures)."""
    spec = _bucket_spec()
    numu = make_dataset(data.n_rows, data.seed, png_mean=2.0)
    cuts = np.linspace(0, len(numu), FILES + 1).astype(int)
    parts = [numu.take(np.arange(a, b)) for a, b in zip(cuts[:-1], cuts[1:])]
    in_ram = ConcatDataset(parts)
    table: dict[str, dict[str, float]] = {}
    built: dict[str, Batches] = {}
    policies = dict(POLICIES)
    m = _best_multiple(numu)
    policies[f"bucketed, pad_to_multiple_of={m} (4 shapes)"] = (dict(shuffle=True, bucket_by="input_png3d"), False)
    with tempfile.TemporaryDirectory(prefix="lstm-data-orders-") as tmp:
        stores = [Path(tmp) / f"numu_{k}.zarr" for k in range(FILES)]
        for part, store in zip(parts, stores):
            part.to_zarr(store)
        disk = lstm_data.open([str(p) for p in stores])
        for name, (settings, on_disk) in policies.items():
            batch_spec = spec.replace(pad_to_multiple_of=m) if "pad_to_multiple_of" in name else spec
            try:
                b = Batches(disk if on_disk else in_ram, batch_spec, Order(batch_size=BATCH, seed=1, **settings))
            except Exception as exc:  # noqa: BLE001 - a policy this checkout lacks is left out, said why
                report.ratio("orders", f"{name}: not measured ({type(exc).__name__}: {exc})"[:120], float("nan"))
                continue
            st = b.stats(0)
            table[name] = {"batches": len(b), "rows per batch": st["rows"] / max(1, st["batches"]),
                           "padded per real png3d element": st["padding"]["input_png3d"],
                           "rows cut by max_len (%)": 100 * st["truncated"]["input_png3d"]["fraction"],
                           "mixing, rows": st["mixing"], "mixing, files": st["file_mixing"],
                           "mixing, png3d lengths": st["length_mixing"]["input_png3d"]}
            built[name] = b
        rounds = interleaved_samples({n: _epoch(b) for n, b in built.items()}, repeats=3 if quick else 5,
                                     warmup=1, rotate=True)
        times = {name: statistics.median(t) for name, t in rounds.items()}
        for name, t in times.items():
            table[name]["events/s"] = built[name].n_rows / t
            report.time("orders", f"one epoch, {name}", t, items=built[name].n_rows, unit="events")
    for name, row in table.items():  # the figures (events/s are the timings above)
        for fig in ("padded per real png3d element", "mixing, rows", "mixing, files", "mixing, png3d lengths"):
            report.ratio("orders", f"{name}: {fig}", float(row[fig]))
    _guards(report, table, numu, rounds)
    return table


def _guards(report: Report, table: dict[str, dict[str, float]], numu: Any,
            rounds: dict[str, list[float]]) -> None:
    """The ratios ``--check`` guards (floors in floors.toml, [orders]); times: medians of per-round ratios."""
    pad = {n: r["padded per real png3d element"] for n, r in table.items()}
    if "budget" in pad and "bucketed" in pad:
        report.ratio("orders", "padding, budget / fixed-size bucketing", pad["budget"] / pad["bucketed"])
        # events per second of an epoch: rows over seconds, the seconds of both timed in the same round
        rows = {n: table[n]["events/s"] * statistics.median(rounds[n]) for n in ("budget", "bucketed")}
        report.ratio("orders", "events/s, budget / fixed-size bucketing",
                     median_of_ratios([rows["budget"] * t for t in rounds["bucketed"]],
                                      [rows["bucketed"] * t for t in rounds["budget"]]))
    if "budget, block" in table and "budget" in table:
        report.ratio("orders", "batches per epoch, block budget / in-RAM budget",
                     table["budget, block"]["batches"] / table["budget"]["batches"])
    if "full" in table:
        report.ratio("orders", "full shuffle mixing, rows", table["full"]["mixing, rows"])
    # automatic lengths (k=4) against the best pad_to_multiple_of with at most 4 distinct shapes
    from lstm_data.batching.order.bucket_lengths import choose_lengths, padding_of

    widths = np.minimum(np.diff(numu.ragged("png")[1]), BUCKET_MAX_LEN)
    best = padding_of(widths, _multiple_grid(widths, _best_multiple(numu)))
    report.ratio("orders", "padding, auto lengths k=4 / best pad_to_multiple_of with 4 shapes",
                 padding_of(widths, choose_lengths(widths, 4)) / best)


def _multiple_grid(widths: np.ndarray, m: int) -> np.ndarray:
    return np.unique(np.minimum(-(-widths // m) * m, BUCKET_MAX_LEN))


def _best_multiple(numu: Any) -> int:
    """The ``pad_to_multiple_of`` with at most 4 distinct png3d widths that pads the rows least."""
    from lstm_data.batching.order.bucket_lengths import padding_of

    widths = np.minimum(np.diff(numu.ragged("png")[1]), BUCKET_MAX_LEN)
    fits = [m for m in range(2, BUCKET_MAX_LEN + 1) if len(_multiple_grid(widths, m)) <= 4]
    return min(fits, key=lambda m: padding_of(widths, _multiple_grid(widths, m)))


def markdown_table(table: dict[str, dict[str, float]]) -> str:
    """The table as Markdown (for docs/performance.md)."""
    cols = ["batches", "rows per batch", "padded per real png3d element", "rows cut by max_len (%)",
            "mixing, rows", "mixing, files", "mixing, png3d lengths", "events/s"]
    lines = ["| policy | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for name, row in table.items():
        cells = [f"{row[c]:.0f}" if c in ("batches", "events/s", "rows per batch") else f"{row[c]:.3f}"
                 for c in cols]  # events/s: one thread, building every batch of an epoch
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run(quick: bool = False, seed: int = 0, data: BenchData | None = None) -> Report:
    """Run the orders stage on ``data`` (cached generated inputs)."""
    data = data if data is not None else BenchData(quick=quick, seed=seed)
    report = Report()
    stage_orders(report, data, quick)
    return report


if __name__ == "__main__":  # python -m bench.orders [--quick]: the docs' table
    import sys

    quick = "--quick" in sys.argv
    print(markdown_table(stage_orders(Report(), BenchData(quick=quick), quick)))
