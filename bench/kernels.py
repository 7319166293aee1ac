"""Kernel benchmarks: ``pad_ragged`` and ``parse_float_lists`` against their baselines.

Baselines, all timed in the same run:

* the Python twin (``lstm_data.kernels._py``);
* lstm_ee's algorithm (:mod:`bench.legacy`);
* the fastest vectorised NumPy gather+pad we could write;
* ``np.copyto`` of the output's bytes (a memory-bandwidth bound);
* one thread against two threads padding disjoint batches.
"""
from __future__ import annotations

import statistics
import threading

import numpy as np

from lstm_data import kernels
from lstm_data.data.synthetic import make_dataset

from bench.ceiling import sort_scaling, waive_without_two_cores
from bench.legacy import (
    legacy_join_varr_arrays,
    legacy_parse_cells,
    to_object_columns,
)
from bench.peers import awkward_pad, pyarrow_parse
from bench.timing import Report, interleaved_samples, median_ratio

__all__ = ["numpy_gather_pad", "numpy_masked_pad", "run"]

STAGE_PAD = "pad"
STAGE_PARSE = "parse"
STAGE_THREADS = "threads"
BATCH = 1024
PAD_ROWS = 100_000
PARSE_ROWS = {True: 5_000, False: 20_000}  # by quick
THREAD_BATCHES = 80
#: pad cases are timed in blocks of this many back-to-back calls (warm steady state, as in
#: a batch loop): one call at a time, each case ran right after another had evicted its
#: output and rows, and the memory-bound kernel paid for the interleaving most
PAD_CALLS = 10

def numpy_gather_pad(values: np.ndarray, offsets: np.ndarray, rows: np.ndarray,
                     pad_value: float = np.nan) -> np.ndarray:
    """Vectorised NumPy gather+pad over the interleaved ``(total, V)`` layout.

    One 2-D fancy index gathers every (row, slot) record at once; the slots past
    each row's length are then overwritten with ``pad_value``.
    """
    starts = offsets[rows]
    lens = offsets[rows + 1] - starts
    width = int(lens.max()) if len(lens) else 0
    slots = np.arange(width)
    pad = slots[None, :] >= lens[:, None]
    index = starts[:, None] + slots[None, :]
    index[pad] = 0
    out = values[index]
    out[pad] = pad_value
    return out


def numpy_masked_pad(values: np.ndarray, offsets: np.ndarray, rows: np.ndarray,
                     pad_value: float = np.nan) -> np.ndarray:
    """Alternative NumPy version: fill first, then scatter the kept records."""
    starts = offsets[rows]
    lens = offsets[rows + 1] - starts
    width = int(lens.max()) if len(lens) else 0
    keep = np.arange(width)[None, :] < lens[:, None]
    out = np.full((len(rows), width, values.shape[1]), pad_value, dtype=values.dtype)
    out[keep] = values[np.repeat(starts - np.cumsum(lens) + lens, lens) + np.arange(lens.sum())]
    return out


