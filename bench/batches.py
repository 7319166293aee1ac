"""Batch-building benchmarks: same-run medians and ratios, floored in floors.toml.

Stages:

* ``batch``: a full numu_v3 batch (slice, png2d, png3d, targets; 1024 shuffled
  rows; in RAM) vs the legacy lstm_ee-style path (pandas, per-cell parsing at
  batch time, per-variable join), and vs the sum of its own kernel calls;
* ``workers``: ``Batches.iter(workers=2)`` vs ``workers=1`` batches/s, next to
  the machine's own 2-thread ceilings (``np.sort``, random gathers, out-of-cache
  writes) measured in the same run: the floor is judged only where they allow it;
* ``block``: a run of on-disk zarr epochs with ``shuffle="block"``: reads per
  value chunk per epoch, and time per batch vs the same data in RAM (the first
  epoch, which waits for its first window, reported on its own);
* ``precompute``: ``lstm-data precompute`` rows/s, and peak RSS of
  ``--workers 2`` vs ``--workers 1`` in fresh subprocesses;
* ``bucketing``: length-bucketed batches, see :mod:`bench.bucketing`.
"""
from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

import numpy as np

from lstm_data import Order, ReadOptions
from lstm_data.batching import Batches, BatchSpec
from lstm_data.data.synthetic import PNG2D_VARS, PNG3D_VARS, SLICE_VARS
from lstm_data.io import open as open_dataset

from bench import child_env
from bench.bucketing import stage_bucketing
from bench.ceiling import (
    machine_ceilings,
    waive_without_two_cores,
    write_scaling,
)
from bench.data import BenchData
from bench.timing import Report, interleaved_samples, median_of_ratios, median_ratio

__all__ = ["run"]

CONFIG = dict(vars_input_slice=SLICE_VARS, vars_input_png3d=PNG3D_VARS, vars_input_png2d=PNG2D_VARS,
              var_target_total="trueE", var_target_primary="trueLepE")
BATCH = 1024
#: batches per timed sample of the thread stages (short samples drown in scheduler noise)
SAMPLE_BATCHES = 200
#: batches each thread keeps alive in the kernel-scaling reference
HELD_BATCHES = 2
SPEC_TOML = """
[inputs.input_slice]
type = "scalars"
vars = {slice}
[inputs.input_png3d]
type = "ragged"
pad_value = nan
max_len = 10
vars = {png}
[inputs.input_png2d]
type = "ragged"
pad_value = nan
max_len = 10
vars = {png2d}
[targets.target_total]
type = "scalars"
vars = ["trueE"]
"""


def _kernel_calls(batches: Batches, rows: np.ndarray) -> None:
    """Exactly the kernel call one batch makes (one ``BatchGather`` call), with nothing around it."""
    batches.builder.gather_kernel()(rows)


def stage_full_batch(report: Report, data: BenchData, quick: bool) -> None:
    from bench.legacy_batches import LegacyCSVLoader, LegacyGenerator

    spec = BatchSpec.from_lstm_ee(CONFIG)
    batches = Batches(data.dataset, spec, Order(batch_size=BATCH, seed=0))
    legacy = LegacyGenerator(LegacyCSVLoader(str(data.csv)), **CONFIG)
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

    fast = interleaved_samples({"ours": ours, "kernels": kernel_only}, repeats=200 if quick else 600,
                               rotate=True)
    slow = interleaved_samples({"legacy": legacy_batch, "ours": ours}, repeats=3 if quick else 7, warmup=1,
                               rotate=True)
    report.time("batch", "Batches[i], full numu_v3 batch (in RAM)", statistics.median(fast["ours"]),
                items=BATCH, ours=True)
    report.time("batch", "its kernel calls alone", statistics.median(fast["kernels"]), items=BATCH)
    report.time("batch", "legacy lstm_ee-style batch", statistics.median(slow["legacy"]), items=BATCH)
    report.ratio("batch", "batch vs legacy lstm_ee path", median_ratio(slow, "legacy", "ours"))
    report.ratio("batch", "batch time / its kernel calls", median_ratio(fast, "ours", "kernels"))
    _gather_vs(report, batches, rows, quick)
    _tables_vs_take(report, quick)


