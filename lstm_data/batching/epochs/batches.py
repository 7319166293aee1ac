"""``Batches``: the padded batches of an epoch, by index.

``Batches(dataset, spec)[i]`` returns ``(inputs, targets, weights)``: dicts of
numpy arrays named by the spec, and per-target weights ``(B,)``. The row order is
a pure function of ``(seed, epoch)``; :meth:`Batches.on_epoch_end` moves to the
next epoch. What does not change between epochs is compiled once
(:func:`~lstm_data.batching.epochs.pipeline.compile`); ``Batches`` keeps the epoch,
the RAM cache and pickling; what it reads off the pipeline, its views and its shards come from the
mixins of those modules.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Mapping

import numpy as np

from lstm_data._util.types import PlainMapping
from lstm_data._util import forksafe
from lstm_data._util.checks import check_index
from lstm_data._util.deprecation import OldAttribute
from lstm_data._util.docs import shares_doc
from lstm_data.batching.epochs.figures import OrderFigures
from lstm_data.batching.epochs.iteration import EpochIteration
from lstm_data.batching.epochs.legacy_options import legacy_options
from lstm_data.batching.epochs.resume import state_count
from lstm_data.batching.epochs.pipeline import CompiledReads, Pipeline, compile
from lstm_data.batching.epochs.source import BatchSource, BuildsInArena
from lstm_data.batching.epochs.views import MadeFrom, Shards, Splits, part_differences
from lstm_data.batching.epochs.weights import freeze_batch
from lstm_data.batching.order.options import Order
from lstm_data.batching.order.rows import DEFAULT_SEED, resolve_shuffle, shuffled_order
from lstm_data.batching.order.rows_view import RowsView
from lstm_data.batching.spec.batch_spec import Batch, BatchSpec
from lstm_data.batching.spec.derived import mark_applied
from lstm_data.data.dataset import Dataset, InMemoryDataset
from lstm_data.errors import OptionError
from lstm_data.io.read_options import ReadOptions
from lstm_data._util.declared import SuggestsKeywords
from lstm_data._util.plural import counted

__all__ = ["Batches"]


class Batches(CompiledReads, OrderFigures, Splits, MadeFrom, Shards, EpochIteration, metaclass=SuggestsKeywords):
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

    #: renamed (an error naming the new spelling)
    shard_layout = OldAttribute()

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
        spec, order = legacy_options(spec, order, read, {}, "Batches", dict(
            batch_size=batch_size, shuffle=shuffle, seed=seed, drop_last=drop_last, weights=weights,
            bucket_by=bucket_by, bucket_window=bucket_window, block_rows=block_rows, window_rows=window_rows,
            read_ahead=read_ahead, cache=cache, max_elements=max_elements, bucket_lengths=bucket_lengths,
            max_shapes=max_shapes, sample=sample, policies=policies))
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

    @property
    def seed_drawn(self) -> bool:
        """Whether the seed was drawn here: never, ``seed=None`` is seed 0 (kept for older callers)."""
        return False

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
        index, epoch
            As for :meth:`batch`.

        Returns
        -------
        numpy.ndarray
            Row numbers of the dataset.
        """
        epoch = self._epoch_arg(epoch)
        slot = self._batch_slot(check_index(index, len(self)), epoch)
        return self.pipeline.rows_at(self.pipeline.positions(slot, epoch))

    # -- batches ----------------------------------------------------------------------------------
    def __getitem__(self, index: int) -> Batch:
        return self.batch(index)

    @shares_doc(BatchSource.batch)
    def batch(self, index: int, epoch: int | None = None) -> Batch:
        return self._batch(index, epoch, None)

    @shares_doc(BuildsInArena.batch_into)
    def batch_into(self, index: int, epoch: int, arena: np.ndarray) -> Batch:
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

    def _resumed_identity(self, state: Mapping[str, Any], step: int | None = None) -> dict[str, object] | None:
        if step is None:
            step = state_count(state.get("epoch"), "epoch") * len(self) + state_count(state.get("next_batch"),
                                                                                      "next_batch")
        return self.pipeline.resumed_identity(state.get("policies"), step)

    def _data_differences(self, state: Mapping[str, Any]) -> list[str]:
        return part_differences(self.pipeline.data_parts(), state)

    def __repr__(self) -> str:
        return (f"Batches({counted(len(self), 'batch')} of {self.batch_size}, {counted(self.n_rows, 'row')}, "
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

