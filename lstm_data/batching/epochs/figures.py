"""What an epoch's order costs and draws: the figures :class:`~lstm_data.batching.epochs.batches.Batches` reports.

:class:`OrderFigures` reads the compiled :class:`~lstm_data.batching.epochs.pipeline.Pipeline`
of a batch sequence and its batch slots; it never builds a batch.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from lstm_data._util.types import PlainDict
from lstm_data._util.checks import check_count
from lstm_data.batching.order.stats import HasRows, Picked, order_stats

if TYPE_CHECKING:
    from lstm_data.batching.epochs.pipeline import Pipeline

__all__ = ["OrderFigures"]


class OrderFigures:
    """Sizes, draws and the order's figures of an epoch (for a sequence with a ``pipeline``)."""

    pipeline: Pipeline
    epoch: int

    if TYPE_CHECKING:  # provided by the sequence
        def __len__(self) -> int: ...

        def rows_of(self, index: int, epoch: int | None = None) -> np.ndarray: ...

        def _batch_slot(self, index: int, epoch: int) -> int: ...

    def _epoch_arg(self, epoch: int | None) -> int:
        return self.epoch if epoch is None else check_count(epoch, "epoch")

    def batch_sizes(self, epoch: int | None = None) -> np.ndarray:
        """Rows of every batch of an epoch, by index (they differ with ``max_elements``).

        Parameters
        ----------
        epoch
            An int >= 0; ``None``: the current :attr:`epoch`.

        Returns
        -------
        numpy.ndarray
            ``len(self)`` ints; batch ``i`` is ``rows_of(i, epoch)``.
        """
        epoch = self._epoch_arg(epoch)
        slots = np.array([self._batch_slot(i, epoch) for i in range(len(self))], dtype=np.intp)
        return self.pipeline.plan(epoch).sizes(slots, self.pipeline.order.batch_size)

    def draws(self, epoch: int | None = None) -> dict[int, int]:
        """How many rows of each class an epoch draws (``Order(sample=...)``).

        Parameters
        ----------
        epoch
            As for :meth:`batch_sizes`.

        Returns
        -------
        dict of int to int
            Class label -> draws in the epoch's batches (``{0: n}`` without
            ``classes``); without ``sample``, the rows of the epoch under label 0.
        """
        epoch = self._epoch_arg(epoch)
        positions = np.concatenate([self.pipeline.positions(self._batch_slot(i, epoch), epoch)
                                    for i in range(len(self))] or [np.zeros(0, dtype=np.intp)])
        sampling = self.pipeline.sampling
        return {0: int(len(positions))} if sampling is None else sampling.counts(positions)

    def stats(self, epoch: int | None = None, *, of: HasRows | None = None) -> PlainDict:
        """What the order of an epoch costs and how well it mixes.

        Parameters
        ----------
        epoch
            As for :meth:`batch_sizes`.
        of
            A share of these batches to measure instead (a shard: anything with ``len``
            and ``rows_of(index, epoch)``); ``None``: all of them.

        Returns
        -------
        dict
            ``padding`` (padded slots per real element, by Ragged output), ``truncated``
            (rows longer than ``max_len``, by output), ``mixing`` and ``file_mixing``
            (1: as a full shuffle); see :mod:`lstm_data.batching.order.stats`.
        """
        p = self.pipeline
        return order_stats(self if of is None else of, self._epoch_arg(epoch), p.fields, p.builder.row_lengths,
                           p.padded_width, p.n_rows, p.data.rows, p.data.file_bounds)

    def epoch_figures(self, epoch: int) -> PlainDict:
        """The figures of ``epoch`` logged at its end: :meth:`stats`.

        Parameters
        ----------
        epoch
            An epoch handed out to its end by :meth:`iter`.

        Returns
        -------
        dict
            As for :meth:`stats` (see :class:`~lstm_data.batching.order.stats.GivesFigures`).
        """
        return self.stats(epoch)

    def figures_of(self, epoch: int, indices: np.ndarray) -> PlainDict:
        """:meth:`stats` of the batches ``indices`` of ``epoch`` (a rank's share).

        Parameters
        ----------
        epoch, indices
            The epoch, and the share's batch indices in its order.

        Returns
        -------
        dict
            As for :meth:`stats`.
        """
        return self.stats(epoch, of=Picked(self, indices))
