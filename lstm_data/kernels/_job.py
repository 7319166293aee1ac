"""The typed job of one ragged output, as both kernel backends take it.

A :class:`RaggedJob` is made checked, by :func:`~lstm_data.kernels._ragged.ragged_job`
(typed arguments: what the batch builder calls) or from a mapping of
``BatchGather``'s public arguments by :func:`~lstm_data.kernels._ragged.prepare_ragged`;
the compiled core describes its C ``Form`` straight from it.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
import numpy as np

from lstm_data.kernels._layouts import CHANNELS_FIRST, PACKED, PADDED

__all__ = ["RaggedJob", "RaggedSource"]


@dataclass(frozen=True, eq=False)
class RaggedSource:
    """One more source of a ragged output: rows of other counts, padded by their own counts.

    Parameters
    ----------
    parts : tuple of ``(values, offsets)`` pairs
        Its rows, numbered one after another across the pairs.
    columns : ndarray of int, optional
        Its columns (``None``: all, in order).
    at : ndarray of int, optional
        The output column of each of its columns (``None``: the next ones in order).
    """

    parts: tuple[tuple[np.ndarray, np.ndarray], ...]
    columns: np.ndarray | None = None
    at: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class RaggedJob:
    """One padded output, with its arguments checked (made by ``ragged_job`` or ``prepare_ragged``).

    Parameters
    ----------
    values : ndarray, shape ``(total,)`` or ``(total, V)``, float32 or float64
        Part 0's records, rows C-contiguous or strided.
    offsets : ndarray of int32 or int64, shape ``(N + 1,)``
        Part 0's row boundaries, C-contiguous.
    max_len : int or None
        Prong slots per row; ``None``: the longest row of each batch.
    fixed : bool
        Whether an int ``max_len`` is the exact width (else it caps the longest row).
    pad_value : float
        Fill for the empty slots.
    columns : ndarray of intp or None
        The variables, in output order; ``None``: all, in order.
    sort_by : int or None
        Column ordering each row's prongs before truncation.
    descending : bool
        Sort order for ``sort_by``.
    padding, truncating : {"post", "pre"}
        Where padding goes, and which end of a too-long row is dropped.
    dtype : numpy.dtype
        Output dtype, float32 or float64.
    flat : bool
        Whether the values are 1-D (one output column, no last axis).
    multiple_of : int or None
        Rounds a per-batch width up to a multiple of it (capped at ``max_len``).
    parts : tuple of ``(values, offsets)`` pairs
        Every part, sharing dtype, strides and offsets dtype; part 0 is ``(values, offsets)``.
    part_rows : ndarray of int64, shape ``(n_parts + 1,)``, or None
        The first row of each part, then the number of rows.
    center, scale, clip_min, clip_max : ndarray of float64 or None
        Per output column (``None``: no transform): real elements become
        ``clip((x - center) * scale, clip_min, clip_max)`` in the output dtype.
    pad_values : ndarray of float64 or None
        The fill of padded slots per output column (``None``: ``pad_value`` everywhere).
    pad_mode : {"constant", "wrap"}
        ``"wrap"``: slot ``k`` of a row of ``n > 0`` elements holds element ``k % n``.
    layout : int
        The code of the output's layout in ``KERNEL_LAYOUTS``: padded ``(B, P, V)``,
        channels-first ``(B, V, P)`` or packed ``(T, V)``.
    sources : tuple of RaggedJob
        A job of several sources: each source as a job of its own, padded by its own
        counts into its output columns ``at`` of an output of ``out_cols`` columns;
        empty: one source.
    at : ndarray of intp or None
        (A source) the output column of each of its columns; ``None``: columns 0.. of
        its own output.
    out_cols : int
        (A source, or a job of several) the output's columns.
    """

    values: np.ndarray
    offsets: np.ndarray
    max_len: int | None
    fixed: bool
    pad_value: float
    columns: np.ndarray | None
    sort_by: int | None
    descending: bool
    padding: str
    truncating: str
    dtype: np.dtype
    flat: bool
    multiple_of: int | None = None
    parts: tuple[tuple[np.ndarray, np.ndarray], ...] = ()
    part_rows: np.ndarray | None = None
    center: np.ndarray | None = None
    scale: np.ndarray | None = None
    clip_min: np.ndarray | None = None
    clip_max: np.ndarray | None = None
    pad_values: np.ndarray | None = None
    pad_mode: str = "constant"
    layout: int = PADDED
    sources: tuple["RaggedJob", ...] = ()
    at: np.ndarray | None = None
    out_cols: int = 0

    @property
    def n_cols(self) -> int:
        """Output columns (1 for 1-D values); of a source, its own columns."""
        if self.sources:
            return self.out_cols
        if self.flat:
            return 1
        return len(self.columns) if self.columns is not None else int(self.values.shape[1])

    @property
    def plain(self) -> bool:
        """No transform, per-column pad values, wrap or other layout: padded as ``pad_ragged`` pads."""
        return (self.center is None and self.pad_values is None and self.pad_mode == "constant"
                and self.layout == PADDED and not self.sources)

    @property
    def packed(self) -> bool:
        """The output holds the kept elements of every row one after another, ``(T, V)``."""
        return self.layout == PACKED

    @property
    def channels_first(self) -> bool:
        """The output is ``(B, V, P)``."""
        return self.layout == CHANNELS_FIRST

    def at_width(self, width: int) -> RaggedJob:
        """This job padded to exactly ``width`` slots in every batch (each of its sources too).

        Parameters
        ----------
        width : int
            The prong slots of every row.

        Returns
        -------
        RaggedJob
            A copy with ``max_len=width``, ``fixed=True`` and no ``multiple_of``.
        """
        sources = tuple(replace(s, max_len=width, fixed=True, multiple_of=None) for s in self.sources)
        return replace(self, max_len=width, fixed=True, multiple_of=None, sources=sources)
