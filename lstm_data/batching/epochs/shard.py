"""One rank's share of every epoch: :meth:`Batches.shard <lstm_data.batching.epochs.batches.Batches.shard>`.

Multi-GPU training runs one process per device (``torchrun``, ``torch.multiprocessing.spawn``,
one Keras process per device). Every rank builds the same ``Batches`` (same data,
spec, order and seed), so every rank makes the same order of epoch ``e`` from
``(seed, e)``, with no communication, and deals its batches to the ranks the same
way (see :mod:`lstm_data.batching.epochs.resume`):

* disjoint: no batch (hence no row) is seen by two ranks in an epoch;
* equal steps: ``len(shard) == len(batches) // world_size`` on every rank and in
  every epoch, whatever the batches hold (buckets, weights, sampling, budget
  batches), so no rank waits in a collective for a batch another rank does not
  have. The last ``len(batches) % world_size`` batches of the epoch (fewer than
  ``world_size``; they hold the short last batch if there is one) are its
  remainder, left out; with ``shuffle`` they are other rows every epoch;
* balanced: with ``shuffle=True`` every step of the ranks takes a round of
  ``world_size`` batches of about the same size, the largest going to the rank
  with the fewest real elements so far (near ties broken at random per seed and
  epoch), so every rank sees about the same number of real elements (rows, or
  with ``bucket_by`` that field's prongs) and, over epochs, every kind of batch;
* local: with ``shuffle="block"`` (and ``False``) rank ``r`` takes the ``r``-th of
  ``world_size`` consecutive runs of the order, so each rank reads about
  ``1 / world_size`` of the data from disk.

Elastic resumption: :meth:`ShardedBatches.state_dict` of any rank, saved when every
rank stands at the same step, can be loaded by every rank of a world of another
size; the batches the old world had not reached are dealt to the new ranks, so
every batch of the epoch is seen once over both worlds, and later epochs are
those of a fresh world of the new size.

The shard is a view: it shares the parent's dataset, caches and row orders.
"""
from __future__ import annotations

import threading
import warnings
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol

import numpy as np

from lstm_data._util.types import PlainDict, PlainMapping, PlainValue
from lstm_data._util.checks import check_count, check_index
from lstm_data._util.deprecation import OldAttribute
from lstm_data._util.forward import Forward
from lstm_data._util.once_cache import OnceCache
from lstm_data.batching.epochs.identity import STATE_FORMAT
from lstm_data.batching.epochs.iteration import EpochIteration
from lstm_data.batching.epochs.resume import (
    batch_elements,
    deal,
    history_of,
    remaining_pool,
    state_count,
)
from lstm_data.batching.epochs.source import BatchSource, BuildsInArena
from lstm_data.batching.order.stats import Picked
from lstm_data.errors import OptionError

if TYPE_CHECKING:
    from lstm_data.batching.spec.batch_spec import Batch, BatchSpec, OutputSignature


class Shardable(BatchSource, Protocol):
    """What a shard reads off its parent (:class:`~lstm_data.batching.epochs.batches.Batches`): a batch
    source with a seed, a way of dealing its batches (:attr:`shard_assignment`) and the figures below."""

    @property
    def seed(self) -> int: ...

    @property
    def shard_assignment(self) -> str: ...

    def rows_of(self, index: int, epoch: int | None = None) -> np.ndarray: ...

    def stats(self, epoch: int | None = None, *, of: Any = None) -> PlainDict: ...

    def figures_of(self, epoch: int, indices: np.ndarray) -> PlainDict: ...

    def _legacy_identities(self, state_format: int) -> set[str]: ...

    def migrate_state(self, state: PlainValue) -> PlainValue: ...

    def _data_differences(self, state: Mapping[str, Any]) -> list[str]: ...

    def _resumed_identity(self, state: Mapping[str, Any], step: int | None = None) -> dict[str, object] | None: ...

__all__ = ["ShardedBatches", "Shardable", "check_shard", "batch_elements", "left_out_message"]


