"""The threaded basket path of :func:`lstm_data.io.root.read_root`.

Scalars and counter groups whose branches :func:`~lstm_data.io.root.baskets.plan_branch`
can read are decoded basket by basket on a thread pool straight into their final
arrays: a scalar column, or the columns of a group's ``(total, V)`` block at the rows
its counter gives. What it cannot read (fixed-size parts, ``std::vector`` branches,
groups without a readable counter) is left to uproot's path; the values are the same
either way (bitwise those of ``tree.arrays(library="np")``).
"""
from __future__ import annotations

import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import AbstractSet, Callable, Sequence

import numpy as np

from lstm_data._util.cores import available_cores
from lstm_data._util.reuse import reusable_empty
from lstm_data.data.ragged import RaggedGroup
from lstm_data.io.columns.build import build_group
from lstm_data.io.columns.groups import check_group_lengths, settle
from lstm_data.io.root.baskets import BasketTask, BranchPlan, PieceTask, inflater_name
from lstm_data.io.root.tree import TreeColumns, import_uproot

__all__ = ["read_fast"]

_log = logging.getLogger("lstm_data")


def read_fast(cols: TreeColumns, scalars: Sequence[str], groups: dict[str, list[str]],
              dt: np.dtype | None, threads: int | None,
              progress: Callable[[int, int], None] | None = None, declared: AbstractSet[str] = frozenset(),
              keyed: AbstractSet[str] | None = None) -> tuple[dict[str, np.ndarray], dict[str, RaggedGroup]]:
    """The scalars and groups this path can read, read; the rest is left to the caller.

    ``declared`` groups are never cut; the others are cut by lengths
    (:func:`~lstm_data.io.columns.groups.settle`), the ``keyed`` ones keeping their
    name (default: all).

    Returns
    -------
    scalars : dict
        Column -> array, for the scalars read here.
    groups : dict
        Group -> :class:`RaggedGroup`, for the groups read here (an inferred group whose
        branches share no counter and differ in length: the groups it is cut into).
    """
    uproot = import_uproot()
    plans: dict[str, BranchPlan | None] = {}

    def plan(name: str) -> BranchPlan | None:
        if name not in plans:
            plans[name] = cols.basket_plan(name, uproot)
        return plans[name]

    n_threads = available_cores() if threads is None else int(threads)
    pending: list[tuple[str, list[str], str]] = []
    for g, names in groups.items():
        counter = cols.shared_counter(names)
        c_plan = None if counter is None else plan(counter)
        if counter is None or c_plan is None or c_plan.jagged or any(
                p is None or not p.jagged or p.header for p in map(plan, names)):
            continue  # read as pieces below, or by uproot's path
        pending.append((g, names, counter))
    counts: dict[str, np.ndarray] = {}
    first: list[BasketTask] = []
    for c in dict.fromkeys(c for _, _, c in pending):
        cached = cols.cached(c)
        if cached is None:
            cached = np.empty(cols.n, dtype=cols.dtype(c))
            first += _tasks(plan(c), cached)
        counts[c] = cached
    _run(first, cols, n_threads, None)
    for c, array in counts.items():
        cols.remember(c, array)
    tasks: list[BasketTask] = []
    out_scalars: dict[str, np.ndarray] = {}
    for s in scalars:
        if s in counts:
            out_scalars[s] = counts[s] if dt is None else counts[s].astype(dt)
            continue
        p = plan(s)
        if p is None or p.jagged:
            continue
        out_scalars[s] = np.empty(cols.n, dtype=dt if dt is not None else cols.dtype(s))
        tasks += _tasks(p, out_scalars[s])
    out_groups: dict[str, RaggedGroup] = {}
    for g, names, counter in pending:
        offsets = np.zeros(cols.n + 1, dtype=np.int64)
        np.cumsum(counts[counter], out=offsets[1:])
        dtype = np.dtype(dt if dt is not None else np.result_type(*[cols.dtype(v) for v in names]))
        block = reusable_empty((int(offsets[-1]), len(names)), dtype)
        for j, v in enumerate(names):
            tasks += _tasks(plan(v), block[:, j], offsets, counts[counter])
        out_groups[g] = RaggedGroup(names, block, offsets)
    counted = {g for g, _, _ in pending}
    piece_groups = {g: names for g, names in groups.items() if g not in counted
                    and all(_jagged(plan(v)) for v in names)}
    pieces = {v: _pieces(plan(v)) for names in piece_groups.values() for v in names}
    _run(tasks + [t for ts in pieces.values() for t in ts], cols, n_threads, progress)
    taken = set(scalars) | set(groups)
    for g, names in piece_groups.items():
        if any(t.values is None for v in names for t in pieces[v]):
            continue  # baskets without entry offsets and no counter: uproot's path
        own = {v: cols.dtype(v) for v in names}
        built = _assemble(g, names, pieces, own, dt, g in declared, taken | set(out_groups), cols.file,
                          cols.tree, first_row=getattr(cols, "base", 0), keep=keyed is None or g in keyed)
        out_groups.update(built)
    return out_scalars, out_groups


