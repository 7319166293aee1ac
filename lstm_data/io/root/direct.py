"""A TTree's baskets decoded straight into the rows a request needs (for :class:`~.lazy.RootDataset`).

A read on demand (a block-shuffle window, a batch, one file's share of a window of
several files) asks for rows of some columns. When every asked column is one whose
baskets :func:`~lstm_data.io.root.baskets.plan_branch` reads (flat numbers, counted
arrays with a counter branch), the request is served basket by basket:

* each basket of an asked column and touched chunk is one task; all the tasks of
  the request run together on one pool of ``threads`` threads that lives as long as
  the process (no pool started per chunk), so reading, inflating and writing of
  several chunks and files overlap;
* a chunk whose rows the request takes whole, in order, is written in place: a
  scalar basket's big-endian numbers are byte-swapped and cast in one assignment into
  its slice; a group's float baskets of the chunk are inflated together into a
  buffer their thread keeps and byte-swapped into the rows of its ``(total, V)``
  block in one tiled pass (:mod:`~lstm_data.io.root.group_chunk`, one task per
  thread, each of adjacent columns). Only a chunk taken in part or out of order is
  decoded into a buffer of its own and copied out;
* a basket's values are checked against the group offsets found at open (each
  entry's count): a file changed or damaged since is a ``FormatError`` naming the
  file, branch, basket and entry, never other values.

Only the asked columns' baskets are read, so a caller asking column by column
decodes each basket once. The values are bitwise those of the chunk path (the same
basket decoder and the same single cast).
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import Callable, Mapping, Sequence, Union

import numpy as np

from lstm_data._util.heap import empty_pages
from lstm_data.data.ragged import put_ragged, take_ragged
from lstm_data.io.root.baskets import BasketTask, BranchPlan
from lstm_data.io.root.group_chunk import GroupChunkTask, interleavable

__all__ = ["ChunkBaskets", "run_tasks", "gather", "copy_partial"]

_POOLS: dict[int, ThreadPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()


def _forget_pools() -> None:
    _POOLS.clear()  # a forked child has none of the parent's threads


os.register_at_fork(after_in_child=_forget_pools)


def _pool(threads: int) -> ThreadPoolExecutor:
    """The process's pool of ``threads`` basket threads (started once)."""
    with _POOLS_LOCK:
        pool = _POOLS.get(threads)
        if pool is None:
            pool = _POOLS[threads] = ThreadPoolExecutor(threads, thread_name_prefix="lstm_data-baskets")
        return pool


#: a task of :func:`run_tasks`
Task = Union[BasketTask, GroupChunkTask]


def run_tasks(tasks: Sequence[Task], fd: int, file: str, tree: str, threads: int) -> None:
    """Every task, largest baskets first, on the shared pool of ``threads`` threads (in this
    thread when ``threads`` is 1 or there is one task); the first error is raised once all ended."""
    if not tasks:
        return
    ordered = sorted(tasks, key=lambda t: -t.weight)
    if threads <= 1 or len(ordered) == 1:
        for t in ordered:
            t.run(fd, file, tree)
        return
    pool = _pool(threads)
    futures: list[Future[None]] = [pool.submit(t.run, fd, file, tree) for t in ordered]
    error: BaseException | None = None
    for f in futures:
        try:
            f.result()
        except BaseException as exc:  # wait for the others: they write into the caller's arrays
            if error is None:
                error = exc
            for g in futures:
                g.cancel()
    if error is not None:
        raise error


class ChunkBaskets:
    """The baskets of each chunk of a tree's columns, for columns with a basket plan.

    Parameters
    ----------
    plans
        Column -> its whole-tree :class:`BranchPlan` (``None``: not readable by baskets).
    bounds
        The chunk bounds (entries; whole clusters, so no basket crosses one).
    """

    def __init__(self, plans: Mapping[str, BranchPlan | None], bounds: np.ndarray) -> None:
        self.bounds = np.asarray(bounds, dtype=np.int64)
        self.plans: dict[str, BranchPlan] = {}
        self._first: dict[str, np.ndarray] = {}
        for name, plan in plans.items():
            if plan is None or plan.base:
                continue
            starts = np.asarray(plan.starts, dtype=np.int64)
            stops = np.asarray(plan.stops, dtype=np.int64)
            edges = np.append(starts, stops[-1:])
            whole = len(starts) > 0 and int(starts[0]) == 0 and int(stops[-1]) == int(self.bounds[-1]) \
                and bool(np.all(starts[1:] == stops[:-1])) and bool(np.all(np.isin(self.bounds, edges)))
            if whole:  # every chunk is a run of whole baskets: chunk k's are first[k]:first[k + 1]
                self.plans[name] = plan
                self._first[name] = np.searchsorted(starts, self.bounds, side="left")

    def readable(self, scalars: Sequence[str], groups: Mapping[str, Sequence[str]]) -> bool:
        """Whether every column of a request has a plan of the right kind."""
        return all(s in self.plans and not self.plans[s].jagged for s in scalars) and all(
            v in self.plans and self.plans[v].jagged and not self.plans[v].header
            for names in groups.values() for v in names)

    def scalar_tasks(self, name: str, k: int, out: np.ndarray) -> list[BasketTask]:
        """Chunk ``k`` of scalar ``name`` into ``out`` (its rows, row 0 = the chunk's first)."""
        plan, a = self.plans[name], int(self.bounds[k])
        i0, i1 = int(self._first[name][k]), int(self._first[name][k + 1])
        return [BasketTask(plan, i, out, plan.starts[i] - a, plan.stops[i] - a) for i in range(i0, i1)]

    def group_tasks(self, names: Sequence[str], k: int, out: np.ndarray,
                    local: np.ndarray, parts: int = 1) -> list[Task]:
        """Chunk ``k`` of a group's ``names`` into the ``(total, V)`` block ``out``; ``local``:
        the chunk's offsets from 0 (one per entry, plus the end). Float baskets are ``parts``
        :class:`~lstm_data.io.root.group_chunk.GroupChunkTask` of adjacent columns each (so
        as many threads share a chunk); others one task per basket."""
        a = int(self.bounds[k])
        counts = np.diff(local)
        tasks = []
        columns = []
        for j, v in enumerate(names):
            plan = self.plans[v]
            column = out[:, j]
            for i in range(int(self._first[v][k]), int(self._first[v][k + 1])):
                lo, hi = plan.starts[i] - a, plan.stops[i] - a
                tasks.append(BasketTask(plan, i, column, int(local[lo]), int(local[hi]), counts=counts[lo:hi]))
                columns.append(j)
        if not len(out) or not interleavable(out, tasks):
            return list(tasks)
        cuts = np.linspace(0, len(names), max(1, min(parts, len(names))) + 1).round().astype(int)
        split: list[Task] = []
        for j0, j1 in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
            mine = [(t, j - j0) for t, j in zip(tasks, columns) if j0 <= j < j1]
            split.append(GroupChunkTask(out[:, j0:j1], [t for t, _ in mine], [j for _, j in mine]))
        return split


