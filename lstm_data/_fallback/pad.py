"""Pure-Python twin of :mod:`lstm_data._ext.pad`: gather ragged rows into a padded batch.

This is the readable specification of ``pad_ragged``. The compiled kernel must
give bitwise-equal output and raise the same exception types.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .parse import check_dtype

__all__ = ["pad_ragged"]


def pad_ragged(values, offsets, rows=None, *, max_len=None, pad_value=np.nan, columns=None,
               sort_by=None, descending=True, padding="post", truncating="post",
               dtype=np.float32, out=None):
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
    lengths : ndarray of int64, shape ``(B,)``
        The number of prongs kept per row.

    Raises
    ------
    ValueError
        Bad offsets, rows out of range, bad column indices, bad ``padding`` or
        ``truncating``, a negative ``max_len`` or an ``out`` of the wrong shape.
    TypeError
        Unsupported dtypes, or an ``out`` of the wrong dtype.
    """
    dt = check_dtype(dtype)
    values, offsets = check_ragged(values, offsets)
    flat = values.ndim == 1
    table = values.reshape(-1, 1) if flat else values
    n_vars = table.shape[1]
    n_rows = len(offsets) - 1

    rows = _as_rows(rows, n_rows)
    cols = _as_columns(columns, n_vars, flat)
    key = _as_sort_column(sort_by, n_vars)
    if padding not in ("post", "pre"):
        raise ValueError(f"padding must be 'post' or 'pre', got {padding!r}")
    if truncating not in ("post", "pre"):
        raise ValueError(f"truncating must be 'post' or 'pre', got {truncating!r}")

    starts = offsets[rows].astype(np.int64)
    stops = offsets[rows + 1].astype(np.int64)
    bad = np.flatnonzero((stops < starts) | (starts < 0) | (stops > len(table)))
    if len(bad):
        r, b = int(rows[bad[0]]), bad[0]
        raise ValueError(f"bad offsets at row {r}: offsets[{r}]={starts[b]}, "
                         f"offsets[{r + 1}]={stops[b]} (must be non-decreasing within "
                         f"[0, {len(table)}])")
    full = stops - starts
    if max_len is None:
        width = int(full.max()) if len(full) else 0
    else:
        width = _as_max_len(max_len)

    shape = (len(rows), width) if flat else (len(rows), width, len(cols))
    batch = _as_out(out, shape, dt)
    lengths = np.minimum(full, width)
    with np.errstate(over="ignore"):  # float64 -> float32 overflow gives inf, as in C
        _fill(batch, table, starts, stops, lengths, width, cols, key, descending, padding,
              truncating, dt, pad_value)
    return batch, lengths


def _fill(batch, table, starts, stops, lengths, width, cols, key, descending, padding,
          truncating, dt, pad_value) -> None:
    """Write every batch row: its (sorted, truncated) prongs, then the padding."""
    batch[...] = dt.type(pad_value)
    view = batch.reshape(len(batch), width, len(cols))
    for b in range(len(batch)):
        prongs = table[starts[b]:stops[b]]
        if key is not None:
            keys = prongs[:, key]
            prongs = prongs[np.argsort(-keys if descending else keys, kind="stable")]
        kept = prongs[:width] if truncating == "post" else prongs[len(prongs) - lengths[b]:]
        slot = 0 if padding == "post" else width - lengths[b]
        view[b, slot:slot + lengths[b]] = kept[:, cols].astype(dt)


def check_ragged(values: Any, offsets: Any) -> tuple[np.ndarray, np.ndarray]:
    """``values`` (1-D or 2-D float32/float64) and ``offsets`` (int32/int64, starting at 0
    and ending at ``len(values)``) as arrays, or the error that names what is wrong."""
    values = np.asarray(values)
    if values.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError(f"values must be float32 or float64, got {values.dtype}")
    if values.ndim not in (1, 2):
        raise ValueError(f"values must be 1-D or 2-D, got shape {values.shape}")
    offsets = np.asarray(offsets)
    if offsets.dtype not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise TypeError(f"offsets must be int32 or int64, got {offsets.dtype}")
    if offsets.ndim != 1 or len(offsets) < 1:
        raise ValueError(f"offsets must be 1-D with at least one entry, got shape {offsets.shape}")
    if offsets[0] != 0:
        raise ValueError(f"offsets[0] must be 0, got {offsets[0]}")
    if offsets[-1] != len(values):
        raise ValueError(f"offsets[-1] ({offsets[-1]}) != len(values) ({len(values)})")
    return values, offsets


def _as_rows(rows: Any, n_rows: int) -> np.ndarray:
    if rows is None:
        return np.arange(n_rows, dtype=np.intp)
    arr = np.asarray(rows)
    if arr.size == 0:
        return np.zeros(0, dtype=np.intp)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise ValueError(f"rows must be a 1-D array of integers, got {arr.dtype} shape {arr.shape}")
    lo, hi = arr.min(), arr.max()
    if lo < 0 or hi >= n_rows:
        culprit = int(lo) if lo < 0 else int(hi)
        raise ValueError(f"row {culprit} out of range for {n_rows} rows")
    return arr.astype(np.intp)


def _as_columns(columns: Any, n_vars: int, flat: bool) -> np.ndarray:
    if columns is None:
        return np.arange(n_vars, dtype=np.intp)
    if flat:
        raise ValueError("columns cannot be given with 1-D values")
    arr = np.asarray(columns)
    if arr.size == 0:
        return np.zeros(0, dtype=np.intp)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise ValueError(f"columns must be a 1-D array of integers, got {arr.dtype} shape {arr.shape}")
    if arr.min() < 0 or arr.max() >= n_vars:
        raise ValueError(f"column index out of range for {n_vars} variables: {arr.tolist()}")
    return arr.astype(np.intp)


def _as_sort_column(sort_by: Any, n_vars: int) -> int | None:
    if sort_by is None:
        return None
    if isinstance(sort_by, (bool, np.bool_)) or not isinstance(sort_by, (int, np.integer)):
        raise ValueError(f"sort_by must be a column index, got {sort_by!r}")
    if not 0 <= sort_by < n_vars:
        raise ValueError(f"sort_by column {sort_by} out of range for {n_vars} variables")
    return int(sort_by)


def _as_max_len(max_len: Any) -> int:
    if isinstance(max_len, (bool, np.bool_)) or not isinstance(max_len, (int, np.integer)):
        raise ValueError(f"max_len must be an int or None, got {max_len!r}")
    if max_len < 0:
        raise ValueError(f"max_len must be >= 0, got {max_len}")
    return int(max_len)


def _as_out(out: Any, shape: tuple, dt: np.dtype) -> np.ndarray:
    if out is None:
        return np.empty(shape, dtype=dt)
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy array, got {type(out).__name__}")
    if out.dtype != dt:
        raise TypeError(f"out has dtype {out.dtype}, expected {dt}")
    if out.shape != shape:
        raise ValueError(f"out has shape {out.shape}, expected {shape}")
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError("out must be C-contiguous and writeable")
    return out
