"""Pure-Python twin of ``lstm_data._ext.gather``: all of a batch's kernel work in one call.

A batch of a :class:`~lstm_data.spec.BatchSpec` is several padded ragged fields
plus several scalar tables, all for the same rows. :class:`BatchGather` checks
the arguments of every field once, at construction; each call then does only
the work of one batch. The compiled class does that work in a single section
without the GIL, so threads building batches hand the GIL over once per batch
instead of once per field (every hand-off is a chance for a thread to sleep).
"""
from __future__ import annotations

from typing import Any, Mapping, NamedTuple, Sequence

import numpy as np

from .pad import (_as_columns, _as_max_len, _as_rows, _as_sort_column, check_dtype,
                  check_ragged, pad_ragged)

__all__ = ["BatchGather", "RaggedJob", "prepare_ragged", "prepare_table"]

_RAGGED_KEYS = ("values", "offsets", "max_len", "fixed", "pad_value", "columns", "sort_by",
                "descending", "padding", "truncating", "dtype")


class RaggedJob(NamedTuple):
    """One padded output, with its arguments checked (see :func:`prepare_ragged`)."""

    values: np.ndarray  # (total, V), float32/float64, rows C-contiguous or strided
    offsets: np.ndarray  # (N + 1,), int32/int64, C-contiguous
    max_len: int | None
    fixed: bool
    pad_value: float
    columns: np.ndarray | None  # intp, or None for all columns in order
    sort_by: int | None
    descending: bool
    padding: str
    truncating: str
    dtype: np.dtype
    flat: bool


def prepare_ragged(job: Mapping[str, Any]) -> RaggedJob:
    """Check one ragged field's arguments, with :func:`pad_ragged`'s rules and errors.

    ``job`` holds :func:`~lstm_data._fallback.pad.pad_ragged`'s arguments by name
    (``values`` and ``offsets`` required) plus ``fixed``: when ``True`` (default) an
    int ``max_len`` is the exact width, as in ``pad_ragged``; when ``False`` it caps
    the batch's longest row.
    """
    unknown = sorted(set(job) - set(_RAGGED_KEYS))
    if unknown:
        raise TypeError(f"unknown ragged job keys {unknown}; expected some of {list(_RAGGED_KEYS)}")
    if "values" not in job or "offsets" not in job:
        raise TypeError("a ragged job needs 'values' and 'offsets'")
    values, offsets = check_ragged(job["values"], job["offsets"])
    offsets = np.ascontiguousarray(offsets)
    flat = values.ndim == 1
    n_vars = 1 if flat else values.shape[1]
    columns = job.get("columns")
    cols = None if columns is None else _as_columns(columns, n_vars, flat)
    max_len = job.get("max_len")
    padding, truncating = job.get("padding", "post"), job.get("truncating", "post")
    if padding not in ("post", "pre"):
        raise ValueError(f"padding must be 'post' or 'pre', got {padding!r}")
    if truncating not in ("post", "pre"):
        raise ValueError(f"truncating must be 'post' or 'pre', got {truncating!r}")
    return RaggedJob(values, offsets, None if max_len is None else _as_max_len(max_len),
                     bool(job.get("fixed", True)), float(job.get("pad_value", np.nan)),
                     cols, _as_sort_column(job.get("sort_by"), n_vars),
                     bool(job.get("descending", True)), padding, truncating,
                     check_dtype(job.get("dtype", np.float32)), flat)


def prepare_table(table: Any) -> np.ndarray:
    """Check one scalar table: 2-D float32/float64, made C-contiguous; output ``table[rows]``."""
    arr = np.asarray(table)
    if arr.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError(f"tables must be float32 or float64, got {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(f"tables must be 2-D (rows, columns), got shape {arr.shape}")
    return np.ascontiguousarray(arr)


def batch_width(job: RaggedJob, longest: int) -> int:
    """The padded width of one batch whose longest selected row has ``longest`` prongs."""
    if job.max_len is None:
        return longest
    return job.max_len if job.fixed else min(job.max_len, longest)


class BatchGather:
    """Padded ragged fields and scalar-table rows for the same batch rows, in one call.

    Parameters
    ----------
    ragged : sequence of mapping
        One mapping per padded output: :func:`pad_ragged`'s arguments by name plus
        ``fixed`` (see :func:`prepare_ragged`). Checked here, once.
    tables : sequence of array
        2-D float32/float64 tables ``(N, S)``; each output is ``table[rows]``.

    Notes
    -----
    Calling is thread-safe: a call keeps no state between calls.
    """

    def __init__(self, ragged: Sequence[Mapping[str, Any]] = (), tables: Sequence[Any] = ()) -> None:
        self.ragged = [prepare_ragged(job) for job in ragged]
        self.tables = [prepare_table(t) for t in tables]

    def __call__(self, rows: Any) -> tuple[list[tuple[np.ndarray, np.ndarray]], list[np.ndarray]]:
        """Build every output for ``rows`` (1-D ints, any order, repeats allowed).

        Returns
        -------
        ragged : list of (batch, lengths)
            As :func:`pad_ragged` returns them, one pair per ragged job.
        tables : list of ndarray
            ``table[rows]``, ``(B, S)``, one per table.

        Raises
        ------
        ValueError
            Rows that are not 1-D integers, a row out of range of any job or table,
            or bad offsets at a selected row.
        """
        rows = np.asarray(rows)
        if rows.size and (rows.ndim != 1 or rows.dtype.kind not in "iu"):
            raise ValueError(f"rows must be a 1-D array of integers, got {rows.dtype} shape {rows.shape}")
        rows = rows.reshape(-1).astype(np.intp)
        ragged = []
        for job in self.ragged:
            n_rows = len(job.offsets) - 1
            picked = _as_rows(rows, n_rows)
            spans = job.offsets[picked + 1] - job.offsets[picked]
            longest = max(int(spans.max()), 0) if len(picked) else 0
            # pad_ragged checks the picked rows' offsets, as the compiled kernel does
            ragged.append(pad_ragged(
                job.values, job.offsets, picked, max_len=batch_width(job, longest),
                pad_value=job.pad_value, columns=job.columns, sort_by=job.sort_by,
                descending=job.descending, padding=job.padding, truncating=job.truncating,
                dtype=job.dtype))
        tables = [table[_as_rows(rows, len(table))] for table in self.tables]
        return ragged, tables
