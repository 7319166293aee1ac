"""Derived variables and a row selection applied to a dataset.

``BatchSpec(derived={"part_pt": "np.hypot(part_px, part_py)"}, selection="jet_pt > 500")``
gives every field the variables ``derived`` defines and keeps only the rows the
``selection`` holds true for. :func:`derive` turns a dataset into the one
the spec's fields read:

- a derived variable that reads a prong variable (directly or through another
  derived variable) joins that variable's group, so one ``Ragged`` field can mix
  stored and derived prong variables; one that reads only per-row variables (or
  ``num()`` of a group) is a new scalar column;
- the selection is evaluated once, over every row (on disk in blocks of
  :data:`SELECTION_BLOCK` rows, reading only the columns it names), and the
  result is a row view: batches, orders, splits, shards and stores see only the
  selected rows, and ``len()`` counts them.

Cost. In RAM the derived values are computed once, when batches are made, and
held: a group that gains derived variables is copied once with its new columns
(``(total, V + D)``, a block of rows at a time on every core: see
:mod:`~lstm_data.batching.spec.derived_group`), the selected rows are copied once;
nothing is copied when neither applies. On disk nothing is held: each batch reads
its rows and computes their derived values (the selection's row numbers, 8 bytes
per kept row, are the only thing kept).
"""
from __future__ import annotations

import logging
import weakref
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Mapping, Protocol

import numpy as np

from lstm_data.batching.spec.derived_group import group_with_derived
from lstm_data._util.cores import available_cores
from lstm_data.batching.spec.derived_reads import Reads, dependency_order
from lstm_data.batching.spec.expressions import Expression
from lstm_data.data.concat import ConcatDataset
from lstm_data.data.dataset import Dataset, InMemoryDataset, RowSelection, as_rows, check_row_range, unknown_name_error
from lstm_data.data.ragged import RaggedGroup, count_mismatch
from lstm_data.errors import SchemaError

__all__ = ["DerivedDataset", "file_bounds", "check_derived", "expand_names", "mark_applied", "derived_key",
           "SELECTION_BLOCK", "Derivation", "derive", "HasDerived"]

_log = logging.getLogger("lstm_data")

#: rows per block when a selection is evaluated over on-disk data
SELECTION_BLOCK = 1 << 16


class HasDerived(Protocol):
    """What :func:`mark_applied` reads of a spec: its derived variables and selection, as text."""

    @property
    def derived(self) -> Mapping[str, str]: ...

    @property
    def selection(self) -> str | None: ...


@dataclass(frozen=True)
class Derivation:
    """A dataset with a spec's derived variables and selection applied, and what is known of it.

    Attributes
    ----------
    dataset
        The derived data (the given dataset itself when there was nothing to apply).
    key
        What was applied (see :func:`derived_key`), or ``None`` for nothing.
    bounds
        The row bounds of its files (``None`` for data of one file).
    """

    dataset: Dataset
    key: tuple[object, ...] | None
    bounds: np.ndarray | None


@dataclass(frozen=True)
class _Applied:
    """What made a derived dataset (a :class:`Derivation` without the dataset, which a value of
    :data:`_APPLIED` must not refer to: its key would never be freed)."""

    key: tuple[object, ...] | None
    bounds: np.ndarray | None


#: derived datasets -> what made them: kept beside the datasets (weakly, so they go with them),
#: never set on them; a view of the data carries the bounds it batches by
_APPLIED: weakref.WeakKeyDictionary[Dataset, _Applied] = weakref.WeakKeyDictionary()
#: bytes of output rows filled at a time when derived columns join a group's values
_FILL_BYTES = 1 << 20


