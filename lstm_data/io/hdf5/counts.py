"""Flat values plus a counts column: how HDF5 dumps without variable-length types store lists.

``ak.to_hdf5``-style and hand-written h5py dumps keep a ragged variable as one 1-D
dataset of every event's values one after the other (``png_calE``, shape
``(total,)``) next to an integer dataset of the event length that says how many
values each event has (``n_png``, shape ``(N,)``).

A **counts dataset** is a 1-D integer dataset whose name says what it counts
(:func:`counted_name`): ``n_X``, ``nX``, ``num_X``, ``X_n``, ``X_counts`` (or
``X_count``), and, alone or inside an object's group, ``counts``, ``n``, ``num``.
Its **values** are the 1-D numeric datasets whose name starts with ``X_`` or
``X.`` (a bare ``counts`` at the top: every 1-D dataset of another length).
A counts dataset is used when some of its values have another length than it
(or the sum of its counts, when equal); otherwise it is an ordinary scalar
(``nHit`` counting hits that are not stored). A used counts dataset stays a
scalar column, as a ROOT counter branch does.

Counts are checked before anything is trusted (:func:`checked_lengths`): no
count is negative, none exceeds the values' length, the running total never
passes it (so that a sum that wraps around 2**64 cannot pass), and the total
equals it. Errors name the file, the counts dataset, the values dataset and the
first bad row.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from lstm_data.errors import FormatError

__all__ = ["Flat", "Counted", "counted_name", "pair_counts", "checked_lengths"]

_PATTERNS = (re.compile(r"^n_(?P<x>.+)$"), re.compile(r"^num_(?P<x>.+)$"),
             re.compile(r"^(?P<x>.+)_n$"), re.compile(r"^(?P<x>.+)_counts?$"),
             re.compile(r"^n(?P<x>[A-Z].*)$"))
#: names that count the values of their own object (its group), or of anything at the top
_BARE = frozenset({"counts", "count", "n", "num", "sizes", "lengths"})


@dataclass(frozen=True)
class Flat:
    """One 1-D numeric dataset, as the pairing sees it.

    Attributes
    ----------
    name, key
        Its column name and its dataset's path below the opened group.
    rows
        Its length.
    integer
        Whether it holds integers.
    """

    name: str
    key: str
    rows: int
    integer: bool


@dataclass
class Counted:
    """A counts dataset and the values it counts.

    Attributes
    ----------
    group
        The ragged group's name (``png`` for ``n_png``).
    counts
        The counts dataset.
    values
        The value datasets, in file order.
    lengths
        The checked per-row counts (int64).
    """

    group: str
    counts: Flat
    values: list[Flat] = field(default_factory=list)
    lengths: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def describe(self) -> str:
        """``n_png → png_calE, png_nhit``."""
        return f"{self.counts.name} → {', '.join(v.name for v in self.values)}"


#: reads a counts dataset
Reader = Callable[[Flat], np.ndarray]


def counted_name(name: str) -> str | None:
    """What the dataset called ``name`` counts: ``X`` of ``n_X`` (see the module), ``""`` for a bare
    ``counts`` at the top, or ``None`` when the name is not a counts name.

    A name inside an object's group counts that object (``png.counts``: ``png``) or what its
    own name says (``event.n_png``: ``png``).
    """
    head, dot, leaf = name.rpartition(".")
    if dot:  # inside an object's group: png.counts, png.n_png, event.n_png
        return head if leaf in _BARE else counted_name(leaf)
    if name in _BARE:
        return ""
    for pattern in _PATTERNS:
        match = pattern.match(name)
        if match:
            return match.group("x")
    return None


def _prefixed(name: str, x: str) -> bool:
    return name.startswith(x + "_") or name.startswith(x + ".")


def pair_counts(flats: list[Flat], read: Reader, *, keep_scalar: frozenset[str] = frozenset(),
                file: str) -> list[Counted]:
    """The counts datasets among ``flats`` that count values, each with its values (checked).

    Parameters
    ----------
    flats
        The 1-D numeric datasets of the opened group(s), in file order.
    read
        ``Flat`` -> its values (for counts datasets only).
    keep_scalar
        Column names that a schema declares scalars: never taken as values.

    Raises
    ------
    FormatError
        The values of one counts dataset differ in length, or its counts do not pass
        :func:`checked_lengths`.
    """
    candidates = [(f, counted_name(f.name)) for f in flats if f.integer]
    named = [(f, x) for f, x in candidates if x is not None]
    counters = {f.name for f, _ in named}
    out: list[Counted] = []
    claimed: set[str] = set()
    for f, x in sorted(named, key=lambda fx: fx[1] == ""):  # bare counts last: they take what is left
        if x:
            members = [v for v in flats if v.name not in counters and v.name not in claimed
                       and v.name not in keep_scalar and _prefixed(v.name, x)]
        else:
            members = [v for v in flats if v.name not in counters and v.name not in claimed
                       and v.name not in keep_scalar and v.rows != f.rows]
        longer = [v for v in members if v.rows != f.rows]
        if not members:
            continue
        counts = np.asarray(read(f))
        if not longer:  # every member has the event length: values only if the counts sum to it
            if (counts < 0).any() or counts.sum(dtype=np.int64) != f.rows:
                continue
            longer = members
        first = longer[0]
        odd = next((v for v in longer if v.rows != first.rows), None)
        if odd is not None:
            raise FormatError(f"{odd.key!r} has {odd.rows} values but {first.key!r} has {first.rows}; "
                              f"both are counted by {f.key!r}, so they must hold as many values",
                              file=file, variable=odd.key)
        lengths = checked_lengths(counts, first.rows, counts_key=f.key, values_key=first.key, file=file)
        group = x or _bare_group(f, longer)
        out.append(Counted(group, f, longer, lengths))
        claimed.update(v.name for v in longer)
    return out


def _bare_group(counts: Flat, values: list[Flat]) -> str:
    from lstm_data.io.columns.groups import common_prefix

    return common_prefix([v.name for v in values]) or counts.name


def checked_lengths(counts: np.ndarray, total: int, *, counts_key: str, values_key: str,
                    file: str) -> np.ndarray:
    """``counts`` as int64 row lengths, after checking they cut ``total`` values exactly.

    Raises
    ------
    FormatError
        A count is negative or larger than ``total``, the running total passes ``total``, or
        the counts sum to less; names file, counts dataset, values dataset and the row.
    """
    where = f"counts {counts_key!r} of {values_key!r}"
    if counts.dtype.kind == "u" and counts.dtype.itemsize == 8:
        big = np.flatnonzero(counts > np.uint64(total))
        if len(big):
            row = int(big[0])
            raise FormatError(f"{where}: row {row} declares {int(counts[row])} values, more than the "
                              f"{total} the values dataset holds", file=file, variable=counts_key, row=row)
    lengths = counts.astype(np.int64, copy=False)
    negative = np.flatnonzero(lengths < 0)
    if len(negative):
        row = int(negative[0])
        raise FormatError(f"{where}: row {row} has a negative count ({int(lengths[row])})", file=file,
                          variable=counts_key, row=row)
    big = np.flatnonzero(lengths > total)
    if len(big):
        row = int(big[0])
        raise FormatError(f"{where}: row {row} declares {int(lengths[row])} values, more than the "
                          f"{total} the values dataset holds", file=file, variable=counts_key, row=row)
    ends = np.cumsum(lengths)  # no wrap-around before it passes total: every term is <= total
    past = np.flatnonzero(ends > total)
    if len(past):
        row = int(past[0])
        raise FormatError(f"{where}: the counts reach {int(ends[row])} values at row {row}, but "
                          f"{values_key!r} holds {total}", file=file, variable=counts_key, row=row)
    summed = int(ends[-1]) if len(ends) else 0
    if summed != total:
        raise FormatError(f"{where}: the counts sum to {summed} values, but {values_key!r} holds {total} "
                          f"({total - summed} values belong to no row)", file=file, variable=counts_key,
                          row=len(lengths) - 1 if len(lengths) else None)
    return lengths
