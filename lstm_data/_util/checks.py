"""Argument checks shared by every layer: counts (seeds, epochs, workers) and indices."""
from __future__ import annotations

import numpy as np

__all__ = ["check_count", "check_index"]


def check_count(value: object, name: str) -> int:
    """``value`` as an int >= 0 (a seed or an epoch), or a ``ValueError`` naming ``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{name} must be an int >= 0, got {value!r}")
    return int(value)


def check_index(index: object, n: int) -> int:
    """Batch ``index`` (negative counts from the end) as 0..n-1, or the error naming it."""
    if isinstance(index, (bool, np.bool_)) or not isinstance(index, (int, np.integer)):
        raise TypeError(f"batch index must be an int, got {type(index).__name__}")
    if not -n <= index < n:
        raise IndexError(f"batch index {index} out of range for {n} batches")
    return int(index) % n