def left_out_message(epoch: int, pool: int, old_world: int, world: int, n_batches: int) -> str:
    """What a resumption onto ``world`` ranks leaves out of ``epoch`` when ``pool`` batches are left.

    Parameters
    ----------
    epoch
        The resumed epoch.
    pool
        Batches of the epoch that no earlier world served.
    old_world, world
        The saving world's size and this one's.
    n_batches
        Batches of the whole epoch.

    Returns
    -------
    str
        The warning: how many batches are left out, why, and the world sizes that serve them all.
    """
    steps, out = divmod(pool, world)
    fits = max(d for d in range(1, min(pool, world) + 1) if pool % d == 0)
    serve = (f"resume on {fits} ranks (or another divisor of {pool}) to serve them all" if fits > 1 else
             f"of the world sizes up to {world}, only 1 divides {pool}")
    left = f"{out} batch is" if out == 1 else f"{out} batches are"
    return (f"resuming epoch {epoch} ({n_batches} batches) on {world} ranks, saved on {old_world}: {pool} batches "
            f"are left to serve and every rank takes the same number of steps ({steps}), so {left} left out of "
            f"this epoch (their rows wait for the next epoch, which is whole again); {serve}")


def check_shard(rank: Any, world_size: Any) -> tuple[int, int]:
    """``(rank, world_size)`` as ints, with ``0 <= rank < world_size``.

    Raises
    ------
    ValueError
        Either is not an int, ``world_size < 1``, or ``rank`` is outside ``[0, world_size)``.
    """
    world = check_count(world_size, "world_size")
    if world < 1:
        raise ValueError(f"world_size must be >= 1, got {world_size!r}")
    r = check_count(rank, "rank")
    if r >= world:
        raise ValueError(f"rank must be in [0, world_size) = [0, {world}), got {rank!r}")
    return r, world


