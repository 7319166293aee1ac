"""File-format benchmarks: opening and on-disk reads, as same-run ratios.

Measured in one run, round-robin (each ratio: the median of per-round ratios):

* lstm_ee-layout HDF5 (vlen float32, gzip) opened by :func:`read_vlen_hdf5`
  against a naive per-row ``h5py`` read of the same file (``ds[i]`` per row and
  variable, what random access over VLArrays costs);
* our zarr v3 store opened (scalars + offsets into RAM);
* ``take`` of 1024 random rows from the on-disk zarr store and from RAM, and of
  1024 contiguous rows (a pre-shuffled store) from disk;
* the chunk reads of the random take against the chunks it touches (must be 1.0:
  each touched chunk read once).

Then the rows of NOvA HDF5 tables, Parquet and ROOT (:mod:`.formats_nova`,
:mod:`.formats_parquet`, :mod:`.formats_root`), each when its extra is installed.

Bounds live in ``floors.toml`` under ``[formats]``. Run by the suite's
``readers`` group (:mod:`bench.readers`), with the same
``run(quick, seed, data) -> Report`` signature.
"""
from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

import numpy as np

from lstm_data.data.synthetic import make_dataset

from bench.timing import Report, interleaved_samples, median_ratio

__all__ = ["run", "write_vlen_hdf5", "naive_vlen_read"]

STAGE = "formats"
BATCH = 1024

def write_vlen_hdf5(dataset, path: Path) -> None:
    """lstm_ee's layout with h5py: 1-D scalars, one gzip vlen float32 dataset per prong variable."""
    import h5py

    n = len(dataset)
    chunk = (max(1, min(n, 16384)),)
    with h5py.File(path, "w") as fh:
        for s in dataset.scalar_names:
            fh.create_dataset(s, data=dataset.scalar(s), chunks=chunk, compression="gzip",
                              compression_opts=5)
        for g, names in dataset.groups.items():
            values, offsets = dataset.ragged(g)
            for j, name in enumerate(names):
                cells = np.empty(n, dtype=object)
                cells[:] = np.split(np.ascontiguousarray(values[:, j], dtype=np.float32),
                                    offsets[1:-1])
                fh.create_dataset(name, data=cells, dtype=h5py.vlen_dtype(np.float32),
                                  chunks=chunk, compression="gzip", compression_opts=5)


def naive_vlen_read(path: Path) -> int:
    """Read every cell with one ``ds[i]`` per row and variable; returns the value count."""
    import h5py

    total = 0
    with h5py.File(path, "r") as fh:
        for name, ds in fh.items():
            if h5py.check_vlen_dtype(ds.dtype) is None:
                continue
            for i in range(ds.shape[0]):
                total += len(ds[i])
    return total


