"""Stored batches epoch after epoch, on any number of ranks: :class:`StoreEpochs`.

A store holds the batches of epoch 0 (:func:`~lstm_data.store.write.precompute`).
Opened with ``permute=True``, epoch ``e > 0`` serves them in a permutation made from
``(seed, e)`` alone, so every process that opens the store sees the same epochs.

:meth:`StoreEpochs.shard` deals each epoch's stored batches to ranks with the rules
of live batches (:class:`~lstm_data.batching.epochs.shard.ShardedBatches`, over the
same functions of :mod:`lstm_data.batching.epochs.resume`): equal steps on every rank
(``len(store) // world_size``, the few left over are the epoch's remainder), no
batch on two ranks, balanced by real elements with ``permute=True`` (consecutive
runs with ``permute=False``). A rank's state saved on ``W`` ranks resumes every
rank of a world of ``W'``: the batches the old world had not reached are dealt to
the new one, so every stored batch is served once in the epoch, and later epochs
are those of a fresh world of ``W'``. A store is made for no particular world size.

Real elements: a store records each batch's real elements (its rows, or with
``bucket_by`` that field's prongs, as live batches count them) in the array
``_index/elements``. A store written before it did has no such record: its batches
count as equal (dealt round robin: equal steps and exact resumption all the same).
"""
from __future__ import annotations

import hashlib
import json
import logging
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np
import zarr

from lstm_data._util.types import PlainDict, PlainMapping, PlainValue
from lstm_data._util.checks import check_count
from lstm_data._util.once_cache import OnceCache
from lstm_data.batching.epochs.iteration import EpochIteration
from lstm_data.batching.epochs.shard import ShardedBatches
from lstm_data.batching.epochs.resume import assignment_of
from lstm_data.batching.order.rows import shuffled_order
from lstm_data.errors import FormatError, OptionError
from lstm_data.io.ours.zarr import read_rows

if TYPE_CHECKING:
    from lstm_data.batching.spec.batch_spec import Batch, BatchSpec, OutputSignature

__all__ = ["StoreEpochs", "ELEMENTS", "store_digest"]

_log = logging.getLogger("lstm_data")

#: the ``_index`` array of a store holding each stored batch's real elements
ELEMENTS = "elements"
#: what a store's saved state is bound to: the recorded settings, spec and data fingerprint
_IDENTITY_KEYS = ("spec", "batch_spec", "batch_size", "seed", "shuffle", "bucketing", "order", "fingerprint",
                  "n_batches", "n_rows")


