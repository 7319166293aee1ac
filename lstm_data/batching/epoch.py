"""``EpochIteration``: the epoch counter and prefetching iteration of every batch sequence.

:class:`~lstm_data.batching.batches.Batches` and the precomputed-store reader
(:class:`~lstm_data.store.read.PrecomputedBatches`) both derive from it.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Callable, Iterator

from lstm_data._util.checks import check_count
from lstm_data.batching.prefetch import prefetch

if TYPE_CHECKING:
    from lstm_data.batching.spec import Batch

__all__ = ["EpochIteration"]


class EpochIteration:
    """Epoch bookkeeping and prefetching iteration shared by batch sequences.

    A subclass provides ``__len__``, ``__getitem__``, an ``epoch`` attribute and a
    ``_lock`` (``threading.Lock``) guarding it.
    """

    epoch: int
    _lock: threading.Lock

    if TYPE_CHECKING:  # provided by the subclasses
        def __len__(self) -> int: ...

        def __getitem__(self, index: int) -> Batch: ...

    def __iter__(self) -> Iterator[Batch]:
        return self.iter()

    def iter(self, workers: int = 1,
             prefetch_batches: int | None = None) -> Iterator[Batch]:
        """Yield the batches of the current epoch in order, built ahead on ``workers`` threads.

        Parameters
        ----------
        workers
            Threads building batches at once, this one included: ``workers - 1``
            build ahead in the background, and the calling thread builds whenever
            the batch it needs is not ready yet. The kernels release the GIL, so
            they scale; ``workers`` = the number of cores keeps every core busy
            without oversubscribing them.
            With two or more, a background worker first makes the next epoch's
            row order, so the next epoch does not start by waiting for it.
        prefetch_batches
            Batches built ahead of the consumer (default ``2 * workers``); bounds memory.
        """
        return prefetch(self.__getitem__, len(self), workers, prefetch_batches,
                        side_job=self._next_epoch_job())

    def _next_epoch_job(self) -> Callable[[], object] | None:
        """Work for a spare worker in :meth:`iter`, bound to the current epoch (None: nothing)."""
        return None

    def on_epoch_end(self) -> None:
        """Move to the next epoch: a new reproducible order (``seed`` plus epoch)."""
        self.set_epoch(self.epoch + 1)

    def set_epoch(self, epoch: int) -> None:
        """Jump to ``epoch`` (e.g. in a torch loop or to resume a run)."""
        epoch = check_count(epoch, "epoch")
        with self._lock:
            self.epoch = epoch
