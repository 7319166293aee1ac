"""What every batch sequence offers: the :class:`BatchSource` protocol, and its one optional capability.

:class:`~lstm_data.batching.epochs.batches.Batches`, its shards
(:class:`~lstm_data.batching.epochs.shard.ShardedBatches`) and stored batches
(:func:`lstm_data.open_batches`) are batch sources: a length, batch ``index`` of
any ``epoch``, an output signature, and a small iteration state. The Keras and
torch adapters take any batch source.

A source that can build a batch straight into a caller's buffer (an *arena*,
e.g. a shared-memory segment another process reads) also implements
:class:`BuildsInArena`; adapters check for it with ``isinstance`` and fall back
to :meth:`BatchSource.batch` otherwise.
"""
from __future__ import annotations

from typing import Any, Mapping, Protocol, runtime_checkable

from lstm_data.batching.spec.batch_spec import Batch, OutputSignature

__all__ = ["BatchSource", "BuildsInArena"]


@runtime_checkable
class BatchSource(Protocol):
    """A sequence of batches whose order is a function of ``(seed, epoch)``."""

    epoch: int

    def __len__(self) -> int:
        """Batches per epoch."""
        ...

    def batch(self, index: int, epoch: int | None = None) -> Batch:
        """Batch ``index`` of ``epoch`` (default: the current one); thread-safe."""
        ...

    def signature(self) -> dict[str, OutputSignature]:
        """Name, role, dtype and shape of every output."""
        ...

    def set_epoch(self, epoch: int) -> None:
        """Make ``epoch`` the current epoch."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """Where iteration stands, and what it is bound to."""
        ...

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resume from :meth:`state_dict` (refusing a state of other batches)."""
        ...


@runtime_checkable
class BuildsInArena(BatchSource, Protocol):
    """A batch source that can build a batch's arrays in a caller's buffer."""

    def batch_into(self, index: int, epoch: int, arena: Any) -> Batch:
        """Batch ``index`` of ``epoch`` with its arrays placed in ``arena`` where they fit.

        ``arena`` is a writable, C-contiguous buffer starting at a 64-byte aligned
        address; arrays that fit are views of it, the rest are allocated (the
        rule of :class:`lstm_data.kernels.BatchGather`).
        """
        ...
