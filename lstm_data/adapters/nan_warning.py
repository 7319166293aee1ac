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
from typing import Any, Mapping

import numpy as np

from lstm_data.batching.spec.fields import Ragged

__all__ = ["nan_padded_inputs", "nan_valued_inputs", "warn_nan_padding", "warn_nan_values", "NAN_FIX"]

#: the fix, said the same way by every adapter
NAN_FIX = ("give the spec nan_to=0.0 (spec.replace(nan_to=0.0)), or give the field a finite pad_value "
           "(Ragged(..., pad_value=0.0), the default of new specs)")


def _spec(batches: Any) -> Any:
    return getattr(batches, "spec", None)


def _nan_to(batches: Any) -> float | None:
    spec = _spec(batches)
    value = getattr(batches, "nan_to", None)
    return value if value is not None else getattr(spec, "nan_to", None)


def nan_padded_inputs(batches: Any) -> list[str]:
    """Inputs of ``batches``' spec padded with NaN that no ``nan_to`` replaces.

    Parameters
    ----------
    batches
        A ``Batches``, a shard of one, or a precomputed store (anything with a ``spec``).

    Returns
    -------
    list of str
        The output names, in the spec's order.
    """
    spec = _spec(batches)
    if spec is None or _nan_to(batches) is not None:
        return []
    out = []
    for name, fld in spec.inputs.items():
        if not isinstance(fld, Ragged) or not any(math.isnan(p) for p in _pad_values(fld)):
            continue
        # a packed output holds only real elements, unless empty rows get a padded step
        if getattr(fld, "layout", "padded") == "packed" and getattr(fld, "empty", "keep") != "one_step":
            continue
        out.append(name)
    return out


def _pad_values(fld: Ragged) -> list[float]:
    """Each variable's fill of the padded slots: its ``Standardize.pad_value``, else the field's."""
    std = getattr(fld, "standardize", None) or {}
    pads = []
    for v in fld.vars:
        own = getattr(std.get(v), "pad_value", None)
        pads.append(float(fld.pad_value if own is None else own))
    return pads


def nan_valued_inputs(batches: Any, inputs: Mapping[str, Any]) -> list[str]:
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
    if _nan_to(batches) is not None:
        return []
    found = []
    for name, x in inputs.items():
        if getattr(x, "is_nested", False):  # a torch nested tensor: its packed values
            x = x.values()
        if hasattr(x, "detach"):  # a torch tensor
            x = x.detach().cpu().numpy()
        arr = np.asarray(x)
        if arr.dtype.kind == "f" and bool(np.isnan(arr).any()):
            found.append(name)
    return found


def warn_nan_padding(adapter: str, batches: Any, consequence: str, fix: str = NAN_FIX,
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


def warn_nan_values(adapter: str, batches: Any, inputs: Mapping[str, Any], consequence: str,
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
