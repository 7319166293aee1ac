"""The views of batches: train and validation views and k folds of any batches that can be cut by rows,
and the shards of batches (:class:`Shards`).

A split shuffles (or groups by file or key) the rows of a view of the data
(:class:`~lstm_data.batching.order.rows_view.RowsView`, as torch's ``Subset``) and
batches the two views it cuts, each with the order of the original (see
:mod:`lstm_data.batching.order.splits`). The functions here read only the public
:class:`RowViews` protocol, which :class:`~lstm_data.batching.epochs.batches.Batches`
satisfies; :class:`Splits` gives it ``split`` and ``folds``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Protocol, Sequence, TypeVar

import numpy as np

from lstm_data._util.checks import check_count
from lstm_data.batching.epochs.resume import assignment_of
from lstm_data.batching.epochs.shard import ShardedBatches
from lstm_data.batching.order.options import Order
from lstm_data.batching.order.splits import split_positions
from lstm_data.batching.spec.batch_spec import BatchSpec
from lstm_data.data.dataset import Dataset

if TYPE_CHECKING:
    from lstm_data.batching.epochs.pipeline import Pipeline

__all__ = ["RowViews", "Splits", "MadeFrom", "Shards", "split_views", "fold_views", "part_differences"]


class RowViews(Protocol):
    """Batches that can be remade over a subset of their rows."""

    @property
    def dataset(self) -> Dataset: ...

    @property
    def spec(self) -> BatchSpec: ...

    @property
    def order(self) -> Order: ...

    @property
    def file_bounds(self) -> np.ndarray | None:
        """Row bounds of the data's files (``None`` for one file)."""
        ...

    @property
    def view_rows(self) -> np.ndarray:
        """The dataset rows of the view, in view order."""
        ...

    def over_rows(self, rows: np.ndarray, *, spec: BatchSpec | None = None, order: Order | None = None) -> Any:
        """The same data and read options over ``rows``, with ``spec`` and ``order`` if given."""
        ...


V = TypeVar("V", bound=RowViews)
M = TypeVar("M", bound="MadeFrom")


def split_views(source: RowViews, test_size: int | float | None = None, seed: int | None = None, *,
                by: str = "rows", key: str | None = None, k: int | None = None, fold: int = 0) -> tuple[Any, Any]:
    """Train and validation views of ``source`` (see :meth:`Batches.split <lstm_data.Batches.split>`)."""
    assert source.order.seed is not None  # resolved by the batches
    seed = source.order.seed if seed is None else check_count(seed, "seed")
    base = source.view_rows
    train_pos, test_pos = split_positions(source.dataset, base, by=by, test_size=test_size, seed=seed,
                                          bounds=source.file_bounds,
                                          key=key, k=k, fold=fold)
    train = source.over_rows(base[train_pos])
    val_shuffle = "block" if source.order.shuffle == "block" else False
    val = source.over_rows(base[test_pos], spec=source.spec.replace(augment=None),
                           order=source.order.replace(shuffle=val_shuffle, sample=None))
    return train, val


def fold_views(source: RowViews, k: int, *, by: str = "rows", key: str | None = None,
               seed: int | None = None) -> list[tuple[Any, Any]]:
    """The ``k`` train/validation pairs of k-fold cross-validation (:func:`split_views` with each fold)."""
    return [split_views(source, seed=seed, by=by, key=key, k=k, fold=i) for i in range(k)]


class Splits:
    """Train and validation views and k folds, for batches that are :class:`RowViews`.

    Each view is made by the batches' own ``over_rows``, so it is of their type.
    """

    def split(self: V, test_size: int | float | None = None, seed: int | None = None, *,
              by: str = "rows", key: str | None = None, k: int | None = None, fold: int = 0) -> tuple[V, V]:
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
        return split_views(self, test_size, seed, by=by, key=key, k=k, fold=fold)

    def folds(self: V, k: int, *, by: str = "rows", key: str | None = None,
              seed: int | None = None) -> list[tuple[V, V]]:
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
        return fold_views(self, k, by=by, key=key, seed=seed)


class MadeFrom:
    """What batches were made from, and the same batches over other rows (:class:`RowViews`)."""

    order: Order
    pipeline: Pipeline
    _made_from: tuple[Dataset, BatchSpec, np.ndarray | None] | None

    def made_from(self) -> tuple[Dataset, BatchSpec, Order, np.ndarray | None]:
        """What these batches were made from: ``Batches(dataset, spec, order, rows=rows)`` makes them again.

        Returns
        -------
        tuple
            ``(dataset, spec, order, rows)``: the dataset and spec as given (before the
            spec's derived values and selection, and before bucketing widened the spec),
            :attr:`order` (its seed filled in, so the same batches) and the view's rows
            (``None`` for every row).

        Raises
        ------
        RuntimeError
            A copy sent to another process without the dataset it was given.
        """
        if self._made_from is None:
            raise RuntimeError("made_from(): this copy of Batches was sent to another process without the "
                               "dataset it was given (its spec derives values or selects rows); call it on "
                               "the original")
        dataset, spec, rows = self._made_from
        return dataset, spec, self.order, rows

    def over_rows(self: M, rows: np.ndarray, *, spec: BatchSpec | None = None, order: Order | None = None) -> M:
        """Batches of the same data over ``rows`` (a view).

        Parameters
        ----------
        rows
            Dataset rows, in view order.
        spec, order
            The view's spec and order (default: these batches'); row weights read from a
            column are kept by row.

        Returns
        -------
        Batches
            The view.
        """
        order = self.order if order is None else order
        if self.pipeline.weights is not None:  # row weights read from a column are kept by row
            order = order.replace(weights=self.pipeline.weights)
        spec = self.pipeline.spec if spec is None else spec
        return type(self)(self.pipeline.data.over(rows), spec, order)  # type: ignore[call-arg]


class Shards:
    """``shard(rank, world_size)``: a rank's share of every epoch of a batch sequence."""

    order: Order

    @property
    def shard_assignment(self) -> str:
        """How shards deal these batches: ``"rounds"`` for ``shuffle=True``, else ``"runs"``."""
        return assignment_of(self.order.shuffle)

    def shard(self, rank: int, world_size: int) -> ShardedBatches:
        """Rank ``rank``'s disjoint, equally long share of every epoch (one process per GPU).

        Build the same batches on every rank, then ``shard(rank, world_size)``: each
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
            ``rank`` is outside ``[0, world_size)``.
        """
        return ShardedBatches(self, rank, world_size)  # type: ignore[arg-type]  # the sequence is Shardable


def _part_name(label: str, i: int, n: int) -> str:
    """``the data of FILE (file part i + 1 of n)``, or of ``part i + 1 of n`` of data without files."""
    if label:
        return f"the data of {label} (file part {i + 1} of {n})"
    return "the data" if n == 1 else f"the data of part {i + 1} of {n}"


def part_differences(parts: Sequence[tuple[str, str]], state: Mapping[str, Any]) -> list[str]:
    """The file parts (``(label, digest)`` each) whose values differ from those ``state`` was saved with."""
    saved = state.get("data_parts")
    if not isinstance(saved, (list, tuple)) or len(saved) != len(parts):
        return []
    n = len(parts)
    return [f"{_part_name(label, i, n)} differ from those the state was saved with (the identity digest of "
            "their values does not match)" for i, ((label, digest), old) in enumerate(zip(parts, saved))
            if digest != old]