def _pad_stage(report: Report, n_rows: int, repeats: int, seed: int) -> None:
    ds = make_dataset(n_rows, seed)
    values, offsets = ds.ragged("png")
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, n_rows, BATCH)
    width = int((offsets[rows + 1] - offsets[rows]).max())
    out = np.empty((BATCH, width, values.shape[1]), dtype=np.float32)
    ref = np.empty_like(out)
    src = np.full_like(out, 1.0)
    legacy_cols = to_object_columns(values, offsets)
    twin = kernels.load_backend("python").pad_ragged

    expected = numpy_gather_pad(values, offsets, rows)
    got = kernels.pad_ragged(values, offsets, rows, out=out)[0]
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(numpy_masked_pad(values, offsets, rows), expected)

    fast = interleaved_samples({
        "ours": lambda: kernels.pad_ragged(values, offsets, rows, out=out),
        "ours_fresh": lambda: kernels.pad_ragged(values, offsets, rows),
        "numpy_fancy": lambda: numpy_gather_pad(values, offsets, rows),
        "numpy_masked": lambda: numpy_masked_pad(values, offsets, rows),
        "copyto": lambda: np.copyto(ref, src),
    }, repeats=repeats * 2, warmup=2, min_seconds=0.5, calls=PAD_CALLS, rotate=True)
    fast["best_numpy"] = [min(a, b) for a, b in zip(fast["numpy_fancy"], fast["numpy_masked"])]
    slow_cases = {
        "ours": lambda: kernels.pad_ragged(values, offsets, rows, out=out),  # paired round by round
        "twin": lambda: twin(values, offsets, rows),
        "legacy": lambda: legacy_join_varr_arrays([c[rows] for c in legacy_cols]),
    }
    peer = awkward_pad(values, offsets, rows, width)
    if peer is not None:
        np.testing.assert_array_equal(peer(), expected)
        slow_cases["awkward"] = peer
    slow = interleaved_samples(slow_cases, repeats=max(3, repeats // 3), warmup=1, rotate=True)
    med = {name: statistics.median(s) for name, s in fast.items()}
    slow_med = {name: statistics.median(s) for name, s in slow.items()}
    ours = "pad_ragged (compiled)" if kernels.BACKEND == "cython" else "pad_ragged (python backend)"
    for label, key, median in ((f"{ours}, out= reused", "ours", med["ours"]),
                               (f"{ours}, fresh output", "ours_fresh", med["ours_fresh"]),
                               ("numpy 2-D fancy gather+pad", "numpy_fancy", med["numpy_fancy"]),
                               ("numpy fill+masked scatter", "numpy_masked", med["numpy_masked"]),
                               ("np.copyto of the output bytes", "copyto", med["copyto"]),
                               ("python twin pad_ragged", "twin", slow_med["twin"]),
                               ("legacy lstm_ee join_varr_arrays", "legacy", slow_med["legacy"])):
        report.time(STAGE_PAD, label, median, items=BATCH, ours=key.startswith("ours"))
    if "awkward" in slow:
        report.time(STAGE_PAD, "awkward pad_none+fill_none+to_numpy", slow_med["awkward"], items=BATCH)
        _ratio(report, STAGE_PAD, "pad vs awkward", median_ratio(slow, "awkward", "ours"))
    # each ratio: the median over rounds of the two sides timed in the same round
    _ratio(report, STAGE_PAD, "pad vs numpy gather+pad", median_ratio(fast, "best_numpy", "ours"))
    _ratio(report, STAGE_PAD, "pad vs legacy lstm_ee join", median_ratio(slow, "legacy", "ours"))
    _ratio(report, STAGE_PAD, "pad vs python twin", median_ratio(slow, "twin", "ours"))
    _ratio(report, STAGE_PAD, "pad time / np.copyto of output", median_ratio(fast, "ours", "copyto"))
    _threads(report, values, offsets, n_rows, repeats, seed)


def _on_threads(job, chunks: int):
    """A callable running ``job(k)`` for ``k`` in ``range(chunks)`` on one or two threads."""
    def one():
        for k in range(chunks):
            job(k)

    def two():
        threads = [threading.Thread(target=lambda h=h: [job(k) for k in range(h, chunks, 2)])
                   for h in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    return one, two


def _threads(report: Report, values, offsets, n_rows: int, repeats: int, seed: int) -> None:
    """Throughput of two threads padding disjoint batches vs one thread.

    Measured interleaved with the same scaling of a reference memory-bound job
    (random ``np.take`` from 128 MiB) and the compute-bound ``np.sort``, so the
    ratio can be read against what the machine itself gives at that moment.
    """
    rng = np.random.default_rng(seed + 1)
    batches = [rng.integers(0, n_rows, BATCH) for _ in range(THREAD_BATCHES)]
    buffers: dict[int, np.ndarray] = {}

    def pad(k):  # max_len of the numu_v3 spec; each thread reuses its own buffer
        tid = threading.get_ident()
        buffers[tid] = kernels.pad_ragged(values, offsets, batches[k], max_len=10,
                                          out=buffers.get(tid))[0]

    table = np.ones(16 << 20)
    picks = [rng.integers(0, len(table), 1 << 17) for _ in range(THREAD_BATCHES)]
    pad1, pad2 = _on_threads(pad, len(batches))
    take1, take2 = _on_threads(lambda k: table.take(picks[k]), len(picks))
    samples = interleaved_samples({"one": pad1, "two": pad2, "take1": take1, "take2": take2},
                                  repeats=max(5, repeats), warmup=1, rotate=True)
    med = {name: statistics.median(s) for name, s in samples.items()}
    report.time(STAGE_THREADS, "pad_ragged, 1 thread", med["one"], items=len(batches),
                unit="batches", ours=True)
    report.time(STAGE_THREADS, "pad_ragged, 2 threads", med["two"], items=len(batches),
                unit="batches", ours=True)
    ceilings = {"np.sort": sort_scaling(), "random np.take": median_ratio(samples, "take1", "take2")}
    for name, value in ceilings.items():
        report.ratio(STAGE_THREADS, f"machine ceiling: {name} on 2 vs 1 threads", value)
    waive_without_two_cores(report.ratio(STAGE_THREADS, "2 threads vs 1 thread throughput",
                                         median_ratio(samples, "one", "two")), ceilings)


def _parse_stage(report: Report, n_rows: int, repeats: int, seed: int) -> None:
    ds = make_dataset(n_rows, seed, exact=True)
    values, offsets = ds.ragged("png")
    texts = repr(values[:, 0].tolist())[1:-1].split(", ")
    cells = [",".join(texts[a:b]) for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist())]
    twin = kernels.load_backend("python").parse_float_lists
    got, got_off = kernels.parse_float_lists(cells)
    np.testing.assert_array_equal(got, values[:, 0].astype(np.float32))
    np.testing.assert_array_equal(got_off, offsets)
    cases = {
        "ours": lambda: kernels.parse_float_lists(cells),
        "legacy": lambda: legacy_parse_cells(cells),
        "twin": lambda: twin(cells),
    }
    peer = pyarrow_parse(cells)
    if peer is not None:
        np.testing.assert_array_equal(peer()[1], offsets)
        cases["pyarrow"] = peer
    samples = interleaved_samples(cases, repeats=repeats, warmup=1, rotate=True)
    med = {name: statistics.median(s) for name, s in samples.items()}
    tokens = len(values)
    report.time(STAGE_PARSE, f"parse_float_lists ({kernels.BACKEND})", med["ours"], items=tokens,
                unit="numbers", ours=True)
    report.time(STAGE_PARSE, "python twin parse_float_lists", med["twin"], items=tokens,
                unit="numbers")
    report.time(STAGE_PARSE, "legacy [float(y) for y in s.split(',')]", med["legacy"],
                items=tokens, unit="numbers")
    _ratio(report, STAGE_PARSE, "parse vs legacy per-cell float()", median_ratio(samples, "legacy", "ours"))
    _ratio(report, STAGE_PARSE, "parse vs python twin", median_ratio(samples, "twin", "ours"))
    if "pyarrow" in med:
        report.time(STAGE_PARSE, "pyarrow split_pattern+cast", med["pyarrow"], items=tokens,
                    unit="numbers")
        _ratio(report, STAGE_PARSE, "parse vs pyarrow split_pattern+cast",
               median_ratio(samples, "pyarrow", "ours"))


def _ratio(report: Report, stage: str, name: str, value: float) -> None:
    report.ratio(stage, name, value)


def run(quick: bool = False, seed: int = 0, data=None) -> Report:
    """Run the kernel stages (``pad``, ``parse``); quick mode uses fewer repeats.

    ``data`` (a :class:`~bench.data.BenchData`) is accepted for a
    uniform stage signature; the kernels generate their arrays in RAM.
    """
    report = Report()
    repeats = 5 if quick else 15
    _pad_stage(report, PAD_ROWS, repeats, seed)
    _parse_stage(report, PARSE_ROWS[quick], repeats, seed)
    return report
