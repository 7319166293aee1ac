"""Drop-in replacements for lstm_ee functions, built on the compiled kernels."""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from lstm_data import kernels

__all__ = ["join_varr_arrays"]


def _flatten(column: Iterable[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """One variable's per-row arrays as ``(values (total,), offsets (rows + 1,))``."""
    arrays = list(column)
    offsets = np.zeros(len(arrays) + 1, dtype=np.int64)
    if not arrays:
        return np.zeros(0, dtype=np.float32), offsets
    np.cumsum(np.fromiter(map(len, arrays), dtype=np.int64, count=len(arrays)), out=offsets[1:])
    values = np.concatenate(arrays) if offsets[-1] else np.zeros(0, dtype=np.float32)
    if values.dtype not in (np.float32, np.float64):
        values = values.astype(np.float64)
    return values, offsets


def join_varr_arrays(raw_varr_list: Sequence[Iterable[np.ndarray]],
                     length_limit: int | None = None) -> np.ndarray | None:
    """Join per-variable ragged columns into one NaN-padded float32 batch, as lstm_ee did.

    Parameters
    ----------
    raw_varr_list
        One entry per variable; each entry is a sequence (usually an object
        ndarray) holding one 1-D array per row. Every entry has the same rows.
    length_limit
        Cap on the number of prong slots ``P``.

    Returns
    -------
    ndarray of float32, shape ``(rows, P, n_vars)``, or ``None`` for an empty list.
        ``P`` is the longest row of the *first* variable, capped by
        ``length_limit``; each variable is truncated or padded on its own, and
        empty slots are NaN.

    Notes
    -----
    The per-row work is one ``len`` and one concatenation per variable; the
    element copy is the compiled ``pad_ragged`` kernel, without the GIL.
    """
    if len(raw_varr_list) == 0:
        return None
    flat = [_flatten(column) for column in raw_varr_list]
    n_rows = len(flat[0][1]) - 1
    for j, (_, offsets) in enumerate(flat):
        if len(offsets) - 1 != n_rows:
            raise ValueError(f"variable {j} has {len(offsets) - 1} rows, variable 0 has {n_rows}")
    first_lengths = np.diff(flat[0][1])
    width = int(first_lengths.max()) if n_rows else 0
    if length_limit is not None:
        width = min(width, int(length_limit))
    out = np.empty((n_rows, width, len(flat)), dtype=np.float32)
    column = np.empty((n_rows, width), dtype=np.float32)
    for j, (values, offsets) in enumerate(flat):
        kernels.pad_ragged(values, offsets, max_len=width, out=column)
        out[:, :, j] = column
    return out
