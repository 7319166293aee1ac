"""The fill values of a spec checked in the dtype of the outputs they fill.

A ``Ragged`` field's ``pad_value``, a ``Standardize.pad_value`` and the spec's
``nan_to`` (which replaces NaN in float inputs) are written into outputs of the
field's dtype. In ``float32`` a finite value beyond about ``3.4e38`` becomes
``inf``: that is an :class:`~lstm_data.errors.OptionError` naming the key and the
field (an infinite value given as such is kept). A value that the dtype holds
only rounded (``16777217`` is ``16777216`` in ``float32``) gives a
:class:`~lstm_data.errors.PrecisionWarning` naming the key, the field and the
value the outputs hold; a value the dtype shows as written (``0.1`` in
``float32``) is taken as it is.
"""
from __future__ import annotations

import math
from typing import Any, Iterator, Mapping

import numpy as np

from lstm_data.errors import OptionError, PrecisionWarning, warn_user

__all__ = ["check_fill_values"]


def check_fill_values(inputs: Mapping[str, Any], targets: Mapping[str, Any], nan_to: float | None) -> None:
    """Check every fill value of a spec's float fields in the field's output dtype.

    Parameters
    ----------
    inputs, targets
        Output name -> ``Scalars`` or ``Ragged``.
    nan_to
        The spec's ``nan_to`` (applied to float inputs), or ``None``.

    Raises
    ------
    OptionError
        A finite fill value that overflows to infinity in the field's dtype.

    Warns
    -----
    PrecisionWarning
        A fill value the field's dtype holds only rounded.
    """
    for role, fields in (("input", inputs), ("target", targets)):
        for name, fld in fields.items():
            dtype = np.dtype(fld.dtype)
            if dtype.kind != "f":  # integer outputs take neither pads nor nan_to
                continue
            for key, value in _fills(fld, nan_to if role == "input" else None):
                _check(value, dtype, key, f"{role} {name!r}")


def _fills(fld: Any, nan_to: float | None) -> Iterator[tuple[str, float]]:
    """``(spec key, value)`` of every fill value written into ``fld``'s outputs."""
    if hasattr(fld, "pad_value"):
        yield "pad_value", fld.pad_value
    for var, std in (getattr(fld, "standardize", None) or {}).items():
        if std.pad_value is not None:
            yield f"standardize.{var}.pad_value", std.pad_value
    if nan_to is not None:
        yield "nan_to", nan_to


def _check(value: float, dtype: np.dtype[Any], key: str, where: str) -> None:
    if not math.isfinite(value):
        return
    with np.errstate(over="ignore"):
        held = np.array(value, dtype=np.float64).astype(dtype)[()]
    if not np.isfinite(held):
        raise OptionError(f"{where}: {key} = {value!r} is beyond the largest {dtype.name} "
                          f"({float(np.finfo(dtype).max):.7g}) and would be written as {float(held)} in the "
                          f"field's {dtype.name} outputs; give a value within range (or dtype float64)")
    if float(held) != value and float(str(held)) != value:
        warn_user(f"{where}: {key} = {value!r} is {held} in the field's {dtype.name} outputs (the nearest "
                  f"{dtype.name}); give a value {dtype.name} holds exactly (or dtype float64)", PrecisionWarning)
