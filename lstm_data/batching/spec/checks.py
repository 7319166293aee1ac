"""Checks of the batch-wide options of a :class:`~lstm_data.batching.spec.batch_spec.BatchSpec`."""
from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from lstm_data.batching.spec.sizes import MAX_SLOTS
from lstm_data.errors import OptionError, SchemaError

__all__ = ["check_nan_to", "check_multiple", "check_one_step_pads", "check_integer_noise"]


def check_nan_to(value: Any) -> float | None:
    """``nan_to`` as a float (or None), or an :class:`OptionError` naming it."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise OptionError(f"nan_to must be a number or None, got {value!r}")
    out = float(value)
    if math.isnan(out):
        raise OptionError("nan_to=NaN would replace NaN by NaN: give a finite number (e.g. 0.0) or None")
    if math.isinf(out):
        raise OptionError(f"nan_to must be a finite number (what NaN becomes for the model), got {value!r}")
    return out


def check_multiple(value: Any) -> int | None:
    """``pad_to_multiple_of`` as an int from 1 to :data:`~lstm_data.batching.spec.sizes.MAX_SLOTS`
    (or None), or an :class:`OptionError` naming it."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or \
            not 1 <= value <= MAX_SLOTS:
        raise OptionError(f"pad_to_multiple_of must be a positive int (at most {MAX_SLOTS}) or None, "
                          f"got {value!r}")
    return int(value)


def check_one_step_pads(inputs: Mapping[str, Any], nan_to: float | None) -> None:
    """Refuse ``empty="one_step"`` on an input whose step would be NaN and that ``nan_to`` keeps NaN.

    The step an empty row gets counts as an element (its mask is true), so it must be
    a number the model can take.
    """
    if nan_to is not None:
        return
    for name, fld in inputs.items():
        if getattr(fld, "empty", "keep") != "one_step":
            continue
        pads = {v: fld.pad_value for v in fld.vars}
        pads.update({v: s.pad_value for v, s in (getattr(fld, "standardize", None) or {}).items()
                     if s.pad_value is not None})
        nan = [v for v, p in pads.items() if math.isnan(p)]
        if nan:
            raise SchemaError(f"input {name!r}: empty='one_step' gives an empty row one padded step that "
                              f"counts as an element, but the pad value of {nan} is NaN; give a finite "
                              "pad_value (or the spec's nan_to)", variable=name)


def check_integer_noise(inputs: Mapping[str, Any], augment: Mapping[str, Any] | None) -> None:
    """Refuse noise on a variable of an integer input: its values are kept exactly."""
    for name, fld in inputs.items():
        if not getattr(fld, "integer", False):
            continue
        noisy = [v for v in fld.vars if v in (augment or {})]
        if noisy:
            raise SchemaError(f"augment: {noisy[0]!r} is a variable of input {name!r}, whose dtype "
                              f"{fld.dtype} keeps values exactly; noise applies to float outputs only",
                              variable=noisy[0])
