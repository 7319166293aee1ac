"""``Batches``: the padded batches of an epoch, by index.

``Batches(dataset, spec)[i]`` returns ``(inputs, targets, weights)``: dicts of
numpy arrays named by the spec, and per-target weights ``(B,)``. The row order is
a pure function of ``(seed, epoch)``; :meth:`Batches.on_epoch_end` moves to the
next epoch. What does not change between epochs is compiled once
(:func:`~lstm_data.batching.epochs.pipeline.compile`); ``Batches`` keeps the epoch,
the RAM cache and pickling.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Mapping

import numpy as np

from lstm_data._util.types import PlainMapping
from lstm_data._util import forksafe
from lstm_data._util.checks import check_index
from lstm_data.batching.building.builder import BatchBuilder
from lstm_data.batching.epochs.figures import OrderFigures
from lstm_data.batching.epochs.iteration import EpochIteration
from lstm_data.batching.epochs.legacy_options import legacy_options
from lstm_data.batching.epochs.pipeline import Pipeline, compile
from lstm_data.batching.epochs.resume import batch_elements, layout_of
from lstm_data.batching.epochs.shard import ShardedBatches
from lstm_data.batching.epochs.views import Splits, part_differences
from lstm_data.batching.epochs.weights import freeze_batch
from lstm_data.batching.order.bucketing import Bucketing
from lstm_data.batching.order.options import Order
from lstm_data.batching.order.rows import DEFAULT_SEED, resolve_shuffle, shuffled_order
from lstm_data.batching.order.rows_view import RowsView
from lstm_data.batching.spec.batch_spec import Batch, BatchSpec, OutputSignature, ResolvedField
from lstm_data.batching.spec.derived import mark_applied
from lstm_data.data.dataset import Dataset, InMemoryDataset
from lstm_data.errors import OptionError
from lstm_data.io.read_options import ReadOptions
from lstm_data._util.declared import SuggestsKeywords

__all__ = ["Batches"]


class Batches(OrderFigures, Splits, EpochIteration, metaclass=SuggestsKeywords):
    """Padded batches of ``dataset`` laid out by ``spec``, in the rows' ``order``.

    Parameters
    ----------
    dataset
        Any :class:`~lstm_data.data.dataset.Dataset` (in RAM or on disk), or a
        :class:`~lstm_data.batching.order.rows_view.RowsView` of some of its rows.
    spec
        What a batch looks like (validated against the data once, here).
    order
        How rows are ordered and grouped: an :class:`~lstm_data.batching.order.options.Order`
        (an int is ``Order(batch_size=order)``; default ``Order()``).
    rows
        Restrict to these dataset rows (as ``RowsView(dataset, rows)``).
    batch_size, shuffle, seed, drop_last, weights, bucket_by, bucket_window, block_rows, window_rows, \
