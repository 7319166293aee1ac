"""The one warning every adapter gives when an input can carry NaN into the model.

NaN in an input makes the loss NaN: a sum or a matrix product over padding is
NaN even where a mask gives it weight 0 (``nan * 0 == nan``). An input can hold
NaN in two ways, each named with its fix:

* NaN padding: a ``Ragged`` field with ``pad_value=nan`` (lstm_ee's choice, kept
  by spec files without a format version and by ``BatchSpec.from_lstm_ee``) and
  no ``nan_to`` in the spec. Known from the spec, before any batch.
* NaN values in the data (a missing scalar reads as NaN) and no ``nan_to``:
  looked for in the first batch an adapter hands out.

Each adapter warns once per object.
"""
from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING, Mapping, Union

import numpy as np

from lstm_data.batching.epochs.source import BatchSource
from lstm_data.batching.spec.fields import Ragged

if TYPE_CHECKING:
    import torch

#: one input of a batch as an adapter hands it out: an array, or a torch tensor (nested or not)
Input = Union[np.ndarray, "torch.Tensor"]

__all__ = ["nan_padded_inputs", "nan_valued_inputs", "warn_nan_padding", "warn_nan_values", "NAN_FIX"]

#: the fix, said the same way by every adapter
NAN_FIX = ("give the spec nan_to=0.0 (spec.replace(nan_to=0.0)), or give the field a finite pad_value "
           "(Ragged(..., pad_value=0.0), the default of new specs)")


def nan_padded_inputs(batches: BatchSource) -> list[str]:
    """Inputs of ``batches``' spec padded with NaN that no ``nan_to`` replaces.

    Parameters
    ----------
    batches
        Any batch source: ``Batches``, a shard of one, stored batches.

    Returns
    -------
    list of str
        The output names, in the spec's order.
    """
    spec = batches.spec
    if spec.nan_to is not None:
        return []
    out = []
    for name, fld in spec.inputs.items():
        if not isinstance(fld, Ragged) or not any(math.isnan(p) for p in fld.form.fill(fld, None)):
            continue
        # a form without slots (packed) holds only real elements, unless empty rows get a padded step
        if not fld.form.has_slots and fld.empty != "one_step":
            continue
        out.append(name)
    return out


def nan_valued_inputs(batches: BatchSource, inputs: Mapping[str, Input]) -> list[str]:
    """Inputs of one batch holding NaN, when the spec has no ``nan_to`` (else none).

    Parameters
    ----------
    batches
        The batches ``inputs`` came from.
    inputs
        One batch's inputs: arrays or tensors.

    Returns
    -------
    list of str
        The names of the float inputs that hold NaN.
    """
    if batches.spec.nan_to is not None:
        return []
    found = []
    for name, x in inputs.items():
        arr = x if isinstance(x, np.ndarray) else _tensor_values(x)
        if arr.dtype.kind == "f" and bool(np.isnan(arr).any()):
            found.append(name)
    return found


def _tensor_values(x: torch.Tensor) -> np.ndarray:
    """A torch tensor's values as an array (a nested tensor's packed values)."""
    if x.is_nested:
        x = x.values()
    values: np.ndarray = x.detach().cpu().numpy()
    return values


def warn_nan_padding(adapter: str, batches: BatchSource, consequence: str, fix: str = NAN_FIX,
                     stacklevel: int = 2) -> bool:
    """Warn when the spec pads an input with NaN; returns whether it warned.

    Parameters
    ----------
    adapter
        The adapter's name, said first (``"TorchBatches"``).
    batches
        What the adapter serves.
    consequence
        What NaN does in that framework.
    fix
        The fix to name.
    stacklevel
        As :func:`warnings.warn`'s, counted from the caller of this function.

    Returns
    -------
    bool
        ``True`` when a warning was given.
    """
    padded = nan_padded_inputs(batches)
    if not padded:
        return False
    names = ", ".join(repr(n) for n in padded)
    warnings.warn(f"lstm_data {adapter}: input {names} holds NaN padding (pad_value=nan and no nan_to in "
                  f"the spec): {consequence}. Fix: {fix}", UserWarning, stacklevel=stacklevel + 1)
    return True


def warn_nan_values(adapter: str, batches: BatchSource, inputs: Mapping[str, Input], consequence: str,
                    stacklevel: int = 2) -> bool:
    """Warn when one batch's inputs hold NaN values and the spec has no ``nan_to``.

    Parameters
    ----------
    adapter, batches, consequence, stacklevel
        As for :func:`warn_nan_padding`.
    inputs
        The first batch's inputs.

    Returns
    -------
    bool
        ``True`` when a warning was given.
    """
    found = nan_valued_inputs(batches, inputs)
    if not found:
        return False
    names = ", ".join(repr(n) for n in found)
    warnings.warn(f"lstm_data {adapter}: input {names} holds NaN values (in the first batch): {consequence}. "
                  "Fix: use spec.replace(nan_to=0.0)", UserWarning, stacklevel=stacklevel + 1)
    return True
