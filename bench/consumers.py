"""Batches as users' frameworks consume them: the ``consumers`` stage.

The ``batch`` and ``workers`` stages time ``Batches[i]`` in a loop that drops each
batch before the next, and ``Batches.iter(workers=2)``. Frameworks call us
otherwise: Keras keeps a queue of live batches and builds them on its worker
threads, torch moves them from worker processes, users collect them. Every
pattern below is one pass over an epoch of the numu_v3 spec
(``BatchSpec.from_lstm_ee``, ``nan_to=0.0``), 100k rows in RAM, batch 1024, timed
per batch as the median of interleaved passes in this run (ratios: the median of per-round
ratios of patterns timed in the same rounds):

* one thread, each batch dropped before the next (the reference, "drop-each");
* one thread, the last 10 batches kept alive (a Keras queue, ``max_queue_size=10``);
* ``ThreadPoolExecutor(2).map(batches.__getitem__, ...)``, batches dropped, and
  the same keeping the last 10 (two foreign threads);
* ``Batches.iter(workers=2)``;
* a real Keras 3 ``PyDataset`` loop, ``KerasBatches(threads=1|2)``, and a torch
  ``DataLoader(TorchBatches, num_workers=0|2)`` (:mod:`~bench.consumers_frameworks`);
* in fresh processes (:mod:`~bench.consumers_fresh`): 48 batches kept
  alive, and an epoch collected into a list, first pass and later passes, and
  NumPy's own ``np.empty`` + ``fill`` of the same arrays ("NumPy fresh").

Each pattern is reported as a ratio of its time per batch to the drop-each time
and to NumPy's fresh allocation and fill (48 kept, first pass), plus the
floored ratios, the 2-thread ceilings of this machine (out-of-cache
3 MiB fills, ``np.sort``) and the cost of torch's own inter-process transfer.
"""
from __future__ import annotations

import collections
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from lstm_data.batching import Batches

from bench.ceiling import MIN_CEILING, sort_scaling, write_scaling
from bench.consumers_frameworks import (
    close_loaders,
    keras_passes,
    torch_ceiling_passes,
    torch_passes,
)
from bench.consumers_fresh import fresh_passes, layouts_of, make_batches
from bench.timing import Report, interleaved_samples, median_of_ratios

__all__ = ["run"]

STAGE = "consumers"
N_ROWS = 100_000  # quick mode too: 98 batches, so that 48 kept is a fraction of an epoch
BATCH = 1024
#: interleaved passes of the in-process patterns, runs of each fresh-process pattern
REPEATS = {True: 5, False: 15}
FRESH_RUNS = {True: 2, False: 5}
DROP = "one thread, each batch dropped (drop-each)"
NUMPY = "NumPy np.empty+fill of the same arrays, 48 kept, first pass, fresh process"
KERAS = "Keras PyDataset loop, KerasBatches(workers={}), max_queue_size=10"
TORCH0 = "torch DataLoader(TorchBatches, num_workers=0)"
TORCH2 = "torch DataLoader(TorchBatches, num_workers=2), worker_transfer='shared'"
TORCH2_TORCH = "torch DataLoader(TorchBatches, num_workers=2), worker_transfer='torch'"
TORCH_BUILD_ONLY = "torch DataLoader(build only, index returned, num_workers={})"
TORCH0_THREADS = "torch DataLoader(TorchBatches(threads=2), num_workers=0)"

def _batches(seed: int) -> Batches:
    return make_batches(N_ROWS, seed, BATCH)


def _keep_last(get: Callable[[int], object], n: int, keep: int) -> Callable[[], None]:
    def run() -> None:
        held: collections.deque = collections.deque(maxlen=keep)
        for i in range(n):
            held.append(get(i))
    return run


def _pool_map(pool: ThreadPoolExecutor, get: Callable[[int], object], n: int,
              keep: int) -> Callable[[], None]:
    def run() -> None:
        held: collections.deque = collections.deque(maxlen=keep)
        for batch in pool.map(get, range(n)):
            held.append(batch)
    return run


def _iter_workers(batches: Batches, workers: int) -> Callable[[], None]:
    def run() -> None:
        for _ in batches.iter(threads=workers):
            pass
        batches.on_epoch_end()
    return run


