"""The integer rule of batches: an integer the batch dtype cannot hold exactly is never changed silently.

float32 holds every integer up to 2**24 exactly, float64 up to 2**53. Event and
run numbers or hashed ids above that change when converted; each output that
would change one warns once, naming the variable and the first value changed
(give the output ``dtype="float64"``, or leave such ids out of the inputs).
"""
from __future__ import annotations

import numpy as np

from lstm_data.errors import PrecisionWarning, warn_user
from lstm_data.io.columns.exact_ints import first_changed

__all__ = ["warn_if_inexact", "first_inexact"]


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
