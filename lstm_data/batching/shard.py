"""One rank's share of every epoch: :meth:`Batches.shard <lstm_data.batching.batches.Batches.shard>`.

Multi-GPU training runs one process per device (``torchrun``, ``torch.multiprocessing.spawn``,
one Keras process per device). Every rank builds the same ``Batches`` (same data,
spec, batch size and seed), so every rank makes the same order of epoch ``e``
from ``(seed, e)``, with no communication. Rank ``r`` of ``W`` then takes the
``r``-th of ``W`` equal, consecutive runs of that epoch's batches:

* disjoint: no batch (hence no row) is seen by two ranks in an epoch;
* equally long: ``len(shard) == len(batches) // world_size`` on every rank, so no
  rank waits in a collective for a batch that another rank does not have
  (``drop_last`` semantics: the last ``len(batches) % world_size`` batches of the
  epoch, which hold the short last batch if there is one, are left out; with
  ``shuffle`` they are other rows every epoch);
* consecutive: with ``shuffle="block"`` the batches of one read window mostly go
  to one rank, so each rank reads about ``1 / W`` of the data from disk.

The shard is a view: it shares the parent's dataset, caches and row orders.
"""
from __future__ import annotations

import threading
import warnings
from typing import TYPE_CHECKING, Any, Callable, Protocol

import numpy as np

from lstm_data._util.checks import check_count, check_index
from lstm_data.batching.epoch import EpochIteration

from lstm_data.batching.source import BuildsInArena

if TYPE_CHECKING:
    from lstm_data.batching.spec import Batch, BatchSpec, OutputSignature


class Shardable(Protocol):
    """What a shard reads off its parent (:class:`~lstm_data.batching.batches.Batches`)."""

    spec: BatchSpec
    epoch: int

    @property
    def batch_size(self) -> int: ...

    @property
    def shuffle(self) -> bool | str: ...

    @property
    def seed(self) -> int: ...

    @property
    def nan_to(self) -> float | None: ...

    def __len__(self) -> int: ...

    def batch(self, index: int, epoch: int | None = None) -> Batch: ...

    def rows_of(self, index: int, epoch: int | None = None) -> np.ndarray: ...

    def signature(self) -> dict[str, OutputSignature]: ...

    def _state_identity(self) -> dict[str, Any]: ...

__all__ = ["ShardedBatches", "Shardable", "check_shard"]


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
    """

    def __init__(self, batches: Shardable, rank: int, world_size: int) -> None:
        self.batches = batches
        self.rank, self.world_size = check_shard(rank, world_size)
        self.epoch = batches.epoch
        self._lock = threading.Lock()
        if len(batches) < self.world_size:
            warnings.warn(f"{len(batches)} batches per epoch for {self.world_size} ranks: every rank gets "
                          f"{len(self)} batches; use fewer ranks or a smaller batch size",
                          UserWarning, stacklevel=3)

    def __len__(self) -> int:
        return len(self.batches) // self.world_size

    def _parent_index(self, index: int) -> int:
        return self.rank * len(self) + check_index(index, len(self))

    def batch(self, index: int, epoch: int | None = None) -> Batch:
        """Batch ``index`` of this rank's share of ``epoch`` (default: the current one)."""
        epoch = self.epoch if epoch is None else check_count(epoch, "epoch")
        return self.batches.batch(self._parent_index(index), epoch=epoch)

    def batch_into(self, index: int, epoch: int, arena: Any) -> Batch:
        """:meth:`batch` built in ``arena`` when the parent can (see
        :class:`~lstm_data.batching.source.BuildsInArena`), else as :meth:`batch`."""
        epoch = check_count(epoch, "epoch")
        if isinstance(self.batches, BuildsInArena):
            return self.batches.batch_into(self._parent_index(index), epoch, arena)
        return self.batches.batch(self._parent_index(index), epoch=epoch)

    def __getitem__(self, index: int) -> Batch:
        return self.batch(index)

    def rows_of(self, index: int, epoch: int | None = None) -> np.ndarray:
        """The dataset rows of this rank's batch ``index`` of ``epoch``."""
        epoch = self.epoch if epoch is None else check_count(epoch, "epoch")
        return self.batches.rows_of(self._parent_index(index), epoch)

    def _next_epoch_job(self) -> Callable[[], object] | None:
        nxt = self.epoch + 1
        if self.batches.shuffle is False or len(self) == 0:
            return None
        return lambda: self.batches.rows_of(0, nxt)  # makes (and keeps) the next epoch's order

    # -- what adapters and users read off a batch sequence -------------------------------------
    @property
    def spec(self) -> BatchSpec:
        """The parent's spec."""
        return self.batches.spec

    @property
    def batch_size(self) -> int:
        """Rows per batch."""
        return self.batches.batch_size

    @property
    def shuffle(self) -> bool | str:
        """The parent's shuffle mode."""
        mode: bool | str = self.batches.shuffle
        return mode

    @property
    def nan_to(self) -> float | None:
        """The parent's ``nan_to``."""
        value: float | None = self.batches.nan_to
        return value

    @property
    def seed(self) -> int:
        """The parent's seed (the same on every rank)."""
        return self.batches.seed

    @property
    def n_rows(self) -> int:
        """Rows this rank sees per epoch (only the parent's short last batch can be short)."""
        n = len(self)
        if n == 0:
            return 0
        return (n - 1) * self.batch_size + len(self.rows_of(n - 1))

    def _state_identity(self) -> dict[str, Any]:
        return {**self.batches._state_identity(), "n_batches": len(self),
                "shard": [self.rank, self.world_size]}

    def signature(self) -> dict[str, OutputSignature]:
        """The parent's output signature."""
        return self.batches.signature()

    def __repr__(self) -> str:
        return (f"ShardedBatches(rank {self.rank} of {self.world_size}: {len(self)} of {len(self.batches)} "
                f"batches, epoch={self.epoch})")

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_lock"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
