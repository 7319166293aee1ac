"""What binding a saved state to every value of its data costs, against opening the data.

Times (medians of ``--runs`` runs) the first ``state_dict`` identity of a ``Batches`` and the
open of: the shipped sample (``examples/numu_v3.csv.xz``), about 100 MB of synthetic data read
into RAM from our zarr layout and from HDF5, and the same HDF5 file read on demand (its digest
is that of its bytes, read once then kept). Run from a checkout (its own lstm_data on the path)::

    PYTHONPATH=. python tools/state_identity_cost.py [--rows 150000] [--runs 5]
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Callable

import lstm_data
from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars
from lstm_data.data.dataset import Dataset
from lstm_data.data.synthetic import make_dataset

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "numu_v3.csv.xz"


def _median(f: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _identity_seconds(dataset: Dataset, runs: int) -> float:
    spec = BatchSpec(inputs={"s": Scalars(dataset.scalar_names[:3]),
                             "p": Ragged(dataset.groups["png"][:3], max_len=8)})
    times = []
    for _ in range(runs):
        batches = Batches(dataset, spec, Order(batch_size=256, seed=1))
        t = time.perf_counter()
        batches.state_dict()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _report(name: str, opener: Callable[[], Dataset], runs: int) -> None:
    dataset = opener()
    t_open = _median(opener, runs)
    t_id = _identity_seconds(dataset, runs)
    print(f"{name}: {len(dataset)} rows; open {t_open:.3f} s, identity {t_id:.3f} s, "
          f"identity/open {t_id / t_open:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=150_000, help="rows of synthetic data (~677 bytes each)")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    _report(f"{EXAMPLE.name} (in RAM)", lambda: lstm_data.open(EXAMPLE), args.runs)
    with tempfile.TemporaryDirectory() as tmp:
        big = make_dataset(args.rows, seed=1)
        print(f"synthetic data: {big.nbytes / 1e6:.0f} MB in RAM")
        big.to_zarr(f"{tmp}/big.zarr")
        big.to_hdf5(f"{tmp}/big.h5")
        _report("zarr (our layout) read into RAM", lambda: lstm_data.open(f"{tmp}/big.zarr").load(), args.runs)
        _report("HDF5 read into RAM", lambda: lstm_data.open(f"{tmp}/big.h5").load(), args.runs)
        time.sleep(2.5)  # a file's digest is kept once its mtime is 2 s old
        lazy = lstm_data.open(f"{tmp}/big.h5")
        first = _identity_seconds(lazy, 1)
        _report("HDF5 read on demand (digest kept after the first)", lambda: lstm_data.open(f"{tmp}/big.h5"),
                args.runs)
        print(f"  its first identity (the file's bytes read once): {first:.3f} s")


if __name__ == "__main__":
    main()