def _touched_chunks(offsets: np.ndarray, rows: np.ndarray, chunk_len: int) -> int:
    starts, ends = offsets[rows], offsets[rows + 1]
    keep = ends > starts
    first, last = starts[keep] // chunk_len, (ends[keep] - 1) // chunk_len
    touched = np.zeros(int(offsets[-1]) // chunk_len + 1, dtype=bool)
    for a, b in zip(first.tolist(), last.tolist()):
        touched[a:b + 1] = True
    return int(touched.sum())


def run(quick: bool = False, seed: int = 0, data=None) -> Report:
    """Measure the format stage; ``data`` (a BenchData) only sets the row count."""
    from lstm_data.io.hdf5.reader import read_vlen_hdf5
    from lstm_data.io.ours.zarr import ZarrDataset

    report = Report()
    n_rows = data.n_rows if data is not None else (20_000 if quick else 100_000)
    n_naive = 1_500 if quick else 5_000
    repeats = 3 if quick else 7
    ds = make_dataset(n_rows, seed)
    with tempfile.TemporaryDirectory(prefix="lstm_data_bench_") as tmp:
        tmp = Path(tmp)
        small = ds.take(np.arange(n_naive))
        write_vlen_hdf5(small, tmp / "ee_small.h5")
        small_rounds = interleaved_samples({
            "open": lambda: read_vlen_hdf5(tmp / "ee_small.h5"),
            "naive": lambda: naive_vlen_read(tmp / "ee_small.h5"),
        }, repeats=repeats, warmup=1, rotate=True)
        ours, naive = (statistics.median(small_rounds[k]) for k in ("open", "naive"))
        report.time(STAGE, f"lstm_ee HDF5 open ({n_naive} rows)", ours, items=n_naive, ours=True)
        report.time(STAGE, f"naive per-row h5py vlen read ({n_naive} rows)", naive, items=n_naive)
        report.ratio(STAGE, "lstm_ee HDF5 open vs naive per-row h5py", median_ratio(small_rounds, "naive", "open"))

        write_vlen_hdf5(ds, tmp / "ee.h5")
        ds.to_zarr(tmp / "ev.zarr")
        open_rounds = interleaved_samples({
            "ee": lambda: read_vlen_hdf5(tmp / "ee.h5"),
            "zarr": lambda: ZarrDataset(tmp / "ev.zarr"),
        }, repeats=repeats, warmup=1, rotate=True)
        opened = {name: statistics.median(s) for name, s in open_rounds.items()}
        report.time(STAGE, f"lstm_ee HDF5 open ({n_rows} rows)", opened["ee"], items=n_rows, ours=True)
        report.time(STAGE, f"our zarr open ({n_rows} rows)", opened["zarr"], items=n_rows, ours=True)
        report.ratio(STAGE, "zarr open vs lstm_ee HDF5 open", median_ratio(open_rounds, "ee", "zarr"))

        z = ZarrDataset(tmp / "ev.zarr")
        rng = np.random.default_rng(seed)
        random_rows = [rng.integers(0, n_rows, BATCH) for _ in range(4)]
        start = int(rng.integers(0, max(1, n_rows - BATCH)))
        contiguous = np.arange(start, min(n_rows, start + BATCH))
        picks = iter(range(10 ** 9))
        take_rounds = interleaved_samples({
            "disk random": lambda: z.take(random_rows[next(picks) % 4]),
            "disk contiguous": lambda: z.take(contiguous),
            "ram random": lambda: ds.take(random_rows[0]),
        }, repeats=repeats * 2, warmup=1, rotate=True)
        takes = {name: statistics.median(s) for name, s in take_rounds.items()}
        report.time(STAGE, f"zarr take {BATCH} random rows", takes["disk random"], items=BATCH,
                    ours=True)
        report.time(STAGE, f"zarr take {BATCH} contiguous rows", takes["disk contiguous"],
                    items=BATCH, ours=True)
        report.time(STAGE, f"RAM take {BATCH} random rows", takes["ram random"], items=BATCH)
        report.ratio(STAGE, "zarr take random / RAM take", median_ratio(take_rounds, "disk random", "ram random"),
                     kind="max")
        report.ratio(STAGE, "zarr take contiguous / RAM take",
                     median_ratio(take_rounds, "disk contiguous", "ram random"), kind="max")

        z.io_stats.reset()
        z.ragged("png", random_rows[1])
        chunk_len = z.value_chunk_len("png")
        touched = _touched_chunks(z.offsets("png"), random_rows[1], chunk_len)
        report.ratio(STAGE, "zarr random take: chunk reads / touched chunks",
                     z.io_stats.chunks_read / max(touched, 1), kind="max")
    for name in _FORMAT_MODULES:  # the file formats, each with its own extra
        report.merge(_format_rows(name, quick, seed))
    return report


#: modules of the other formats' rows (each skipped when its extra is not installed)
_FORMAT_MODULES = ("formats_nova", "formats_parquet", "formats_root")


def _format_rows(name: str, quick: bool, seed: int) -> Report:
    import importlib

    try:
        module = importlib.import_module(f"bench.{name}")
        return module.run(quick=quick, seed=seed)  # type: ignore[no-any-return]
    except ImportError as exc:  # the format's extra (pyarrow, uproot) is missing: no rows
        if (getattr(exc, "name", None) or "").startswith("lstm_data"):
            raise
        report = Report()
        report.time(STAGE, f"{name}: skipped ({exc})", float("nan"))
        return report