def check_derived(derived: Mapping[str, str] | None,
                  selection: str | None) -> tuple[dict[str, Expression], Expression | None]:
    """Parse and check a spec's ``derived`` table and ``selection``.

    Parameters
    ----------
    derived
        Variable name -> expression text (``None``: none).
    selection
        A per-row boolean expression, or ``None``.

    Returns
    -------
    derived : dict of str to Expression
        The parsed expressions, in the order given (``x: "x"`` left out, as weaver-core does).
    selection : Expression or None
        The parsed selection.

    Raises
    ------
    SchemaError
        Not a table of name -> text, an expression outside the allow-list, or a
        derived variable that reads itself (directly or through others).
    """
    out: dict[str, Expression] = {}
    if derived is not None and not isinstance(derived, Mapping):
        raise SchemaError(f"derived must be a table of variable name -> expression, got {derived!r}")
    for name, text in (derived or {}).items():
        if not isinstance(name, str) or not name.isidentifier() or name.startswith("__"):
            raise SchemaError(f"derived: {name!r} is not a valid variable name (letters, digits and _, "
                              "not starting with a digit or __)", variable=str(name))
        if text == name:
            continue
        out[name] = Expression(text, where=f"derived {name!r}", variable=name)
    sel = None if selection is None else Expression(selection, where="selection")
    dependency_order(out, out)  # refuses a loop
    return out, sel


def expand_names(names: list[str], derived: Mapping[str, Expression], selection: Expression | None) -> list[str]:
    """The stored columns that ``names`` and the selection read, derived variables replaced by theirs."""
    out: dict[str, None] = {}
    todo = deque(list(names) + (list(selection.names) if selection is not None else []))
    seen: set[str] = set()
    while todo:
        name = todo.popleft()
        if name in seen:
            continue
        seen.add(name)
        if name in derived:
            todo.extendleft(reversed(derived[name].names))
        else:
            out.setdefault(name)
    return list(out)


