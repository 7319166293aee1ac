"""Pure-Python twin of ``lstm_data.kernels._ext.interleave``: columns side by side in one block.

A ragged group's values are one ``(total, V)`` block, one record per prong with all V
variables next to each other (the data model of docs/design.md). Column stores (Arrow, Parquet, HDF5 vlen
datasets, CSV list cells) hold one flat array per variable; :func:`interleave_columns`
writes V such arrays into the block.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

from lstm_data.kernels._args import check_interleave

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["interleave_columns"]


def interleave_columns(columns: Sequence[ArrayLike], out: np.ndarray) -> np.ndarray:
    """Write column ``j`` of ``columns`` into ``out[:, j]``, for every ``j``.

    Parameters
    ----------
    columns : sequence of array
        V 1-D float32/float64 arrays of ``out.shape[0]`` values each, any strides
        (views into Arrow or HDF5 buffers are used as they are; they may be read-only),
        of either byte order (a big-endian column, such as a ROOT basket's values, is
        byte-swapped as it is read).
    out : ndarray, shape ``(n, V)``
        Writeable float32/float64 array, any strides (e.g. ``block[lo:hi, j0:j1]`` of a
        wider block). Values are converted to its dtype as numpy's ``astype`` does
        (float64 to float32 rounds to nearest; NaN payloads kept as the hardware keeps them).

    Returns
    -------
    ndarray
        ``out``.

    Raises
    ------
    TypeError
        ``out`` is not an array, ``columns`` not a sequence, or a dtype is not float32/float64.
    ValueError
        ``out`` is not 2-D or is read-only; ``len(columns) != out.shape[1]``; a column is
        not 1-D, its length is not ``out.shape[0]``, or it shares memory with ``out``.
    """
    arrays, out = check_interleave(columns, out)
    with np.errstate(over="ignore", invalid="ignore"):  # a cast to float32 warns on neither backend
        for j, col in enumerate(arrays):
            out[:, j] = col
    return out
