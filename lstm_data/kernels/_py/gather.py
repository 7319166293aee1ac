"""Pure-Python twin of ``lstm_data.kernels._ext.gather``: all of a batch's kernel work in one call.

A batch of a :class:`~lstm_data.batching.spec.BatchSpec` is several padded ragged fields
plus several scalar tables, all for the same rows. :class:`BatchGather` checks
the arguments of every field once, at construction; each call then does only
the work of one batch. The compiled class does that work in a single section
without the GIL, so threads building batches hand the GIL over once per batch
instead of once per field (every hand-off is a chance for a thread to sleep).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from lstm_data.kernels._args import RaggedJob, prepare_ragged, prepare_table
from lstm_data.kernels._py.pad import pad_ragged, row_bounds

__all__ = ["BatchGather", "batch_width"]

def batch_width(job: RaggedJob, longest: int) -> int:
    """The padded width of one batch whose longest selected row has ``longest`` prongs."""
    if job.max_len is not None and job.fixed:
        return job.max_len
    width = longest
    if job.multiple_of is not None and width % job.multiple_of:
        width += job.multiple_of - width % job.multiple_of
    return width if job.max_len is None else min(job.max_len, width)


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
        if rows.dtype.kind == "u" and rows.size and rows.max() > np.iinfo(np.intp).max:
            raise ValueError(f"row {rows.max()} out of range")
        rows = rows.reshape(-1).astype(np.intp)
        ragged = []
        for job in self.ragged:  # job by job; in each, the first bad batch position is named
            starts, stops = row_bounds(job.offsets, rows, len(job.values))
            longest = int((stops - starts).max()) if len(rows) else 0
            ragged.append(pad_ragged(
                job.values, job.offsets, rows, max_len=batch_width(job, longest),
                pad_value=job.pad_value, columns=job.columns, sort_by=job.sort_by,
                descending=job.descending, padding=job.padding, truncating=job.truncating,
                dtype=job.dtype))
        tables = [table[_table_rows(rows, len(table))] for table in self.tables]
        return ragged, tables


def _table_rows(rows: np.ndarray, n_rows: int) -> np.ndarray:
    """``rows``, or the error that names the first one out of range of a table."""
    outside = np.flatnonzero((rows < 0) | (rows >= n_rows))
    if len(outside):
        raise ValueError(f"row {rows[outside[0]]} out of range for {n_rows} rows")
    return rows