read_ahead, cache, max_elements, bucket_lengths, max_shapes, sample, policies
        Shorthand for the :class:`Order` fields of those names: each one given replaces
        the ``order``'s (``Batches(ds, spec, batch_size=256, seed=1)`` is
        ``Batches(ds, spec, Order(batch_size=256, seed=1))``), checked by ``Order``.
    read
        Deprecated: a ``ReadOptions`` whose ``read_ahead`` is now ``Order(read_ahead=...)``.

    Attributes
    ----------
    epoch : int
        The current epoch (0 first).
    order : Order
        The order in use, with ``shuffle="auto"`` resolved and ``seed=None`` as 0.
    pipeline : Pipeline
        What is compiled once: stages, epoch plans, builder, identity.

    Notes
    -----
    With ``bucket_by``, every Ragged output of that field's group is padded to its
    batch's longest row (rounded up by the spec's ``pad_to_multiple_of``, capped at
    ``max_len``): a ``fixed=True`` field becomes per batch and :attr:`spec` (hence
    :meth:`signature`) says its prong dimension is ``None``.
    """

    def __init__(self, dataset: Dataset | RowsView, spec: BatchSpec, order: Order | int | None = None, *,
                 rows: np.ndarray | None = None, batch_size: int | None = None, shuffle: bool | str | None = None,
                 seed: int | None = None, drop_last: bool | None = None, weights: str | np.ndarray | None = None,
                 bucket_by: str | None = None, bucket_window: int | None = None, block_rows: int | None = None,
                 window_rows: int | None = None, read_ahead: bool | None = None, cache: str | None = None,
                 max_elements: int | None = None, bucket_lengths: str | list[int] | None = None,
                 max_shapes: int | None = None, sample: Mapping[str, object] | None = None,
                 policies: Mapping[str, Mapping[str, object]] | None = None, read: ReadOptions | None = None) -> None:
        view = dataset if isinstance(dataset, RowsView) else None
        data = dataset.dataset if isinstance(dataset, RowsView) else dataset
        if not isinstance(data, Dataset):
            raise TypeError(f"dataset must be an lstm_data Dataset, got {type(dataset).__name__}")
        if not isinstance(spec, BatchSpec):
            raise TypeError(f"spec must be a BatchSpec, got {type(spec).__name__}")
        spec, order = legacy_options(spec, order, read, {}, "Batches")
        given = {k: v for k, v in dict(
            batch_size=batch_size, shuffle=shuffle, seed=seed, drop_last=drop_last, weights=weights,
            bucket_by=bucket_by, bucket_window=bucket_window, block_rows=block_rows, window_rows=window_rows,
            read_ahead=read_ahead, cache=cache, max_elements=max_elements, bucket_lengths=bucket_lengths,
            max_shapes=max_shapes, sample=sample, policies=policies).items() if v is not None}
        order = order.replace(**given) if given else order
        self.order = order.replace(shuffle=resolve_shuffle(order.shuffle, data.in_ram),
                                   seed=DEFAULT_SEED if order.seed is None else order.seed)
        if view is None:
            view = RowsView(data, rows)
        elif rows is not None:
            view = view.subset(rows)
        self._made_from: tuple[Dataset, BatchSpec, np.ndarray | None] | None = (data, spec, view.rows)
        self._given_spec = spec
        self.epoch = 0
        self._compile(view)

    def _compile(self, view: RowsView) -> None:
        """The pipeline, and what is remade rather than pickled: locks and the RAM cache."""
        self.pipeline: Pipeline = compile(view, self._given_spec, self.order)
        self._lock = threading.Lock()
        forksafe.register(self)
        self._ram: dict[int, Batch] = {}

    def _after_fork(self) -> None:
        self._lock = threading.Lock()  # a worker thread of the parent may have held it

    # -- what the pipeline holds ---------------------------------------------------------------
    @property
    def dataset(self) -> Dataset:
        """The data batched (the spec's derived values applied)."""
        return self.pipeline.dataset

    @property
    def spec(self) -> BatchSpec:
        """The spec the batches are built with (with ``bucket_by``, its group padded per batch)."""
        return self.pipeline.spec

    @property
    def fields(self) -> list[ResolvedField]:
        """The spec's outputs resolved on the data."""
        return self.pipeline.fields

    @property
    def builder(self) -> BatchBuilder:
        """The builder that turns rows into batches."""
        return self.pipeline.builder

    @property
    def n_rows(self) -> int:
        """Rows batched."""
        return self.pipeline.n_rows

    @property
    def batch_size(self) -> int:
        """Rows per batch."""
        return self.order.batch_size

    @property
    def shuffle(self) -> bool | str:
        """The shuffle in use: ``True``, ``False`` or ``"block"``."""
        return self.order.shuffle

    @property
    def seed(self) -> int:
        """The seed of every random order."""
        return self.pipeline.plans.seed

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

    @property
    def seed_drawn(self) -> bool:
        """Whether the seed was drawn here: never, ``seed=None`` is seed 0 (kept for older callers)."""
        return False

    @property
    def shard_layout(self) -> str:
        """How shards deal these batches: ``"rounds"`` for ``shuffle=True``, else ``"runs"``."""
        return layout_of(self.shuffle)

    @property
    def bucketing(self) -> Bucketing | None:
        """The order's length bucketing (``Order.bucket_by``), or ``None``."""
        return self.pipeline.bucketing

    @property
    def varies_by_epoch(self) -> bool:
        """Whether epochs differ: a shuffled order, rows drawn anew (``sample``) or noise (``augment``)."""
        p = self.pipeline
        return self.shuffle is not False or p.sampling is not None or p.augmenter is not None

    @property
    def file_bounds(self) -> np.ndarray | None:
        """Row bounds of the data's files (``None`` for data of one file)."""
        return self.pipeline.data.file_bounds

    @property
    def view_rows(self) -> np.ndarray:
        """The dataset rows batched, in view order."""
        return self.pipeline.data.row_numbers()

    def __len__(self) -> int:
        return len(self.pipeline)

    def _order_epoch(self, epoch: int | None = None) -> int:
        return self.pipeline.plans.order_epoch(self.epoch if epoch is None else epoch)

    def _next_epoch_job(self) -> Callable[[], object] | None:
        """Make the next epoch's order (for a spare worker while this epoch is built)."""
        if self.shuffle is False or self.cache == "ram":
            return None  # the order never changes
        return self.pipeline.plans.prepare(self._order_epoch() + 1)

    def _batch_slot(self, index: int, epoch: int) -> int:
        """The batch of the fixed partition serving ``index`` in ``epoch`` (differs with ``cache="ram"``)."""
        if self.cache == "ram" and epoch > 0 and self.shuffle is not False:
            return int(shuffled_order(len(self), self.seed, epoch)[index])
        return index

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
        slot = self._batch_slot(check_index(index, len(self)), epoch)
        return self.pipeline.rows_at(self.pipeline.positions(slot, epoch))

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

    def padded_width(self, field: ResolvedField, longest: int) -> int:
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
        return self.pipeline.padded_width(field, longest)

    def signature(self) -> dict[str, OutputSignature]:
        """The spec's output signature (see :meth:`BatchSpec.signature`).

        Returns
        -------
        dict of str to OutputSignature
            Output name -> name, role, dtype and shape (``None`` where it varies).
        """
        return self.spec.signature()

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
            An int >= 0; ``None``: the current :attr:`epoch`.

        Returns
        -------
        tuple of dict
            ``(inputs, targets, weights)``: output name -> array.
        """
        return self._batch(index, epoch, None)

    def batch_into(self, index: int, epoch: int, arena: np.ndarray) -> Batch:
        """Batch ``index`` of ``epoch``, built in ``arena`` where its arrays fit.

        ``arena`` is a writable, C-contiguous buffer (e.g. shared memory another
        process reads; see :class:`lstm_data.kernels.BatchGather`); the arrays placed
        are views of it, the others are allocated. This is the
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

    def _batch(self, index: int, epoch: int | None, arena: np.ndarray | None) -> Batch:
        epoch = self._epoch_arg(epoch)
        slot = self._batch_slot(check_index(index, len(self)), epoch)
        if self.cache == "ram":
            hit = self._ram.get(slot)
            if hit is None:  # kept read-only: an in-place edit must not reach later epochs
                hit = self._ram.setdefault(slot, freeze_batch(self._build(slot, epoch)))
            return self._augmented(tuple(dict(part) for part in hit), index, epoch)  # type: ignore[arg-type]
        return self._augmented(self._build(slot, epoch, arena), index, epoch)

    def _build(self, slot: int, epoch: int, arena: np.ndarray | None = None) -> Batch:
        return self.pipeline.build(slot, epoch, self._order_epoch(epoch), arena)

    def _augmented(self, batch: Batch, index: int, epoch: int) -> Batch:
        augmenter = self.pipeline.augmenter
        return batch if augmenter is None else augmenter.apply(batch, self.rows_of(index, epoch), self.seed, epoch)

    # -- views: splits, folds, shards ------------------------------------------------------------
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

    def over_rows(self, rows: np.ndarray, *, spec: BatchSpec | None = None, order: Order | None = None) -> Batches:
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
        return Batches(self.pipeline.data.over(rows), self.spec if spec is None else spec, order)

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
            ``rank`` is outside ``[0, world_size)``.
        """
        return ShardedBatches(self, rank, world_size)

    # -- saved states ----------------------------------------------------------------------------
    def load_state_dict(self, state: PlainMapping) -> None:
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

    def identity(self) -> dict[str, object]:
        """What a saved state must match: the order's settings, the rows, the digests of spec and data.

        Returns
        -------
        dict
            The order's settings by name, ``n_rows``, ``identity`` (one digest of spec,
            settings and data) and ``data_parts`` (the digest of each file part's values).
        """
        return self.pipeline.identity()

    def _legacy_identities(self, state_format: int) -> set[str]:
        return self.pipeline.legacy_identities(state_format)

    def _data_differences(self, state: Mapping[str, Any]) -> list[str]:
        return part_differences(self.pipeline.data_parts(), state)

    def __repr__(self) -> str:
        return (f"Batches({len(self)} batches of {self.batch_size}, {self.n_rows} rows, "
                f"shuffle={self.shuffle!r}, seed={self.seed}, epoch={self.epoch})")

    # -- pickling: the view and the settings, never the arrays of an in-RAM dataset ------------------
    def __getstate__(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items() if k not in ("_lock", "pipeline", "_ram")}
        view = self.pipeline.data
        dataset: object = view.dataset
        if isinstance(dataset, InMemoryDataset):
            from lstm_data.data.shared import share
            dataset = share(dataset)
        state["_view"] = (dataset, view.rows, view.file_bounds)
        made = self._made_from  # the given dataset travels only when it is the one batched
        state["_made_from"] = (dataset, *made[1:]) if made is not None and made[0] is view.dataset else None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        dataset, rows, bounds = state.pop("_view")
        self.__dict__.update(state)
        mark_applied(dataset, self._given_spec)  # a reopened shared copy holds them already
        self._compile(RowsView(dataset, rows, bounds=bounds))

