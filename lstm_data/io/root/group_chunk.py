"""A counted group's baskets of one chunk, inflated together and interleaved in one pass.

A group's values are one row-major ``(total, V)`` block. Writing each basket into its
column on its own (a byte-swapping cast into ``out[lo:hi, j]``) touches every cache
line of the chunk's rows once per variable: with many variables that is many passes
over memory for one write of the values. :class:`GroupChunkTask` instead inflates the
chunk's baskets of every variable into a buffer its thread keeps (up to
:data:`~lstm_data.io.root.arena.KEEP_BYTES`; libdeflate writes into it in place: no copy per basket, no pages
faulted in per basket), checks each basket as :class:`~lstm_data.io.root.baskets.BasketTask` does, then writes the block
with :func:`~lstm_data.kernels.interleave_columns`, which byte-swaps the big-endian
values as it reads them, in row tiles that stay in cache, without the GIL.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lstm_data.io.root.arena import thread_arena
from lstm_data.io.root.baskets import BasketTask
from lstm_data.kernels import interleave_columns

__all__ = ["GroupChunkTask", "interleavable"]

def interleavable(out: np.ndarray, tasks: list[BasketTask]) -> bool:
    """Whether ``tasks`` (one group's baskets of a chunk) can be written by one :class:`GroupChunkTask`:
    float values into a float block."""
    floats = (np.dtype(np.float32), np.dtype(np.float64))
    return out.dtype in floats and all(t.plan.dtype.newbyteorder("=") in floats for t in tasks)


@dataclass
class GroupChunkTask:
    """Decode ``tasks`` (every basket of a group's variables in one chunk; task ``t`` writes
    column ``columns[t]`` of ``out``) into the ``(n, V)`` block ``out`` at once."""

    out: np.ndarray
    tasks: list[BasketTask]
    columns: list[int]

    @property
    def weight(self) -> int:
        """Compressed bytes read (larger tasks run first)."""
        return sum(t.weight for t in self.tasks)

    def run(self, fd: int, file: str, tree: str) -> None:
        arena = thread_arena()
        arena.reset()
        try:
            values = [t.values(fd, file, tree, arena=arena.take) for t in self.tasks]
            # rows cut where any basket ends: in each run every column is one basket's slice
            cuts = sorted({0, len(self.out)} | {t.lo for t in self.tasks} | {t.hi for t in self.tasks})
            width = self.out.shape[1]
            for lo, hi in zip(cuts[:-1], cuts[1:]):
                if hi <= lo:
                    continue
                views: list[np.ndarray | None] = [None] * width
                for t, v, j in zip(self.tasks, values, self.columns):
                    if t.lo <= lo and hi <= t.hi:
                        views[j] = v[lo - t.lo:hi - t.lo]
                columns = [v for v in views if v is not None]
                assert len(columns) == width, "every column of a chunk has its baskets"  # as made
                interleave_columns(columns, self.out[lo:hi])
        finally:
            arena.reset()
