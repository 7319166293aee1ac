#!/usr/bin/env python
"""Benchmark batch building: same-run medians and ratios against their floors.

Usage: python bench/batches.py [--quick] [--check]

Stages (the acceptance figures of the batches issue):

* full numu_v3 batch (slice, png2d, png3d, targets; 1024 shuffled rows; in RAM)
  vs the legacy lstm_ee-style path (>= 50x), and vs the sum of its own kernel
  calls with the same arguments (<= 1.5x);
* threads: ``Batches.iter(workers=2)`` vs ``workers=1`` batches/s (>= 1.7x);
* block shuffle on disk: an epoch over a zarr store with ``shuffle="block"``:
  reads per value chunk (<= 2) and time per batch vs the same data in RAM (<= 2x);
* precompute: peak RSS of ``lstm-data precompute --workers 2`` vs ``--workers 1``
  in subprocesses (<= 1.3x).
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import lstm_data  # noqa: E402
from lstm_data import BatchSpec, Batches, kernels  # noqa: E402
from lstm_data.benchmarks.timing import Report, interleaved_medians  # noqa: E402
from lstm_data.synthetic import PNG2D_VARS, PNG3D_VARS, SLICE_VARS, make_dataset, write_csv  # noqa: E402

CONFIG = dict(vars_input_slice=SLICE_VARS, vars_input_png3d=PNG3D_VARS, vars_input_png2d=PNG2D_VARS,
              var_target_total="trueE", var_target_primary="trueLepE")
BATCH = 1024


def _kernel_calls(batches: Batches, rows: np.ndarray) -> None:
    """Exactly the kernel calls one batch makes (same arguments), with nothing around them."""
    builder = batches._builder
    for f in builder.fields:
        if f.group is None:
            np.take(builder._scalar_table(f), rows, axis=0)
        else:
            values, offsets = builder.dataset.ragged(f.group)
            fld = f.field
            kernels.pad_ragged(values, offsets, rows, max_len=fld.max_len, pad_value=fld.pad_value,
                               columns=builder._columns[f.name], sort_by=f.sort_column,
                               descending=fld.descending, padding=fld.padding,
                               truncating=fld.truncating, dtype=fld.np_dtype)


def stage_full_batch(report: Report, n_rows: int, tmp: Path, quick: bool) -> None:
    from legacy_lstm_ee import LegacyCSVLoader, LegacyGenerator

    csv = tmp / "numu.csv"
    ds = write_csv(csv, n_rows, seed=1)
    spec = BatchSpec.from_lstm_ee(CONFIG)
    batches = Batches(ds, spec, batch_size=BATCH, seed=0)
    legacy = LegacyGenerator(LegacyCSVLoader(str(csv)), **CONFIG)
    picks = list(range(min(8, len(batches))))
    rows = [batches.rows_of(i) for i in picks]
    state = {"ours": 0, "kernels": len(picks) // 2}  # never the rows the other case just touched

    def ours():
        state["ours"] = (state["ours"] + 1) % len(picks)
        return batches[picks[state["ours"]]]

    def kernel_only():
        state["kernels"] = (state["kernels"] + 1) % len(picks)
        _kernel_calls(batches, rows[state["kernels"]])

    def legacy_batch():
        return legacy.get_data(rows[0])

    fast = interleaved_medians({"ours": ours, "kernels": kernel_only}, repeats=200 if quick else 600)
    slow = interleaved_medians({"legacy": legacy_batch, "ours": ours}, repeats=3 if quick else 7, warmup=1)
    report.time("batch", "full numu_v3 batch (in RAM)", fast["ours"], items=BATCH)
    report.time("batch", "its kernel calls alone", fast["kernels"], items=BATCH)
    report.time("batch", "legacy lstm_ee-style batch", slow["legacy"], items=BATCH)
    report.ratio("batch", "batch vs legacy lstm_ee path", slow["legacy"] / slow["ours"], 50.0)
    report.ratio("batch", "batch time / its kernel calls", fast["ours"] / fast["kernels"], 1.5, kind="max")


def stage_threads(report: Report, n_rows: int, quick: bool) -> None:
    ds = make_dataset(n_rows, seed=2)
    batches = Batches(ds, BatchSpec.from_lstm_ee(CONFIG), batch_size=BATCH, seed=0)
    rates: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(3 if quick else 7):  # interleaved rounds: load bursts hit both alike
        for workers in (1, 2):
            t0 = time.perf_counter()
            n = sum(1 for _ in batches.iter(workers=workers))
            rates[workers].append(n / (time.perf_counter() - t0))
            batches.on_epoch_end()
    one, two = statistics.median(rates[1]), statistics.median(rates[2])
    report.ratio("threads", "machine ceiling: np.sort on 2 vs 1 threads", _sort_scaling())
    report.ratio("threads", "machine ceiling: 16 MiB copies on 2 vs 1 threads", _copy_scaling())
    report.ratio("threads", "its kernel calls alone on 2 vs 1 threads", _kernel_scaling(batches))
    report.time("threads", "epoch, 1 worker (per batch)", 1 / one, items=BATCH)
    report.time("threads", "epoch, 2 workers (per batch)", 1 / two, items=BATCH)
    report.ratio("threads", "2 workers vs 1 worker batches/s", two / one, 1.7)


def _sort_scaling() -> float:
    """How much two GIL-free threads gain on this machine right now (context for the floor)."""
    from concurrent.futures import ThreadPoolExecutor

    arrays = [np.random.default_rng(i).random(200_000) for i in range(24)]
    rates: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(3):
        for workers in (1, 2):
            t0 = time.perf_counter()
            with ThreadPoolExecutor(workers) as pool:
                list(pool.map(np.sort, arrays))
            rates[workers].append(len(arrays) / (time.perf_counter() - t0))
    return statistics.median(rates[2]) / statistics.median(rates[1])


def _copy_scaling() -> float:
    """How much two threads gain on large copies: the memory bandwidth the kernels share."""
    from concurrent.futures import ThreadPoolExecutor

    src = [np.ones(4 << 20, np.float32) for _ in range(2)]
    dst = [np.empty_like(a) for a in src]

    def copy(i: int) -> None:
        for _ in range(8):
            np.copyto(dst[i], src[i])

    rates: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(3):
        for workers in (1, 2):
            t0 = time.perf_counter()
            with ThreadPoolExecutor(workers) as pool:
                list(pool.map(copy, (0, 1)))
            rates[workers].append(1 / (time.perf_counter() - t0))
    return statistics.median(rates[2]) / statistics.median(rates[1])


def _kernel_scaling(batches: Batches) -> float:
    """The same epoch of kernel calls (nothing around them) on 2 vs 1 threads."""
    from concurrent.futures import ThreadPoolExecutor

    rows = [batches.rows_of(i) for i in range(len(batches))]
    rates: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(3):
        for workers in (1, 2):
            t0 = time.perf_counter()
            with ThreadPoolExecutor(workers) as pool:
                list(pool.map(lambda r: _kernel_calls(batches, r), rows))
            rates[workers].append(len(rows) / (time.perf_counter() - t0))
    return statistics.median(rates[2]) / statistics.median(rates[1])


def stage_block(report: Report, n_rows: int, tmp: Path, quick: bool) -> None:
    ds = make_dataset(n_rows, seed=3)
    store = tmp / "data.zarr"
    ds.to_zarr(store)
    disk = lstm_data.open(store)
    spec = BatchSpec.from_lstm_ee(CONFIG)
    disk.io_stats.track_chunks()
    t_disk, t_seq, t_ram = [], [], []
    max_reads = 0
    for epoch in range(3 if quick else 5):
        ram = Batches(ds, spec, batch_size=BATCH, shuffle=True, seed=epoch)
        for read_ahead, times in ((True, t_disk), (False, t_seq)):
            disk.io_stats.reset()
            block = Batches(disk, spec, batch_size=BATCH, shuffle="block", seed=epoch)
            block._blocks.read_ahead = read_ahead
            t0 = time.perf_counter()
            for _ in block:
                pass
            times.append((time.perf_counter() - t0) / len(block))
            max_reads = max(max_reads, max(disk.io_stats.per_chunk.values()))
        t0 = time.perf_counter()
        for _ in ram:
            pass
        t_ram.append((time.perf_counter() - t0) / len(ram))
    disk_s, seq_s, ram_s = (statistics.median(t) for t in (t_disk, t_seq, t_ram))
    report.time("block", "on-disk zarr epoch, shuffle='block' (per batch)", disk_s, items=BATCH)
    report.time("block", "same, no read-ahead thread (per batch)", seq_s, items=BATCH)
    report.time("block", "in-RAM epoch, shuffle=True (per batch)", ram_s, items=BATCH)
    report.ratio("block", "no read-ahead: disk / RAM time per batch", seq_s / ram_s)
    report.ratio("block", "max reads of one value chunk per epoch", float(max_reads), 2.0, kind="max")
    report.ratio("block", "block-shuffled disk / RAM time per batch", disk_s / ram_s, 2.0, kind="max")


def _peak_rss_kib(data: Path, spec: Path, out: Path, workers: int) -> int:
    code = ("import resource, sys\nfrom lstm_data.cli import main\n"
            f"rc = main(['precompute', '--data', {str(data)!r}, '--spec', {str(spec)!r}, "
            f"'--batch-size', '{BATCH}', '--seed', '1', '--out', {str(out)!r}, "
            f"'--workers', '{workers}', '--force', '--no-progress'])\n"
            "print('MAXRSS', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\nsys.exit(rc)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(done.stdout.rsplit("MAXRSS", 1)[1].split()[0])


def stage_precompute_rss(report: Report, n_rows: int, tmp: Path) -> None:
    data = tmp / "rss.zarr"
    make_dataset(n_rows, seed=4).to_zarr(data)
    spec = HERE.parent / "examples" / "numu_v3.toml"
    rss = {w: _peak_rss_kib(data, spec, tmp / f"out{w}.zarr", w) for w in (1, 2)}
    report.time("precompute", f"peak RSS --workers 1: {rss[1] / 1024:.0f} MiB", 0.0)
    report.time("precompute", f"peak RSS --workers 2: {rss[2] / 1024:.0f} MiB", 0.0)
    report.ratio("precompute", "peak RSS workers 2 / workers 1", rss[2] / rss[1], 1.3, kind="max")


def run(quick: bool) -> Report:
    report = Report()
    with tempfile.TemporaryDirectory(prefix="lstm_data_bench_") as tmpdir:
        tmp = Path(tmpdir)
        stage_full_batch(report, 50_000 if quick else 300_000, tmp, quick)
        stage_threads(report, 100_000 if quick else 500_000, quick)
        stage_block(report, 100_000 if quick else 500_000, tmp, quick)
        stage_precompute_rss(report, 100_000 if quick else 400_000, tmp)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller data, fewer repeats (CI)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a ratio misses its floor")
    args = parser.parse_args()
    t0 = time.perf_counter()
    report = run(args.quick)
    print(f"backend: {kernels.BACKEND}   ({time.perf_counter() - t0:.0f} s)")
    print(report.render())
    failures = report.failures()
    if args.check and failures:
        for r in failures:
            print(f"FLOOR MISSED: {r.describe()}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
