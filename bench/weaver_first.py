"""First pass over one file: ``lstm_data`` against weaver-core's own ``_load_next``, interleaved.

weaver-core's ``JetClass_full.yaml`` over one file of JetClass-like jets (every branch the config
names; ROOT written by uproot with zlib level 1, and the same file converted to Parquet by
weaver-core's ``convert_to_parquet``: lz4, row groups of 1000). One process, both sides timed in
rounds of rotated order after one untimed pass each (imports, weaver-core's numba compilation and
the page cache are then warm on both sides):

* ``weaver-core``: ``DataConfig.load`` + ``weaver.utils.dataset._load_next`` in test mode (no
  shuffle): reading the branches, the new variables, standardisation, clipping and the padded
  arrays of every input, the label, for every jet;
* ``ours``: ``BatchSpec.from_weaver`` + ``lstm_data.open`` (the needed branches, 2 threads) + every
  batch of 512 of a ``Batches`` epoch (``shuffle=False``): the same arrays;
* ``limit``: the physical floor of any first pass that hands out those batches: for every batch of
  the epoch, new arrays of the same dtypes and shapes as ours (``np.empty``) each filled by one
  ``np.copyto`` from a batch prepared before timing, then dropped (as a training loop drops each
  batch, so the allocator may hand its memory to the next). No file is read and nothing is computed:
  only the allocation and the one write of every output byte, which no first pass can avoid.

The figure: weaver-core's seconds over ours, per round; the median over rounds (goal: >= 5x). Also
printed: ours / limit and weaver-core / limit (medians of per-round ratios), so what 5x asks of ours
physically is in view: ours must come within weaver-core / limit / 5 of the limit.

Run alone::

    python -m bench.weaver_first [--quick] [--rounds 5] [--formats root,parquet]
"""
from __future__ import annotations

import logging
import statistics
import time
from pathlib import Path
from typing import Callable

import numpy as np

from bench.data import BenchData
from bench.timing import Report

STAGE = "weaver_epoch"
CONFIG = Path(__file__).resolve().parents[1] / "tests/data/weaver/JetClass_full.yaml"
BATCH = 512
THREADS = 2
LAYOUT = 1  # bump when the files written change


def _write(folder: Path, jets: int, seed: int) -> None:
    import awkward as ak
    import uproot
    from weaver.utils.convert_to_parquet import convert_file  # the public conversion, its defaults

    from lstm_data.data.examples.weaver_jets import make_jets

    folder.mkdir(parents=True)
    data = make_jets(jets, seed)
    cols = {"part": ak.unflatten(ak.zip(data["part"]), data["counts"]), **data["jets"]}
    with uproot.recreate(folder / "jets.root", compression=uproot.ZLIB(1)) as fh:
        tree = fh.mktree("tree", {c: (v.type.content if isinstance(v, ak.Array) else v.dtype)
                                  for c, v in cols.items()})
        tree.extend(cols)
    convert_file(str(folder / "jets.root"), str(folder / "jets.parquet"), treename="tree")


def files(data: BenchData, jets: int) -> dict[str, str]:
    """The ROOT and Parquet file of ``jets`` jets, cached."""
    folder = data.cached(f"_weaver_first_{jets}_v{LAYOUT}", lambda tmp: _write(tmp, jets, data.seed))
    return {fmt: str(folder / f"jets.{fmt}") for fmt in ("root", "parquet")}


def weaver_pass(path: str) -> int:
    """weaver-core's ``_load_next`` over ``path`` (test mode): the jets it returns."""
    from weaver.utils.data.config import DataConfig
    from weaver.utils.dataset import _load_next

    options = {"training": False, "shuffle": False, "reweight": False, "mode": "test"}
    table, _ = _load_next(DataConfig.load(str(CONFIG), load_observers=False), [path], None, options)
    return len(table["_label_"])


def our_pass(path: str) -> int:
    """``lstm_data``'s open, spec and every batch of one ``shuffle=False`` epoch: the jets batched."""
    import lstm_data
    from lstm_data import BatchSpec, Batches, Order

    spec = BatchSpec.from_weaver(CONFIG, observers=False)
    read = lstm_data.ReadOptions(needed=tuple(spec.variables), threads=THREADS)
    batches = Batches(lstm_data.open(path, read=read), spec, Order(batch_size=BATCH, shuffle=False))
    return sum(len(batches[i][1]["_label_"]) for i in range(len(batches)))


