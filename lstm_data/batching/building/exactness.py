"""The integer rule of batches: no value is changed silently.

Float outputs: float32 holds every integer up to 2**24 exactly, float64 up to
2**53. Event and run numbers or hashed ids above that change when converted; each
output that would change one warns once, naming the variable and the first value
changed (give the output ``dtype="float64"``, or leave such ids out of the inputs).

Integer outputs (``Scalars(dtype="int64")``): a value is taken as it is or not at
all. Integers outside the output dtype's range, and float values that are not
whole numbers (1.5, NaN, infinities) or outside that range, are a
:class:`~lstm_data.errors.SchemaError` naming the output, the variable and the
first such row (:func:`as_integers`).
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from lstm_data.errors import PrecisionWarning, SchemaError, warn_user
from lstm_data.io.columns.exact_ints import first_changed

__all__ = ["warn_if_inexact", "first_inexact", "as_integers"]


#: (warned about) so that one output warns once per process, not once per batch
_WARNED: set[str] = set()


def first_inexact(values: np.ndarray, dtype: np.dtype) -> int | None:
    """The first integer of ``values`` that ``dtype`` does not hold exactly, or ``None``.

    Integers stored as float64 count too (a reader's float64 block holding an int64
    column): a whole number beyond 2**24 that float32 changes is an identifier, not a
    measurement that rounds. The check is a min and a max while the values are small.
    """
    k = first_changed(values, dtype)
    if k is not None:
        return int(values.reshape(-1)[k])
    if values.dtype != np.float64 or np.dtype(dtype) != np.float32 or not values.size:
        return None
    flat = values.reshape(-1)
    limit = float(1 << (np.finfo(np.float32).nmant + 1))
    with np.errstate(invalid="ignore"):
        if not (np.nanmax(flat) > limit or np.nanmin(flat) < -limit):
            return None
        # beyond float32's range (DBL_MAX as "no limit") a value overflows, it is not an identifier
        big = np.flatnonzero((np.abs(flat) > limit) & (np.abs(flat) <= np.finfo(np.float32).max))
        whole = big[np.floor(flat[big]) == flat[big]]
        changed = whole[flat[whole].astype(np.float32).astype(np.float64) != flat[whole]]
    return int(flat[changed[0]]) if len(changed) else None


def warn_if_inexact(values: np.ndarray, dtype: np.dtype, what: str) -> None:
    """Warn once per ``what`` when an integer of ``values`` changes as ``dtype``."""
    if what in _WARNED:
        return
    value = first_inexact(values, np.dtype(dtype))
    if value is None:
        return
    _WARNED.add(what)
    changed = int(np.array(value).astype(dtype))
    warn_user(f"{what}: integer {value} becomes {changed} as {np.dtype(dtype)} (only integers up to "
              f"2**{np.finfo(dtype).nmant + 1} are exact); use dtype='float64' for that output, or "
              "leave such identifiers out", PrecisionWarning)


def as_integers(values: np.ndarray, dtype: np.dtype, output: str, variable: str,
                row_of: Callable[[int], int] = lambda k: k) -> np.ndarray:
    """``values`` (one scalar column) in the integer ``dtype``, every value unchanged.

    Parameters
    ----------
    values
        The column (any integer, boolean or float dtype).
    dtype
        The integer output dtype.
    output, variable
        The output and the column, named in the error.
    row_of
        The row an error names for an index of ``values`` (default: the index).

    Returns
    -------
    numpy.ndarray
        ``values`` itself when already of ``dtype``, else a converted copy.

    Raises
    ------
    SchemaError
        A value that is not a whole number (1.5, NaN, an infinity), or outside the
        range of ``dtype``, naming the first such row and its value.
    """
    dt = np.dtype(dtype)
    if values.dtype == dt or values.dtype.kind == "b":
        return values.astype(dt, copy=False)
    if values.dtype.kind not in "iuf":
        raise SchemaError(f"output {output!r} ({dt.name}): variable {variable!r} is {values.dtype}, "
                          "not numbers", variable=variable)
    info = np.iinfo(dt)
    if values.dtype.kind in "iu":
        if not values.size or (int(values.min()) >= info.min and int(values.max()) <= info.max):
            return values.astype(dt)
        bad = np.flatnonzero((values < info.min) | (values > info.max))
        k = int(bad[0])
        raise SchemaError(f"output {output!r}: variable {variable!r} holds {int(values[k])}, outside the "
                          f"range of {dt.name} ({info.min} to {info.max}); give the output a wider dtype "
                          "(int64)", variable=variable, row=row_of(k))
    # floats: whole numbers within [min, max]; the bounds are powers of two, exact as floats
    lo, hi = float(info.min), float(int(info.max) + 1)
    with np.errstate(invalid="ignore"):
        ok = (values >= lo) & (values < hi) & (np.floor(values) == values)
    if ok.all():
        return values.astype(dt)
    k = int(np.flatnonzero(~ok)[0])
    value = float(values[k])
    if math.isnan(value):
        why = "is NaN"
    elif np.isfinite(value) and np.floor(value) != value:
        why = "is not a whole number"
    else:
        why = f"is outside the range of {dt.name}"
    raise SchemaError(f"output {output!r}: variable {variable!r} holds {value!r}, which {why}; an "
                      f"{dt.name} output takes each value unchanged (round the column in a derived "
                      f"variable, e.g. rint(x), or give the output a float dtype)", variable=variable,
                      row=row_of(k))
