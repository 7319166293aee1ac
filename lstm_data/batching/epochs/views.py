"""What :class:`~lstm_data.batching.epochs.batches.Batches` gives besides its batches: train and
validation views, k folds, a rank's shard, and the facts of an epoch's order (batch sizes,
padded widths, what the order costs and mixes, the output signature)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import numpy as np

from lstm_data._util.checks import check_count
from lstm_data.batching.spec.derived import file_bounds
from lstm_data.batching.order.stats import order_stats
from lstm_data.batching.epochs.shard import ShardedBatches
from lstm_data.batching.order.splits import split_positions
from lstm_data.batching.spec.batch_spec import OutputSignature

if TYPE_CHECKING:
    from lstm_data.batching.epochs.batches import Batches
    from lstm_data.batching.order.bucket_lengths import BucketLengths
    from lstm_data.batching.building.builder import BatchBuilder
    from lstm_data.batching.order.plan import Plan
    from lstm_data.batching.order.options import Order
    from lstm_data.batching.spec.batch_spec import BatchSpec, ResolvedField
    from lstm_data.data.dataset import Dataset
    from lstm_data.io.read_options import ReadOptions

__all__ = ["BatchViews"]


class BatchViews:
    """The views and order facts of :class:`~lstm_data.batching.epochs.batches.Batches` (a part of it)."""

    if TYPE_CHECKING:
        dataset: Dataset
        spec: BatchSpec
        order: Order
        read: ReadOptions
        fields: list[ResolvedField]
        _view: np.ndarray | None
        _weights: np.ndarray | None
        _seed_drawn: bool
        _builder: BatchBuilder
        _bucket_lengths: BucketLengths | None

        @property
        def seed(self) -> int: ...

        @property
        def shuffle(self) -> bool | str: ...

        @property
        def batch_size(self) -> int: ...

        @property
        def n_rows(self) -> int: ...

        def __len__(self) -> int: ...

        def _epoch_arg(self, epoch: int | None) -> int: ...

        def _batch_slot(self, index: int, epoch: int) -> int: ...

        def _plan(self, epoch: int | None = None) -> Plan: ...

        def _view_of(self, spec: BatchSpec, order: Order, rows: np.ndarray) -> Batches: ...

    def split(self, test_size: int | float | None = None, seed: int | None = None, *, by: str = "rows",
              key: str | None = None, k: int | None = None, fold: int = 0) -> tuple["Batches", "Batches"]:
        """Train and validation views: by rows (as lstm_ee), by file or by a key column.

        See :mod:`lstm_data.batching.order.splits`. Both views keep this object's order
        (shuffle, block shuffle, buckets, budget batches, sampling) for their rows.

        Parameters
        ----------
        test_size
            Rows or files (int) or fraction (float) that go to validation; not with ``k``.
        seed
            Seed of the row or file shuffle, or of the key hash (default: this object's seed).
        by
            ``"rows"`` (default: shuffle the rows, then cut), ``"file"`` (whole files
            of data opened from several paths) or ``"key"`` (by the integer column ``key``).
        key
            The key column of ``by="key"`` (e.g. an event number).
        k, fold
            k-fold: validation is fold ``fold`` of ``k`` (``key % k == fold`` by key,
            ``file index % k == fold`` by file, a seeded cut of the rows by rows).

        Returns
        -------
        train, validation : Batches
            Same spec and options; validation batches are not shuffled per epoch
            unless this object uses ``shuffle="block"``, are not sampled
            (``Order.sample``): every validation row once, and carry no noise (the
            spec's ``augment`` is left out).
        """
        seed = self.seed if seed is None else check_count(seed, "seed")
        base = np.arange(len(self.dataset), dtype=np.intp) if self._view is None else self._view
        train_pos, test_pos = split_positions(self.dataset, base, by=by, test_size=test_size, seed=seed,
                                              key=key, k=k, fold=fold)
        order = self.order if self._weights is None else self.order.replace(weights=self._weights)
        train = self._view_of(self.spec, order, base[train_pos])
        val_shuffle = "block" if self.shuffle == "block" else False
        val = self._view_of(self.spec.replace(augment=None), order.replace(shuffle=val_shuffle, sample=None),
                            base[test_pos])
        train._seed_drawn = val._seed_drawn = self._seed_drawn
        return train, val

    def folds(self, k: int, *, by: str = "rows", key: str | None = None,
              seed: int | None = None) -> list[tuple["Batches", "Batches"]]:
        """The ``k`` train/validation pairs of k-fold cross-validation (:meth:`split` with each ``fold``).

        Parameters
        ----------
        k
            Number of folds, >= 2.
        by, key, seed
            As for :meth:`split`.

        Returns
        -------
        list of tuple of Batches
            ``[(train, validation), ...]``, fold ``i`` validating on the ``i``-th part;
            the validation sides are disjoint and cover the rows.
        """
        return [self.split(seed=seed, by=by, key=key, k=k, fold=i) for i in range(k)]

    def shard(self, rank: int, world_size: int) -> ShardedBatches:
        """Rank ``rank``'s disjoint, equally long share of every epoch (one process per GPU).

        Build the same ``Batches`` on every rank, then ``shard(rank, world_size)``: each
        rank gets ``len(self) // world_size`` batches of each epoch's order, made from
        ``(seed, epoch)`` alone (balanced in real elements for ``shuffle=True``,
        consecutive runs otherwise). Its state resumes on a world of any size. See
        :mod:`lstm_data.batching.epochs.shard`.

        Parameters
        ----------
        rank
            This process's rank, ``0 <= rank < world_size``.
        world_size
            The number of ranks.

        Returns
        -------
        ShardedBatches
            The rank's batches, with the interface of ``Batches``.

        Raises
        ------
        ValueError
            ``rank`` is outside ``[0, world_size)``, or ``seed`` was drawn (``seed=None``):
            ranks would each draw their own order.
        """
        if self._seed_drawn:
            raise ValueError("shard() needs the same order on every rank: give Batches an explicit seed "
                             "(seed=None draws a different one in every process)")
        return ShardedBatches(cast("Batches", self), rank, world_size)

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
        return self._plan(epoch).sizes(slots, self.batch_size)

    def padded_width(self, field: Any, longest: int) -> int:
        """The padded length of a Ragged output in a batch whose longest row has ``longest`` elements.

        The builder's rule (``max_len``, ``pad_to_multiple_of``), then the order's
        ``bucket_lengths`` (never above the field's ``max_len``; not for a
        ``"packed"`` output, which has no padded slots).

        Parameters
        ----------
        field
            The output, as resolved by :meth:`BatchSpec.validate` (one of :attr:`fields`).
        longest
            Elements of the batch's longest row.

        Returns
        -------
        int
            The padded length of that output in such a batch.
        """
        return self._builder.chosen_width(field, longest, self._bucket_lengths)

    def stats(self, epoch: int | None = None, *, of: Any = None) -> dict[str, Any]:
        """What the order of an epoch costs and how well it mixes.

        Parameters
        ----------
        epoch
            An int >= 0; ``None``: the current :attr:`epoch`.
        of
            A share of these batches to measure instead (a :meth:`shard`: anything
            with ``len`` and ``rows_of(index, epoch)``); ``None``: all of them.

        Returns
        -------
        dict
            ``padding`` (padded slots per real element, by Ragged output), ``truncated``
            (rows longer than ``max_len``, by output), ``mixing`` and ``file_mixing``
            (1: as a full shuffle); see :mod:`lstm_data.batching.order.stats`.
        """
        parts = file_bounds(self.dataset)
        return order_stats(cast("Batches", self) if of is None else of, self._epoch_arg(epoch), self.fields,
                           self._builder.row_lengths, self.padded_width, self.n_rows, self._view, parts)

    def signature(self) -> dict[str, OutputSignature]:
        """The spec's output signature (see :meth:`BatchSpec.signature`).

        Returns
        -------
        dict of str to OutputSignature
            Output name -> name, role, dtype and shape (``None`` where it varies).
        """
        return self.spec.signature()
