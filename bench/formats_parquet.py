"""Parquet benchmarks: opening into RAM against pyarrow alone, and row-group-aware reads on disk.

Measured in one run, round-robin (ratios: medians of per-round ratios):

* ``read_parquet(path, in_ram=True)`` (lstm_data's open: read, check, interleave into
  ``(total, V)`` blocks) against ``pyarrow.parquet.read_table(path)`` alone (which only
  decodes the columns), on a NOvA-like file of 1M rows (quick: 100k) with 8 scalar and
  46 ``list<float>`` columns, written by pyarrow with its defaults (snappy, row groups
  of up to 1Mi rows: what ``pandas.DataFrame.to_parquet`` writes), and on the same rows
  in row groups of 65536;
* a random batch of 1024 rows from the on-disk dataset (``in_ram=False``) of the second
  file: its time, and the row-group reads it makes against the row groups it touches
  (must be 1.0: each touched row group read once per ragged group).

The files are generated once into the benchmark cache (:mod:`bench.data`).
Bounds live in ``floors.toml`` under ``[formats]``.
"""
from __future__ import annotations

import statistics
from pathlib import Path

import numpy as np

from bench.data import BenchData
from bench.timing import Report, interleaved_medians, interleaved_samples, median_ratio

__all__ = ["run", "users_file"]

STAGE = "formats"
BATCH = 1024
FULL_ROWS = 1_000_000
QUICK_ROWS = 100_000
#: rows per row group of the second file (Spark-like: tens of MB per row group)
GROUP_ROWS = 65536


def users_file(data: BenchData, row_group_size: int | None = None) -> Path:
    """The dataset as a Parquet file written by plain pyarrow (no lstm_data metadata), cached."""
    import pyarrow.parquet as pq

    def build(tmp: Path) -> None:
        table = data.dataset.to_arrow().replace_schema_metadata(None)
        if row_group_size is None:
            pq.write_table(table, tmp)  # pyarrow's defaults
        else:
            pq.write_table(table, tmp, row_group_size=row_group_size)

    suffix = ".pyarrow.parquet" if row_group_size is None else f".rg{row_group_size}.parquet"
    return data.cached(suffix, build)


def run(quick: bool = False, seed: int = 0, data: BenchData | None = None) -> Report:
    """Measure Parquet opens and on-disk batches; ``data`` only sets the cache directory."""
    import pyarrow.parquet as pq

    from lstm_data.io.parquet import read_parquet

    report = Report()
    n_rows = QUICK_ROWS if quick else FULL_ROWS
    bench_data = BenchData(n_rows=n_rows, seed=seed, root=data.root if data is not None else None)
    plain = users_file(bench_data)
    grouped = users_file(bench_data, GROUP_ROWS)
    repeats = 9 if quick else 5  # quick: small files, cheap rounds; more of them against noise
    n_cols = len(pq.ParquetFile(plain).schema_arrow) - 8
    for label, path in (("pyarrow defaults", plain), (f"row groups of {GROUP_ROWS}", grouped)):
        samples = interleaved_samples({
            "read_table": lambda path=path: pq.read_table(path),
            "open": lambda path=path: read_parquet(path, in_ram=True),
        }, repeats=repeats, warmup=1)
        opened = {name: statistics.median(s) for name, s in samples.items()}
        report.time(STAGE, f"parquet open, {label} ({n_rows} rows)", opened["open"], items=n_rows, ours=True)
        report.time(STAGE, f"pyarrow read_table, {label} ({n_rows} rows)", opened["read_table"], items=n_rows)
        report.ratio(STAGE, f"parquet open vs pyarrow read_table ({label}, {n_cols} list columns)",
                     median_ratio(samples, "read_table", "open"))

    disk = read_parquet(grouped, in_ram=False)
    rng = np.random.default_rng(seed)
    batches = [rng.integers(0, n_rows, BATCH) for _ in range(4)]
    picks = iter(range(10 ** 9))
    takes = interleaved_medians({"disk random": lambda: disk.take(batches[next(picks) % 4])},
                                repeats=repeats, warmup=1)
    report.time(STAGE, f"parquet on disk: take {BATCH} random rows", takes["disk random"], items=BATCH,
                ours=True)
    disk.io_stats.reset()
    disk.take(batches[1])
    touched = len(np.unique(np.searchsorted(disk.row_group_rows[1:], batches[1], side="right")))
    report.ratio(STAGE, "parquet random batch: row-group reads / touched row groups",
                 disk.io_stats.chunks_read / max(1, touched * len(disk.groups)), kind="max")
    return report
