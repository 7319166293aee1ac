"""``EpochIteration``: the epoch counter and prefetching iteration of every batch sequence.

:class:`~lstm_data.batching.epochs.batches.Batches` and the precomputed-store reader
(:class:`~lstm_data.store.read.PrecomputedBatches`) both derive from it.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping

from lstm_data._util.types import PlainDict, PlainMapping, PlainValue
from lstm_data._util.checks import check_count
from lstm_data._util.deprecation import refuses_renamed
from lstm_data.batching.order.stats import log_epoch_stats
from lstm_data.batching.epochs.identity import STATE_FORMAT
from lstm_data.batching.epochs.resume import state_count
from lstm_data.batching.epochs.prefetch import prefetch
from lstm_data.errors import OptionError

_log = logging.getLogger("lstm_data")

if TYPE_CHECKING:
    from lstm_data.batching.spec.batch_spec import Batch

__all__ = ["EpochIteration"]

#: the digests of a state's identity, compared as a whole, not setting by setting
_DIGESTS = frozenset({"identity", "data_parts"})


class EpochIteration:
    """Epoch bookkeeping and prefetching iteration shared by batch sequences.

    A subclass provides ``__len__``, ``__getitem__``, an ``epoch`` attribute and a
    ``_lock`` (``threading.Lock``) guarding it.

    Resuming mid-epoch: :meth:`iter` counts the batches it has handed out in
    :meth:`state_dict` (``next_batch``); after :meth:`load_state_dict` the next
    :meth:`iter` starts at that batch of that epoch (later ones start at 0 again),
    so a preempted job that saved the state with its checkpoint sees exactly the
    batches it had not seen.
    """

    epoch: int
    _lock: threading.Lock
    #: batches of the current epoch handed out by :meth:`iter`
    _next_batch: int = 0
    #: where the next :meth:`iter` starts (set by :meth:`load_state_dict`, used once)
    _resume_at: int = 0

    if TYPE_CHECKING:  # provided by the subclasses
        def __len__(self) -> int: ...

        def __getitem__(self, index: int) -> Batch: ...

    def __iter__(self) -> Iterator[Batch]:
        return self.iter()

    @refuses_renamed("iter")
    def iter(self, threads: int = 1, prefetch_batches: int | None = None) -> Iterator[Batch]:
        """Yield the batches of the current epoch in order, built ahead on ``threads`` threads.

        Parameters
        ----------
        threads
            Threads building batches at once, this one included: ``threads - 1``
            build ahead in the background, and the calling thread builds whenever
            the batch it needs is not ready yet. The kernels release the GIL, so
            they scale; ``threads`` = the number of cores keeps every core busy
            without oversubscribing them.
            With two or more, a background thread first makes the next epoch's
            row order, so the next epoch does not start by waiting for it.
        prefetch_batches
            Batches built ahead of the consumer (default ``2 * threads``); bounds memory.

        Returns
        -------
        Iterator of tuple of dict
            ``(inputs, targets, weights)`` of each batch not yet handed out this epoch.
        """
        start, self._resume_at = min(self._resume_at, len(self)), 0
        get = self.__getitem__ if start == 0 else (lambda i: self[start + i])
        batches = prefetch(get, len(self) - start, threads, prefetch_batches,
                           side_job=self._next_epoch_job())
        return self._counted(batches, start)

    def _counted(self, batches: Iterator[Batch], start: int) -> Iterator[Batch]:
        """Yield ``batches``, recording before each how many the epoch has handed out.

        The seconds spent waiting for each batch are summed; when the epoch is
        handed out to its end, its figures and that wait are logged (INFO, see
        :func:`~lstm_data.batching.order.stats.log_epoch_stats`).
        """
        epoch, waited, k = getattr(self, "epoch", 0), 0.0, start
        while True:
            asked = time.perf_counter()
            try:
                batch = next(batches)
            except StopIteration:
                break
            waited += time.perf_counter() - asked
            k += 1
            self._next_batch = k
            yield batch
        if k == len(self):
            log_epoch_stats(self, epoch, waited=waited)

    def epoch_figures(self, epoch: int) -> PlainDict:
        """What is known of ``epoch`` without building a batch, logged at its end.

        Here its batch count; subclasses add what they know (see
        :class:`~lstm_data.batching.order.stats.GivesFigures`).

        Parameters
        ----------
        epoch
            The epoch that ended.

        Returns
        -------
        dict
            ``epoch`` and ``batches``.
        """
        return {"epoch": epoch, "batches": len(self)}

    def _next_epoch_job(self) -> Callable[[], object] | None:
        """Work for a spare worker in :meth:`iter`, bound to the current epoch (None: nothing)."""
        return None

    def on_epoch_end(self) -> None:
        """Move to the next epoch: a new reproducible order (``seed`` plus epoch)."""
        self.set_epoch(self.epoch + 1)

    def _check_identity(self, state: Mapping[str, Any]) -> None:
        """OptionError naming each setting ``state`` was saved with that differs from this sequence's.

        A state of an older format (:data:`~lstm_data.batching.epochs.identity.STATE_FORMAT`) whose
        settings, spec and data are the same is taken, with a note in the log.
        """
        fmt = state.get("state_format", 1)
        if isinstance(fmt, bool) or not isinstance(fmt, int) or fmt < 1:
            raise OptionError(f"state_format must be an int >= 1, got {fmt!r}")
        if fmt > STATE_FORMAT:
            raise OptionError(f"state_format {fmt}: saved by a newer release of lstm_data (this one reads "
                              f"formats up to {STATE_FORMAT}); upgrade lstm_data to resume it")
        identity = self.identity()
        differ = [k for k, v in identity.items() if k not in _DIGESTS and state.get(k) != v]
        if differ == ["policies"] and fmt == STATE_FORMAT:
            resumed = self._resumed_identity(state)
            identity, differ = (identity, differ) if resumed is None else (resumed, [])
        diffs = [f"{k}: state has {state.get(k)!r}, this sequence {identity[k]!r}" for k in differ]
        if "policies" in differ:
            diffs.append("an order policy's options may change on resume only where the policy serves the same "
                         "batches up to the saved step (a mixture's schedule: from a step the state had not reached)")
        saved = state.get("identity")
        if not diffs and fmt < STATE_FORMAT:
            if saved not in self._legacy_identities(fmt):
                diffs = ["the spec or the data differ (the state's identity digest, made by the recipe of its "
                         f"format {fmt}, does not match)"]
            else:
                _log.info("resuming a state of format %d (saved by an earlier release) as format %d: its data were "
                          "checked by the recipe of format %d", fmt, STATE_FORMAT, fmt)
        elif not diffs and saved != identity.get("identity"):
            diffs = self._data_differences(state) or [
                "the spec or the data differ (the state's identity digest does not match)"]
        if diffs:
            raise OptionError("state saved by another batch sequence: " + "; ".join(diffs))

    def migrate_state(self, state: PlainValue) -> PlainValue:
        """``state`` in this release's form, when an earlier release saved it otherwise; else ``state``.

        A subclass that knows an earlier form fills in what it lacks; by default the
        state is taken as it is.

        Parameters
        ----------
        state
            A state as given to :meth:`load_state_dict` (by it and by a shard's).

        Returns
        -------
        Any
            The state to check and load.
        """
        return state

    def _legacy_identities(self, state_format: int) -> set[str]:
        """The identity digests this sequence had in an earlier state format (by default: as now)."""
        return {str(self.identity().get("identity"))}

    def _resumed_identity(self, state: Mapping[str, Any], step: int | None = None) -> dict[str, object] | None:
        """The identity to check ``state`` against when only its order policies differ and they may
        (resuming from global step ``step``; ``None``: where ``state`` stands); ``None`` by default."""
        return None

    def _data_differences(self, state: Mapping[str, Any]) -> list[str]:
        """What of the data differs from the data ``state`` was saved with, where it is known (none by default)."""
        return []

    def set_epoch(self, epoch: int) -> None:
        """Jump to ``epoch`` (e.g. in a torch loop or to resume a run).

        Parameters
        ----------
        epoch
            An int >= 0; its order is made from ``(seed, epoch)``.
        """
        epoch = check_count(epoch, "epoch")
        with self._lock:
            self.epoch = epoch
            self._next_batch = self._resume_at = 0

    # -- checkpoints ----------------------------------------------------------------------------
    def identity(self) -> dict[str, object]:
        """What must match for a state to be loaded here (subclasses add seed, batch size, shard)."""
        return {"n_batches": len(self)}

    def state_dict(self) -> PlainDict:
        """Where iteration stands, to save with the model checkpoint.

        Returns
        -------
        dict
            ``state_format``, ``epoch``, ``next_batch`` (batches of it already handed
            out by :meth:`iter`) and what identifies this sequence (``n_batches``, and
            e.g. ``seed``): plain values, for ``torch.save`` or JSON.
        """
        return {"state_format": STATE_FORMAT, "epoch": self.epoch, "next_batch": self._next_batch,
                **self.identity()}

    def load_state_dict(self, state: PlainMapping) -> None:
        """Resume from :meth:`state_dict`: the next :meth:`iter` starts at its ``next_batch``.

        Parameters
        ----------
        state
            A :meth:`state_dict` of the same batches (any rank of any world size, for
            shards).

        Raises
        ------
        OptionError
            The state was saved by a sequence with another seed, batch count, batch
            size or shard (each difference is named), or is not such a state.
        """
        if not isinstance(state, Mapping) or "epoch" not in state or "next_batch" not in state:
            raise OptionError(f"not a batch sequence state (need epoch and next_batch): {state!r}")
        self._check_identity(state)
        epoch = state_count(state["epoch"], "epoch")
        next_batch = state_count(state["next_batch"], "next_batch")
        if next_batch > len(self):
            raise OptionError(f"next_batch {next_batch} > the {len(self)} batches of an epoch")
        with self._lock:
            self.epoch = epoch
            self._next_batch = self._resume_at = next_batch
