"""Show a dataset's rows, columns, groups, statistics and prong multiplicities, or a batch store.

Examples::

    lstm-data inspect events.csv.xz
    lstm-data inspect events.zarr --plot multiplicity.png
    lstm-data inspect 'parts/*.h5' --json
    lstm-data inspect numu_v3_batches.zarr
    lstm-data inspect events.csv.xz --draft-spec events.toml --target trueE

A batch store (written by lstm-data precompute) shows its outputs with their roles,
shapes and dtypes, its number of batches and rows, the data it was made of, and the
spec and order it was built with, as TOML.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict
from typing import TYPE_CHECKING

import numpy as np

from lstm_data._util.plural import counted
from lstm_data.cli.csv_options import add_csv_arguments, csv_options
from lstm_data.cli.stats import Multiplicity, VariableStats, group_stats, multiplicity, variable_stats

if TYPE_CHECKING:
    from lstm_data.data.dataset import Dataset

__all__ = ["add_arguments", "run", "plot_multiplicities", "integrity_notes", "dotted_scalar_notes", "skipped_columns",
           "layouts"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help="file(s), store(s), glob pattern or URL; or one batch store")
    parser.add_argument("--schema", metavar="FILE.toml", default=None,
                        help="declared groups/scalars/dtype for inputs that do not store them")
    add_csv_arguments(parser)
    parser.add_argument("--plot", metavar="FILE.png", default=None,
                        help="draw per-group multiplicity histograms (needs matplotlib)")
    parser.add_argument("--no-stats", action="store_true",
                        help="skip per-variable statistics (faster on big on-disk data)")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead")
    parser.add_argument("--spec", metavar="SPEC.toml", default=None,
                        help="also report the spec's order on this data: batches, padding, rows cut by "
                             "max_len, mixing, and the bucket lengths (chosen or what 'auto' would choose)")
    parser.add_argument("--draft-spec", metavar="OUT.toml", default=None,
                        help="also write a first spec for this data (version 2, each choice commented): every "
                             "column as an input, max_len keeping 99%% of rows whole, empty rows handled, "
                             "lengths and mask, standardisation fitted from the data; an existing file is kept")
    parser.add_argument("--target", action="append", default=None, metavar="NAME",
                        help="with --draft-spec: a scalar column to predict (repeat for several; default: "
                             "columns named true*/target*/label*, else a placeholder)")


def _fmt(x: float) -> str:
    return f"{x:.6g}" if np.isfinite(x) else str(x)


def _stats_table(stats: list[VariableStats], indent: str = "  ") -> list[str]:
    if not stats:
        return []
    width = max(len(s.name) for s in stats)
    lines = [f"{indent}{'variable':<{width}}  {'min':>12} {'max':>12} {'mean':>12} {'NaN':>8}"]
    for s in stats:
        lines.append(f"{indent}{s.name:<{width}}  {_fmt(s.min):>12} {_fmt(s.max):>12} "
                     f"{_fmt(s.mean):>12} {s.nan:>8}")
    return lines


def _multiplicity_lines(m: Multiplicity) -> list[str]:
    qs = ", ".join(f"p{q * 100:g} {v}" for q, v in m.quantiles.items())
    lines = [f"  multiplicity: mean {m.mean:.2f}, {qs}, max {m.max}; "
             f"{counted(m.zero_rows, 'row')} ({100 * m.zero_rows / max(m.rows, 1):.1f}%) empty"]
    for frac, k in m.keeps.items():
        lines.append(f"  max_len {k} keeps {frac * 100:g}% of rows whole")
    return lines


def plot_multiplicities(multis: list[Multiplicity], lengths: dict[str, np.ndarray], path: str,
                        title: str) -> None:
    """Histogram of per-row lengths, one panel per group, with the 99% ``max_len`` marked.

    Raises
    ------
    ImportError
        matplotlib is not installed.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = max(1, len(multis))
    fig, axes = plt.subplots(1, n, figsize=(5 * n, 3.8), squeeze=False)
    for ax, m in zip(axes[0], multis):
        lens = lengths[m.group]
        counts = np.bincount(lens, minlength=1) if len(lens) else np.zeros(1, np.int64)
        ax.bar(np.arange(len(counts)), counts, width=0.9, color="#4c72b0")
        k99 = m.keeps.get(0.99)
        if k99 is not None:
            ax.axvline(k99 + 0.5, color="#c44e52", linestyle="--",
                       label=f"max_len {k99} keeps 99% whole")
            ax.legend(loc="upper right", fontsize=8)
        ax.set_yscale("log" if counts.max() > 50 * max(1, np.median(counts[counts > 0])) else "linear")
        ax.set_title(f"{m.group}: {counted(len(lengths[m.group]), 'row')}, mean {m.mean:.2f}")
        ax.set_xlabel("prongs per row")
        ax.set_ylabel("rows")
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def integrity_notes(ds: Dataset) -> list[str]:
    """What the files under ``ds`` cannot detect (their readers' ``notes``), e.g. a zarr store
    written before every chunk was stored, where a lost chunk reads as zeros."""
    parts = getattr(ds, "datasets", None)
    if parts is not None:  # several files as one
        return [note for part in parts for note in integrity_notes(part)]
    return list(getattr(ds, "notes", ()))


