"""Batch ``i`` of epoch ``e`` from any batch sequence: what the Keras and torch adapters serve.

The adapters tie every batch to an explicit epoch instead of reading the
sequence's current :attr:`epoch` when a worker gets to it, so a batch built
ahead, on a thread or in a persistent worker process, always belongs to the
epoch it was asked for.
"""
from __future__ import annotations

import threading
from typing import Any

from lstm_data._util import forksafe
from lstm_data._util.checks import check_count
from lstm_data.batching.epochs.source import BuildsInArena

__all__ = ["batch_of"]

#: serialises the fallback of sequences without ``batch(index, epoch=)``
_LOCK = threading.Lock()


def _reset_lock() -> None:
    global _LOCK
    _LOCK = threading.Lock()  # a parent thread may have held it at the fork


forksafe.on_fork_in_child(_reset_lock)


def batch_of(batches: Any, index: int, epoch: int, arena: Any = None) -> Any:
    """Batch ``index`` of ``epoch`` of ``batches``, leaving ``batches.epoch`` as it was.

    Parameters
    ----------
    batches
        A :class:`~lstm_data.batching.epochs.batches.Batches` (its thread-safe
        :meth:`~lstm_data.batching.epochs.batches.Batches.batch` serves any epoch), or
        any sequence with ``epoch``, ``set_epoch`` and ``[index]``, such as a
        precomputed store (:func:`lstm_data.open_batches`): its epoch is then
        switched and restored under a lock, one batch at a time.
    index, epoch
        Which batch, of which epoch.
    arena
        A buffer to build the batch in, for sources that can
        (:class:`~lstm_data.batching.epochs.source.BuildsInArena`); ignored by the others.
    """
    epoch = check_count(epoch, "epoch")
    if arena is not None and isinstance(batches, BuildsInArena):
        return batches.batch_into(index, epoch, arena)
    get = getattr(batches, "batch", None)
    if callable(get):
        return get(index, epoch=epoch)
    with _LOCK:
        saved = batches.epoch
        batches.set_epoch(epoch)
        try:
            return batches[index]
        finally:
            batches.set_epoch(saved)
