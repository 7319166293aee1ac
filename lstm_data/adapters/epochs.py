"""Batch ``i`` of epoch ``e`` from any batch source: what the Keras and torch adapters serve.

The adapters tie every batch to an explicit epoch instead of reading the
source's current :attr:`~lstm_data.batching.epochs.source.BatchSource.epoch` when
a worker gets to it, so a batch built ahead, on a thread or in a persistent
worker process, always belongs to the epoch it was asked for. Every
:class:`~lstm_data.batching.epochs.source.BatchSource` serves any epoch from any
thread (:meth:`~lstm_data.batching.epochs.source.BatchSource.batch`), so nothing
is switched or locked here.
"""
from __future__ import annotations

import numpy as np

from lstm_data._util.checks import check_count
from lstm_data.batching.epochs.source import BatchSource, BuildsInArena
from lstm_data.batching.spec.batch_spec import Batch

__all__ = ["batch_of"]


def batch_of(batches: BatchSource, index: int, epoch: int, arena: np.ndarray | None = None) -> Batch:
    """Batch ``index`` of ``epoch`` of ``batches``, leaving ``batches.epoch`` as it is.

    Parameters
    ----------
    batches
        Any batch source: ``Batches``, a shard of one, stored batches
        (:func:`lstm_data.open_batches`).
    index, epoch
        Which batch, of which epoch.
    arena
        A buffer to build the batch in, for sources that can
        (:class:`~lstm_data.batching.epochs.source.BuildsInArena`); ignored by the others.

    Returns
    -------
    tuple of dict
        ``(inputs, targets, weights)``: output name -> array.
    """
    epoch = check_count(epoch, "epoch")
    if arena is not None and isinstance(batches, BuildsInArena):
        return batches.batch_into(index, epoch, arena)
    return batches.batch(index, epoch)