def dotted_scalar_notes(scalars: list[str], groups: dict[str, list[str]]) -> list[str]:
    """A note per group whose name prefixes scalar columns (``png.calE`` read as a scalar beside
    group ``png``): one number per row in this data, and how to read them as the group's."""
    by_group: dict[str, list[str]] = {}
    for name in scalars:
        prefix = name.split(".", 1)[0]
        if "." in name and prefix in groups:
            by_group.setdefault(prefix, []).append(name)
    notes = []
    for group, names in by_group.items():
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        many = len(names) > 1
        notes.append(f"{shown}: named like group {group!r} but read as {'scalars' if many else 'a scalar'} (one "
                     f"number per row); if {'they are' if many else 'it is'} the group's prong variable"
                     f"{'s' if many else ''}, declare the group: --schema FILE.toml with [groups] "
                     f"{group} = \"{group}.*\"")
    return notes


def skipped_columns(ds: Dataset) -> dict[str, str]:
    """Columns the readers under ``ds`` left out because they are not numbers: name -> what they hold
    (the readers' ``skipped``; several files: every file's, first one wins)."""
    parts = getattr(ds, "datasets", None)
    if parts is not None:
        out: dict[str, str] = {}
        for part in parts:
            for name, why in skipped_columns(part).items():
                out.setdefault(name, why)
        return out
    return dict(getattr(ds, "skipped", None) or {})


def layouts(ds: Dataset) -> list[str]:
    """How the files under ``ds`` store their ragged data, as their readers found it (the readers'
    ``layout``; several files: each different one once)."""
    parts = getattr(ds, "datasets", None)
    if parts is not None:
        return list(dict.fromkeys(name for part in parts for name in layouts(part)))
    found = getattr(ds, "layout", None)
    return [found] if found else []