def _gather_vs(report: Report, batches: Batches, rows: list[np.ndarray], quick: bool) -> None:
    """``BatchGather`` (one call, one GIL-free section) vs the same work as separate
    ``pad_ragged`` + ``numpy.take`` calls, and vs its pure-Python twin."""
    from lstm_data import kernels

    ragged, tables = batches.builder.gather_jobs()
    ours = kernels.BatchGather(ragged, tables)
    twin = kernels.load_backend("python").BatchGather(ragged, tables)
    state = {"i": 0}

    def pick() -> np.ndarray:
        state["i"] = (state["i"] + 1) % len(rows)
        return rows[state["i"]]

    def separate() -> list:
        r = pick()
        batch = []  # every output stays alive until the batch is complete, as in a batch
        for job in ragged:  # one dataset in RAM: one part, job.values and job.offsets
            max_len = job.max_len
            if not job.fixed and max_len is not None:
                max_len = min(max_len, int((job.offsets[r + 1] - job.offsets[r]).max()))
            batch.append(kernels.pad_ragged(job.values, job.offsets, rows=r, max_len=max_len,
                                            pad_value=job.pad_value, columns=job.columns, sort_by=job.sort_by,
                                            descending=job.descending, padding=job.padding,
                                            truncating=job.truncating, dtype=job.dtype))
        batch.extend(np.take(table, r, axis=0) for table in tables)
        return batch

    fast = interleaved_samples({"ours": lambda: ours(pick()), "separate": separate},
                               repeats=100 if quick else 300, rotate=True)
    slow_rounds = interleaved_samples({"twin": lambda: twin(pick()), "ours": lambda: ours(pick())},
                                      repeats=5 if quick else 15, warmup=1, rotate=True)
    med = {name: statistics.median(s) for name, s in fast.items()}
    slow = {name: statistics.median(s) for name, s in slow_rounds.items()}
    report.time("batch", f"BatchGather ({kernels.BACKEND}), one call per batch", med["ours"],
                items=BATCH, ours=True)
    report.time("batch", "same work as separate pad_ragged + np.take calls", med["separate"],
                items=BATCH)
    report.time("batch", "python twin BatchGather", slow["twin"], items=BATCH)
    report.ratio("batch", "BatchGather vs separate kernel calls", median_ratio(fast, "separate", "ours"))
    report.ratio("batch", "BatchGather vs python twin", median_ratio(slow_rounds, "twin", "ours"))


def _tables_vs_take(report: Report, quick: bool) -> None:
    """``BatchGather``'s scalar-table rows vs ``numpy.take``, on tables far larger than the
    caches, where every random row is a memory access (the kernel prefetches rows ahead)."""
    from lstm_data import kernels

    rng = np.random.default_rng(0)
    n_rows = 2_000_000 if quick else 10_000_000
    tables = [rng.random((n_rows, 6), dtype=np.float32), rng.random((n_rows, 1), dtype=np.float32)]
    gather = kernels.BatchGather([], tables)
    picks = [rng.integers(0, n_rows, BATCH) for _ in range(64)]
    state = {"i": 0}

    def pick() -> np.ndarray:
        state["i"] = (state["i"] + 1) % len(picks)
        return picks[state["i"]]

    samples = interleaved_samples({"ours": lambda: gather(pick()),
                                   "take": lambda: [np.take(t, pick(), axis=0) for t in tables]},
                                  repeats=100 if quick else 400, rotate=True)
    med = {name: statistics.median(s) for name, s in samples.items()}
    report.time("batch", f"BatchGather tables only, {n_rows:,}-row tables", med["ours"],
                items=BATCH, ours=True)
    report.time("batch", "same rows by np.take", med["take"], items=BATCH)
    report.ratio("batch", "BatchGather table rows vs np.take (out of cache)", median_ratio(samples, "take", "ours"))


