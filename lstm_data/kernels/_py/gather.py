"""Pure-Python twin of ``lstm_data.kernels._ext.gather``: all of a batch's kernel work in one call.

A batch of a :class:`~lstm_data.batching.spec.batch_spec.BatchSpec` is several padded ragged fields
plus several scalar tables, all for the same rows. :class:`BatchGather` checks
the arguments of every field once, at construction; each call then does only
the work of one batch. The compiled class does that work in a single section
without the GIL, so threads building batches hand the GIL over once per batch
instead of once per field (every hand-off is a chance for a thread to sleep).
"""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from lstm_data.kernels._args import (
    ARENA_ALIGN,
    RaggedJob,
    arena_array,
    locate_rows,
    prepare_table,
    raise_bad_row,
)
from lstm_data.kernels._layouts import PADDED
from lstm_data.kernels._py.pad import pad_ragged
from lstm_data.kernels._ragged import prepare_ragged

if TYPE_CHECKING:
    from numpy.typing import ArrayLike
    from typing_extensions import Buffer

__all__ = ["BatchGather", "batch_width", "formed", "sourced"]

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
    ragged : sequence of mapping or RaggedJob
        One per padded output: a mapping of :func:`pad_ragged`'s arguments by name plus
        ``fixed`` and ``multiple_of`` (see :func:`~lstm_data.kernels._ragged.ragged_job`),
        checked here, once; or a job ``ragged_job`` made (checked when it was made).
        Instead of ``values`` and ``offsets``, ``parts`` gives several
        ``(values, offsets)`` pairs whose rows are numbered one after another (the
        files of a dataset): a batch gathers across them in one pass, and nothing
        is concatenated. Values may be float32, float64, any native integer dtype or
        boolean; each converts to the output dtype as C converts it (exactly when
        it fits; whether it fits is for the caller to check).
        The output form (:func:`prepare_ragged`): ``center``, ``scale``, ``clip_min``,
        ``clip_max`` (one value per output column) turn each real element ``x`` into
        ``clip((x - center) * scale, clip_min, clip_max)`` in the output dtype;
        ``pad_values`` gives each column its fill; ``pad_mode="wrap"`` repeats a
        row's elements instead; ``layout`` is ``"padded"`` ``(B, P, V)``,
        ``"channels_first"`` ``(B, V, P)`` or ``"packed"`` ``(T, V)`` (a job's
        ``batch`` output then has that shape). ``more``: further sources (``parts`` or
        ``values`` and ``offsets``, ``columns``, ``at``) whose rows have other counts,
        each padded by its own counts into the output columns ``at`` (see :func:`sourced`).
    tables : sequence of array
        2-D float32/float64 tables ``(N, S)``; each output is ``table[rows]``.

    Notes
    -----
    Calling is thread-safe: a call keeps no state between calls.
    """

    #: the ragged jobs, checked
    ragged: list[RaggedJob]
    #: the tables, checked and C-contiguous
    tables: list[np.ndarray]

    def __init__(self, ragged: Sequence[Mapping[str, Any] | RaggedJob] = (),
                 tables: Sequence[ArrayLike] = ()) -> None:
        self.ragged = [prepare_ragged(job) for job in ragged]
        self.tables = [prepare_table(t) for t in tables]

    def __call__(self, rows: ArrayLike, arena: Buffer | np.ndarray | None = None,
                 ) -> tuple[list[tuple[np.ndarray, np.ndarray]], list[np.ndarray]]:
        """Build every output for ``rows`` (1-D ints, any order, repeats allowed).

        Parameters
        ----------
        rows
            Dataset rows, in batch order.
        arena
            Optional writable, C-contiguous buffer to build the outputs in (e.g. a
            shared-memory segment another process reads). In the order ``lengths``
            then ``batch`` of each ragged job, then each table, an output of n > 0
            bytes is placed at the arena's cursor when it fits, and the cursor then
            moves to the next multiple of 64 bytes from the arena's start (which
            must itself lie at a multiple of 64 in memory); an output that does not
            fit is allocated as usual. Placed outputs are views of the arena's
            memory that keep it alive.

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
        TypeError
            ``arena`` is not a writable, C-contiguous buffer.
        ValueError
            ``arena`` does not start at a 64-byte aligned address.
        """
        rows = np.asarray(rows)
        if rows.size and (rows.ndim != 1 or rows.dtype.kind not in "iu"):
            raise ValueError(f"rows must be a 1-D array of integers, got {rows.dtype} shape {rows.shape}")
        if rows.dtype.kind == "u" and rows.size and rows.max() > np.iinfo(np.intp).max:
            raise ValueError(f"row {rows.max()} out of range")
        space = None if arena is None else _Arena(arena_array(arena))
        rows = rows.reshape(-1).astype(np.intp)
        ragged = []
        for job in self.ragged:  # job by job; in each, the first bad batch position is named
            if job.sources:
                batch, lengths = sourced(job, rows)
            else:
                part, local, lens = _part_bounds(job, rows)
                longest = int(lens.max()) if len(rows) else 0
                if job.plain:
                    batch, lengths = _pad_parts(job, part, local, batch_width(job, longest))
                else:
                    batch, lengths = formed(job, part, local, longest)
            if space is not None:
                lengths = space.place(lengths)
                batch = space.place(batch)
            ragged.append((batch, lengths))
        tables = [table[_table_rows(rows, len(table))] for table in self.tables]
        if space is not None:
            tables = [space.place(t) for t in tables]
        return ragged, tables


def _part_bounds(job: RaggedJob, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Part, row inside it and length of each batch row; the first bad position is named."""
    assert job.part_rows is not None  # prepare_ragged always sets it
    n_rows = int(job.part_rows[-1])
    inside = (rows >= 0) & (rows < n_rows)
    part, local = locate_rows(job.part_rows, np.where(inside, rows, 0))
    starts = np.zeros(len(rows), dtype=np.int64)
    stops = np.zeros(len(rows), dtype=np.int64)
    bad = ~inside
    for p, (values, offsets) in enumerate(job.parts):
        mine = inside & (part == p)
        starts[mine] = offsets[local[mine]]
        stops[mine] = offsets[local[mine] + 1]
        bad |= mine & ((stops < starts) | (starts < 0) | (stops > len(values)))
    first = np.flatnonzero(bad)
    if len(first):
        b = int(first[0])
        raise_bad_row(job, int(rows[b]), not inside[b])
    return part, local, stops - starts


