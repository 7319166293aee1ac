"""The typed job of one ragged output, as both kernel backends take it.

A :class:`RaggedJob` is made checked, by :func:`~lstm_data.kernels._ragged.ragged_job`
(typed arguments: what the batch builder calls) or from a mapping of
``BatchGather``'s public arguments by :func:`~lstm_data.kernels._ragged.prepare_ragged`;
the compiled core describes its C ``Form`` straight from it.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from lstm_data.kernels._layouts import CHANNELS_FIRST, PACKED, PADDED

__all__ = ["RaggedJob", "RaggedSource"]


class RaggedSource(NamedTuple):
    """One more source of a ragged output: rows of other counts, padded by their own counts."""

    #: its ``(values, offsets)`` parts, numbered one after another
    parts: tuple[tuple[np.ndarray, np.ndarray], ...]
    #: its columns (``None``: all, in order)
    columns: np.ndarray | None = None
    #: the output column of each of its columns (``None``: the next ones in order)
    at: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class RaggedJob:
    """One padded output, with its arguments checked (made by ``ragged_job`` or ``prepare_ragged``)."""

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
    multiple_of: int | None = None  # round a per-batch width up to a multiple of this (capped at max_len)
    #: every part as (values, offsets): one dtype, strides and offsets dtype; part 0 is (values, offsets)
    parts: tuple[tuple[np.ndarray, np.ndarray], ...] = ()
    #: int64 (n_parts + 1,): the first row of each part, then the number of rows
    part_rows: np.ndarray | None = None
    #: per output column, float64 (or ``None``: no transform): real elements become
    #: ``clip((x - center) * scale, clip_min, clip_max)`` in the output dtype
    center: np.ndarray | None = None
    scale: np.ndarray | None = None
    clip_min: np.ndarray | None = None
    clip_max: np.ndarray | None = None
    #: float64 per output column: the fill of padded slots (``None``: ``pad_value`` everywhere)
    pad_values: np.ndarray | None = None
    pad_mode: str = "constant"  # or "wrap": slot k of a row of n > 0 elements holds element k % n
    #: the code of the output's layout in ``KERNEL_LAYOUTS``: padded (B, P, V), channels-first
    #: (B, V, P) or packed (T, V)
    layout: int = PADDED
    #: a job of several sources (``more``): each source as a job of its own, padded by its own
    #: counts into the output columns ``at`` of an output of ``out_cols`` columns; empty: one source
    sources: tuple["RaggedJob", ...] = ()
    #: (a source) the output column of each of its columns; ``None``: columns 0.. of its own output
    at: np.ndarray | None = None
    #: (a source, or a job of several) the output's columns
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
        """This job padded to exactly ``width`` slots in every batch (each of its sources too)."""
        sources = tuple(replace(s, max_len=width, fixed=True, multiple_of=None) for s in self.sources)
        return replace(self, max_len=width, fixed=True, multiple_of=None, sources=sources)
