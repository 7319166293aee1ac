"""Options of :class:`~lstm_data.batching.batches.Batches` checked up front (weights, ``nan_to``), and
the freezing of cached batches."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from lstm_data.batching.spec import Batch
from lstm_data.data.dataset import Dataset

__all__ = ["resolve_weights", "check_nan_to", "freeze_batch"]


def resolve_weights(dataset: Dataset, weights: Any) -> np.ndarray | None:
    """The float32 weight of every dataset row, or ``None`` for unweighted batches.

    Parameters
    ----------
    dataset
        The rows weighted.
    weights
        ``None``, the name of a scalar column of ``dataset``, or one number per row.

    Raises
    ------
    ValueError
        An array of the wrong length, or a non-finite weight (named with its row):
        a NaN weight would silently turn the loss into NaN.
    SchemaError
        ``weights`` names no scalar column.
    """
    if weights is None:
        return None
    if isinstance(weights, str):
        arr = np.asarray(dataset.scalar(weights), dtype=np.float32)
        what = f"weights column {weights!r}"
    else:
        arr = np.asarray(weights, dtype=np.float32)
        what = "weights"
        if arr.shape != (len(dataset),):
            raise ValueError(f"weights must have one value per dataset row ({len(dataset)}), "
                             f"got shape {arr.shape}")
    bad = np.flatnonzero(~np.isfinite(arr))
    if len(bad):
        raise ValueError(f"{what}: {len(bad)} non-finite value(s), first at row {bad[0]} "
                         f"({arr[bad[0]]})")
    return arr


def check_nan_to(value: Any) -> float | None:
    """The ``nan_to`` argument as a float (or None), with an error that names it."""
    if value is None:
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"nan_to must be a number or None, got {value!r}") from None
    if math.isnan(out):
        raise ValueError("nan_to=NaN would replace NaN by NaN: give a finite number (e.g. 0.0) or None")
    return out


def freeze_batch(batch: Batch) -> Batch:
    """``batch`` with every array made read-only (for the RAM cache)."""
    for part in batch:
        for array in part.values():
            array.flags.writeable = False
    return batch
