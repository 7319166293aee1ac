"""Many files vs one: an epoch over the same rows split into parts, in RAM and on disk, same-run ratios.

The NOvA-like bench rows are split into 2 and 50 in-RAM parts (a
:class:`~lstm_data.data.concat.ConcatDataset` of ``whole.take(range)`` pieces,
what ``lstm_data.open`` of a list of files gives), and a steady shuffled epoch of
``Batches`` (numu_v3 spec, batch 1024) over the parts is timed against the same
epoch over the single dataset. Every round times each case once, in rotated
order, and each ratio is the median of the per-round ratios, so a burst of load
hits both sides of a ratio alike. The batches are bitwise the same (checked on
the first batch).

Rows:

* ``epoch N=2 files / 1 file, speed`` and ``N=50``: one-file epoch time over the
  N-file one (the target is 1/1.15, within 1.15x of one file). Small parts cost
  more than the binary search over parts: a part of a few MB is not backed by
  transparent huge pages, as one large array is, so its random rows miss the TLB;
* the legacy per-file path for contrast: the same parts batched as on-disk parts
  are (each batch split per part, gathered per part, concatenated, put back in
  order, then padded), by building through the builder's on-disk branch;
* on disk: the rows written as 1, 2 and 50 zarr stores of our layout (what ``lstm_data.open``
  of a list of stores gives), epochs with ``shuffle=False`` (batches checked bitwise against one
  store's) and ``"block"``, read-ahead off so the reads are timed; one store's epoch time over
  the N-store one;
* peak RSS of a fresh process over ``Batches`` and one epoch with 50 parts in RAM
  over that with one dataset (the target is 1.1x: no transient second copy). The
  process's peak counter is reset once the rows are built, so the generator's
  own temporaries are not counted; the row is left out where it cannot be reset.
"""
from __future__ import annotations

import gc
import logging
import os
import statistics
import tempfile
import threading
import time
from types import SimpleNamespace
from typing import Callable

import numpy as np

import lstm_data
from lstm_data.batching import Batches, BatchSpec
from lstm_data.batching.order.options import Order
from lstm_data.data.concat import ConcatDataset
from lstm_data.data.dataset import Dataset, InMemoryDataset
from lstm_data.data.synthetic import PNG2D_VARS, PNG3D_VARS, SLICE_VARS, make_dataset

from bench.data import FULL_ROWS, BenchData
from bench.memory import fresh_process_peak
from bench.timing import Report

__all__ = ["run", "split", "batches_over", "legacy_batches", "epoch_in_fresh_process", "write_stores",
           "disk_epoch_times"]

log = logging.getLogger("lstm_data")

STAGE = "many_files"
CONFIG = dict(vars_input_slice=SLICE_VARS, vars_input_png3d=PNG3D_VARS, vars_input_png2d=PNG2D_VARS,
              var_target_total="trueE", var_target_primary="trueLepE")
BATCH = 1024
PARTS = (2, 50)
#: parts of the multi-file dataset whose peak RSS is compared with one file's
RSS_PARTS = 50
#: rows of the peak-RSS processes, also with ``--quick``: a second copy of fewer rows would
#: hide under the interpreter's own memory
RSS_ROWS = FULL_ROWS
#: timed rounds of the one-pass epochs, and of the (far slower) legacy per-file path
ROUNDS = {True: 21, False: 15}
LEGACY_ROUNDS = {True: 3, False: 5}
#: stores of the on-disk rows (besides one), and timed rounds of their epochs
DISK_PARTS = (2, 50)
DISK_ROUNDS = {True: 9, False: 9}
_CLEAR_REFS = "/proc/self/clear_refs"
_READER = f"{__name__}:epoch_in_fresh_process"


def split(whole: InMemoryDataset, n_parts: int) -> ConcatDataset:
    """``whole``'s rows as ``n_parts`` in-RAM parts of (nearly) equal size, one after another."""
    bounds = np.linspace(0, len(whole), n_parts + 1).astype(np.int64)
    return ConcatDataset([whole.take(range(int(lo), int(hi)))
                          for lo, hi in zip(bounds[:-1], bounds[1:])],
                         names=[f"part {i}" for i in range(n_parts)])


def batches_over(dataset: Dataset) -> Batches:
    """The stage's ``Batches``: numu_v3 spec, 1024 shuffled rows, seed 0."""
    return Batches(dataset, BatchSpec.from_lstm_ee(CONFIG),
                   Order(batch_size=BATCH, seed=0, shuffle=True))


def legacy_batches(dataset: ConcatDataset) -> Batches:
    """``batches_over(dataset)`` built as on-disk parts are: per batch, each part gathers
    its rows, the pieces are concatenated and put back in batch order, then padded."""
    batches = batches_over(dataset)
    batches.builder.in_ram = False
    return batches


