"""Checks of a ragged job's output form (transform, pad values, pad mode, layout), shared by
both kernel backends through :func:`lstm_data.kernels._ragged.ragged_job`."""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from lstm_data.kernels._layouts import PACKED, layout_code

__all__ = ["PAD_MODES", "as_column_params", "as_forms", "check_forms", "float_columns"]

#: how a ragged job fills the slots after a row's elements
PAD_MODES = ("constant", "wrap")


def as_column_params(job: Mapping[str, Any], n_cols: int, dt: np.dtype) -> tuple[np.ndarray, ...] | None:
    """The transform of a ragged job: ``(center, scale, clip_min, clip_max)`` as float64
    arrays of one value per output column, or ``None`` when none of them is given.

    A missing one of the four is the identity (0, 1, -inf, inf).

    Raises
    ------
    TypeError
        A parameter that is not numbers.
    ValueError
        A parameter of another length than the output columns, a NaN or infinite
        ``center`` or ``scale``, a NaN clip bound, or ``clip_min > clip_max`` (compared
        in the output dtype).
    """
    names = ("center", "scale", "clip_min", "clip_max")
    if all(job.get(n) is None for n in names):
        return None
    identity = (0.0, 1.0, -np.inf, np.inf)
    out = []
    for name, default in zip(names, identity):
        given = job.get(name)
        arr = np.full(n_cols, default) if given is None else float_columns(name, given, n_cols)
        if np.isnan(arr).any() or (name in ("center", "scale") and np.isinf(arr).any()):
            rule = "must not be NaN" if name.startswith("clip") else "must be finite numbers"
            raise ValueError(f"{name} {rule}, got {arr.tolist()}")
        out.append(arr)
    low, high = out[2].astype(dt), out[3].astype(dt)
    if (low > high).any():
        j = int(np.flatnonzero(low > high)[0])
        raise ValueError(f"clip_min ({out[2][j]}) > clip_max ({out[3][j]}) for output column {j}")
    return tuple(out)


def float_columns(name: str, given: Any, n_cols: int) -> np.ndarray:
    """``given`` as a C-contiguous float64 array of ``n_cols`` values, or the error."""
    try:
        arr = np.array(given, dtype=np.float64).reshape(-1) if not isinstance(given, (str, bytes)) else None
    except (TypeError, ValueError):
        arr = None
    if arr is None:
        raise TypeError(f"{name} must be a sequence of numbers (one per output column), got {given!r}")
    if arr.shape != (n_cols,):
        raise ValueError(f"{name} must hold one value per output column ({n_cols}), got {arr.size}")
    return np.ascontiguousarray(arr)


def as_forms(job: Mapping[str, Any], padding: str) -> tuple[str, int]:
    """``(pad_mode, layout code)`` of a ragged job (its ``layout`` a name of
    :data:`~lstm_data.kernels._layouts.KERNEL_LAYOUTS`), checked together with ``padding``."""
    pad_mode = job.get("pad_mode", "constant")
    check_pad_mode(pad_mode)
    code = layout_code(job.get("layout", "padded"))
    check_forms(pad_mode, code, padding)
    return pad_mode, code


def check_pad_mode(pad_mode: Any) -> None:
    """Raise the ``ValueError`` of a ``pad_mode`` that is not one of :data:`PAD_MODES`."""
    if pad_mode not in PAD_MODES:
        raise ValueError(f"pad_mode must be one of {PAD_MODES}, got {pad_mode!r}")


def check_forms(pad_mode: str, layout: int, padding: str) -> None:
    """Raise the ``ValueError`` of a ``pad_mode`` that does not go with ``padding`` or the layout code."""
    if pad_mode == "wrap" and padding == "pre":
        raise ValueError("pad_mode 'wrap' fills every slot after a row's elements: it takes padding='post'")
    if pad_mode == "wrap" and layout == PACKED:
        raise ValueError("layout 'packed' holds no padded slots: it takes pad_mode='constant'")
