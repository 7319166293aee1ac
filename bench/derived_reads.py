"""A derived-heavy batch build: this checkout against another one, in interleaved runs.

Run from a checkout (its compiled core built)::

    python bench/derived_reads.py [--other /path/to/another/checkout] [--runs 5]

The data: 100,000 rows, six float32 scalars and a group of four particle variables
(0-19 per row), written once to HDF5 and read from disk; a spec of eleven derived
variables (four per particle, six per row, one ``num()``) and a selection. Stages,
each the best of three in a fresh process (the two checkouts alternate, the order
of the pair swapped every run; the median over runs is reported):

* ``disk_in_order``: every batch of an epoch in file order;
* ``disk_shuffled``: 20 batches of a shuffled epoch;
* ``ram_batches``: ``Batches`` of the data in RAM (the derived columns computed once);
* ``disk_batches``: ``Batches`` of the data on disk (the selection evaluated).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

STAGES = ("disk_in_order", "disk_shuffled", "ram_batches", "disk_batches")
DERIVED = {
    "pt": "np.hypot(px, py)", "rel": "np.log(pt / s0)", "eta": "np.arcsinh(pz / pt)", "erel": "e / (s0 + s1)",
    "d0": "s0 * s1 + s2", "d1": "np.log(s0 + s3)", "d2": "d0 / s4", "d3": "np.sqrt(s5 * s0)", "d4": "s1 - s2 + s3",
    "n": "num(px)", "d5": "d4 * n",
}


def _stage(stage: str, folder: str) -> float:
    """Seconds of one stage (best of three), in this process."""
    import numpy as np

    import lstm_data
    from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars
    from lstm_data.data.dataset import InMemoryDataset
    from lstm_data.data.ragged import RaggedGroup

    rng = np.random.default_rng(1)
    n = 100_000
    off = np.concatenate([[0], np.cumsum(rng.integers(0, 20, n))]).astype(np.int64)
    values = rng.normal(size=(int(off[-1]), 4)).astype(np.float32)
    scalars = {f"s{i}": rng.uniform(1, 2, n).astype(np.float32) for i in range(6)}
    ram = InMemoryDataset(scalars, {"part": RaggedGroup(["px", "py", "pz", "e"], values, off)})
    spec = BatchSpec(inputs={"part": Ragged(["rel", "eta", "erel", "px"], max_len=16),
                             "jet": Scalars(["d0", "d1", "d2", "d3", "d4", "d5", "s0"])},
                     targets={"t": Scalars(["s1"])}, derived=DERIVED, selection="(s0 > 1.1) & (n > 0)")
    path = os.path.join(folder, "derived.h5")
    if not os.path.exists(path):
        ram.to_hdf5(path)
    disk = lstm_data.open(path)
    runs: dict[str, Callable[[], object]] = {
        "disk_in_order": lambda: [b[i] for b in [Batches(disk, spec, Order(batch_size=1024, shuffle=False))]
                                  for i in range(len(b))],
        "disk_shuffled": lambda: [b[i] for b in [Batches(disk, spec, Order(batch_size=1024, shuffle=True, seed=1))]
                                  for i in range(20)],
        "ram_batches": lambda: Batches(ram, spec, Order(batch_size=1024, shuffle=False)),
        "disk_batches": lambda: Batches(disk, spec, Order(batch_size=1024, shuffle=False)),
    }
    times = []
    for _ in range(3):
        start = time.perf_counter()
        runs[stage]()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--other", help="another checkout to compare with (its compiled core built)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--stage", choices=STAGES, help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stage:
        print(f"{_stage(args.stage, args.folder):.5f}")
        return
    here = str(Path(__file__).resolve().parents[1])
    roots = {"this": here} if args.other is None else {"other": str(Path(args.other).resolve()), "this": here}
    times: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for run in range(args.runs):
            for stage in STAGES:
                order = list(roots.items()) if run % 2 == 0 else list(roots.items())[::-1]
                for name, root in order:
                    out = subprocess.run([sys.executable, __file__, "--stage", stage, "--folder", folder],
                                         env={**os.environ, "PYTHONPATH": root}, cwd=root, capture_output=True,
                                         text=True, check=True, timeout=600)
                    times.setdefault((stage, name), []).append(float(out.stdout.split()[-1]))
    for stage in STAGES:
        cells = {name: statistics.median(times[(stage, name)]) for name in roots}
        line = "  ".join(f"{name} {t:.4f} s" for name, t in cells.items())
        ratio = f"  other/this {cells['other'] / cells['this']:.2f}x" if "other" in cells else ""
        print(f"{stage:14s} {line}{ratio}")


if __name__ == "__main__":
    main()
