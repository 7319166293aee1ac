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
  batch of 512 of a ``Batches`` epoch (``shuffle=False``): the same arrays.

The figure: weaver-core's seconds over ours, per round; the median over rounds (goal: >= 5x).

Run alone::

    python -m bench.weaver_first [--quick] [--rounds 5] [--formats root,parquet]
"""
from __future__ import annotations

import logging
import statistics
import time
from pathlib import Path

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
    sides = {"weaver": weaver_pass, "ours": our_pass}
    for jets in sizes:
        paths = files(data, jets)
        for fmt in formats or ("root", "parquet"):
            path = paths[fmt]
            rows = {name: fn(path) for name, fn in sides.items()}  # untimed: imports, numba, page cache
            if rows["ours"] != rows["weaver"]:
                raise RuntimeError(f"first pass over {path}: {rows['ours']} jets batched, weaver-core {rows['weaver']}")
            times: dict[str, list[float]] = {name: [] for name in sides}
            order = list(sides)
            for r in range(rounds):
                for name in order[r % 2:] + order[:r % 2]:
                    t0 = time.perf_counter()
                    sides[name](path)
                    times[name].append(time.perf_counter() - t0)
            med = statistics.median
            for name in sides:
                report.time(STAGE, f"{fmt}: {name}, first pass over one file ({jets} jets)", med(times[name]),
                            items=jets, ours=name == "ours")
            ratio = med(w / o for w, o in zip(times["weaver"], times["ours"]))
            log(f"  [{STAGE}] {fmt} {jets} jets: first pass weaver {med(times['weaver']):.3f} s, "
                f"ours {med(times['ours']):.3f} s, {ratio:.2f}x")
            report.ratio(STAGE, f"{fmt}: first pass over {jets} jets vs weaver-core _load_next", ratio)
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