def _pad_parts(job: RaggedJob, part: np.ndarray, local: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Pad each part's batch rows to ``width`` and put them in batch order."""
    if len(job.parts) == 1:
        return pad_ragged(job.values, job.offsets, local, max_len=width, pad_value=job.pad_value,
                          columns=job.columns, sort_by=job.sort_by, descending=job.descending,
                          padding=job.padding, truncating=job.truncating, dtype=job.dtype)
    n_cols = 1 if job.flat else (len(job.columns) if job.columns is not None else job.values.shape[1])
    shape = (len(part), width) if job.flat else (len(part), width, n_cols)
    batch = np.empty(shape, dtype=job.dtype)
    lengths = np.zeros(len(part), dtype=np.int64)
    for p, (values, offsets) in enumerate(job.parts):
        mine = np.flatnonzero(part == p)
        if len(mine):
            batch[mine], lengths[mine] = pad_ragged(
                values, offsets, local[mine], max_len=width, pad_value=job.pad_value, columns=job.columns,
                sort_by=job.sort_by, descending=job.descending, padding=job.padding,
                truncating=job.truncating, dtype=job.dtype)
    return batch, lengths


def sourced(job: RaggedJob, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The output of a job of several sources: each source padded by its own counts.

    Every source's rows are checked first, source by source; the width follows the
    longest row of any (:func:`batch_width`). Each source is then formed as a job of
    its own at that width (:func:`formed`: its transform, pad values and wrap) and
    its columns put at its output columns ``at``. The lengths are the first source's.
    """
    bounds = [_part_bounds(source, rows) for source in job.sources]
    longest = max((int(lens.max()) for _, _, lens in bounds if len(lens)), default=0)
    width = batch_width(job, longest)
    out = np.empty((len(rows), width, job.out_cols), dtype=job.dtype)
    lengths = np.zeros(len(rows), dtype=np.int64)
    for k, (source, (part, local, lens)) in enumerate(zip(job.sources, bounds)):
        own = replace(source, max_len=width, fixed=True, multiple_of=None, layout=PADDED)
        batch, kept = formed(own, part, local, int(lens.max()) if len(lens) else 0)
        assert source.at is not None  # a source of several has its output columns
        out[:, :, source.at] = batch.reshape(len(rows), width, len(source.at))
        if k == 0:
            lengths = kept
    if job.channels_first:
        return np.ascontiguousarray(out.transpose(0, 2, 1)), lengths
    return out, lengths


def formed(job: RaggedJob, part: np.ndarray, local: np.ndarray, longest: int) -> tuple[np.ndarray, np.ndarray]:
    """One job's output in its form: transform, per-column pad values, wrap, layout.

    The batch is padded as ``pad_ragged`` pads it, then its real elements are
    transformed (in the output dtype), the empty slots filled (``wrap``: slot ``k``
    of a row of ``n > 0`` kept elements takes the value of element ``k % n``, else
    the column's pad value) and the layout made.
    """
    packed = job.packed
    if packed:  # the real elements only: the longest kept row is the width
        width = longest if job.max_len is None else min(job.max_len, longest)
        job = replace(job, padding="post")
    else:
        width = batch_width(job, longest)
    batch, lengths = _pad_parts(job, part, local, width)
    n_batch, n_cols, dt = len(lengths), job.n_cols, job.dtype
    view = batch.reshape(n_batch, width, n_cols)
    start = (width - lengths) if job.padding == "pre" else np.zeros_like(lengths)
    k = np.arange(width)[None, :] - start[:, None]
    real = (k >= 0) & (k < lengths[:, None])
    with np.errstate(over="ignore", invalid="ignore"):
        if job.center is not None:
            assert job.scale is not None and job.clip_min is not None and job.clip_max is not None
            x = (view[real] - job.center.astype(dt)) * job.scale.astype(dt)
            low, high = job.clip_min.astype(dt), job.clip_max.astype(dt)
            x = np.where(x < low, low, x)  # as C compares: NaN and -0.0 stay as they are
            view[real] = np.where(x > high, high, x)
        if job.pad_values is not None:
            view[~real] = job.pad_values.astype(dt)
    if job.pad_mode == "wrap":  # padding is "post": element k % n of each row that has one
        src = np.where(lengths[:, None] > 0, np.arange(width)[None, :] % np.maximum(lengths, 1)[:, None],
                       np.arange(width)[None, :])
        view[...] = np.take_along_axis(view, src[:, :, None], axis=1)
    if packed:
        out = view[real]
        return (out.reshape(-1) if job.flat else out), lengths
    if job.channels_first and not job.flat:
        return np.ascontiguousarray(view.transpose(0, 2, 1)), lengths
    return batch, lengths


class _Arena:
    """The rule of ``arena`` (see :meth:`BatchGather.__call__`): a cursor over a byte array."""

    def __init__(self, space: np.ndarray) -> None:
        self.space, self.cursor = space, 0

    def place(self, a: np.ndarray) -> np.ndarray:
        """``a`` copied to the cursor when it fits (then the cursor moves on), else ``a``."""
        if a.nbytes == 0 or a.nbytes > len(self.space) - self.cursor:
            return a
        out = self.space[self.cursor:self.cursor + a.nbytes].view(a.dtype).reshape(a.shape)
        out[...] = a
        self.cursor = min(len(self.space), self.cursor + a.nbytes + (-(self.cursor + a.nbytes)) % ARENA_ALIGN)
        return out


def _table_rows(rows: np.ndarray, n_rows: int) -> np.ndarray:
    """``rows``, or the error that names the first one out of range of a table."""
    outside = np.flatnonzero((rows < 0) | (rows >= n_rows))
    if len(outside):
        raise ValueError(f"row {rows[outside[0]]} out of range for {n_rows} rows")
    return rows