def _in_process(seed: int, quick: bool) -> tuple[dict[str, list[float]], list[str]]:
    """Seconds per batch of every in-process pattern in every round, interleaved pass by pass."""
    batches = _batches(seed)
    n = len(batches)
    pool = ThreadPoolExecutor(2)
    cases: dict[str, Callable[[], None]] = {
        DROP: _keep_last(batches.__getitem__, n, 1),
        "one thread, last 10 kept alive": _keep_last(batches.__getitem__, n, 10),
        "ThreadPoolExecutor(2).map, dropped": _pool_map(pool, batches.__getitem__, n, 1),
        "ThreadPoolExecutor(2).map, last 10 kept alive": _pool_map(pool, batches.__getitem__, n, 10),
        "Batches.iter(workers=2)": _iter_workers(_batches(seed), 2),
    }
    notes = []
    keras_cases, note = keras_passes(lambda: _batches(seed))
    cases.update(keras_cases)
    notes += [note] if note else []
    torch_cases, loaders, note = torch_passes(lambda: _batches(seed))
    cases.update(torch_cases)
    if torch_cases:
        threaded, more, _ = torch_passes(lambda: _batches(seed), workers=(0,), threads=2)
        cases.update(threaded)
        loaders += more
        ceiling, more = torch_ceiling_passes(lambda: _batches(seed))
        cases.update(ceiling)
        loaders += more
    notes += [note] if note else []
    try:
        rounds = interleaved_samples(cases, repeats=REPEATS[quick], warmup=1, rotate=True)
        if torch_cases:  # torch's own transfer is slow: a few epochs, each next to the shared transfer
            slow, more, _ = torch_passes(lambda: _batches(seed), workers=(2,), transfer="torch")
            loaders += more
            slow[TORCH2] = cases[TORCH2]
            paired = interleaved_samples(slow, repeats=2 if quick else 5, warmup=1, rotate=True)
            rounds[TORCH2_TORCH] = paired[TORCH2_TORCH]
            rounds[PAIRED + TORCH2] = paired[TORCH2]
    finally:
        pool.shutdown()
        close_loaders(loaders)
    return {name: [t / n for t in ts] for name, ts in rounds.items()}, notes


def _fresh(seed: int, quick: bool) -> dict[str, list[float]]:
    """Per batch, run by run: first pass and median later pass of each fresh-process pattern.

    Each run also times one drop-each pass in this process right after it, so that the later
    passes of the fresh patterns have a drop-each of their own round.
    """
    batches = _batches(seed)
    layouts = layouts_of(batches)
    drop = _keep_last(batches.__getitem__, len(batches), 1)
    drop()  # warm-up
    runs: dict[str, list[list[float]]] = {p: [] for p in ("keep48", "numpy_keep48", "collect",
                                                          "numpy_collect")}
    drops: list[float] = []
    for k in range(FRESH_RUNS[quick]):  # interleaved, rotated: a load burst hits ours and NumPy's alike
        patterns = list(runs)
        for pattern in patterns[k % len(patterns):] + patterns[:k % len(patterns)]:
            runs[pattern].append(fresh_passes(pattern, N_ROWS, seed, 3 if quick else 4, layouts, BATCH))
        t0 = time.perf_counter()
        drop()
        drops.append((time.perf_counter() - t0) / len(batches))
    out = {PAIRED + DROP: drops}
    for pattern, passes in runs.items():
        out[f"{pattern} first"] = [p[0] for p in passes]
        out[f"{pattern} later"] = [statistics.median(p[1:]) for p in passes]
    return out


#: prefix of a pattern's rounds timed next to a pattern of another group (paired rounds, not reported)
PAIRED = "paired with the next rounds: "


FRESH_NAMES = {
    "keep48 first": "48 kept alive, first pass, fresh process",
    "keep48 later": "48 kept alive, later passes",
    "collect first": "an epoch collected into a list, first pass, fresh process",
    "collect later": "an epoch collected into a list, later passes",
    "numpy_keep48 first": NUMPY,
    "numpy_keep48 later": "NumPy np.empty+fill, 48 kept, later passes",
    "numpy_collect first": "NumPy np.empty+fill, epoch collected, first pass, fresh process",
    "numpy_collect later": "NumPy np.empty+fill, epoch collected, later passes",
}


def run(quick: bool = False, seed: int = 0, data=None) -> Report:
    """Time every consumer pattern; ``data`` is unused (the stage makes its own 100k rows)."""
    report = Report()
    before = sort_scaling()  # the machine's free core, before and after the timings: the lower counts
    rounds, notes = _in_process(seed, quick)
    rounds.update({FRESH_NAMES.get(k, k): v for k, v in _fresh(seed, quick).items()})
    fill = write_scaling()
    cores = min(before, sort_scaling())
    times = {name: statistics.median(t) for name, t in rounds.items() if not name.startswith(PAIRED)}
    for name, t in times.items():
        report.time(STAGE, f"{name} (per batch)", t, items=BATCH, ours=not name.startswith("NumPy"))
    for name in times:
        if name != DROP:
            report.ratio(STAGE, f"{name} / drop-each", _ratio(rounds, name, DROP), kind="max")
        if name != NUMPY:
            report.ratio(STAGE, f"{name} / NumPy fresh", _ratio(rounds, name, NUMPY), kind="max")
    report.ratio(STAGE, "machine ceiling: cold 3 MiB fills on 2 vs 1 threads", fill)
    report.ratio(STAGE, "machine ceiling: np.sort on 2 vs 1 threads", cores)
    _acceptance(report, rounds, fill, cores)
    for note in notes:
        report.time(STAGE, note, float("nan"))
    return report


