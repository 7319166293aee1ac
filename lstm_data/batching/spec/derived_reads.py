"""The stored columns that derived expressions need, read at once.

An evaluation over some rows of a dataset first collects every name its
expressions need (derived variables followed to the stored columns they read),
then reads them together: the stored scalars in one ``scalars_at`` call, each
ragged group whose values are needed in one ``ragged`` call, and a group whose
prongs are only counted (``num(x)``) from its offsets, without its values. The
derived values are then computed from those columns, each once.
"""
from __future__ import annotations

from collections import deque
from typing import Container, Iterable, Mapping

import numpy as np

from lstm_data.batching.spec.expressions import Column, Expression
from lstm_data.data.dataset import Dataset
from lstm_data.errors import SchemaError

__all__ = ["Reads", "stored_needs", "dependency_order"]


def dependency_order(names: Iterable[str], derived: Mapping[str, Expression]) -> list[str]:
    """The derived variables that ``names`` reach, each after those it reads (no recursion:
    a chain of any length is followed).

    Raises
    ------
    SchemaError
        A derived variable reads itself, directly or through others (the loop is named).
    """
    state: dict[str, int] = {}  # 1: being visited, 2: done
    out: list[str] = []
    for root in names:
        if root not in derived or state.get(root) == 2:
            continue
        state[root] = 1
        stack = [(root, iter(derived[root].names))]
        while stack:
            name, deps = stack[-1]
            for dep in deps:
                if dep not in derived or state.get(dep) == 2:
                    continue
                if state.get(dep) == 1:
                    _loop([n for n, _ in stack], dep)
                state[dep] = 1
                stack.append((dep, iter(derived[dep].names)))
                break
            else:
                stack.pop()
                state[name] = 2
                out.append(name)
    return out


def _loop(path: list[str], name: str) -> None:
    if path[-1] == name:
        raise SchemaError(f"derived variable {name!r} reads itself (a derived variable cannot replace "
                          "a column of the same name: choose another name)", variable=name)
    loop = path[path.index(name):] + [name]
    if len(loop) > 9:  # a long loop shown by its ends
        loop = loop[:4] + [f"... ({len(loop) - 7} more)"] + loop[-3:]
    raise SchemaError(f"derived variables read each other in a loop: {' -> '.join(loop)}", variable=name)


def stored_needs(names: Iterable[str], derived: Mapping[str, Expression],
                 have: Container[str] = ()) -> tuple[list[str], list[str]]:
    """The stored columns that ``names`` read, derived variables followed (each once; those
    in ``have``, computed already, are not).

    Returns
    -------
    values : list of str
        Stored columns whose values are read, in order of first need.
    counted : list of str
        Stored prong variables only counted (the direct argument of ``num()``), not in ``values``.
    """
    values: dict[str, None] = {}
    counted: dict[str, None] = {}
    seen: set[str] = set()
    todo = deque((name, True) for name in names)
    while todo:
        name, read = todo.popleft()
        if name in have:
            continue
        if name in derived:
            if name not in seen:
                seen.add(name)
                expr = derived[name]
                read_values = set(expr.value_names)
                todo.extendleft(reversed([(n, n in read_values) for n in expr.names]))
        elif read:
            values.setdefault(name)
        else:
            counted.setdefault(name)
    return list(values), [n for n in counted if n not in values]


class Reads:
    """Columns of some rows of a base dataset: stored ones read at once, derived ones computed once.

    Parameters
    ----------
    base
        The stored data.
    rows
        Its rows to read (``None``: every row).
    derived
        Derived variable -> its checked expression.
    prong_of
        Stored prong variable -> its group.
    groups
        Groups already read at ``rows``: group -> ``(values, offsets)``.
    row_numbers
        The data's row number of each of the rows, named in errors (``None``: ``rows``).
    lengths
        A cache shared between reads: group -> the prong count of every base row.
    deferred
        When given, the precision warnings of the evaluations are appended to it as
        ``(expression, message)`` instead of being given (see ``Expression.evaluate``).
    """

    def __init__(self, base: Dataset, rows: np.ndarray | None, derived: Mapping[str, Expression],
                 prong_of: Mapping[str, str], *, groups: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None,
                 row_numbers: np.ndarray | None = None, lengths: dict[str, np.ndarray] | None = None,
                 deferred: list[tuple[Expression, str]] | None = None) -> None:
        self.base, self.rows, self.derived, self.prong_of = base, rows, derived, prong_of
        self.n_rows = len(base) if rows is None else len(rows)
        self.groups = dict(groups or {})
        self.row_numbers = rows if row_numbers is None else row_numbers
        self.lengths = {} if lengths is None else lengths
        self.done: dict[str, Column] = {}
        self.deferred = deferred

    def columns(self, names: Iterable[str]) -> dict[str, Column]:
        """Every name of ``names`` (stored or derived) as a :class:`Column` of the rows."""
        names = list(names)
        self._load(names)
        for name in dependency_order([n for n in names if n not in self.done], self.derived):
            if name not in self.done:
                expr = self.derived[name]
                self.done[name] = expr.evaluate({n: self.done[n] for n in expr.names}, self.n_rows,
                                                self.row_numbers, self.deferred)
        return {name: self.done[name] for name in names}

    def values(self, names: Iterable[str]) -> list[np.ndarray]:
        """The values of each name of ``names``, in order."""
        return [col.values for col in self.columns(names).values()]

    def _load(self, names: list[str]) -> None:
        """Read, at once, every stored column that ``names`` need and that is not read yet."""
        values, counted = stored_needs(names, self.derived, self.done)
        scalars = [n for n in values if n not in self.prong_of and n not in self.done]
        if scalars:
            read = self.base.scalars_at(scalars, self.rows) if self.rows is not None else \
                {n: self.base.scalar(n) for n in scalars}
            self.done.update({n: Column(read[n]) for n in scalars})
        for g in dict.fromkeys(self.prong_of[n] for n in values if n in self.prong_of):
            if g not in self.groups:
                self.groups[g] = self.base.ragged(g, self.rows)
        for name in values:
            if name in self.prong_of and name not in self.done:
                g = self.prong_of[name]
                vals, offsets = self.groups[g]
                self.done[name] = Column(vals[:, self.base.groups[g].index(name)], offsets, g)
        for name in counted:
            if name not in self.done:
                g = self.prong_of[name]
                offsets = self._offsets(g)
                # num() reads only the offsets: any values of the right length stand in
                self.done[name] = Column(np.broadcast_to(np.float32(0), (int(offsets[-1]),)), offsets, g)

    def _offsets(self, group: str) -> np.ndarray:
        """``group``'s offsets at the rows, from its values when read, else from the base's offsets."""
        if group in self.groups:
            return self.groups[group][1]
        if self.rows is None:
            return self.base.offsets(group)
        lengths = self.lengths.get(group)
        if lengths is None:
            lengths = self.lengths.setdefault(group, np.diff(self.base.offsets(group)))
        out = np.zeros(len(self.rows) + 1, dtype=np.int64)
        np.cumsum(lengths[self.rows], out=out[1:])
        return out
