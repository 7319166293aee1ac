"""Checks of the batch-wide options of a :class:`~lstm_data.batching.spec.BatchSpec`."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from lstm_data.errors import OptionError

__all__ = ["check_nan_to", "check_multiple"]


def check_nan_to(value: Any) -> float | None:
    """``nan_to`` as a float (or None), or an :class:`OptionError` naming it."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)):
        raise OptionError(f"nan_to must be a number or None, got {value!r}")
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise OptionError(f"nan_to must be a number or None, got {value!r}") from None
    if math.isnan(out):
        raise OptionError("nan_to=NaN would replace NaN by NaN: give a finite number (e.g. 0.0) or None")
    return out


def check_multiple(value: Any) -> int | None:
    """``pad_to_multiple_of`` as an int >= 1 (or None), or an :class:`OptionError` naming it."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 1:
        raise OptionError(f"pad_to_multiple_of must be a positive int or None, got {value!r}")
    return int(value)
