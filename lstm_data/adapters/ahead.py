"""Batches of one epoch built ahead on threads, for adapters whose framework asks for them in order.

Keras (``KerasBatches``) and a torch ``DataLoader`` without worker processes
(``TorchBatches(threads=...)``) ask for batch ``i`` of an epoch, then ``i + 1``, ...
on one thread. A :class:`Stream` builds the next ones meanwhile on background
threads (:func:`~lstm_data.batching.epochs.prefetch.prefetch`: the kernels release the
GIL), each tied to its epoch. A new epoch starts a new stream at the batch asked
for; a request out of order within the epoch is built on the spot (a shuffling
sampler would waste every batch built ahead).
"""
from __future__ import annotations

import threading
from typing import Callable, Generator, cast

from lstm_data.adapters.epochs import batch_of
from lstm_data.batching.epochs.prefetch import prefetch
from lstm_data.batching.epochs.source import BatchSource
from lstm_data.batching.spec.batch_spec import Batch

__all__ = ["Stream", "Ahead"]


class Stream:
    """Batches ``start, start + 1, ...`` of one epoch, built ahead on threads."""

    def __init__(self, build: Callable[[int], Batch], n: int, epoch: int, start: int,
                 workers: int, ahead: int) -> None:
        self.epoch, self.next = epoch, start
        # prefetch is a generator function (declared to return an Iterator): close() closes it
        self._items = cast(Generator[Batch, None, None],
                           prefetch(lambda j: build(start + j), n - start, workers, ahead))

    def take(self) -> Batch:
        item = next(self._items)
        self.next += 1
        return item

    def close(self) -> None:
        self._items.close()  # waits for the batches under way


class Ahead:
    """Batch ``i`` of epoch ``e`` of ``batches``, served from a :class:`Stream` when asked in order.

    Parameters
    ----------
    batches
        Any batch source.
    workers
        Threads building at once, the asking one included (1: no stream).
    ahead
        Batches built ahead at most.
    """

    def __init__(self, batches: BatchSource, workers: int, ahead: int) -> None:
        self.batches, self.workers, self.ahead = batches, workers, max(1, ahead)
        self._lock = threading.Lock()
        self._stream: Stream | None = None

    def get(self, index: int, epoch: int) -> Batch:
        """Batch ``index`` of ``epoch`` (an index in range, an epoch >= 0)."""
        if self.workers == 1:
            return batch_of(self.batches, index, epoch)
        with self._lock:
            stream = self._stream
            if stream is not None and stream.epoch == epoch and stream.next != index:
                return batch_of(self.batches, index, epoch)  # out of order: nothing to build ahead
            if stream is None or stream.epoch != epoch:
                self._close()
                batches = self.batches  # not self: threads of a dropped stream must not keep it alive
                stream = self._stream = Stream(lambda i: batch_of(batches, i, epoch), len(batches), epoch,
                                               index, self.workers, self.ahead)
            return stream.take()

    def close(self) -> None:
        """Stop the stream (its threads finish the batches under way)."""
        with self._lock:
            self._close()

    def _close(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None