class DerivedDataset(Dataset):
    """A dataset's selected rows with derived variables, computed per read (the on-disk form).

    Parameters
    ----------
    base
        The stored data.
    derived
        Derived variable -> its checked expression (from :func:`check_derived`).
    kinds
        Derived variable -> the group it joins, or ``None`` for a scalar column.
    rows
        The base rows kept by a selection (ascending), or ``None`` for all.
    """

    def __init__(self, base: Dataset, derived: Mapping[str, Expression], kinds: Mapping[str, str | None],
                 rows: np.ndarray | None) -> None:
        self.base = base
        self.derived = dict(derived)
        self.kinds = dict(kinds)
        self.selected = rows
        self._n_rows = len(base) if rows is None else len(rows)
        self._scalar_names = base.scalar_names + [n for n in derived if kinds[n] is None]
        self._groups = {g: names + [n for n in derived if kinds[n] == g] for g, names in base.groups.items()}
        self._prong_of = {v: g for g, names in base.groups.items() for v in names}
        self._offsets_cache: dict[str, np.ndarray] = {}
        self._lengths: dict[str, np.ndarray] = {}  # group -> prong count of every base row (for num())
        self.source = base.source

    @property
    def in_ram(self) -> bool:
        """``False``: every read goes to the base dataset and computes its derived values."""
        return False

    def value_chunk_len(self, group: str) -> int:
        """The base's chunk length when every row is kept; 0 under a selection (rows are a view)."""
        return self.base.value_chunk_len(group) if self.selected is None else 0

    def _base_rows(self, rows: np.ndarray | None) -> np.ndarray | None:
        if self.selected is None:
            return rows
        return self.selected if rows is None else self.selected[rows]

    def _reads(self, base_rows: np.ndarray | None,
               groups: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None) -> Reads:
        return Reads(self.base, base_rows, self.derived, self._prong_of, groups=groups, lengths=self._lengths)

    def _scalar(self, name: str, rows: np.ndarray | None) -> np.ndarray:
        return self.scalars_at([name], rows)[name] if rows is not None else \
            self._reads(self._base_rows(None)).values([name])[0]

    def scalars_at(self, names: list[str], rows: RowSelection) -> dict[str, np.ndarray]:
        """Several scalar columns at ``rows``: the stored columns they need read at once
        (one call for the base's scalars), each derived value computed once.

        Parameters
        ----------
        names
            Scalar columns, stored or derived.
        rows
            Row indices in any order, repeats allowed (ints, an array, a slice).

        Returns
        -------
        dict of str to numpy.ndarray
            Each column's values at ``rows``.
        """
        for name in names:
            self._check_scalar(name)
        base_rows = self._base_rows(as_rows(rows, self._n_rows))
        if base_rows is None:
            base_rows = np.arange(len(self.base), dtype=np.intp)
        return dict(zip(names, self._reads(base_rows).values(names)))

    def _offsets(self, group: str) -> np.ndarray:
        if self.selected is None:
            return self.base.offsets(group)
        off = self._offsets_cache.get(group)
        if off is None:
            lengths = np.diff(self.base.offsets(group))[self.selected]
            off = np.zeros(len(lengths) + 1, dtype=np.int64)
            np.cumsum(lengths, out=off[1:])
            self._offsets_cache[group] = off
        return off

    def _ragged(self, group: str, rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        base_rows = self._base_rows(rows)
        return self._with_derived(group, base_rows, *self.base.ragged(group, base_rows))

    def ragged_range(self, group: str, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """``group``'s values and offsets of rows ``lo .. hi - 1``, its derived columns joined.

        Without a selection the base reads the range in place (its fast path for rows
        in file order); the stored columns the derived ones need are read at once.
        """
        check_row_range(lo, hi, self._n_rows)
        if self.selected is not None:
            return self.ragged(group, slice(lo, hi))
        base_rows = np.arange(lo, hi, dtype=np.intp)
        return self._with_derived(group, base_rows, *self.base.ragged_range(group, lo, hi))

    def _with_derived(self, group: str, base_rows: np.ndarray | None, values: np.ndarray,
                      offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        extra = [n for n in self.derived if self.kinds[n] == group]
        if not extra:
            return values, offsets
        reads = self._reads(base_rows, {group: (values, offsets)})
        return _with_columns(values, reads.values(extra)), offsets


def _with_columns(values: np.ndarray, extra: list[np.ndarray]) -> np.ndarray:
    """``values`` (total, V) with the ``extra`` 1-D columns appended (one copy)."""
    dtype = np.result_type(values.dtype, *[e.dtype for e in extra])
    width = values.shape[1]
    out = np.empty((len(values), width + len(extra)), dtype=dtype)
    step = max(1, _FILL_BYTES // max(1, out.itemsize * out.shape[1]))
    for a in range(0, len(values), step):  # a block of rows at a time stays in cache while its columns fill
        b = a + step
        out[a:b, :width] = values[a:b]
        for j, col in enumerate(extra, start=width):
            out[a:b, j] = col[a:b]
    return out


def _kinds(dataset: Dataset, derived: Mapping[str, Expression],
           selection: Expression | None) -> dict[str, str | None]:
    """Each derived variable's group (``None``: per row); checks every name the expressions read."""
    known: dict[str, str | None] = {s: None for s in dataset.scalar_names}
    known.update({v: g for g, names in dataset.groups.items() for v in names})
    clash = [n for n in derived if n in known]
    if clash:
        raise SchemaError(f"derived variable {clash[0]!r} has the name of a column of the data; "
                          "choose another name", variable=clash[0])
    everything = list(known) + list(derived)
    kinds: dict[str, str | None] = {}

    def why(groups: list[str]) -> str:  # only when groups meet: reads their offsets then
        return count_mismatch(dataset.offsets, groups)

    def kind_of(name: str) -> str | None:
        return known[name] if name in known else kinds[name]

    for name in dependency_order(derived, derived):  # each after those it reads
        expr = derived[name]
        for dep in expr.names:
            if dep not in known and dep not in derived:
                err = unknown_name_error("variable", dep, everything)
                raise SchemaError(f"{expr.where}: {err.message}", variable=dep)
        kinds[name] = expr.kind({n: kind_of(n) for n in expr.names}, why)
    kinds = {name: kinds[name] for name in derived}
    if selection is not None:
        for dep in selection.names:
            if dep not in known and dep not in derived:
                err = unknown_name_error("variable", dep, everything)
                raise SchemaError(f"selection: {err.message}", variable=dep)
        group = selection.kind({n: kind_of(n) for n in selection.names}, why)
        if group is not None:
            raise SchemaError(f"selection {selection.text!r} gives one value per prong of group {group!r}, "
                              "not one per row (count prongs with num(), e.g. num(part_px) > 0)")
    return kinds


def derived_key(derived: Mapping[str, Expression], selection: Expression | None) -> tuple[object, ...]:
    """What a dataset made by :func:`derive` was made with (its :attr:`Derivation.key`)."""
    return (tuple((n, e.text) for n, e in derived.items()), None if selection is None else selection.text)


def derive(dataset: Dataset, derived: Mapping[str, Expression], selection: Expression | None,
           bounds: np.ndarray | None = None) -> Derivation:
    """``dataset`` with the derived variables added and only the selected rows, and the row
    bounds of its files.

    Parameters
    ----------
    dataset
        The stored data.
    derived, selection
        From :func:`check_derived`.
    bounds
        The row bounds of ``dataset``'s files as its view knows them (default: :func:`file_bounds`).

    Returns
    -------
    Derivation
        Its ``dataset``: ``dataset`` itself when there is nothing to apply (or it was
        applied already); an :class:`InMemoryDataset` (or, for several in-RAM files, a
        ``ConcatDataset`` of them) when ``dataset`` is in RAM; else a
        :class:`DerivedDataset` view. With what was applied, and the selected rows of
        each file as row bounds.

    Raises
    ------
    SchemaError
        An expression reads an unknown variable (close names suggested), mixes
        two groups, a derived name is taken by a column, the selection is not
        one value per row, or numpy refuses an operation.
    """
    key = derived_key(derived, selection)
    bounds = file_bounds(dataset) if bounds is None else np.asarray(bounds, dtype=np.int64)
    if not derived and selection is None:
        return Derivation(dataset, None, bounds)
    done = _APPLIED.get(dataset)
    if done is not None and done.key == key:
        return Derivation(dataset, key, bounds)
    kinds = _kinds(dataset, derived, selection)
    rows = None if selection is None else _selected_rows(dataset, derived, selection)
    if rows is not None:
        _log.info("selection %r keeps %d of %d rows", selection.text, len(rows), len(dataset))  # type: ignore[union-attr]
    out: Dataset
    if not dataset.in_ram:
        out = DerivedDataset(dataset, derived, kinds, rows)
    elif isinstance(dataset, ConcatDataset) and not dataset.part_values and rows is None:
        alone = len(dataset.datasets) < 2  # else the parts are on the cores already
        out = ConcatDataset(_on_cores(list(dataset.datasets),
                                      lambda part: _materialise(part, derived, kinds, None, alone)))
    else:
        out = _materialise(dataset, derived, kinds, rows)
    if isinstance(out, ConcatDataset):
        bounds = None  # its own parts
    elif bounds is not None and rows is not None:
        bounds = np.searchsorted(rows, bounds).astype(np.int64)
    made = Derivation(out, key, bounds)
    _APPLIED[out] = _Applied(key, bounds)
    return made


def _on_cores(parts: list[Dataset], work: Any) -> list[InMemoryDataset]:
    """``work(part)`` of every part, in order, on a thread per core (NumPy's loops, which do the
    work, release the GIL); the first error raised, as one thread would."""
    workers = min(len(parts), available_cores())
    if workers < 2:
        return [work(part) for part in parts]
    with ThreadPoolExecutor(workers, thread_name_prefix="lstm_data-derive") as pool:
        return list(pool.map(work, parts))


def file_bounds(dataset: Dataset) -> np.ndarray | None:
    """Row bounds of the files of ``dataset`` (``None`` for data of one file).

    A ``ConcatDataset``'s parts, also through the data :func:`derive` makes of it (the
    bounds of its :class:`Derivation`): file ``i`` holds rows
    ``bounds[i]:bounds[i + 1]`` (empty when a selection keeps none of its rows).

    Parameters
    ----------
    dataset
        Any dataset.

    Returns
    -------
    numpy.ndarray or None
        ``n_files + 1`` ascending int64 row numbers from 0 to ``len(dataset)``.
    """
    if isinstance(dataset, ConcatDataset):
        return np.asarray(dataset.cumulative, dtype=np.int64)
    made = _APPLIED.get(dataset)
    return None if made is None or made.bounds is None else np.asarray(made.bounds, dtype=np.int64)


def mark_applied(dataset: Dataset, spec: HasDerived, bounds: np.ndarray | None = None) -> None:
    """Record that ``dataset`` holds ``spec``'s derived variables and selection already.

    A :class:`~lstm_data.batching.epochs.batches.Batches` unpickled in a worker reopens its
    (derived) dataset from shared memory; the record keeps a later ``spec.derive(dataset)``
    from applying them twice. It is kept beside the dataset, never set on it.
    """
    if spec.derived or spec.selection is not None:
        key = (tuple((n, t) for n, t in spec.derived.items() if t != n), spec.selection)
        _APPLIED[dataset] = _Applied(key, bounds)


def _selected_rows(dataset: Dataset, derived: Mapping[str, Expression], selection: Expression) -> np.ndarray:
    """Base rows the selection keeps, ascending (evaluated in blocks of rows)."""
    prong_of = {v: g for g, names in dataset.groups.items() for v in names}
    n = len(dataset)
    blocks = [None] if dataset.in_ram else [np.arange(a, min(a + SELECTION_BLOCK, n), dtype=np.intp)
                                            for a in range(0, n, SELECTION_BLOCK)]
    kept = []
    lengths: dict[str, np.ndarray] = {}
    for block in blocks:
        reads = Reads(dataset, block, derived, prong_of, lengths=lengths)
        mask = selection.evaluate(reads.columns(selection.names), reads.n_rows, block).values.astype(bool)
        kept.append(np.flatnonzero(mask) + (0 if block is None or not len(block) else block[0]))
    return np.concatenate(kept).astype(np.intp) if kept else np.zeros(0, dtype=np.intp)


def _materialise(dataset: Dataset, derived: Mapping[str, Expression], kinds: Mapping[str, str | None],
                 rows: np.ndarray | None, threads: bool = True) -> InMemoryDataset:
    """An in-RAM dataset of ``rows`` with the derived columns computed once.

    A group's derived columns are computed a block of rows at a time, straight into
    the group's new values, so that intermediate results stay in cache (the blocks on
    a thread per core when ``threads``; not when the parts of several files already are).
    """
    scalars = {s: dataset.scalar(s, rows) for s in dataset.scalar_names}
    groups = {g: dataset.ragged(g, rows) for g in dataset.groups}
    prong_of = {v: g for g, names in dataset.groups.items() for v in names}
    taken = InMemoryDataset(scalars, {g: RaggedGroup(dataset.groups[g], *vo) for g, vo in groups.items()},
                            source=dataset.source)
    per_row = [n for n in derived if kinds[n] is None]
    reads = Reads(taken, None, derived, prong_of, groups=groups, row_numbers=rows)
    for name, values in zip(per_row, reads.values(per_row)):
        scalars[name] = np.ascontiguousarray(values)
    out_groups = {}
    for g, (values, offsets) in groups.items():
        extra = [n for n in derived if kinds[n] == g]
        if extra:
            values = group_with_derived(taken, g, extra, derived, prong_of, {n: scalars[n] for n in per_row},
                                        rows, threads=threads)
        out_groups[g] = RaggedGroup(dataset.groups[g] + extra, values, offsets)
    return InMemoryDataset(scalars, out_groups, source=dataset.source)
