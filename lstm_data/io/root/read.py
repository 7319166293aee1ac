"""Reading a planned TTree's columns: the basket path, then uproot's for the rest (for :mod:`.root`).

:func:`read_columns` reads the scalars and groups of a :class:`~lstm_data.io.root.plan.TreePlan`
from a :class:`~lstm_data.io.root.tree.TreeColumns` (a whole tree), or from a view of an
entry range of it (:mod:`lstm_data.io.root.lazy`): the same code, so a range's values are
bitwise those rows of the whole read.
"""
from __future__ import annotations

import logging
from typing import Callable, Sequence

import numpy as np

from lstm_data.data.ragged import RaggedGroup
from lstm_data.io.awkward.layout import column_buffers
from lstm_data.io.columns.build import build_group, interleave_pieces
from lstm_data.io.columns.exact_ints import check_once
from lstm_data.io.columns.groups import check_group_lengths, settle
from lstm_data.io.root.fast import read_fast
from lstm_data.io.root.plan import TreePlan
from lstm_data.io.root.tree import TreeColumns, entry_ranges

__all__ = ["read_columns"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
#: a declared group of branches without a counter whose lengths differ
_HINT = "they share no counter branch; declare them in different groups with a schema"
_log = logging.getLogger("lstm_data")


def read_columns(plan: TreePlan, cols: TreeColumns, step_bytes: int, threads: int | None,
                 progress: Callable[[int, int], None] | None = None
                 ) -> tuple[dict[str, np.ndarray], dict[str, RaggedGroup]]:
    """The scalars and groups of ``plan``, read from ``cols`` (a tree or a view of its entries).

    Returns
    -------
    scalars : dict
        Column -> 1-D array.
    groups : dict
        Group -> :class:`RaggedGroup` (branches without a counter are grouped by their
        lengths: :func:`~lstm_data.io.columns.groups.settle`).
    """
    scalars, groups, dt = plan.scalars, plan.groups, plan.dt
    fast_scalars, fast = read_fast(cols, scalars, groups, dt, threads, progress, plan.declared,
                                   {g for g in groups if plan.keyed(g)})
    out_scalars = {s: fast_scalars[s] if s in fast_scalars else _cast(cols.read(s), dt) for s in scalars}
    done = {v for g in fast.values() for v in g.names}
    rest = {g: names for g, names in groups.items() if not set(names) <= done}
    slow = _read_groups(cols, rest, dt, step_bytes, plan, taken=list(scalars) + list(fast))
    out_groups = {g: fast.pop(g) if g in fast else slow.pop(g) for g in groups if g in fast or g in slow}
    out_groups.update(fast)  # groups cut from an inferred one by lengths
    out_groups.update(slow)
    return out_scalars, out_groups


def _cast(values: np.ndarray, dt: np.dtype | None) -> np.ndarray:
    return values if dt is None else values.astype(dt, copy=False)


class _Sink:
    """Where one group's values go, range by range.

    With a counter, the lengths are known up front: the ``(total, V)`` block is
    allocated once and each range is interleaved straight into its rows. Without
    one, each branch's values and lengths are kept as pieces and interleaved once
    at the end: a declared group must then have equal lengths (else a located
    error), another is cut into groups of equal lengths (``keep``: the first
    keeps the group's name).
    """

    def __init__(self, group: str, names: list[str], dtype: np.dtype, counts: np.ndarray | None,
                 file: str, strict: bool, keep: bool = True) -> None:
        self.group, self.names, self.dtype, self.counts, self.file = group, names, dtype, counts, file
        self.strict, self.keep = strict, keep
        self.offsets: np.ndarray | None = None
        if counts is not None:
            self.offsets = np.zeros(len(counts) + 1, dtype=np.int64)
            np.cumsum(counts, out=self.offsets[1:])
            self.block = np.empty((int(self.offsets[-1]), len(names)), dtype=dtype)
        self.pieces: dict[str, list[np.ndarray]] = {v: [] for v in names}
        self.lengths: dict[str, list[np.ndarray]] = {v: [] for v in names}

    def put(self, start: int, columns: dict[str, np.ndarray], lengths: dict[str, np.ndarray]) -> None:
        if self.offsets is None:
            for v, values in columns.items():
                self.pieces[v].append(values)
                self.lengths[v].append(lengths[v])
            return
        lo = int(self.offsets[start])
        rows = self.block[lo:lo + len(next(iter(columns.values())))]
        if self.dtype in _FLOATS:
            first = lengths[self.names[0]]
            for v, c in columns.items():  # integers into a float block: never changed silently
                check_once(c, self.dtype, v, file=self.file, where="entry", row_of=lambda k: start + int(
                    np.searchsorted(np.cumsum(first), k, side="right")))
            interleave_pieces([[c if c.dtype in _FLOATS else c.astype(self.dtype)] for c in columns.values()],
                              rows)
        else:  # a group of integer branches kept as integers
            first = lengths[self.names[0]]
            rows[...] = build_group(self.group, {v: (c, first) for v, c in columns.items()},
                                    dtype=self.dtype).values

    def result(self, taken: set[str]) -> dict[str, RaggedGroup]:
        if self.offsets is not None:
            return {self.group: RaggedGroup(self.names, self.block, self.offsets)}
        lengths = {v: np.concatenate(ls) if ls else np.zeros(0, dtype=np.int64)
                   for v, ls in self.lengths.items()}
        parts = {self.group: self.names} if self.strict else settle(self.group, lengths, keep=self.keep,
                                                                    taken=taken)
        if len(parts) > 1:
            _log.info("%s: jagged branches %s share no counter and differ in length: read as the groups %s",
                      self.file, self.names, parts)
        out = {}
        for g, names in parts.items():
            columns = {v: (self.pieces[v] or [np.zeros(0, dtype=self.dtype)], lengths[v]) for v in names}
            dtype = self.dtype if self.strict else np.result_type(*[p.dtype for v in names
                                                                    for p in self.pieces[v]] or [self.dtype])
            out[g] = build_group(g, columns, file=self.file, dtype=dtype)
        self.pieces = {}
        return out


def _read_groups(cols: TreeColumns, groups: dict[str, list[str]], dt: np.dtype | None,
                 step_bytes: int, plan: TreePlan, taken: Sequence[str]) -> dict[str, RaggedGroup]:
    """Every group, read range by range."""
    sinks = {}
    for g, names in groups.items():
        counter = cols.shared_counter(names)
        counts = cols.read(counter).astype(np.int64) if counter is not None else None
        dtype = dt if dt is not None else np.result_type(*[cols.dtype(v) for v in names])
        sinks[g] = _Sink(g, names, np.dtype(dtype), counts, cols.file, strict=g in plan.declared,
                         keep=plan.keyed(g))
    members = [v for names in groups.values() for v in names]
    for a, z in entry_ranges(cols, members, step_bytes):
        for g, sink in sinks.items():
            columns, lengths = {}, {}
            for v in sink.names:
                col = column_buffers(cols.read_range(v, a, z), v, file=cols.file)
                columns[v], lengths[v] = col.values[""], col.lengths
            if sink.counts is not None:
                cols.check_counts(sink.counts[a:z], lengths, a)
            elif sink.strict:
                base = getattr(cols, "base", 0)  # a view of an entry range: name the tree's entries
                check_group_lengths(g, lengths, first_row=a + base, file=cols.file, row_word="entry",
                                    where=f"tree {cols.tree!r}: ", hint=_HINT)
            sink.put(a, columns, lengths)
    taken_names = set(taken) | set(groups)
    out: dict[str, RaggedGroup] = {}
    for g, sink in sinks.items():
        out.update(sink.result(taken_names | set(out)))
    return out
