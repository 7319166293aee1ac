"""What every batch sequence offers: the :class:`BatchSource` protocol, and its optional capabilities.

:class:`~lstm_data.batching.epochs.batches.Batches`, its shards
(:class:`~lstm_data.batching.epochs.shard.ShardedBatches`) and stored batches
(:func:`lstm_data.open_batches`) are batch sources: a length, batch ``index`` of
any ``epoch``, the spec and its output signature, and a small iteration state.
The Keras and torch adapters take any batch source and ask nothing else of it;
shards wrap any of them (:meth:`BatchSource.batch_elements` is what they balance,
:meth:`BatchSource.identity` what their states are checked against). Exported as
``lstm_data.BatchSource``.

Two capabilities some sources add, each a protocol the adapters check with
``isinstance`` (never by probing attributes):

* :class:`BuildsInArena`: builds a batch straight into a caller's buffer (an
  *arena*, e.g. a shared-memory segment another process reads); the others are
  asked for :meth:`BatchSource.batch`.
* :class:`ShardSource`: one rank's share of a world of ranks, whose state resumes
  on a world of another size (a torch sampler then draws its keys through it).
"""
from __future__ import annotations

from typing import Any, Mapping, Protocol, runtime_checkable

import numpy as np

from lstm_data._util.types import PlainDict, PlainMapping
from lstm_data.batching.spec.batch_spec import Batch, BatchSpec, OutputSignature

__all__ = ["BatchSource", "BuildsInArena", "ShardSource"]


@runtime_checkable
class BatchSource(Protocol):
    """A sequence of batches whose order is a function of ``(seed, epoch)``.

    Any object with the members below is a batch source (``isinstance`` checks
    them); the protocol itself is never instantiated.

    Other Parameters
    ----------------
    *args, **kwargs : Any
        None taken: a protocol has no constructor of its own (instantiating it raises
        ``TypeError``).

    Attributes
    ----------
    epoch : int
        The current epoch: the one :meth:`batch` serves when given none.
    """

    epoch: int

    @property
    def spec(self) -> BatchSpec:
        """What a batch looks like (with bucketing: the spec the batches are built with)."""
        ...

    @property
    def varies_by_epoch(self) -> bool:
        """Whether epochs differ: batch ``i`` of two epochs may hold other rows (or other noise)."""
        ...

    def __len__(self) -> int:
        """Batches per epoch."""
        ...

    def batch(self, index: int, epoch: int | None = None) -> Batch:
        """Batch ``index`` of ``epoch`` (default: the current :attr:`epoch`), which stays as it is.

        ``b.batch(i, epoch=e)`` equals ``b.set_epoch(e); b[i]`` without changing
        ``b.epoch``: the order of an epoch is a pure function of ``(seed, epoch)``.
        Safe to call from several threads at once, for one epoch or different ones;
        adapters use it to tie every batch to its epoch (e.g. a torch sampler's
        ``(epoch, i)`` keys).

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
        ...

    def signature(self) -> dict[str, OutputSignature]:
        """Name, role, dtype and shape of every output.

        Returns
        -------
        dict of str to OutputSignature
            Output name -> its signature (``None`` in a shape where it varies).
        """
        ...

    def set_epoch(self, epoch: int) -> None:
        """Make ``epoch`` the current epoch.

        Parameters
        ----------
        epoch
            An int >= 0.
        """
        ...

    def batch_elements(self, epoch: int) -> np.ndarray:
        """Real elements of every batch of ``epoch``: what shards balance.

        Parameters
        ----------
        epoch
            Any epoch (an int >= 0), not only the current one.

        Returns
        -------
        numpy.ndarray
            One int64 per batch, in the epoch's order.
        """
        ...

    def identity(self) -> dict[str, object]:
        """What a saved state must match (settings and digests of spec and data), as plain values.

        Returns
        -------
        dict
            Setting or digest name -> plain value.
        """
        ...

    def state_dict(self) -> PlainDict:
        """Where iteration stands, and what it is bound to.

        Returns
        -------
        dict
            Plain values, for :meth:`load_state_dict`.
        """
        ...

    def load_state_dict(self, state: PlainMapping) -> None:
        """Resume from :meth:`state_dict` (refusing a state of other batches).

        Parameters
        ----------
        state
            A :meth:`state_dict` of batches of the same settings and data.
        """
        ...


@runtime_checkable
class BuildsInArena(BatchSource, Protocol):
    """A batch source that can build a batch's arrays in a caller's buffer."""

    def batch_into(self, index: int, epoch: int, arena: np.ndarray) -> Batch:
        """Batch ``index`` of ``epoch`` with its arrays placed in ``arena`` where they fit.

        ``arena`` is a writable, C-contiguous buffer starting at a 64-byte aligned
        address (e.g. shared memory another process reads); arrays that fit are
        views of it, the rest are allocated (the rule of
        :class:`lstm_data.kernels.BatchGather`).

        Parameters
        ----------
        index, epoch
            As for :meth:`batch`.
        arena
            The buffer.

        Returns
        -------
        tuple of dict
            What :meth:`batch` returns, its arrays that fit as views of ``arena``.
        """
        ...


@runtime_checkable
class ShardSource(BatchSource, Protocol):
    """One rank's share of every epoch, resumable on a world of another size.

    Attributes
    ----------
    rank, world_size : int
        This share's rank and the number of ranks.
    """

    rank: int
    world_size: int

    @property
    def resume_point(self) -> tuple[int, int]:
        """``(epoch, step)`` where iteration resumes after :meth:`load_state_dict`."""
        ...

    def sampler_key(self, epoch: int, index: int) -> tuple[int, int]:
        """The key ``(epoch, i)`` whose :meth:`batch` is step ``index`` of ``epoch`` in any copy."""
        ...

    def state_at(self, epoch: int, next_batch: int) -> dict[str, Any]:
        """:meth:`state_dict` as it is when ``next_batch`` steps of ``epoch`` are done."""
        ...
