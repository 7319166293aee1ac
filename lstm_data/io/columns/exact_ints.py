"""Integers cast to a float dtype: never changed without a word.

float32 holds every integer up to 2**24 exactly, float64 up to 2**53. Event
numbers, run numbers and hashed ids go beyond. Readers keep integer columns as
integers where their layout allows (a scalar column read without a ``dtype``);
where a column must become floats (a ``dtype`` asked for, a null that becomes NaN,
a ragged group's float values block), :class:`ExactInts` checks the cast and warns
once per column (:class:`PrecisionWarning`) naming the file, the column, the first
changed value, its row and what it reads as. The check costs a min and a max while
the values are small.
"""
from __future__ import annotations

import threading
from typing import Callable

import numpy as np

from lstm_data.errors import PrecisionWarning

from lstm_data.errors import warn_user

__all__ = ["PrecisionWarning", "ExactInts", "exact_limit", "first_changed", "check_once"]


def exact_limit(dtype: np.dtype) -> int:
    """The largest integer magnitude below which every integer is exact in float ``dtype``."""
    return 1 << (np.finfo(dtype).nmant + 1)


def first_changed(values: np.ndarray, dtype: np.dtype) -> int | None:
    """The flat index of the first integer of ``values`` that float ``dtype`` changes, or ``None``.

    Costs a min and a max while the values are small enough to be exact.
    """
    dt = np.dtype(dtype)
    if values.dtype.kind not in "iu" or dt.kind != "f" or not values.size:
        return None
    if values.dtype.itemsize * 8 <= np.finfo(dt).nmant + 1:
        return None  # every value of this integer type fits
    flat = values.reshape(-1)
    if max(abs(int(flat.min())), int(flat.max())) <= exact_limit(dt):
        return None
    with np.errstate(invalid="ignore", over="ignore"):
        back = flat.astype(dt).astype(flat.dtype)
    bad = np.flatnonzero(back != flat)
    return int(bad[0]) if len(bad) else None


class ExactInts:
    """Casts integers to floats, warning once per column when a value changes.

    Parameters
    ----------
    file
        Named in the warning.
    """

    def __init__(self, file: str | None) -> None:
        self.file = file
        self.warned: set[str] = set()

    def cast(self, values: np.ndarray, dtype: np.dtype, name: str, *,
             row_of: Callable[[int], int] = lambda k: k, where: str = "row",
             file: str | None = None) -> np.ndarray:
        """``values`` as ``dtype`` (a copy unless already so), after :meth:`check`."""
        self.check(values, dtype, name, row_of=row_of, where=where, file=file)
        return values.astype(dtype, copy=False)

    def check(self, values: np.ndarray, dtype: np.dtype, name: str, *,
              row_of: Callable[[int], int] = lambda k: k, where: str = "row",
              file: str | None = None) -> None:
        """Warn (once for ``name``) if integer ``values`` do not survive the cast to float ``dtype``.

        ``row_of(index)`` gives the row the warning names (``where`` says what a row is);
        ``file`` names the file when it is not the one given at construction.
        """
        dt = np.dtype(dtype)
        if values.dtype.kind not in "iu" or dt.kind != "f" or name in self.warned or not values.size:
            return
        if values.ndim > 1:  # rows of several values: name the row
            width = values.size // len(values)
            values, row_of = values.reshape(-1), _of_rows(row_of, width)
        first = first_changed(values, dt)
        if first is None:
            return
        self.warned.add(name)
        k = first
        value = int(values[k])
        became = values[k:k + 1].astype(dt)[0]
        fix = ("read with dtype=float64 (exact up to 2**53)" if dt == np.float32 else
               "float64 holds integers exactly only up to 2**53: leave the column out "
               "(exclude=[...]) or keep it an integer scalar (no dtype)")
        shown = f"{int(became)}" if np.isfinite(became) else repr(became)
        prefix = f"{file or self.file}: " if (file or self.file) else ""
        warn_user(f"{prefix}column {name!r} holds integers that {dt.name} does not hold exactly (first at "
                  f"{where} {row_of(k)}: {value} reads as {shown}); {fix}", PrecisionWarning)


#: (file, column, dtype) already warned about by :func:`check_once`, across threads
_WARNED: set[tuple[str | None, str, str]] = set()
_WARNED_LOCK = threading.Lock()


def _of_rows(row_of: Callable[[int], int], width: int) -> Callable[[int], int]:
    """``row_of`` for the flat values of rows ``width`` values wide."""
    return lambda k: row_of(k // width)


def check_once(values: np.ndarray, dtype: np.dtype, name: str, *, file: str | None,
               row_of: Callable[[int], int] = lambda k: k, where: str = "row") -> None:
    """:meth:`ExactInts.check` for readers that cast piece by piece on several threads.

    Warns once per process for each ``(file, name, dtype)``, whichever thread and
    piece finds the first changed value; ``row_of`` maps an index of ``values`` to
    the row the warning names.
    """
    dt = np.dtype(dtype)
    if values.dtype.kind not in "iu" or dt.kind != "f" or first_changed(values, dt) is None:
        return
    key = (file, name, dt.name)
    with _WARNED_LOCK:
        if key in _WARNED:
            return
        _WARNED.add(key)
    ExactInts(file).check(values, dt, name, row_of=row_of, where=where)
