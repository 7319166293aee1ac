"""How much a second thread can gain on this machine right now.

Thread-scaling floors only mean something when the machine itself scales. Two
references are measured in the same run as the ratio they qualify, both
GIL-free NumPy work on private data:

* ``np.sort`` of arrays that fit in cache: is a second core free at all?
* ``np.take`` of random indices from a 128 MiB array: does the memory system
  serve two threads' random reads (the access pattern of gathering random
  rows) twice as fast? On some virtual machines it does not.

Batch building also writes its outputs, about 3 MiB per numu_v3 batch and
mostly padding, to memory that is no longer in cache when the consumer keeps
batches alive; :func:`write_scaling` measures how two threads share that write
bandwidth.
"""
from __future__ import annotations

import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import numpy as np

from bench.timing import Ratio

__all__ = ["sort_scaling", "gather_scaling", "write_scaling", "machine_ceilings",
           "waive_without_two_cores", "MIN_CEILING"]

#: below this 2-vs-1-thread scaling of a reference job, a 1.7x thread floor cannot be judged
MIN_CEILING = 1.7


def _scaling(job: Callable[[int], object], items: int, rounds: int) -> float:
    rates: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(rounds):
        for workers in (1, 2):
            t0 = time.perf_counter()
            with ThreadPoolExecutor(workers) as pool:
                list(pool.map(job, range(items)))
            rates[workers].append(items / (time.perf_counter() - t0))
    return statistics.median(rates[2]) / statistics.median(rates[1])


def sort_scaling(rounds: int = 3) -> float:
    """Throughput of ``np.sort`` (compute-bound, in cache) on 2 threads over 1."""
    arrays = [np.random.default_rng(i).random(100_000) for i in range(16)]
    return _scaling(lambda i: np.sort(arrays[i]), len(arrays), rounds)


def gather_scaling(rounds: int = 3) -> float:
    """Throughput of random ``np.take`` from 128 MiB (memory-bound) on 2 threads over 1."""
    table = np.ones(16 << 20)
    picks = [np.random.default_rng(i).integers(0, len(table), 1 << 18) for i in range(16)]
    return _scaling(lambda i: table.take(picks[i]), len(picks), rounds)


def write_scaling(rounds: int = 3) -> float:
    """Throughput of filling 3 MiB buffers that are out of cache, on 2 threads over 1.

    Each thread cycles through its own 16 buffers (48 MiB, more than the caches),
    as batch outputs do while a consumer and a prefetch queue hold batches.
    """
    buffers = [[np.zeros(3 << 18, np.float32) for _ in range(16)] for _ in range(2)]
    return _scaling(lambda i: buffers[i % 2][(i // 2) % 16].fill(np.nan), 64, rounds)


def machine_ceilings() -> dict[str, float]:
    """Both references, by name (as reported next to the thread ratios)."""
    return {"np.sort": sort_scaling(), "random np.take": gather_scaling()}


def waive_without_two_cores(ratio: Ratio, ceilings: dict[str, float] | float) -> Ratio:
    """Mark ``ratio`` as not judged when a machine reference scales below ``MIN_CEILING``."""
    if not isinstance(ceilings, dict):
        ceilings = {"np.sort": float(ceilings)}
    short = {name: c for name, c in ceilings.items() if c < MIN_CEILING}
    if short:
        what = ", ".join(f"{name} {c:.2f}x" for name, c in short.items())
        ratio.waived = (f"the machine itself scales only {what} on 2 threads "
                        f"(< {MIN_CEILING}x)")
    return ratio
