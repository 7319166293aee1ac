"""Pure-Python twin of :mod:`lstm_data.kernels._ext.pad`: gather ragged rows into a padded batch.

This is the readable specification of ``pad_ragged``. The compiled kernel must
give bitwise-equal output and raise the same exception types.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from lstm_data.kernels._args import (
    as_columns,
    as_max_len,
    as_out,
    as_rows,
    as_sort_column,
    check_dtype,
    check_ragged,
)

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, DTypeLike

__all__ = ["pad_ragged", "row_bounds"]


def pad_ragged(values: ArrayLike, offsets: ArrayLike, rows: ArrayLike | None = None, *,
               max_len: int | None = None, pad_value: float = np.nan, columns: ArrayLike | None = None,
               sort_by: int | None = None, descending: bool = True, padding: str = "post",
               truncating: str = "post", dtype: DTypeLike = np.float32,
               out: np.ndarray[Any, Any] | None = None) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Gather ragged rows into one fixed-size padded batch.

    Parameters
    ----------
    values : ndarray, shape ``(total,)`` or ``(total, V)``, float32 or float64
        One record per prong; all V variables of a prong side by side.
    offsets : ndarray of int32 or int64, shape ``(N + 1,)``
        Row ``i`` is ``values[offsets[i]:offsets[i + 1]]``. ``offsets[0]`` must be 0,
        ``offsets[-1]`` must equal ``len(values)``, and the rows used must be
        non-decreasing.
    rows : array of int, optional
        Which rows form the batch, in batch order; any order, repeats allowed.
        Default: all ``N`` rows.
    max_len : int, optional
        Prong slots per row ``P``. ``None``: the longest selected row. ``0`` is allowed.
    pad_value : float
        Fill for the empty slots (default NaN).
    columns : sequence of int, optional
        Which variables, in output order (2-D ``values`` only). Default: all.
    sort_by : int, optional
        Column of ``values`` whose value orders each row's prongs before
        truncation; NaN sorts last; equal keys keep their order (stable).
    descending : bool
        Sort order for ``sort_by``.
    padding : {"post", "pre"}
        ``"pre"`` puts the padding before the prongs.
    truncating : {"post", "pre"}
        ``"pre"`` drops prongs from the start of a too-long row, keeping its end.
    dtype : float32 or float64
        Output dtype.
    out : ndarray, optional
        A C-contiguous buffer of the output's exact shape and dtype to fill.

    Returns
    -------
    batch : ndarray, shape ``(B, P, V')`` (or ``(B, P)`` for 1-D ``values``)
        Row ``b`` holds the prongs of ``rows[b]`` (sorted and truncated as asked), then
        ``pad_value``; ``out`` itself when given.
    lengths : ndarray of int64, shape ``(B,)``
        The number of prongs kept per row.

    Raises
    ------
    ValueError
        Bad offsets, rows out of range, bad column indices, bad ``padding`` or
        ``truncating``, a negative ``max_len`` or an ``out`` of the wrong shape.
        A row out of range and bad offsets are named at the first batch position
        that has either (unsigned ``rows``: the largest row, checked first).
    TypeError
        Unsupported dtypes, an ``out`` of the wrong dtype, or a ``pad_value`` that
        ``float()`` does not take.
    """
    dt = check_dtype(dtype)
    values, offsets = check_ragged(values, offsets)
    flat = values.ndim == 1
    table = values.reshape(-1, 1) if flat else values
    n_vars = table.shape[1]
    n_rows = len(offsets) - 1

    rows = as_rows(rows, n_rows)
    cols = as_columns(columns, n_vars, flat)
    key = as_sort_column(sort_by, n_vars)
    if padding not in ("post", "pre"):
        raise ValueError(f"padding must be 'post' or 'pre', got {padding!r}")
    if truncating not in ("post", "pre"):
        raise ValueError(f"truncating must be 'post' or 'pre', got {truncating!r}")

    starts, stops = row_bounds(offsets, rows, len(table))
    full = stops - starts
    if max_len is None:
        width = int(full.max()) if len(full) else 0
    else:
        width = as_max_len(max_len)

    shape = (len(rows), width) if flat else (len(rows), width, len(cols))
    batch = as_out(out, shape, dt)
    pad = float(pad_value)  # on both backends, even when nothing is padded
    lengths = np.minimum(full, width)
    # float64 -> float32 overflow gives inf and a signalling NaN turns quiet, as in C
    with np.errstate(over="ignore", invalid="ignore"):
        _fill(batch, table, starts, stops, lengths, width, cols, key, descending, padding,
              truncating, dt, pad)
    return batch, lengths


def row_bounds(offsets: np.ndarray, rows: np.ndarray, total: int) -> tuple[np.ndarray, np.ndarray]:
    """Start and stop (int64) of each batch row, checked in batch order.

    Raises
    ------
    ValueError
        At the first batch position whose row is out of range, or whose offsets
        decrease or leave ``[0, total]``; the message names that row.
    """
    n_rows = len(offsets) - 1
    inside = (rows >= 0) & (rows < n_rows)
    starts = offsets[np.where(inside, rows, 0)].astype(np.int64)
    stops = offsets[np.where(inside, rows + 1, 0)].astype(np.int64)
    bad = np.flatnonzero(~inside | (stops < starts) | (starts < 0) | (stops > total))
    if len(bad):
        b = bad[0]
        r = int(rows[b])
        if not inside[b]:
            raise ValueError(f"row {r} out of range for {n_rows} rows")
        raise ValueError(f"bad offsets at row {r}: offsets[{r}]={starts[b]}, "
                         f"offsets[{r + 1}]={stops[b]} (must be non-decreasing within "
                         f"[0, {total}])")
    return starts, stops


def _fill(batch: np.ndarray, table: np.ndarray, starts: np.ndarray, stops: np.ndarray, lengths: np.ndarray,
          width: int, cols: np.ndarray, key: int | None, descending: bool, padding: str, truncating: str,
          dt: np.dtype, pad_value: float) -> None:
    """Write every batch row: its (sorted, truncated) prongs, then the padding."""
    batch[...] = dt.type(pad_value)
    view = batch.reshape(len(batch), width, len(cols))
    for b in range(len(batch)):
        prongs = table[starts[b]:stops[b]]
        if key is not None:  # compared as float64, as the compiled kernel does (integers too)
            keys = prongs[:, key].astype(np.float64)
            prongs = prongs[np.argsort(-keys if descending else keys, kind="stable")]
        kept = prongs[:width] if truncating == "post" else prongs[len(prongs) - lengths[b]:]
        slot = 0 if padding == "post" else width - lengths[b]
        view[b, slot:slot + lengths[b]] = kept[:, cols].astype(dt)


