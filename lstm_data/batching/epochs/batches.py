"""``Batches``: the padded batches of an epoch, by index.

``Batches(dataset, spec)[i]`` returns ``(inputs, targets, weights)``: dicts of
numpy arrays named by the spec, and per-target weights ``(B,)``. The row order is
a pure function of ``(seed, epoch)``; :meth:`Batches.on_epoch_end` moves to the
next epoch. Building a batch calls the GIL-free kernels, so
:meth:`Batches.iter` with ``workers > 1`` scales on threads.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable, Mapping

import numpy as np

from lstm_data._util import forksafe
from lstm_data._util.checks import check_count, check_index
from lstm_data.batching.building.blocks import BlockSource
from lstm_data.batching.order.block_plans import block_layout
from lstm_data.batching.order.bucketing import Bucketing, make_bucketing
from lstm_data.batching.order.budget import order_extras
from lstm_data.batching.order.plan import EpochPlans, Plan
from lstm_data.batching.order.policies import order_stages
from lstm_data.batching.building.noise import make_augmenter
from lstm_data.batching.epochs.resume import batch_elements, layout_of
from lstm_data.batching.epochs.shard import ShardedBatches
from lstm_data.batching.epochs.views import fold_views, split_views
from lstm_data.batching.order.stats import Picked, order_stats
from lstm_data.batching.spec.derived import file_bounds
from lstm_data.batching.building.builder import BatchBuilder
from lstm_data.batching.building.empty_rows import drop_empty_rows, make_one_step
from lstm_data.batching.spec.derived import mark_applied
from lstm_data.batching.spec.sizes import check_batch_bytes
from lstm_data.batching.order.bucket_lengths import bucket_widths
from lstm_data.batching.epochs.iteration import EpochIteration
from lstm_data.batching.epochs.data_digest import part_digests
from lstm_data.batching.epochs.identity import (data_fingerprint, full_data, identity_digest, legacy_digests,
                                                order_settings)
from lstm_data.batching.epochs.legacy_options import legacy_options
from lstm_data.batching.epochs.weights import freeze_batch, resolve_weights
from lstm_data.batching.order.options import Order
from lstm_data.batching.order.rows import fresh_seed, resolve_shuffle, shuffled_order
from lstm_data.batching.order.sampling import make_sampling
from lstm_data.batching.spec.batch_spec import Arrays, Batch, BatchSpec, OutputSignature
from lstm_data.data.dataset import Dataset, InMemoryDataset
from lstm_data.errors import OptionError
from lstm_data.io.read_options import ReadOptions

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = ["Batches"]


def _part_name(label: str, i: int, n: int) -> str:
    """``the data of FILE (file part i + 1 of n)``, or of ``part i + 1 of n`` of data without files."""
    if label:
        return f"the data of {label} (file part {i + 1} of {n})"
    return "the data" if n == 1 else f"the data of part {i + 1} of {n}"


class Batches(EpochIteration):
    """Padded batches of ``dataset`` laid out by ``spec``, in the rows' ``order``.

    Parameters
    ----------
    dataset
        Any :class:`~lstm_data.data.dataset.Dataset` (in RAM or on disk).
    spec
        What a batch looks like (validated against ``dataset`` here), including
        ``nan_to`` and ``pad_to_multiple_of``.
    order
        How rows are ordered and grouped: an :class:`~lstm_data.batching.order.options.Order`
        (batch size, shuffle, seed, bucketing, weights, ``drop_last``, cache). An
        int is taken as ``Order(batch_size=order)``. Default: ``Order()``.
    read
        Deprecated: a :class:`~lstm_data.io.read_options.ReadOptions` whose
        ``read_ahead`` is now ``Order(read_ahead=...)``.
    rows
        Restrict to these dataset rows (a view; :meth:`split` makes them).
    **options
        The keyword spellings of earlier releases (``batch_size=``, ``seed=``,
        ``nan_to=``, ...): still accepted, with a ``DeprecationWarning`` that names
        the new home of each.

    Attributes
    ----------
    epoch : int
        The current epoch (0 first).
    order : Order
        The order in use, with ``shuffle="auto"`` resolved and a drawn seed filled in.
    batch_size, shuffle, seed, drop_last, cache
        The order's settings (read-only views of :attr:`order`).
    nan_to
        The spec's ``nan_to``.

    Notes
    -----
    With ``bucket_by``, every Ragged output of that field's group is padded to its
    batch's longest row (rounded up by the spec's ``pad_to_multiple_of``, capped at
    ``max_len``): a ``fixed=True`` field becomes per batch and :attr:`spec` (hence
    :meth:`signature`) says its prong dimension is ``None``. See
    :mod:`lstm_data.batching.order.bucketing`.
    """

    def __init__(self, dataset: Dataset, spec: BatchSpec, order: Order | int | None = None, *,
                 read: ReadOptions | None = None, rows: Any = None, **options: Any) -> None:
        if not isinstance(dataset, Dataset):
            raise TypeError(f"dataset must be an lstm_data Dataset, got {type(dataset).__name__}")
        if not isinstance(spec, BatchSpec):
            raise TypeError(f"spec must be a BatchSpec, got {type(spec).__name__}")
        spec, order = legacy_options(spec, order, read, options, "Batches")
        shuffle = resolve_shuffle(order.shuffle, dataset.in_ram)
        self._seed_drawn = order.seed is None
        order = order.replace(shuffle=shuffle, seed=fresh_seed() if order.seed is None else order.seed)
        self.order = order
        self._made_from: tuple[Dataset, BatchSpec, Any] | None = (dataset, spec, rows)  # see made_from()
        dataset = spec.derive(dataset)  # derived variables and the selection's rows
        self.dataset = dataset
        self.spec = spec
        self.fields = spec.validate(dataset)
        check_batch_bytes(spec.fields(), spec.pad_to_multiple_of, order.batch_size, len(dataset),
                          widths=bucket_widths(order, self.fields))
        self.epoch = 0
        self._view = None if rows is None else self._as_view(rows)
        self._view = drop_empty_rows(self.fields, dataset, self._view)  # Ragged(empty="drop")
        self._weights = resolve_weights(self.dataset, order.weights)
        self._sampling = make_sampling(dataset, self._view, order, shuffle)  # Order.sample, or None
        self._bucketing = make_bucketing(spec, self.fields, order.bucket_by, order.bucket_window,
                                         spec.pad_to_multiple_of, shuffle)
        if self._bucketing is not None:  # the bucketed group's fields are padded per batch
            self.spec = self._bucketing.spec
            self.fields = self.spec.validate(dataset)
        self._setup_runtime()

    # -- the order's settings ----------------------------------------------------------------
    @property
    def batch_size(self) -> int:
        """Rows per batch."""
        return self.order.batch_size

    @property
    def shuffle(self) -> bool | str:
        """The shuffle in use: ``True``, ``False`` or ``"block"``."""
        value: bool | str = self.order.shuffle
        return value

    @property
    def seed(self) -> int:
        """The seed of every random order."""
        assert self.order.seed is not None  # filled in by __init__
        return self.order.seed

    @property
    def drop_last(self) -> bool:
        """Whether a short last batch is dropped."""
        return self.order.drop_last

    @property
    def cache(self) -> str | None:
        """``"ram"`` when built batches are kept, else ``None``."""
        return self.order.cache

    @property
    def nan_to(self) -> float | None:
        """The spec's ``nan_to``."""
        return self.spec.nan_to

    # -- construction helpers ----------------------------------------------------------------
    def _as_view(self, rows: Any) -> np.ndarray:
        arr = np.asarray(rows)
        if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
            raise ValueError(f"rows must be 1-D integers, got {arr.dtype} {arr.shape}")
        arr = arr.astype(np.intp)
        if arr.size and (arr.min() < 0 or arr.max() >= len(self.dataset)):
            raise IndexError(f"rows outside [0, {len(self.dataset)})")
        return arr

    def _after_fork(self) -> None:
        self._lock = threading.Lock()  # a worker thread of the parent may have held it

    def _setup_runtime(self) -> None:
        """Objects that are rebuilt, not pickled: builder, locks, plans, caches."""
        self._lock = threading.Lock()
        forksafe.register(self)
        self._identity: tuple[str, list[str]] | None = None  # made at the first state_dict
        self._parts: list[tuple[str, str]] | None = None  # each file part's label and digest
        self._target_names = self.spec.target_names
        self._builder = BatchBuilder(self.dataset, self.fields, nan_to=self.nan_to,
                                     pad_to_multiple_of=self.spec.pad_to_multiple_of)
        # Ragged(empty="one_step") and BatchSpec(augment=...), applied to each batch built
        self._one_step = make_one_step(self.fields, self._builder.row_lengths, self.nan_to, self.padded_width)
        self._augmenter = make_augmenter(self.spec, self.fields, self._builder.row_lengths)
        self._ram: dict[int, Batch] = {}
        view = None if self._view is None else np.sort(self._view)
        layout = None if self.shuffle != "block" else block_layout(
            self.dataset, view, self.batch_size, self.order.block_rows, self.order.window_rows)
        # element budget and chosen bucket lengths (Order.max_elements, bucket_lengths)
        self._budget, self._bucket_lengths = order_extras(self.order, self.fields, self._builder.width,
                                                          self._builder.row_lengths, self._view_lengths,
                                                          None if layout is None else layout.max_windows)
        # the order's stages, run once per epoch (this epoch's plan and the next are kept)
        stages = order_stages(self.order, self.n_rows, self._view_lengths, blocks=layout,
                              sampling=self._sampling, budget=self._budget, bucketing=self._bucketing)
        self._plans = EpochPlans(stages, self.n_rows, seed=self.seed, shuffle=self.shuffle,
                                 batch_size=self.batch_size, drop_last=self.drop_last,
                                 first_epoch_only=self.cache == "ram")
        self._blocks: BlockSource | None = None
        if layout is not None:
            self._blocks = BlockSource(self.dataset, view, self.fields, layout, self._plans, nan_to=self.nan_to,
                                       read_ahead=self.order.read_ahead,
                                       pad_to_multiple_of=self._builder.pad_to_multiple_of)
            # cached batches never come back to the blocks after epoch 0
            self._blocks.next_epoch_ahead = self.cache != "ram"

    @property
    def builder(self) -> BatchBuilder:
        """The :class:`~lstm_data.batching.building.builder.BatchBuilder` that turns rows into batches."""
        return self._builder

    @property
    def bucketing(self) -> Bucketing | None:
        """The order's length bucketing (``Order.bucket_by``), or ``None``."""
        return self._bucketing

    @property
    def varies_by_epoch(self) -> bool:
        """Whether epochs differ: a shuffled order, rows drawn anew (``sample``) or noise (``augment``)."""
        return self.shuffle is not False or self._sampling is not None or self._augmenter is not None

    # -- size and order -----------------------------------------------------------------------
    @property
    def n_rows(self) -> int:
        """Rows in this view."""
        return len(self.dataset) if self._view is None else len(self._view)

    def __len__(self) -> int:
        return len(self._plans)

    def _order_epoch(self, epoch: int | None = None) -> int:
        """The epoch whose row order serves ``epoch`` (default: the current one)."""
        return self._plans.order_epoch(self.epoch if epoch is None else epoch)

    def _plan(self, epoch: int | None = None) -> Plan:
        """The plan of ``epoch`` (default: the current one): positions into the view, made once."""
        return self._plans.plan(self.epoch if epoch is None else epoch)

    def _view_lengths(self, group: str) -> np.ndarray:
        """Row lengths of ``group`` by view position (block plans index the sorted view)."""
        lengths: np.ndarray = self._builder.row_lengths(group)
        if self._view is None:
            return lengths
        picked: np.ndarray = lengths[np.sort(self._view) if self.shuffle == "block" else self._view]
        return picked

    def _next_epoch_job(self) -> Callable[[], object] | None:
        """Make the next epoch's order (for a spare worker while this epoch is built)."""
        if self.shuffle is False or self.cache == "ram":
            return None  # the order never changes
        return self._plans.prepare(self._order_epoch() + 1)

    def _batch_slot(self, index: int, epoch: int) -> int:
        """The batch of the fixed partition serving ``index`` in ``epoch`` (differs with ``cache="ram"``)."""
        if self.cache == "ram" and epoch > 0 and self.shuffle is not False:
            return int(shuffled_order(len(self), self.seed, epoch)[index])
        return index

    def _span(self, slot: int, epoch: int) -> tuple[int, int]:
        """Epoch positions ``lo, hi`` of the batch in ``slot``."""
        return self._plan(epoch).span(slot, self.batch_size)

    def _positions(self, slot: int, epoch: int) -> npt.NDArray[np.intp]:
        lo, hi = self._span(slot, epoch)
        positions: npt.NDArray[np.intp] = self._plan(epoch).order[lo:hi].astype(np.intp, copy=False)
        return positions

    def _check_index(self, index: int) -> int:
        return check_index(index, len(self))

    def _epoch_arg(self, epoch: int | None) -> int:
        return self.epoch if epoch is None else check_count(epoch, "epoch")

    def rows_of(self, index: int, epoch: int | None = None) -> np.ndarray:
        """The dataset rows of one batch, in batch order.

        Parameters
        ----------
        index
            Batch index (negative counts from the end).
        epoch
            An int >= 0; ``None``: the current :attr:`epoch`.

        Returns
        -------
        numpy.ndarray
            Row numbers of the dataset.
        """
        epoch = self._epoch_arg(epoch)
        pos = self._positions(self._batch_slot(self._check_index(index), epoch), epoch)
        if self._view is None:
            return pos
        view = np.sort(self._view) if self._blocks is not None else self._view
        return view[pos]

    @property
    def shard_layout(self) -> str:
        """How shards deal these batches: balanced rounds for ``shuffle=True``, else consecutive runs."""
        return layout_of(self.shuffle)

    def batch_elements(self, epoch: int) -> np.ndarray:
        """Real elements of every batch of ``epoch``: its rows, or with ``bucket_by`` that field's prongs.

        Parameters
        ----------
        epoch
            An int >= 0.

        Returns
        -------
        numpy.ndarray
            One int64 per batch, in the epoch's order (what shards balance).
        """
        return batch_elements(self, epoch)

    def draws(self, epoch: int | None = None) -> dict[int, int]:
        """How many rows of each class ``epoch`` draws (``Order(sample=...)``).

        Parameters
        ----------
        epoch
            An int >= 0; ``None``: the current :attr:`epoch`.

        Returns
        -------
        dict of int to int
            Class label -> draws in the epoch's batches (``{0: n}`` without
            ``classes``); without ``sample``, the rows of the epoch under label 0.
        """
        epoch = self._epoch_arg(epoch)
        positions = np.concatenate([self._positions(self._batch_slot(i, epoch), epoch) for i in range(len(self))]
                                   or [np.zeros(0, dtype=np.intp)])
        if self._sampling is None:
            return {0: int(len(positions))}
        return self._sampling.counts(positions)

    # -- batches ----------------------------------------------------------------------------------
    def __getitem__(self, index: int) -> Batch:
        return self.batch(index)

    def batch(self, index: int, epoch: int | None = None) -> Batch:
        """Batch ``index`` of ``epoch`` (default: the current :attr:`epoch`), which stays as it is.

        ``b.batch(i, epoch=e)`` equals ``b.set_epoch(e); b[i]`` without changing
        ``b.epoch``: the order of an epoch is a pure function of ``(seed, epoch)``,
        made once per epoch (the last two are kept). Safe to call from several
        threads at once, for one epoch or different ones; adapters use it to tie
        every batch to its epoch (e.g. a torch sampler's ``(epoch, i)`` keys).

        Parameters
        ----------
        index
            Batch index (negative counts from the end).
        epoch
            An int >= 0.

        Returns
        -------
        tuple of dict
            ``(inputs, targets, weights)``: output name -> array.
        """
        return self._batch(index, epoch, None)

    def batch_into(self, index: int, epoch: int, arena: Any) -> Batch:
        """Batch ``index`` of ``epoch``, built in ``arena`` where its arrays fit.

        ``arena`` is a writable, C-contiguous buffer (e.g. shared memory another
        process reads), used for in-RAM datasets without a cache (see
        :class:`lstm_data.kernels.BatchGather`); the arrays placed are views of it,
        the others are allocated. This is the
        :class:`~lstm_data.batching.epochs.source.BuildsInArena` capability.

        Parameters
        ----------
        index, epoch
            As for :meth:`batch`.
        arena
            The buffer, 64-byte aligned.

        Returns
        -------
        tuple of dict
            What :meth:`batch` returns, its arrays that fit as views of ``arena``.
        """
        return self._batch(index, epoch, arena)

    def _batch(self, index: int, epoch: int | None, arena: Any) -> Batch:
        epoch = self._epoch_arg(epoch)
        slot = self._batch_slot(self._check_index(index), epoch)
        if self.cache == "ram":
            hit = self._ram.get(slot)
            if hit is None:  # kept read-only: an in-place edit must not reach later epochs
                hit = self._ram.setdefault(slot, freeze_batch(self._build(slot, epoch)))
            return self._augmented(tuple(dict(part) for part in hit), index, epoch)  # type: ignore[arg-type]
        return self._augmented(self._build(slot, epoch, arena), index, epoch)

    def _augmented(self, batch: Batch, index: int, epoch: int) -> Batch:
        """``batch`` with the spec's noise of ``epoch`` (see :mod:`lstm_data.batching.spec.augment`)."""
        if self._augmenter is None:
            return batch
        return self._augmenter.apply(batch, self.rows_of(index, epoch), self.seed, epoch)

    def _build(self, slot: int, epoch: int, arena: Any = None) -> Batch:
        positions = self._positions(slot, epoch)
        if self._blocks is not None:
            lo = self._span(slot, epoch)[0]
            end = self._span(len(self) - 1, epoch)[1]  # short of the plan's end with drop_last
            inputs, targets = self._blocks.build(self._plan(epoch), self._order_epoch(epoch), lo, lo + len(positions),
                                                 self._bucket_lengths, end=end)
            if self._view is None:
                rows = positions
            else:
                assert self._blocks.rows is not None  # the blocks of a view hold its sorted rows
                rows = self._blocks.rows[positions]
        else:
            rows = positions if self._view is None else self._view[positions]
            inputs, targets = self._builder.build(rows, arena, self._bucket_lengths)
        if self._one_step is not None:
            self._one_step.apply(inputs, targets, rows)
        return inputs, targets, self._weights_for(rows, targets)

    def _weights_for(self, rows: np.ndarray, targets: Arrays) -> Arrays:
        if self._weights is None:
            w = np.ones(len(rows), dtype=np.float32)
        else:
            w = self._weights[rows]
        return {name: w for name in self._target_names}

    def made_from(self) -> tuple[Dataset, BatchSpec, Order, np.ndarray | None]:
        """What these batches were made from: ``Batches(dataset, spec, order, rows=rows)`` makes them again.

        Returns
        -------
        tuple
            ``(dataset, spec, order, rows)``: the dataset and spec as given (before the
            spec's derived values and selection, and before bucketing widened the spec),
            :attr:`order` (its seed filled in, so the same batches) and the view's rows
            as given (``None`` for every row).
        """
        if self._made_from is None:
            raise RuntimeError("made_from(): this copy of Batches was sent to another process without the "
                               "dataset it was given (its spec derives values or selects rows); call it on "
                               "the original")
        dataset, spec, rows = self._made_from
        return dataset, spec, self.order, None if rows is None else np.asarray(rows, dtype=np.intp)

    # -- views: splits, folds, shards (lstm_data.batching.epochs.views, .shard) ----------------
    @property
    def view_rows(self) -> np.ndarray:
        """The dataset rows of this view, in view order (every row for the whole dataset)."""
        return np.arange(len(self.dataset), dtype=np.intp) if self._view is None else self._view

    @property
    def seed_drawn(self) -> bool:
        """Whether the seed was drawn here (``Order.seed=None``): another process draws another."""
        return self._seed_drawn

    def over_rows(self, rows: np.ndarray, *, spec: BatchSpec | None = None,
                  order: Order | None = None) -> "Batches":
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
            The view; its seed counts as drawn when these batches' was.
        """
        order = self.order if order is None else order
        if self._weights is not None:
            order = order.replace(weights=self._weights)
        view = Batches(self.dataset, self.spec if spec is None else spec, order, rows=rows)
        view._seed_drawn = self._seed_drawn
        return view

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
        train, val = split_views(self, test_size, seed, by=by, key=key, k=k, fold=fold)
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
        folds: list[tuple[Batches, Batches]] = fold_views(self, k, by=by, key=key, seed=seed)
        return folds

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
        return ShardedBatches(self, rank, world_size)

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
        return order_stats(self if of is None else of, self._epoch_arg(epoch), self.fields,
                           self._builder.row_lengths, self.padded_width, self.n_rows, self._view, parts)

    def epoch_figures(self, epoch: int) -> dict[str, Any]:
        """The figures of ``epoch`` logged at its end: :meth:`stats`.

        Parameters
        ----------
        epoch
            An int >= 0.

        Returns
        -------
        dict
            As for :meth:`stats` (see :class:`~lstm_data.batching.order.stats.GivesFigures`).
        """
        return self.stats(epoch)

    def figures_of(self, epoch: int, indices: np.ndarray) -> dict[str, Any]:
        """:meth:`stats` of the batches ``indices`` of ``epoch`` (a rank's share).

        Parameters
        ----------
        epoch
            An int >= 0.
        indices
            Batch indices, in the share's order.

        Returns
        -------
        dict
            As for :meth:`stats`.
        """
        return self.stats(epoch, of=Picked(self, indices))

    def signature(self) -> dict[str, OutputSignature]:
        """The spec's output signature (see :meth:`BatchSpec.signature`).

        Returns
        -------
        dict of str to OutputSignature
            Output name -> name, role, dtype and shape (``None`` where it varies).
        """
        return self.spec.signature()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resume from :meth:`state_dict`: the next :meth:`iter` starts at its ``next_batch``.

        Parameters
        ----------
        state
            A :meth:`state_dict` of batches of the same seed, order, spec and data. A
            shard's state (:meth:`shard`) resumes ``shard(0, 1)`` or any other world.

        Raises
        ------
        OptionError
            The state was saved by other batches (each differing setting is named),
            by a shard of several ranks, or is not such a state.
        """
        if isinstance(state, Mapping) and (state.get("world_size", 1) != 1 or state.get("history")):
            raise OptionError(f"a state saved by a shard of {state.get('world_size')} ranks: load it into "
                              "batches.shard(rank, world_size) (shard(0, 1) for one process)")
        super().load_state_dict(state)

    def _state_identity(self) -> dict[str, Any]:
        """The order's settings by name, the rows, one digest of spec, settings and data, and the digest
        of each file part's values (rank, world size, workers and the epoch's batch count are left out)."""
        settings = order_settings(self.order)
        if self._identity is None:
            parts = [digest for _, digest in self._data_parts()]
            sampled = data_fingerprint(self.dataset, self._view)
            self._identity = (identity_digest(self.spec, settings, full_data(sampled, parts)), parts)
        digest, parts = self._identity
        return {**settings, "n_rows": self.n_rows, "identity": digest, "data_parts": list(parts)}

    def _data_parts(self) -> list[tuple[str, str]]:
        """Each file part's label and the digest of its values (see :mod:`.data_digest`), made once."""
        if self._parts is None:
            self._parts = part_digests(self.dataset)
        return self._parts

    def _legacy_identities(self, state_format: int) -> set[str]:
        """The identity digests these batches had in an earlier state format (read by its own recipe)."""
        return legacy_digests(self.spec, order_settings(self.order), data_fingerprint(self.dataset, self._view),
                              state_format)

    def _data_differences(self, state: Mapping[str, Any]) -> list[str]:
        """The file parts whose values differ from those ``state`` was saved with."""
        saved = state.get("data_parts")
        parts = self._data_parts()
        if not isinstance(saved, (list, tuple)) or len(saved) != len(parts):
            return []
        n = len(parts)
        return [f"{_part_name(label, i, n)} differ from those the state was saved with (the identity digest of "
                "their values does not match)" for i, ((label, digest), old) in enumerate(zip(parts, saved))
                if digest != old]

    def __repr__(self) -> str:
        return (f"Batches({len(self)} batches of {self.batch_size}, {self.n_rows} rows, "
                f"shuffle={self.shuffle!r}, seed={self.seed}, epoch={self.epoch})")

    # -- pickling: never the arrays of an in-RAM dataset -------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items()
                 if k not in ("_lock", "_builder", "_plans", "_ram", "_blocks", "fields", "_target_names",
                              "_budget", "_bucket_lengths")}
        if isinstance(self.dataset, InMemoryDataset):
            from lstm_data.data.shared import share
            state["dataset"] = share(self.dataset)
        if isinstance(self.order.weights, str):
            state["_weights"] = None  # re-read from the column after unpickling
        state.pop("_sampling", None)  # remade from the label and variable columns after unpickling
        state["_part_bounds"] = getattr(self.dataset, "part_bounds", None)  # a shared copy drops attributes
        made = self._made_from  # the given dataset travels only when it is the one batched
        state["_made_from"] = (state["dataset"], *made[1:]) if made is not None and made[0] is self.dataset else None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        mark_applied(self.dataset, self.spec)  # a reopened shared copy holds them already
        bounds = self.__dict__.pop("_part_bounds", None)
        if bounds is not None:  # its files' row bounds (derived.file_bounds)
            setattr(self.dataset, "part_bounds", bounds)
        if self._weights is None and isinstance(self.order.weights, str):
            self._weights = resolve_weights(self.dataset, self.order.weights)
        self._sampling = make_sampling(self.dataset, self._view, self.order, self.shuffle)
        self.fields = self.spec.validate(self.dataset)
        self._setup_runtime()