def _copy_rows(out: np.ndarray, pos: np.ndarray, column: np.ndarray, local: np.ndarray) -> None:
    """Rows ``local`` of a decoded chunk's scalar ``column`` into rows ``pos`` of ``out``."""
    out[pos] = column[local]


def copy_partial(out_values: np.ndarray, out_off: np.ndarray, pos: np.ndarray, chunk_values: np.ndarray,
                 chunk_off: np.ndarray, local: np.ndarray) -> None:
    """Rows ``local`` of a decoded chunk (``chunk_values``, ``chunk_off``) into rows ``pos`` of the result."""
    block, block_off = take_ragged(chunk_values, chunk_off, local)
    put_ragged(out_values, out_off, pos, block, block_off)


def gather(baskets: ChunkBaskets, sel: np.ndarray, scalars: Mapping[str, np.dtype],
           groups: Mapping[str, tuple[Sequence[str], np.dtype, np.ndarray]], *, file: str, tree: str,
           threads: int, record: Callable[[str, int, int], None],
           out_g: dict[str, tuple[np.ndarray, np.ndarray]] | None = None
           ) -> tuple[dict[str, np.ndarray], dict[str, tuple[np.ndarray, np.ndarray]]]:
    """``scalars`` and ``groups`` (group -> variables, dtype, the tree's offsets) at rows ``sel``.

    ``out_g``: the groups' result blocks and offsets when the caller gives them (their rows
    must be those of ``sel``). ``record(key, chunk, nbytes)`` is called per chunk and
    group (``"scalars"`` for scalars alone) read.
    """
    out_s = {s: np.empty(len(sel), dtype=dt) for s, dt in scalars.items()}
    if out_g is None:
        out_g = {}
        for g, (names, dt, offsets) in groups.items():
            off = np.zeros(len(sel) + 1, dtype=np.int64)
            np.cumsum(offsets[sel + 1] - offsets[sel], out=off[1:])
            out_g[g] = (empty_pages((int(off[-1]), len(names)), dt), off)
    if not len(sel):
        return out_s, out_g
    bounds = baskets.bounds
    k_of = np.searchsorted(bounds, sel, side="right") - 1
    order = np.argsort(k_of, kind="stable")
    touched, first = np.unique(k_of[order], return_index=True)
    ends = np.append(first[1:], len(order))
    tasks: list[Task] = []
    later: list[Callable[[], None]] = []  # chunks taken in part: copied out once decoded
    for k, i, j in zip(touched.tolist(), first.tolist(), ends.tolist()):
        pos = order[i:j]
        a, z = int(bounds[k]), int(bounds[k + 1])
        local = sel[pos] - a
        p0 = int(pos[0])
        whole = len(pos) == z - a and int(pos[-1]) - p0 == z - a - 1 and bool(np.all(np.diff(pos) == 1)) \
            and bool(np.all(np.diff(local) == 1)) and int(local[0]) == 0
        for s, column in out_s.items():
            if whole:
                tasks += baskets.scalar_tasks(s, k, column[p0:p0 + z - a])
            else:
                own = np.empty(z - a, dtype=column.dtype)
                tasks += baskets.scalar_tasks(s, k, own)
                later.append(partial(_copy_rows, column, pos, own, local))
        for g, (names, _, offsets) in groups.items():
            values, off = out_g[g]
            chunk_off = offsets[a:z + 1] - offsets[a]
            n_values = int(chunk_off[-1])
            record(f"{g}/values", k, n_values * values.itemsize * values.shape[1])
            if whole:
                lo = int(off[p0])
                tasks += baskets.group_tasks(names, k, values[lo:lo + n_values], chunk_off, threads)
            else:
                own = np.empty((n_values, values.shape[1]), dtype=values.dtype)
                tasks += baskets.group_tasks(names, k, own, chunk_off, threads)
                later.append(partial(copy_partial, values, off, pos, own, chunk_off, local))
        if not groups:
            record("scalars", k, sum(int(c.itemsize) * (z - a) for c in out_s.values()))
    fd = os.open(file, os.O_RDONLY)
    try:
        run_tasks(tasks, fd, file, tree, threads)
    finally:
        os.close(fd)
    for copy in later:
        copy()
    return out_s, out_g
