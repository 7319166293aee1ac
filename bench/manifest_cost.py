"""What the manifest check costs: reads of a store with a manifest against the same store without.

Run from a checkout::

    python bench/manifest_cost.py [--rows 200000] [--runs 15]

Each run, in alternating order, opens the store fresh (so every chunk's first
read is checked against the manifest, the worst case) and reads it:

* ``open``: ``ZarrDataset(path)`` (manifest parsed, metadata files checked);
* ``random``: open, then 8 batches of 1024 random rows (our direct decoder);
* ``batches``: a precomputed batch store opened and every batch read (zarr-python
  through the checked store).

The figure is the median over runs of the per-pair ratio ``time without / time
with`` (1.0: free; the bar is >= 0.95). Times are the process's CPU seconds (all
threads; the data sits in the page cache after the first run), which other
work on a shared machine disturbs less than wall-clock time; ``--wall`` for
wall-clock.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np


def _strip(path: Path) -> None:
    """Make ``path`` a store as written before manifests (a batch store no longer requires one)."""
    import zarr

    from lstm_data.io.ours.layout import BATCH_STORE_ATTR
    from lstm_data.io.ours.manifest import MANIFEST_ATTR, MANIFEST_KEY

    shutil.rmtree(path / MANIFEST_KEY)
    attrs = zarr.open_group(str(path), mode="r+").attrs
    del attrs[MANIFEST_ATTR]
    meta = attrs.get(BATCH_STORE_ATTR)
    if isinstance(meta, dict) and "requires" in meta:
        attrs[BATCH_STORE_ATTR] = {k: v for k, v in meta.items() if k != "requires"}


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--wall", action="store_true",
                        help="time wall-clock seconds (default: the process's CPU seconds, all its "
                             "threads: steadier on a machine shared with other work)")
    args = parser.parse_args()
    clock = time.perf_counter if args.wall else time.process_time

    from lstm_data import BatchSpec, ReadOptions
    from lstm_data.data.synthetic import make_dataset
    from lstm_data.io.ours.zarr import ZarrDataset
    from lstm_data.store.read import PrecomputedBatches
    from lstm_data.store.write import precompute

    ds = make_dataset(args.rows, seed=0)
    spec = BatchSpec.from_toml(Path(__file__).resolve().parents[1] / "examples" / "numu_v3.toml")
    rng = np.random.default_rng(0)
    picks = [rng.integers(0, args.rows, 1024) for _ in range(8)]
    with tempfile.TemporaryDirectory(prefix="manifest_cost_") as tmp:
        stores = {"with": Path(tmp) / "with.zarr", "without": Path(tmp) / "without.zarr"}
        ds.to_zarr(stores["with"])
        shutil.copytree(stores["with"], stores["without"])
        _strip(stores["without"])
        batch = {k: Path(tmp) / f"b_{k}.zarr" for k in stores}
        precompute(ds.take(np.arange(min(args.rows, 50_000))), spec, batch["with"], progress=False)
        shutil.copytree(batch["with"], batch["without"])
        _strip(batch["without"])
        assert ZarrDataset(stores["with"]).notes == () and ZarrDataset(stores["without"]).notes

        def _random(path: Path) -> None:
            z = ZarrDataset(path)
            for rows in picks:
                z.take(rows)

        def _batches(path: Path) -> None:
            b = PrecomputedBatches(path, permute=False, read=ReadOptions(trust_unchecked=True))
            for i in range(len(b)):
                b[i]

        cases = {"open": lambda k: ZarrDataset(stores[k]), "random": lambda k: _random(stores[k]),
                 "batches": lambda k: _batches(batch[k])}
        ratios: dict[str, list[float]] = {c: [] for c in cases}
        for run in range(args.runs + 1):
            for case, fn in cases.items():
                seconds = {}
                for kind in (("with", "without") if run % 2 else ("without", "with")):
                    t0 = clock()
                    fn(kind)
                    seconds[kind] = clock() - t0
                if run:  # the first run warms the page cache
                    ratios[case].append(seconds["without"] / seconds["with"])
        for case, values in ratios.items():
            print(f"{case:8s} speed with manifest / without: median {statistics.median(values):.3f} "
                  f"(min {min(values):.3f}, max {max(values):.3f}, {len(values)} interleaved pairs)")


if __name__ == "__main__":
    main()
