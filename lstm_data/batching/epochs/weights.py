"""Weights of :class:`~lstm_data.batching.epochs.batches.Batches` checked up front, and
the freezing of cached batches."""
from __future__ import annotations

from typing import Any

import numpy as np

from lstm_data.batching.spec.batch_spec import Batch
from lstm_data.data.dataset import Dataset

__all__ = ["resolve_weights", "freeze_batch"]


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


def freeze_batch(batch: Batch) -> Batch:
    """``batch`` with every array made read-only (for the RAM cache)."""
    for part in batch:
        for array in part.values():
            array.flags.writeable = False
    return batch