def batch_layout(path: str) -> list[list[tuple[tuple[int, ...], np.dtype]]]:
    """The shapes and dtypes of every array of every batch of :func:`our_pass` over ``path``."""
    import lstm_data
    from lstm_data import BatchSpec, Batches, Order

    spec = BatchSpec.from_weaver(CONFIG, observers=False)
    read = lstm_data.ReadOptions(needed=tuple(spec.variables), threads=THREADS)
    batches = Batches(lstm_data.open(path, read=read), spec, Order(batch_size=BATCH, shuffle=False))
    return [[(a.shape, a.dtype) for part in batches[i] for a in part.values()] for i in range(len(batches))]


def limit_pass(layout: list[list[tuple[tuple[int, ...], np.dtype]]]) -> Callable[[], int]:
    """The physical floor of a first pass: every batch of ``layout`` allocated anew and written once.

    A full-size batch is prepared (filled with ones) before timing; each timed batch is ``np.empty``
    arrays of the batch's dtypes and shapes, each filled by one ``np.copyto`` from the first rows of
    the prepared one. Returns the jets written (the first dimension of every batch's first array).
    """
    shapes = {}
    for arrays in layout:
        for k, (shape, dtype) in enumerate(arrays):
            if k not in shapes or shape[0] > shapes[k][0][0]:
                shapes[k] = (shape, dtype)
    prepared = [np.ones(shape, dtype) for shape, dtype in (shapes[k] for k in sorted(shapes))]

    def run() -> int:
        jets = 0
        for arrays in layout:
            for src, (shape, dtype) in zip(prepared, arrays):
                np.copyto(np.empty(shape, dtype), src[:shape[0]])
            jets += arrays[0][0][0]
        return jets

    return run


def run(quick: bool = False, seed: int = 0, data: BenchData | None = None, rounds: int | None = None,
        formats: tuple[str, ...] | None = None, log=print, sizes: tuple[int, ...] | None = None) -> Report:
    """Median over interleaved rounds of weaver-core's first-pass seconds over ours, per format and size
    (``sizes``: jets per file; default 20,000, and 60,000 too in full runs)."""
    report = Report()
    try:
        import weaver.utils.dataset  # noqa: F401
    except ImportError as exc:  # weaver-core is optional: pip install weaver-core
        log(f"  [{STAGE}] first pass skipped: {exc}")
        return report
    logging.getLogger("weaver").setLevel(logging.ERROR)
    data = data if data is not None else BenchData(quick=quick, seed=seed)
    rounds = rounds or (5 if quick else 7)
    sizes = sizes or ((20_000,) if quick else (20_000, 60_000))
    for jets in sizes:
        paths = files(data, jets)
        for fmt in formats or ("root", "parquet"):
            path = paths[fmt]
            limit = limit_pass(batch_layout(path))
            sides: dict[str, Callable[[], int]] = {"weaver": lambda: weaver_pass(path),
                                                   "ours": lambda: our_pass(path), "limit": limit}
            rows = {name: fn() for name, fn in sides.items()}  # untimed: imports, numba, page cache
            if not rows["ours"] == rows["weaver"] == rows["limit"]:
                raise RuntimeError(f"first pass over {path}: jets per side {rows}")
            times: dict[str, list[float]] = {name: [] for name in sides}
            order = list(sides)
            for r in range(rounds):
                k = r % len(order)
                for name in order[k:] + order[:k]:
                    t0 = time.perf_counter()
                    sides[name]()
                    times[name].append(time.perf_counter() - t0)
            med = statistics.median
            for name in sides:
                report.time(STAGE, f"{fmt}: {name}, first pass over one file ({jets} jets)", med(times[name]),
                            items=jets, ours=name == "ours")

            def per_round(a: str, b: str) -> float:
                return med(x / y for x, y in zip(times[a], times[b]))

            ratio = per_round("weaver", "ours")
            log(f"  [{STAGE}] {fmt} {jets} jets: first pass weaver {med(times['weaver']):.3f} s, "
                f"ours {med(times['ours']):.3f} s, {ratio:.2f}x; limit {med(times['limit']):.3f} s "
                f"(ours / limit {per_round('ours', 'limit'):.2f}x, weaver / limit "
                f"{per_round('weaver', 'limit'):.2f}x)")
            report.ratio(STAGE, f"{fmt}: first pass over {jets} jets vs weaver-core _load_next", ratio)
            report.ratio(STAGE, f"{fmt}: first pass over {jets} jets / writing its batches",
                         per_round("ours", "limit"), kind="max")
    return report


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--formats", default=None, help="root,parquet (default: both)")
    args = parser.parse_args()
    fmts = tuple(args.formats.split(",")) if args.formats else None
    print(run(quick=args.quick, rounds=args.rounds, formats=fmts).render())
