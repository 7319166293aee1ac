"""How much a second thread can gain on this machine right now.

Thread-scaling floors only mean something when two cores are free. The ceiling
is measured with a GIL-free, compute-bound NumPy job (``np.sort`` of private
arrays) in the same run as the ratio it qualifies.
"""
from __future__ import annotations

import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .timing import Ratio

__all__ = ["sort_scaling", "waive_without_two_cores", "MIN_CEILING"]

#: below this np.sort 2-vs-1-thread scaling, a thread floor of 1.7x cannot be judged
MIN_CEILING = 1.8


def sort_scaling(rounds: int = 3) -> float:
    """Throughput of ``np.sort`` on 2 threads over 1 thread (median of ``rounds``)."""
    arrays = [np.random.default_rng(i).random(100_000) for i in range(16)]
    rates: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(rounds):
        for workers in (1, 2):
            t0 = time.perf_counter()
            with ThreadPoolExecutor(workers) as pool:
                list(pool.map(np.sort, arrays))
            rates[workers].append(len(arrays) / (time.perf_counter() - t0))
    return statistics.median(rates[2]) / statistics.median(rates[1])


def waive_without_two_cores(ratio: Ratio, ceiling: float) -> Ratio:
    """Mark ``ratio`` as not judged when the machine's own ceiling is below ``MIN_CEILING``."""
    if ceiling < MIN_CEILING:
        ratio.waived = (f"the machine itself gives only {ceiling:.2f}x on 2 threads "
                        f"(np.sort; < {MIN_CEILING}): no free second core")
    return ratio
