"""On-disk files vs one: an epoch over the same rows in 1, 2 and 50 zarr stores of our layout.

The bench's NOvA-like rows (``bench.data``, numu_v3 spec, batch 1024) are written as one store, as
2 and as 50 stores (a ``ConcatDataset`` of on-disk parts, what ``lstm_data.open([...])`` gives),
and a steady epoch is timed for ``shuffle="block"`` (the on-disk default) and ``shuffle=False``
(read-ahead off, so the reads are timed). Rounds interleave the three cases; each ratio is the
median of per-round ratios (one-store epoch time over the N-store one: 1.0 is one store's speed).

Run from a checkout::

    python bench/ondisk_files.py --rounds 7 [--format hdf5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lstm_data  # noqa: E402
from bench.data import BenchData  # noqa: E402
from bench.many_files import BATCH, CONFIG  # noqa: E402
from lstm_data import Batches, BatchSpec, Order  # noqa: E402


def write(whole, n: int, folder: str, tag: str, fmt: str = "zarr") -> list[str]:
    """``whole``'s rows as ``n`` stores of our layout (``fmt``: zarr or hdf5) of (nearly) equal size."""
    bounds = np.linspace(0, len(whole), n + 1).astype(np.int64)
    paths = []
    for i, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
        path = os.path.join(folder, f"{tag}_{i}.{'zarr' if fmt == 'zarr' else 'h5'}")
        part = whole.take(range(int(lo), int(hi)))
        part.to_zarr(path) if fmt == "zarr" else part.to_hdf5(path)
        paths.append(path)
    return paths


def epoch(batches: Batches, e: int) -> float:
    start = time.perf_counter()
    for i in range(len(batches)):
        batches.batch(i, e)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--format", choices=["zarr", "hdf5"], default="zarr")
    args = parser.parse_args()
    whole = BenchData(quick=False).dataset
    spec = BatchSpec.from_lstm_ee(CONFIG)
    with tempfile.TemporaryDirectory() as folder:
        stores = {n: write(whole, n, folder, f"n{n}", args.format) for n in (1, 2, 50)}
        for shuffle in ("block", False):
            cases = {n: Batches(lstm_data.open(p if n > 1 else p[0]), spec,
                                Order(batch_size=BATCH, seed=0, shuffle=shuffle),
                                read=lstm_data.ReadOptions(read_ahead=False)) for n, p in stores.items()}
            times: dict[int, list[float]] = {n: [] for n in cases}
            for r in range(args.rounds + 1):
                for n, b in cases.items():
                    t = epoch(b, r)
                    if r:  # the first round warms the caches
                        times[n].append(t)
            for n in (2, 50):
                ratio = statistics.median(np.array(times[1]) / np.array(times[n]))
                print(f"{args.format}  shuffle={shuffle!s:5}  epoch N={n:2d} stores / 1 store, speed: {ratio:.2f}  "
                      f"(median epoch {statistics.median(times[n]) * 1e3:.0f} ms vs "
                      f"{statistics.median(times[1]) * 1e3:.0f} ms)")


if __name__ == "__main__":
    main()