#: the patterns measured in the same rounds (in process; fresh processes, each with a drop-each pass)
_GROUPS = ({DROP, "one thread, last 10 kept alive", "ThreadPoolExecutor(2).map, dropped",
            "ThreadPoolExecutor(2).map, last 10 kept alive", "Batches.iter(workers=2)", KERAS.format(1),
            KERAS.format(2), TORCH0, TORCH2, TORCH0_THREADS, TORCH_BUILD_ONLY.format(0),
            TORCH_BUILD_ONLY.format(2)},
           {PAIRED + DROP, *FRESH_NAMES.values()},
           {TORCH2_TORCH, PAIRED + TORCH2})


def _ratio(rounds: dict[str, list[float]], numerator: str, denominator: str) -> float:
    """``numerator``'s time over ``denominator``'s: the median of per-round ratios when both were timed
    in the same rounds (directly, or through a pattern ``PAIRED`` with one of them), else the
    ratio of medians (an unfloored cross-group figure)."""
    for group in _GROUPS:
        num = numerator if numerator in group else PAIRED + numerator
        den = denominator if denominator in group else PAIRED + denominator
        if num in group and den in group and num in rounds and den in rounds:
            return median_of_ratios(rounds[num], rounds[den])
    return statistics.median(rounds[numerator]) / statistics.median(rounds[denominator])


def _acceptance(report: Report, rounds: dict[str, list[float]], fill: float, cores: float) -> None:
    """The stage's floored ratios (floors in floors.toml), each a median of per-round ratios."""
    no_core = f"no free second core: np.sort scales {cores:.2f}x on 2 threads (< {MIN_CEILING}x)"
    if KERAS.format(1) in rounds and KERAS.format(2) in rounds:
        speedup = _ratio(rounds, KERAS.format(1), KERAS.format(2))
        r = report.ratio(STAGE, "KerasBatches workers=2 vs workers=1 batches/s", speedup)
        r.waived = (no_core if cores < MIN_CEILING else
                    f"the 2-thread fill ceiling is {fill:.2f}x (< 1.3x): judged against it" if fill < 1.3
                    else None)
        r = report.ratio(STAGE, "KerasBatches workers=2 vs workers=1 / 2-thread fill ceiling", speedup / fill)
        r.waived = (no_core if cores < MIN_CEILING else
                    f"the 2-thread fill ceiling is {fill:.2f}x (>= 1.3x): judged against 1.3x" if fill >= 1.3
                    else None)
    report.ratio(STAGE, "48 kept, first pass, fresh process / NumPy fresh",
                 _ratio(rounds, FRESH_NAMES["keep48 first"], NUMPY), kind="max")
    report.ratio(STAGE, "epoch collected, first pass, fresh process / NumPy's the same",
                 _ratio(rounds, FRESH_NAMES["collect first"], FRESH_NAMES["numpy_collect first"]), kind="max")
    has = {name for name in (TORCH0, TORCH2, TORCH_BUILD_ONLY.format(2), TORCH0_THREADS, TORCH2_TORCH)
           if name in rounds}
    if {TORCH0, TORCH2} <= has:
        r = report.ratio(STAGE, "DataLoader num_workers=2 vs num_workers=0 batches/s", _ratio(rounds, TORCH0, TORCH2))
        r.waived = no_core if cores < MIN_CEILING else None
        if TORCH_BUILD_ONLY.format(2) in has:  # the best num_workers=2 can do: workers that build and move nothing
            report.ratio(STAGE, "DataLoader num_workers=2 moving nothing vs num_workers=0 "
                                "(same-run ceiling)", _ratio(rounds, TORCH0, TORCH_BUILD_ONLY.format(2)))
            report.ratio(STAGE, "DataLoader num_workers=2 vs 0 / same-run ceiling",
                         _ratio(rounds, TORCH_BUILD_ONLY.format(2), TORCH2))
    if {TORCH0, TORCH0_THREADS} <= has:
        r = report.ratio(STAGE, "DataLoader num_workers=0, TorchBatches threads=2 vs 1 batches/s",
                         _ratio(rounds, TORCH0, TORCH0_THREADS))
        r.waived = no_core if cores < MIN_CEILING else None
    if {TORCH0, TORCH2_TORCH} <= has:
        report.ratio(STAGE, "torch's own worker transfer: num_workers=2 time / num_workers=0",
                     _ratio(rounds, TORCH2_TORCH, TORCH0), kind="max")
        if TORCH2 in has:
            report.ratio(STAGE, "DataLoader num_workers=2: shared buffers vs torch's transfer batches/s",
                         _ratio(rounds, TORCH2_TORCH, TORCH2))
