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

from lstm_data.kernels._args import RaggedJob, as_rows, prepare_ragged, prepare_table
from lstm_data.kernels._py.pad import pad_ragged

__all__ = ["BatchGather", "batch_width"]

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
            picked = as_rows(rows, n_rows)
            spans = job.offsets[picked + 1] - job.offsets[picked]
            longest = max(int(spans.max()), 0) if len(picked) else 0
            # pad_ragged checks the picked rows' offsets, as the compiled kernel does
            ragged.append(pad_ragged(
                job.values, job.offsets, picked, max_len=batch_width(job, longest),
                pad_value=job.pad_value, columns=job.columns, sort_by=job.sort_by,
                descending=job.descending, padding=job.padding, truncating=job.truncating,
                dtype=job.dtype))
        tables = [table[as_rows(rows, len(table))] for table in self.tables]
        return ragged, tables
