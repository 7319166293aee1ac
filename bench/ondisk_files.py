"""On-disk files vs one: an epoch over the same rows in 1, 2 and 50 stores of our layout.

The bench's NOvA-like rows (``bench.data``, numu_v3 spec, batch 1024) are written as one store, as
2 and as 50 stores (a ``ConcatDataset`` of on-disk parts, what ``lstm_data.open([...])`` gives),
and a steady epoch is timed for ``shuffle="block"`` (the on-disk default) and ``shuffle=False``
(read-ahead off, so the reads are timed). Rounds interleave the three cases; each ratio is the
median of per-round ratios (one-store epoch time over the N-store one: 1.0 is one store's speed).
The suite's ``many_files`` stage runs the same on zarr (``lstm-data bench --only many_files``).

Run from a checkout::

    python bench/ondisk_files.py --rounds 9 [--format hdf5] [--read-ahead]
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.data import BenchData  # noqa: E402
from bench.many_files import DISK_PARTS, disk_epoch_times  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--format", choices=["zarr", "hdf5"], default="zarr")
    parser.add_argument("--read-ahead", action="store_true",
                        help="also time block shuffle with read-ahead on (the default for Batches)")
    args = parser.parse_args()
    times = disk_epoch_times(BenchData(quick=False).dataset, args.rounds, args.format, args.read_ahead)
    for shuffle, per_n in times.items():
        for n in DISK_PARTS:
            ratio = statistics.median(np.array(per_n[1]) / np.array(per_n[n]))
            print(f"{args.format}  shuffle={shuffle:5}  epoch N={n:2d} stores / 1 store, speed: {ratio:.2f}  "
                  f"(median epoch {statistics.median(per_n[n]) * 1e3:.0f} ms vs "
                  f"{statistics.median(per_n[1]) * 1e3:.0f} ms)")


if __name__ == "__main__":
    main()
