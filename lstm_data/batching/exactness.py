"""The integer rule of batches: an integer the batch dtype cannot hold exactly is never changed silently.

float32 holds every integer up to 2**24 exactly, float64 up to 2**53. Event and
run numbers or hashed ids above that change when converted; each output that
would change one warns once, naming the variable and the first value changed
(give the output ``dtype="float64"``, or leave such ids out of the inputs).
"""
from __future__ import annotations

import warnings

import numpy as np

from lstm_data.errors import PrecisionWarning
from lstm_data.io.exact_ints import first_changed

__all__ = ["warn_if_inexact", "first_inexact"]


#: (warned about) so that one output warns once per process, not once per batch
_WARNED: set[str] = set()


def first_inexact(values: np.ndarray, dtype: np.dtype) -> int | None:
    """The first integer of ``values`` that ``dtype`` does not hold exactly, or ``None``."""
    k = first_changed(values, dtype)
    return None if k is None else int(values.reshape(-1)[k])


def warn_if_inexact(values: np.ndarray, dtype: np.dtype, what: str) -> None:
    """Warn once per ``what`` when an integer of ``values`` changes as ``dtype``."""
    if what in _WARNED:
        return
    value = first_inexact(values, np.dtype(dtype))
    if value is None:
        return
    _WARNED.add(what)
    changed = int(np.array(value).astype(dtype))
    warnings.warn(f"{what}: integer {value} becomes {changed} as {np.dtype(dtype)} (only integers up to "
                  f"2**{np.finfo(dtype).nmant + 1} are exact); use dtype='float64' for that output, or "
                  "leave such identifiers out", PrecisionWarning, stacklevel=4)