def stage_threads(report: Report, data: BenchData, quick: bool) -> None:
    batches = Batches(data.dataset, BatchSpec.from_lstm_ee(CONFIG), Order(batch_size=BATCH, seed=0))
    epochs = -(-SAMPLE_BATCHES // len(batches))  # whole epochs, at least SAMPLE_BATCHES batches

    def epochs_on(workers: int) -> Callable[[], None]:
        def run() -> None:
            for _ in range(epochs):
                for _ in batches.iter(threads=workers):
                    pass
                batches.on_epoch_end()
        return run

    # interleaved rounds: load bursts of the shared machine hit both alike
    t = interleaved_samples({1: epochs_on(1), 2: epochs_on(2)}, repeats=5 if quick else 9, warmup=1,
                            rotate=True)
    per_batch = {w: statistics.median(s) / (epochs * len(batches)) for w, s in t.items()}
    ceilings = machine_ceilings()
    ceilings["cold 3 MiB writes"] = write_scaling()  # a batch's output, out of cache
    for name, value in ceilings.items():
        report.ratio("workers", f"machine ceiling: {name} on 2 vs 1 threads", value)
    report.ratio("workers", "its kernel calls alone on 2 vs 1 threads", _kernel_scaling(batches))
    report.time("workers", "Batches.iter, 1 worker (per batch)", per_batch[1], items=BATCH, ours=True)
    report.time("workers", "Batches.iter, 2 workers (per batch)", per_batch[2], items=BATCH, ours=True)
    waive_without_two_cores(report.ratio("workers", "2 workers vs 1 worker batches/s",
                                         median_ratio(t, 1, 2)), ceilings)


def _kernel_scaling(batches: Batches) -> float:
    """The kernel calls of an epoch (nothing around them) on 2 plain threads vs 1.

    Each thread takes every other batch: no queue, no hand-off. Each keeps its
    last batches alive, as ``Batches.iter`` does (the consumer holds one, the
    prefetch queue a few): their outputs then leave the caches, which is what
    bounds the scaling on a machine whose out-of-cache writes do not scale.
    """
    rows = [batches.rows_of(i) for i in range(len(batches))]
    rounds = -(-SAMPLE_BATCHES // len(rows))
    gather = batches.builder.gather_kernel()

    def on_threads(workers: int) -> Callable[[], None]:
        def job(first: int) -> None:
            held: list = []  # the last batches stay alive, as a consumer and a queue keep them
            for _ in range(rounds):
                for r in rows[first::workers]:
                    held = held[-HELD_BATCHES:] + [gather(r)]

        def run() -> None:
            threads = [threading.Thread(target=job, args=(k,)) for k in range(workers)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        return run

    t = interleaved_samples({1: on_threads(1), 2: on_threads(2)}, repeats=5, warmup=1, rotate=True)
    return median_ratio(t, 1, 2)


def stage_block(report: Report, data: BenchData, quick: bool) -> None:
    """A run of epochs on one on-disk ``shuffle="block"`` sequence vs one in-RAM sequence.

    Epochs follow each other as in training, so read-ahead crosses epoch
    boundaries; the first epoch, whose first window is always waited for, is
    reported on its own. Chunk reads are counted per epoch on a twin sequence
    without read-ahead (the same windows, each loaded once).
    """
    spec = BatchSpec.from_lstm_ee(CONFIG)
    disk = open_dataset(data.zarr)  # its own handle: the other's read-ahead is not counted
    disk.io_stats.track_chunks()
    ram = Batches(data.dataset, spec, Order(batch_size=BATCH, shuffle=True, seed=0))
    block = Batches(open_dataset(data.zarr), spec, Order(batch_size=BATCH, shuffle="block", seed=0))
    counted = Batches(disk, spec, Order(batch_size=BATCH, shuffle="block", seed=0),
                      read=ReadOptions(read_ahead=False))
    times: dict[str, list[float]] = {"disk": [], "seq": [], "ram": []}
    max_reads = 0
    for _ in range(4 if quick else 6):
        for name, seq in (("disk", block), ("seq", counted), ("ram", ram)):
            disk.io_stats.reset()
            t0 = time.perf_counter()
            for _ in seq:
                pass
            times[name].append((time.perf_counter() - t0) / len(seq))
            if name == "seq":
                max_reads = max(max_reads, max(disk.io_stats.per_chunk.values()))
            seq.on_epoch_end()
    first = {name: t[0] for name, t in times.items()}
    steady = {name: statistics.median(t[1:]) for name, t in times.items()}
    report.time("block", "on-disk zarr epochs, shuffle='block' (per batch)", steady["disk"],
                items=BATCH, ours=True)
    report.time("block", "same, no read-ahead (per batch)", steady["seq"], items=BATCH, ours=True)
    report.time("block", "in-RAM epochs, shuffle=True (per batch)", steady["ram"], items=BATCH,
                ours=True)
    report.ratio("block", "first epoch: block-shuffled disk / RAM per batch", first["disk"] / first["ram"])
    # steady epochs: the median over rounds of the disk epoch over the RAM epoch of the same round
    report.ratio("block", "no read-ahead: disk / RAM time per batch",
                 median_of_ratios(times["seq"][1:], times["ram"][1:]))
    report.ratio("block", "max reads of one value chunk per epoch", float(max_reads))
    report.ratio("block", "block-shuffled disk / RAM time per batch",
                 median_of_ratios(times["disk"][1:], times["ram"][1:]))


def _precompute(data: Path, spec: Path, out: Path, workers: int) -> tuple[float, int]:
    """Run ``lstm-data precompute`` in a fresh interpreter; return (seconds, peak RSS in KiB).

    Peak RSS is the child's own ``VmHWM`` (``ru_maxrss`` of a forked child can
    report the parent's peak).
    """
    code = ("import sys, time\nfrom lstm_data.cli import main\n"
            "t0 = time.perf_counter()\n"
            f"rc = main(['precompute', '--data', {str(data)!r}, '--spec', {str(spec)!r}, "
            f"'--batch-size', '{BATCH}', '--seed', '1', '--out', {str(out)!r}, "
            f"'--threads', '{workers}', '--overwrite', '--no-progress'])\n"
            "seconds = time.perf_counter() - t0\n"
            "from bench.memory import peak_rss_kib\n"
            "print('RESULT', seconds, peak_rss_kib())\nsys.exit(rc)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env=child_env())
    seconds, kib = done.stdout.rsplit("RESULT", 1)[1].split()[:2]
    return float(seconds), int(kib)


def stage_precompute(report: Report, data: BenchData, quick: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="lstm_data_bench_") as tmpdir:
        tmp = Path(tmpdir)
        spec = tmp / "spec.toml"
        spec.write_text(SPEC_TOML.format(slice=SLICE_VARS, png=PNG3D_VARS, png2d=PNG2D_VARS)
                        .replace("'", '"'))
        runs: dict[int, list[tuple[float, int]]] = {1: [], 2: []}
        for _ in range(1 if quick else 3):  # rounds: one run of each, in turn
            for w in runs:
                runs[w].append(_precompute(data.zarr, spec, tmp / f"out{w}.zarr", w))
    seconds = {w: statistics.median(s for s, _ in r) for w, r in runs.items()}
    rss = {w: statistics.median(k for _, k in r) for w, r in runs.items()}
    for w in (1, 2):
        report.time("precompute", f"precompute --workers {w}, zarr to zarr "
                    f"(peak RSS {rss[w] / 1024:.0f} MiB)", seconds[w], items=data.n_rows, ours=True)
    report.ratio("precompute", "peak RSS workers 2 / workers 1",
                 median_of_ratios([float(k) for _, k in runs[2]], [float(k) for _, k in runs[1]]))


def run(quick: bool = False, seed: int = 0, data: BenchData | None = None) -> Report:
    """Run the batch stages on ``data`` (cached generated inputs)."""
    data = data if data is not None else BenchData(quick=quick, seed=seed)
    report = Report()
    stage_full_batch(report, data, quick)
    stage_threads(report, data, quick)
    stage_block(report, data, quick)
    stage_precompute(report, data, quick)
    stage_bucketing(report, data, quick, batch_size=BATCH)
    return report