class ShardedBatches(EpochIteration):
    """Rank ``rank``'s batches of every epoch of ``batches`` (see the module docstring).

    Parameters
    ----------
    batches
        The full sequence, built identically on every rank.
    rank, world_size
        This process's rank and the number of ranks.

    Attributes
    ----------
    batches : Batches
        The parent (any :class:`Shardable`).
    rank, world_size : int
    epoch : int
        This view's current epoch (0 first), independent of the parent's.
    assignment : str
        ``"rounds"`` (balanced, for ``shuffle=True``) or ``"runs"`` (consecutive).
    """

    def __init__(self, batches: Shardable, rank: int, world_size: int) -> None:
        self.batches = batches
        self.rank, self.world_size = check_shard(rank, world_size)
        self.epoch = batches.epoch
        self.assignment = batches.shard_assignment
        #: the earlier worlds of epoch ``_history_epoch`` (set when a state of another world is loaded)
        self._history: tuple[tuple[int, int], ...] = ()
        self._history_epoch = -1
        self._setup_runtime()
        if len(batches) < self.world_size:
            warnings.warn(f"{len(batches)} batches per epoch for {self.world_size} ranks: every rank gets "
                          f"{len(self)} batches; use fewer ranks or a smaller batch size",
                          UserWarning, stacklevel=3)

    def _setup_runtime(self) -> None:
        self._lock = threading.Lock()
        self._deals: OnceCache[tuple[int, tuple[tuple[int, int], ...]], tuple[np.ndarray, int]] = OnceCache(keep=2)

    def __len__(self) -> int:
        return len(self.batches) // self.world_size

    # -- the deal --------------------------------------------------------------------------------
    def set_epoch(self, epoch: int) -> None:
        """Jump to ``epoch``, from its first batch, as a fresh world of this size deals it.

        Parameters
        ----------
        epoch
            An int >= 0.
        """
        super().set_epoch(epoch)
        with self._lock:
            self._history, self._history_epoch = (), -1

    def _history_for(self, epoch: int) -> tuple[tuple[int, int], ...]:
        return self._history if epoch == self._history_epoch else ()

    def _lane(self, epoch: int) -> tuple[np.ndarray, int]:
        """This rank's parent batches of ``epoch`` and the step its lane starts at."""
        history = self._history_for(epoch)
        return self._deals.get((epoch, history), lambda: self._make_lane(epoch, history))

    def _make_lane(self, epoch: int, history: tuple[tuple[int, int], ...]) -> tuple[np.ndarray, int]:
        n = len(self.batches)
        if self.assignment == "runs" and not history:
            lane = np.arange(self.rank * len(self), (self.rank + 1) * len(self), dtype=np.intp)
            return lane, 0
        costs = self.batches.batch_elements(epoch) if self.assignment == "rounds" else np.ones(n, np.int64)
        key = (self.batches.seed, epoch)
        pool = remaining_pool(costs, history, self.assignment, key)
        lanes = deal(costs[pool], self.world_size, self.assignment, (*key, len(history)))
        lane = pool[lanes[self.rank]]
        return lane, len(self) - len(lane)

    def parent_indices(self, epoch: int | None = None) -> np.ndarray:
        """The parent's batches this rank takes in ``epoch``, in step order.

        Parameters
        ----------
        epoch
            As for :meth:`batch`.

        Returns
        -------
        numpy.ndarray
            Batch indices of :attr:`batches`. After a state of another world was
            loaded, the resumed epoch holds only the batches left to this rank: its
            steps start at :meth:`len` minus their number.
        """
        epoch = self.epoch if epoch is None else check_count(epoch, "epoch")
        lane, _ = self._lane(epoch)
        return lane.copy()

    def batch_elements(self, epoch: int) -> np.ndarray:
        """Real elements of each batch this rank serves in ``epoch``, in step order.

        Parameters
        ----------
        epoch
            The epoch.

        Returns
        -------
        numpy.ndarray
            int64, one per batch of :meth:`parent_indices` (what a shard of this shard balances).
        """
        epoch = check_count(epoch, "epoch")
        elements: np.ndarray = np.asarray(self.batches.batch_elements(epoch), dtype=np.int64)
        mine: np.ndarray = elements[self.parent_indices(epoch)]
        return mine

    def _parent_index(self, index: int, epoch: int) -> int:
        n = len(self)
        if isinstance(index, (int, np.integer)) and n <= index < n + len(self.batches):
            return int(index) - n  # a parent batch by its own index (the torch sampler's resumed keys)
        i = check_index(index, n)
        lane, start = self._lane(epoch)
        if i < start:
            raise IndexError(f"batch {i} of epoch {epoch} was dealt to the world this run resumed from; "
                             f"this world's share of the epoch starts at batch {start}")
        return int(lane[i - start])

    def sampler_key(self, epoch: int, index: int) -> tuple[int, int]:
        """The key ``(epoch, i)`` that :meth:`batch` of any copy of this shard maps to step ``index``.

        Equal to ``(epoch, index)`` unless ``epoch`` was resumed from another world:
        then ``i`` names the parent's batch itself (``len(self) + parent index``), so
        copies made before the state was loaded (``DataLoader`` worker processes)
        build the right batch.

        Parameters
        ----------
        epoch, index
            The epoch and this rank's step in it.

        Returns
        -------
        tuple of int
            The key.
        """
        if not self._history_for(epoch):
            return epoch, index
        return epoch, len(self) + self._parent_index(index, epoch)

    # -- batches ---------------------------------------------------------------------------------
    def batch(self, index: int, epoch: int | None = None) -> Batch:
        """Batch ``index`` of this rank's share of ``epoch`` (default: the current one).

        Parameters
        ----------
        index
            This rank's step; ``len(self) + p`` names the parent's batch ``p``
            (see :meth:`sampler_key`).
        epoch
            As for :meth:`BatchSource.batch <lstm_data.batching.epochs.source.BatchSource.batch>`.

        Returns
        -------
        tuple of dict
            What the parent's ``batch`` returns.
        """
        epoch = self.epoch if epoch is None else check_count(epoch, "epoch")
        return self.batches.batch(self._parent_index(index, epoch), epoch=epoch)

    def batch_into(self, index: int, epoch: int, arena: Any) -> Batch:
        """:meth:`batch` built in ``arena`` when the parent can, else as :meth:`batch`.

        Parameters
        ----------
        index, epoch
            As for :meth:`batch`.
        arena
            The buffer (see :class:`~lstm_data.batching.epochs.source.BuildsInArena`).

        Returns
        -------
        tuple of dict
            ``(inputs, targets, weights)``: output name -> array.
        """
        epoch = check_count(epoch, "epoch")
        if isinstance(self.batches, BuildsInArena):
            return self.batches.batch_into(self._parent_index(index, epoch), epoch, arena)
        return self.batches.batch(self._parent_index(index, epoch), epoch=epoch)

    def __getitem__(self, index: int) -> Batch:
        return self.batch(index)

    def rows_of(self, index: int, epoch: int | None = None) -> np.ndarray:
        """The dataset rows of this rank's batch ``index`` of ``epoch``.

        Parameters
        ----------
        index, epoch
            As for :meth:`batch`: a step of this rank's share, and its epoch.

        Returns
        -------
        numpy.ndarray
            Row numbers of the dataset, in batch order.
        """
        epoch = self.epoch if epoch is None else check_count(epoch, "epoch")
        return self.batches.rows_of(self._parent_index(index, epoch), epoch)

    def _next_epoch_job(self) -> Callable[[], object] | None:
        nxt = self.epoch + 1
        if not self.batches.varies_by_epoch or len(self) == 0:
            return None
        return lambda: self._lane(nxt)  # the next epoch's order and its deal, made (and kept) ahead

    # -- checkpoints -----------------------------------------------------------------------------
    def state_dict(self) -> PlainDict:
        """Where this rank stands, to save with the model checkpoint.

        Returns
        -------
        dict
            ``epoch``, ``next_batch``, ``world_size``, ``history`` (the earlier worlds
            of this epoch, ``[world_size, steps]`` each) and what identifies the batches
            (settings and one digest of spec, order and data; not the rank, the world
            size or the batch count): plain ints and strings, for ``torch.save`` or JSON.
            Any rank's state resumes every rank of any world size.
        """
        return self.state_at(self.epoch, self._next_batch)

    def state_at(self, epoch: int, next_batch: int) -> PlainDict:
        """:meth:`state_dict` as it is when ``next_batch`` steps of ``epoch`` are done.

        Parameters
        ----------
        epoch, next_batch
            The epoch and the steps of it done (for a sampler that counts its own).

        Returns
        -------
        dict
            The state.
        """
        history = [list(h) for h in self._history_for(epoch)]
        return {"state_format": STATE_FORMAT, "epoch": epoch, "next_batch": next_batch,
                **self.identity(), "world_size": self.world_size, "history": history}

    def load_state_dict(self, state: PlainMapping) -> None:
        """Resume from a :meth:`state_dict` of any rank of a world of any size.

        All ranks of the saving world must have stood at the same step (as in
        synchronous data-parallel training). With the same world size the epoch goes
        on as it would have; with another, the batches the old world had not reached
        are dealt to this world's ranks and :meth:`iter` starts at the first of them.

        Parameters
        ----------
        state
            A state of :meth:`state_dict` (or of the unsharded
            :class:`~lstm_data.batching.epochs.batches.Batches`, a world of one).

        Raises
        ------
        OptionError
            The state was saved by batches of another seed, order, spec or data (each
            differing setting is named), or is not such a state.

        Warns
        -----
        UserWarning
            On another world size, the batches left to serve do not divide among this
            world's ranks: the rest are left out of the epoch (the warning names how many).
        """
        state = self.batches.migrate_state(state)
        if not isinstance(state, Mapping) or "epoch" not in state or "next_batch" not in state:
            raise OptionError(f"not a batch sequence state (need epoch and next_batch): {state!r}")
        self._check_identity(state)
        world, history = history_of(state)
        epoch = state_count(state["epoch"], "epoch")
        next_batch = state_count(state["next_batch"], "next_batch")
        n_full = len(self.batches) // world
        if history:
            costs_pool = self._pool_size(epoch, history)
            start = n_full - costs_pool // world
        else:
            start = 0
        if not start <= next_batch <= n_full:
            raise OptionError(f"next_batch {next_batch} is outside the steps [{start}, {n_full}] that the "
                              f"saving world of {world} ranks had in epoch {epoch}")
        if world == self.world_size:
            new_history, resume_at = tuple(history), next_batch
        else:
            new_history = (*history, (world, next_batch - start))
            pool = self._pool_size(epoch, new_history)
            resume_at = len(self) - pool // self.world_size
            if pool % self.world_size:
                warnings.warn(left_out_message(epoch, pool, world, self.world_size, len(self.batches)),
                              UserWarning, stacklevel=2)
        with self._lock:
            self.epoch = epoch
            self._history, self._history_epoch = new_history, epoch
            self._next_batch = self._resume_at = resume_at

    @property
    def resume_point(self) -> tuple[int, int]:
        """``(epoch, step)`` where the next :meth:`iter` starts (set by :meth:`load_state_dict`)."""
        return self.epoch, self._resume_at

    def _pool_size(self, epoch: int, history: tuple[tuple[int, int], ...] | list[tuple[int, int]]) -> int:
        n = len(self.batches)
        costs = self.batches.batch_elements(epoch) if self.assignment == "rounds" else np.ones(n, np.int64)
        return len(remaining_pool(costs, history, self.assignment, (self.batches.seed, epoch)))

    # -- what adapters and users read off a batch source (the parent's settings: .batches) ------
    spec: Forward[ShardedBatches, BatchSpec] = Forward(lambda s: s.batches.spec, "The parent's spec.")
    varies_by_epoch: Forward[ShardedBatches, bool] = Forward(
        lambda s: s.batches.varies_by_epoch, "Whether the parent's epochs differ (then so do this share's).")

    #: the parent's settings are read as ``shard.batches.seed`` etc. (these names: errors naming it)
    batch_size = OldAttribute()
    shuffle = OldAttribute()
    nan_to = OldAttribute()
    seed = OldAttribute()
    layout = OldAttribute()

    @property
    def n_rows(self) -> int:
        """Rows this rank sees in the current epoch."""
        return int(sum(len(self.batches.rows_of(int(p), self.epoch)) for p in self.parent_indices()))

    def _legacy_identities(self, state_format: int) -> set[str]:
        return self.batches._legacy_identities(state_format)

    def _data_differences(self, state: Mapping[str, Any]) -> list[str]:
        return self.batches._data_differences(state)

    def _resumed_identity(self, state: Mapping[str, Any], step: int | None = None) -> dict[str, object] | None:
        # ranks serve an epoch's batches out of order, and its deal weighs every batch of it: a changed
        # policy is taken from the first epoch the saving world had not begun
        epoch = state_count(state.get("epoch"), "epoch")
        begun = state_count(state.get("next_batch"), "next_batch") > 0 or bool(history_of(state)[1])
        identity = self.batches._resumed_identity(state, (epoch + begun) * len(self.batches))
        if identity is not None:
            identity.pop("world_size", None)
        return identity

    def identity(self) -> dict[str, object]:
        identity = dict(self.batches.identity())
        identity.pop("world_size", None)
        return identity

    def stats(self, epoch: int | None = None) -> PlainDict:
        """What this rank's share of an epoch costs and how well it mixes.

        Parameters
        ----------
        epoch
            An int >= 0; ``None``: the current epoch.

        Returns
        -------
        dict
            The parent's ``stats`` of this rank's batches of ``epoch`` (those left to it,
            in an epoch resumed from another world): padding per real element, rows cut
            by ``max_len`` and mixing.
        """
        epoch = self.epoch if epoch is None else check_count(epoch, "epoch")
        return self.batches.stats(epoch, of=Picked(self.batches, self.parent_indices(epoch)))

    def epoch_figures(self, epoch: int) -> PlainDict:
        """What the parent knows of this rank's batches of ``epoch`` (its ``figures_of`` them): in an
        epoch resumed from another world, of the batches left to this rank. Parameters as
        :meth:`EpochIteration.epoch_figures <lstm_data.batching.epochs.iteration.EpochIteration.epoch_figures>`;
        see :class:`~lstm_data.batching.order.stats.GivesFigures`."""
        return self.batches.figures_of(epoch, self.parent_indices(epoch))

    def signature(self) -> dict[str, OutputSignature]:
        """The parent's output signature.

        Returns
        -------
        dict of str to OutputSignature
            Output name -> name, role, dtype and shape.
        """
        return self.batches.signature()

    def __repr__(self) -> str:
        return (f"ShardedBatches(rank {self.rank} of {self.world_size}: {len(self)} of {len(self.batches)} "
                f"batches, epoch={self.epoch})")

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("_lock", "_deals")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        if "layout" in state:  # pickled by a release that named the assignment so
            state["assignment"] = state.pop("layout")
        self.__dict__.update(state)
        self._setup_runtime()