def _write_draft(ds: Dataset, out: str, targets: list[str] | None, shown: str, *, quiet: bool) -> None:
    """Write the drafted spec of ``ds`` to ``out`` (a temporary file, then a rename)."""
    from lstm_data._util.safe_output import check_not_input, move_into_place, temp_path
    from lstm_data.batching.spec.draft import draft_spec

    check_not_input(out, getattr(ds, "source", ()))
    text = draft_spec(ds, targets=targets, source=shown)
    tmp = temp_path(out)
    try:
        tmp.write_text(text, encoding="utf-8")
        move_into_place(tmp, out, replace=False)
    finally:
        if tmp.exists():
            tmp.unlink()
    if not quiet:
        print(f"drafted spec written to {out}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    from lstm_data.errors import OptionError, redact
    from lstm_data.io.dispatch import open as open_dataset

    if args.plot:  # before any work: a missing matplotlib is said at once, not after the report
        from lstm_data._util.optional import require
        require("--plot", "plot", "matplotlib")
    shown = [redact(p) for p in args.paths]  # URLs without their credentials
    if len(args.paths) == 1:
        from lstm_data.store.describe import describe_store, is_batch_store

        if is_batch_store(args.paths[0]):  # batches, not rows: what the store holds
            if args.spec or args.plot or args.draft_spec:
                raise ValueError(f"{shown[0]} is a batch store: --spec, --plot and --draft-spec are for datasets; "
                                 "the store's own spec and order are shown without them")
            store = describe_store(args.paths[0])
            print(json.dumps(store.to_dict(), indent=1) if args.json else "\n".join(store.lines()))
            return 0
    if args.draft_spec is None and args.target:
        raise OptionError("--target names the targets of --draft-spec: give --draft-spec OUT.toml too")
    if args.draft_spec is not None and os.path.exists(args.draft_spec):
        raise FileExistsError(f"--draft-spec {args.draft_spec}: the file exists and is kept; "
                              "remove it or choose another name")
    ds = open_dataset(args.paths if len(args.paths) > 1 else args.paths[0], schema=args.schema,
                      **csv_options(args))
    if args.draft_spec is not None:
        _write_draft(ds, args.draft_spec, args.target, " ".join(shown), quiet=args.quiet)
    scalar_stats = [] if args.no_stats else variable_stats(ds)
    groups = {g: ([] if args.no_stats else group_stats(ds, g)) for g in ds.groups}
    multis = [multiplicity(ds, g) for g in ds.groups]
    notes = integrity_notes(ds) + dotted_scalar_notes(ds.scalar_names, ds.groups)
    skipped = skipped_columns(ds)
    found = layouts(ds)
    ordered = None
    if args.spec:
        from lstm_data.cli.order_report import order_report
        ordered = order_report(ds, args.spec)
    if args.json:
        doc = {"paths": shown, "rows": len(ds), "format": type(ds).__name__,
               "scalars": [asdict(s) for s in scalar_stats] or ds.scalar_names,
               "groups": {g: {"variables": [asdict(s) for s in groups[g]] or ds.groups[g],
                              "multiplicity": {**asdict(m),
                                               "quantiles": {str(q): v for q, v in m.quantiles.items()},
                                               "keeps": {str(f): k for f, k in m.keeps.items()}}}
                          for g, m in zip(ds.groups, multis)},
               "skipped": skipped, "notes": notes}
        if found:
            doc["layout"] = found[0] if len(found) == 1 else found
        if ordered is not None:
            doc["order"] = ordered
        print(json.dumps(doc, indent=1, allow_nan=True))
    else:
        lines = [f"{' '.join(shown)}: {type(ds).__name__}",
                 f"rows: {len(ds)}",
                 *[f"layout: {name}" for name in found],
                 f"columns: {counted(len(ds.scalar_names), 'scalar')}, "
                 f"{counted(sum(len(v) for v in ds.groups.values()), 'prong variable')} in "
                 f"{counted(len(ds.groups), 'group')}",
                 "", f"scalars ({len(ds.scalar_names)}):"]
        lines += _stats_table(scalar_stats) if scalar_stats else [f"  {', '.join(ds.scalar_names)}"]
        for g, m in zip(ds.groups, multis):
            lines += ["", f"group {g} ({counted(len(ds.groups[g]), 'variable')}, {counted(m.total, 'prong')}):"]
            lines += _multiplicity_lines(m)
            lines += _stats_table(groups[g]) if groups[g] else [f"  {', '.join(ds.groups[g])}"]
        if skipped:
            lines += ["", f"skipped ({len(skipped)}, not numbers):"]
            lines += [f"  {name}: {why}" for name, why in skipped.items()]
        lines += [""] + [f"note: {n}" for n in notes] if notes else []
        if ordered is not None:
            from lstm_data.cli.order_report import order_lines
            lines += order_lines(ordered)
        print("\n".join(lines))
    if args.plot:
        plot_multiplicities(multis, {g: np.diff(ds.offsets(g)) for g in ds.groups}, args.plot, " ".join(shown))
        if not args.quiet:
            print(f"plot written to {args.plot}", file=sys.stderr)
    return 0