def _assemble(group: str, names: list[str], pieces: dict[str, list[PieceTask]], own: dict[str, np.dtype],
              dt: np.dtype | None, strict: bool, taken: set[str], file: str,
              tree: str, first_row: int = 0, keep: bool = True) -> dict[str, RaggedGroup]:
    """A group from its branches' basket pieces; one not declared (``strict``) is cut by equal lengths.

    ``first_row``: the tree's entry of the pieces' first entry (named in errors);
    ``keep``: the first cut keeps the group's name.
    """
    lengths = {v: np.concatenate([t.lengths for t in pieces[v]]) if pieces[v] else np.zeros(0, np.int64)
               for v in names}
    values = {v: [t.values for t in pieces[v] if t.values is not None] or [np.zeros(0, dtype=own[v])]
              for v in names}  # every piece has its values (the caller checked)
    if strict:
        check_group_lengths(group, lengths, first_row=first_row, file=file, row_word="entry",
                            where=f"tree {tree!r}: ",
                            hint="they share no counter branch; declare them in different groups "
                                 "with a schema")
    parts = {group: names} if strict else settle(group, lengths, keep=keep, taken=taken)
    if len(parts) > 1:
        _log.info("%s: jagged branches %s share no counter and differ in length: read as the groups %s",
                  file, names, parts)
    out: dict[str, RaggedGroup] = {}
    for g, members in parts.items():
        dtype = dt if dt is not None else np.result_type(*[values[v][0].dtype for v in members])
        out[g] = build_group(g, {v: (values[v], lengths[v]) for v in members}, file=file, dtype=dtype)
    return out


def _jagged(plan: BranchPlan | None) -> bool:
    return plan is not None and plan.jagged


def _pieces(plan: BranchPlan | None) -> list[PieceTask]:
    """One task per basket of the jagged branch of ``plan``, decoded on its own."""
    assert plan is not None
    return [PieceTask(plan, i) for i in range(len(plan.starts))]


def _tasks(plan: BranchPlan | None, out: np.ndarray, offsets: np.ndarray | None = None,
           counts: np.ndarray | None = None) -> list[BasketTask]:
    """One task per basket of ``plan``, writing its entries' values into ``out``."""
    assert plan is not None
    b = plan.base  # the plan of an entry range: its first entry is row 0 of ``out``
    if offsets is None:
        return [BasketTask(plan, i, out, a - b, z - b) for i, (a, z) in enumerate(zip(plan.starts, plan.stops))]
    assert counts is not None  # given with the offsets
    return [BasketTask(plan, i, out, int(offsets[a - b]), int(offsets[z - b]), counts=counts[a - b:z - b])
            for i, (a, z) in enumerate(zip(plan.starts, plan.stops))]


def _run(tasks: Sequence[BasketTask | PieceTask], cols: TreeColumns, threads: int,
         progress: Callable[[int, int], None] | None) -> None:
    """Every task, largest baskets first, on ``threads`` threads (at most ``threads`` baskets in memory)."""
    if not tasks:
        return
    tasks = sorted(tasks, key=lambda t: -t.plan.sizes[t.i])
    total = sum(t.plan.sizes[t.i] for t in tasks)
    started = time.perf_counter()
    fd = os.open(cols.file, os.O_RDONLY)
    try:
        if threads <= 1 or len(tasks) == 1:
            done = 0
            for t in tasks:
                t.run(fd, cols.file, cols.tree)
                done += t.plan.sizes[t.i]
                if progress is not None:
                    progress(done, total)
        else:
            with ThreadPoolExecutor(threads, thread_name_prefix="lstm_data-root") as pool:
                futures = [pool.submit(t.run, fd, cols.file, cols.tree) for t in tasks]
                done = 0
                try:
                    for t, f in zip(tasks, futures):
                        f.result()
                        done += t.plan.sizes[t.i]
                        if progress is not None:
                            progress(done, total)
                except BaseException:
                    for f in futures:
                        f.cancel()
                    raise
    finally:
        os.close(fd)
    _log.debug("%s: %d baskets (%.1f MB compressed) in %.3f s on %d threads (%s)", cols.file, len(tasks),
               total / 1e6, time.perf_counter() - started, threads, inflater_name())