def store_digest(meta: Mapping[str, Any]) -> str:
    """One digest of what a store's metadata records about its batches (spec, order, data, counts).

    Parameters
    ----------
    meta
        The store's metadata (:func:`~lstm_data.store.read.read_metadata`).

    Returns
    -------
    str
        32 hex digits.
    """
    text = json.dumps({k: meta.get(k) for k in _IDENTITY_KEYS}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def stored_elements(index: zarr.Group, n_batches: int, name: str) -> np.ndarray | None:
    """The recorded real elements of every stored batch, or ``None`` for a store written without them.

    Raises
    ------
    FormatError
        The record is not one int per batch.
    """
    if ELEMENTS not in index:
        return None
    node = index[ELEMENTS]
    if not isinstance(node, zarr.Array) or node.shape != (n_batches,):
        raise FormatError(f"_index/{ELEMENTS} is not one count per stored batch ({n_batches}): the store is "
                          "damaged", file=f"{name}/_index/{ELEMENTS}")
    return np.asarray(read_rows(node, 0, n_batches, file=name), dtype=np.int64)


class StoreEpochs(EpochIteration):
    """The epochs, shards and saved states of stored batches (the base of
    :class:`~lstm_data.store.read.PrecomputedBatches`).

    A subclass sets ``meta``, ``spec``, ``seed``, ``batch_size``, ``permute`` and
    ``epoch``, provides ``__len__`` and ``batch``, and calls :meth:`_setup_epochs`
    when it opens the store.
    """

    meta: dict[str, Any]
    spec: BatchSpec
    seed: int
    batch_size: int
    permute: bool

    if TYPE_CHECKING:  # provided by the subclass
        def batch(self, index: int, epoch: int | None = None) -> Batch: ...

        def signature(self) -> dict[str, OutputSignature]: ...

    def _setup_epochs(self, index: zarr.Group, name: str) -> None:
        """Read the recorded element counts from the store's ``_index`` group; start the order cache."""
        self._elements = stored_elements(index, len(self), name)
        self._slots: OnceCache[tuple[int, bool], np.ndarray] = OnceCache(keep=2)
        self._digest = store_digest(self.meta)

    def slots(self, epoch: int) -> np.ndarray:
        """The stored batch at each position of ``epoch`` (an int >= 0): a permutation of the
        stored batches (epoch 0, and every epoch without ``permute``: in the stored order)."""
        epoch = check_count(epoch, "epoch")
        n, shuffled = len(self), self.permute and epoch > 0
        return self._slots.get((epoch, shuffled), lambda: shuffled_order(n, self.seed, epoch) if shuffled
                               else np.arange(n, dtype=np.intp))

    @property
    def recorded_elements(self) -> np.ndarray | None:
        """The real elements the store records for each stored batch, in stored order (``None``:
        a store written before stores recorded them)."""
        return self._elements

    def batch_elements(self, epoch: int) -> np.ndarray:
        """Real elements of every batch of ``epoch``, as
        :meth:`lstm_data.batching.epochs.batches.Batches.batch_elements` gives them: the
        recorded counts, or ones for a store written before stores recorded them."""
        if self._elements is None:
            return np.ones(len(self), dtype=np.int64)
        out: np.ndarray = self._elements[self.slots(epoch)]
        return out

    def rows_of(self, index: int, epoch: int | None = None) -> np.ndarray:
        """Not known: a store keeps its batches, not the rows of the data they were built from.

        Parameters
        ----------
        index, epoch
            A batch of an epoch.

        Returns
        -------
        numpy.ndarray
            Never: this raises.

        Raises
        ------
        TypeError
            Always (count real elements with :meth:`batch_elements`).
        """
        raise TypeError("a precomputed store keeps batches, not the rows of the data they were built from; "
                        "Batches(dataset, spec, order).rows_of gives them")

    def stats(self, epoch: int | None = None, *, of: object = None) -> PlainDict:
        """Not known: the order's figures need the rows of the data, which a store does not keep.

        Parameters
        ----------
        epoch, of
            As for :meth:`Batches.stats <lstm_data.Batches.stats>`.

        Returns
        -------
        dict
            Never: this raises.

        Raises
        ------
        TypeError
            Always.
        """
        raise TypeError("a precomputed store keeps batches, not the rows of its data: the order's figures "
                        "come from Batches(dataset, spec, order).stats()")

    def figures_of(self, epoch: int, indices: np.ndarray) -> PlainDict:
        """What a store knows of its batches ``indices`` of ``epoch``.

        Their number, and their real elements when the store records them (``None``
        else); the order's figures need the rows of the data, which a store does not keep.

        Parameters
        ----------
        epoch
            An int >= 0.
        indices
            Batch indices of the epoch.

        Returns
        -------
        dict
            ``epoch``, ``batches`` and ``elements``.
        """
        elements = None if self._elements is None else int(self.batch_elements(epoch)[indices].sum())
        return {"epoch": epoch, "batches": len(indices), "elements": elements}

    def epoch_figures(self, epoch: int) -> PlainDict:
        """:meth:`figures_of` every batch of ``epoch`` (``epoch``, ``batches`` and ``elements``), logged at
        its end; as :meth:`EpochIteration.epoch_figures <lstm_data.batching.epochs.iteration.EpochIteration.epoch_figures>`."""
        return self.figures_of(epoch, np.arange(len(self), dtype=np.intp))

    @property
    def varies_by_epoch(self) -> bool:
        """Whether epochs differ: the stored batches are permuted per epoch (``permute``)."""
        return self.permute and len(self) > 1

    @property
    def shard_assignment(self) -> str:
        """How shards deal the stored batches: balanced rounds when permuted, else consecutive runs."""
        return assignment_of(self.permute)

    @property
    def nan_to(self) -> float | None:
        """The spec's ``nan_to``."""
        value: float | None = self.spec.nan_to
        return value

    def shard(self, rank: int, world_size: int) -> ShardedBatches:
        """Rank ``rank``'s share of every epoch of the stored batches (one process per GPU).

        Every rank opens the same store and takes its share: ``len(store) // world_size``
        batches of each epoch, balanced by real elements with ``permute=True``. Its
        state resumes on a world of any size (see the module notes). ``rank`` and ``world_size``
        as for :meth:`Batches.shard <lstm_data.Batches.shard>`; the rank's batches have the
        interface of the store.
        """
        return ShardedBatches(self, rank, world_size)

    def identity(self) -> dict[str, object]:
        """The seed, the per-epoch shuffle, the stored batch count and one digest of the store's record
        (``n_batches`` is left to samplers, which record their own share's)."""
        return {"seed": self.seed, "permute": self.permute, "stored_batches": len(self), "identity": self._digest}

    def load_state_dict(self, state: PlainMapping) -> None:
        """Resume from :meth:`state_dict` of the same store: the next :meth:`iter` starts at its ``next_batch``.

        Parameters
        ----------
        state
            A :meth:`state_dict` of this store (or of its ``shard(0, 1)``). A state
            saved before stores recorded their identity (it holds only the batch
            count) resumes with its batch count checked, and a note in the log.

        Raises
        ------
        OptionError
            The state was saved by another store or another ``permute`` (each
            difference is named), by a shard of several ranks (load it into
            :meth:`shard`), or is not such a state.
        """
        if isinstance(state, Mapping) and (state.get("world_size", 1) != 1 or state.get("history")):
            raise OptionError(f"a state saved by a shard of {state.get('world_size')} ranks: load it into "
                              "stored.shard(rank, world_size) (shard(0, 1) for one process)")
        super().load_state_dict(self.migrate_state(state))

    def migrate_state(self, state: PlainValue) -> PlainValue:
        """A store state of an earlier release in this release's form.

        See :meth:`~lstm_data.batching.epochs.iteration.EpochIteration.migrate_state`.

        A state saved before stores recorded their identity holds only the store's batch
        count (``n_batches``): it is checked, and this store's identity filled in. A state
        that recorded the identity under earlier names (``shuffle`` for ``permute``,
        ``n_batches`` for ``stored_batches``) gets the current names. Either is noted in the log.

        Parameters
        ----------
        state
            A state of this store (or of a shard of it).

        Returns
        -------
        Any
            The state to check and load.

        Raises
        ------
        OptionError
            A state of the first kind whose batch count is not this store's.
        """
        if not isinstance(state, Mapping):
            return state
        if "identity" not in state:
            if "n_batches" not in state:
                return state
            if state["n_batches"] != len(self):
                raise OptionError(f"state saved by another batch sequence: n_batches: state has "
                                  f"{state['n_batches']!r}, this store {len(self)}")
            _log.info("resuming a state saved by an earlier release of lstm_data, which recorded only the "
                      "store's batch count for it (checked)")
            return {**self.identity(), **state}
        renamed = {new: state[old] for new, old in (("permute", "shuffle"), ("stored_batches", "n_batches"))
                   if new not in state and old in state}
        if not renamed:
            return state
        _log.info("resuming a store state of an earlier release, which named %s otherwise",
                  " and ".join(sorted(renamed)))
        return {**state, **renamed}