def _settle() -> None:
    """Wait for the read-ahead threads still loading (the next epoch's first window), so that one
    case's background reads never run inside the next case's timing."""
    for thread in threading.enumerate():
        if thread.name.startswith("lstm_data-read-ahead"):
            thread.join()


def _epoch(batches: Batches, steady: bool = False) -> Callable[[], float]:
    """Seconds of one epoch of ``batches``; ``steady``: of the second of two epochs run back to
    back, as in training (the next epoch's first window is read while the last one's batches are
    built, inside the timing), not of one started with its first window already read."""
    def run() -> float:
        if steady:
            for _ in batches:
                pass
            batches.on_epoch_end()
        t0 = time.perf_counter()
        for _ in batches:
            pass
        seconds = time.perf_counter() - t0
        batches.on_epoch_end()
        _settle()
        return seconds
    return run


def _paired(cases: dict[str, Callable[[], float]], rounds: int) -> dict[str, list[float]]:
    """Epoch seconds of each case per round; the cases run in a rotated order each round."""
    names = list(cases)
    for name in names:  # warm-up: tables, kernels and first plans are made once
        cases[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    for k in range(rounds):
        for name in names[k % len(names):] + names[:k % len(names)]:
            times[name].append(cases[name]())
    return times


def _median_ratio(num: list[float], den: list[float]) -> float:
    return statistics.median(a / b for a, b in zip(num, den))


def _check_same_batches(reference: Batches, others: dict[str, Batches]) -> None:
    """The first batch of epoch 0 of every case equals the one-file batch, bitwise."""
    want = reference.batch(0, epoch=0)
    for name, batches in others.items():
        got = batches.batch(0, epoch=0)
        for part_want, part_got in zip(want, got):
            for key, array in part_want.items():
                if not np.array_equal(array, part_got[key], equal_nan=True):
                    raise RuntimeError(f"many_files bench: {name} batch 0 differs from one file's "
                                       f"in {key!r}")


def stage_epochs(report: Report, data: BenchData, quick: bool) -> None:
    whole = data.dataset
    n_rows = len(whole)
    parts = {n: split(whole, n) for n in PARTS}
    ours = {"1 file": batches_over(whole), **{f"N={n}": batches_over(parts[n]) for n in PARTS}}
    legacy = {f"legacy N={n}": legacy_batches(parts[n]) for n in PARTS}
    _check_same_batches(ours["1 file"], {**{k: v for k, v in ours.items() if k != "1 file"},
                                         **legacy})

    times = _paired({name: _epoch(b) for name, b in ours.items()}, ROUNDS[quick])
    slow = _paired({"1 file": _epoch(ours["1 file"]),
                    **{name: _epoch(b) for name, b in legacy.items()}}, LEGACY_ROUNDS[quick])
    epochs = f"{len(ours['1 file'])} batches of {BATCH}, shuffled"
    report.time(STAGE, f"steady epoch, 1 file in RAM ({epochs})", statistics.median(times["1 file"]),
                items=n_rows, ours=True)
    for n in PARTS:
        report.time(STAGE, f"steady epoch, N={n} in-RAM files", statistics.median(times[f"N={n}"]),
                    items=n_rows, ours=True)
    for n in PARTS:
        report.time(STAGE, f"legacy per-file path, N={n} files", statistics.median(slow[f"legacy N={n}"]),
                    items=n_rows)
    for n in PARTS:
        report.ratio(STAGE, f"epoch N={n} files / 1 file, speed (target >= 0.87)",
                     _median_ratio(times["1 file"], times[f"N={n}"]))
    for n in PARTS:
        report.ratio(STAGE, f"legacy per-file path: epoch N={n} files / 1 file, speed",
                     _median_ratio(slow["1 file"], slow[f"legacy N={n}"]))


def write_stores(whole: InMemoryDataset, n: int, folder: str, fmt: str = "zarr") -> list[str]:
    """``whole``'s rows as ``n`` stores of our layout (``fmt``: ``zarr`` or ``hdf5``) of
    (nearly) equal size, one after another."""
    bounds = np.linspace(0, len(whole), n + 1).astype(np.int64)
    paths = []
    for i, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
        path = os.path.join(folder, f"n{n}_{i}.{'zarr' if fmt == 'zarr' else 'h5'}")
        part = whole.take(range(int(lo), int(hi)))
        if fmt == "zarr":
            part.to_zarr(path)
        else:
            part.to_hdf5(path)
        paths.append(path)
    return paths


def disk_epoch_times(whole: InMemoryDataset, rounds: int, fmt: str = "zarr", read_ahead: bool = False
                     ) -> dict[str, dict[int, list[float]]]:
    """Epoch seconds per round over the rows as 1 and as each of ``DISK_PARTS`` stores on disk,
    for ``shuffle=False`` and ``"block"`` (read-ahead off, so the reads are timed; with
    ``read_ahead``, also block shuffle as it runs by default, the next window read meanwhile, in
    the steady state of back-to-back epochs);
    the batches of ``shuffle=False`` are checked bitwise against one store's."""
    out: dict[str, dict[int, list[float]]] = {}
    cases_run: list[tuple[bool | str, bool]] = [(False, False), ("block", False)]
    with tempfile.TemporaryDirectory() as folder:
        stores = {n: write_stores(whole, n, folder, fmt) for n in (1, *DISK_PARTS)}
        for shuffle, ahead in cases_run + ([("block", True)] if read_ahead else []):
            cases = {n: Batches(lstm_data.open(p if n > 1 else p[0]), BatchSpec.from_lstm_ee(CONFIG),
                                Order(batch_size=BATCH, seed=0, shuffle=shuffle, read_ahead=ahead))
                     for n, p in stores.items()}
            if shuffle is False:
                _check_same_batches(cases[1], {f"N={n} stores": cases[n] for n in DISK_PARTS})
            times = _paired({str(n): _epoch(b, steady=ahead) for n, b in cases.items()}, rounds)
            out[f"{shuffle}{', read-ahead' if ahead else ''}"] = {int(n): t for n, t in times.items()}
            for b in cases.values():
                b.dataset.close()
    return out


def stage_on_disk(report: Report, data: BenchData, quick: bool) -> None:
    times = disk_epoch_times(data.dataset, DISK_ROUNDS[quick])
    for shuffle, per_n in times.items():
        for n in DISK_PARTS:
            report.ratio(STAGE, f"on-disk zarr, shuffle={shuffle}: epoch N={n} stores / 1 store, "
                         "speed (target >= 0.87)", _median_ratio(per_n[1], per_n[n]))


def epoch_in_fresh_process(arg: str) -> SimpleNamespace:
    """Build ``"rows:seed:parts"`` NOvA-like rows in RAM, reset this process's peak RSS,
    then make ``Batches`` and run one epoch (the reader of :func:`fresh_process_peak`).

    Returns an object whose ``nbytes`` is the bytes of the rows held in RAM.
    """
    n_rows, seed, n_parts = (int(x) for x in arg.split(":"))
    whole = make_dataset(n_rows, seed)
    dataset: Dataset = whole
    nbytes = whole.nbytes
    if n_parts > 1:
        concat = split(whole, n_parts)
        nbytes = sum(p.nbytes for p in concat.datasets if isinstance(p, InMemoryDataset))
        dataset = concat
        del whole
    gc.collect()
    with open(_CLEAR_REFS, "w") as fh:  # the peak from here on: Batches and one epoch
        fh.write("5")
    for _ in batches_over(dataset):
        pass
    return SimpleNamespace(nbytes=nbytes)


def _can_reset_peak() -> bool:
    return os.path.exists("/proc/self/status") and os.access(_CLEAR_REFS, os.W_OK)


def stage_peak_rss(report: Report, data: BenchData, quick: bool) -> None:
    if not _can_reset_peak():
        log.info("many_files bench: no peak RSS row (%s cannot be written here)", _CLEAR_REFS)
        return
    peaks = {}
    n_rows = max(RSS_ROWS, data.n_rows)
    for n in (1, RSS_PARTS):
        t0 = time.perf_counter()
        measured = fresh_process_peak(f"{n_rows}:{data.seed}:{n}", _READER)
        seconds = time.perf_counter() - t0
        assert measured is not None  # /proc/self/status exists (checked above)
        peaks[n], nbytes = measured
        log.info("many_files bench: peak RSS with %d part(s) in RAM: %.0f MiB", n, peaks[n] / 2**20)
        report.time(STAGE, f"fresh process, {n} file{'s' if n > 1 else ''} of {nbytes / 2**20:.0f} "
                    "MiB in RAM: Batches + one epoch", seconds, items=n_rows)
    report.ratio(STAGE, f"peak RSS, N={RSS_PARTS} files / 1 file (target <= 1.1)",
                 peaks[RSS_PARTS] / peaks[1])


def run(quick: bool = False, seed: int = 0, data: BenchData | None = None) -> Report:
    """Run the many-files stage on ``data`` (cached generated inputs)."""
    data = data if data is not None else BenchData(quick=quick, seed=seed)
    report = Report()
    stage_epochs(report, data, quick)
    stage_on_disk(report, data, quick)
    stage_peak_rss(report, data, quick)
    return report
