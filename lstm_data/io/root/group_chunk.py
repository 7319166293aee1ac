"""A counted group's baskets of one chunk, inflated together and interleaved in one pass.

A group's values are one row-major ``(total, V)`` block. Writing each basket into its
column on its own (a byte-swapping cast into ``out[lo:hi, j]``) touches every cache
line of the chunk's rows once per variable: with many variables that is many passes
over memory for one write of the values. :class:`GroupChunkTask` instead inflates the
chunk's baskets of every variable into a buffer its thread keeps (up to
:data:`~lstm_data.io.root.arena.KEEP_BYTES`; libdeflate writes into it in place, every
basket of the task in one compiled call: see :mod:`~lstm_data.io.root.chunk_inflate`), checks each basket as :class:`~lstm_data.io.root.baskets.BasketTask` does
(the entry offsets of the baskets of the same entries at once, with numpy), then writes the block
with :func:`~lstm_data.kernels.interleave_columns`, which byte-swaps the big-endian
values as it reads them, in row tiles that stay in cache, without the GIL.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from lstm_data.io.root.arena import thread_arena
from lstm_data.io.root.baskets import BasketTask, basket_bytes, stores_offsets
from lstm_data.io.root.chunk_inflate import inflate_chunk
from lstm_data.kernels import interleave_columns

__all__ = ["GroupChunkTask", "interleavable", "checked_values"]

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
            values = checked_values(self.tasks, fd, file, tree, arena.take)
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


def checked_values(tasks: list[BasketTask], fd: int, file: str, tree: str,
                   take: Callable[[int], np.ndarray]) -> list[np.ndarray]:
    """Each task's values, as :meth:`BasketTask.values` reads and checks them, the checks of
    the entry offsets made at once for the baskets of the same entries (a group's variables
    share their counts): one array of every such basket's offsets, compared with numpy."""
    read = inflate_chunk(tasks, fd, file, tree, take)
    if read is None:  # no libdeflate: basket by basket
        read = [basket_bytes(fd, t.plan, t.i, file, tree, (t.hi - t.lo) * t.plan.dtype.itemsize, take)
                for t in tasks]
    same: dict[tuple[int, int, int], list[int]] = {}  # (first entry, entry after, itemsize) -> baskets
    for k, (t, (data, border, _)) in enumerate(zip(tasks, read)):
        n = t.plan.stops[t.i] - t.plan.starts[t.i]
        if t.counts is not None and len(t.counts) == n and stores_offsets(t.plan, n, data, border):
            same.setdefault((t.plan.starts[t.i], t.plan.stops[t.i], t.plan.dtype.itemsize), []).append(k)
    for members in same.values():
        _check_offsets([tasks[k] for k in members], [read[k] for k in members], file, tree)
    return [t.checked(memoryview(data)[:border], file, tree) for t, (data, border, _) in zip(tasks, read)]


def _check_offsets(tasks: list[BasketTask], read: list[tuple[Any, int, int]], file: str, tree: str) -> None:
    """The entry offsets of baskets of the same entries and itemsize against their counts; the
    first basket that disagrees raises as :meth:`BasketTask.check_counts` does."""
    counts = tasks[0].counts
    assert counts is not None  # as grouped
    n, itemsize = len(counts), tasks[0].plan.dtype.itemsize
    offsets = np.empty((len(tasks), n + 1), dtype=np.int64)
    for row, (data, border, _) in zip(offsets, read):
        row[:n] = np.frombuffer(data, dtype=">i4", count=n, offset=border + 4)
    offsets[:, :n] -= np.array([keylen for _, _, keylen in read], dtype=np.int64)[:, None]
    offsets[:, n] = [border for _, border, _ in read]
    wrong = np.flatnonzero(np.any(np.diff(offsets, axis=1) // itemsize != counts, axis=1))
    if len(wrong):
        tasks[int(wrong[0])].check_counts(offsets[int(wrong[0])], file, tree)
