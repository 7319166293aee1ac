"""Rows of a block of values that hold a value that is not finite, in one cache-sized pass.

Each step of rows is summed first (one vectorised read, no temporary): a finite sum
proves every value of the step finite; only a step whose sum is not (it holds a value
that is not, or its finite values overflow the sum) is tested value by value.
"""
from __future__ import annotations

import numpy as np

__all__ = ["nonfinite_value_rows"]

#: values tested per step: the step's flags stay in cache, no full-size temporary is made
_STEP_VALUES = 1 << 16


def nonfinite_value_rows(values: np.ndarray) -> np.ndarray:
    """Indices (ascending, ``intp``) of the rows of ``values`` holding NaN or an infinity.

    Parameters
    ----------
    values
        A ``(n, ...)`` array; rows of integers or booleans are always finite.

    Returns
    -------
    numpy.ndarray
        The rows along the first axis with a value that is not finite.
    """
    if values.dtype.kind != "f" or not values.size:
        return np.zeros(0, dtype=np.intp)
    table = values.reshape(len(values), -1)
    width = table.shape[1]
    step = max(1, _STEP_VALUES // width)
    flags = np.empty((min(step, len(table)), width), dtype=bool)
    found = []
    for start in range(0, len(table), step):
        chunk = table[start:start + step]
        with np.errstate(over="ignore", invalid="ignore"):
            total = np.add.reduce(chunk, axis=None)
        if np.isfinite(total):
            continue  # a NaN or an infinity makes the sum NaN or infinite: every value is finite
        ok = flags[:len(chunk)]
        np.isfinite(chunk, out=ok)
        if not ok.all():
            found.append(start + np.flatnonzero(~ok.all(axis=1)))
    return np.concatenate(found).astype(np.intp, copy=False) if found else np.zeros(0, dtype=np.intp)
