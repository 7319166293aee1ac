"""``shuffle="block"`` for on-disk data: load whole blocks of rows, mix them in RAM windows.

Each epoch permutes blocks of consecutive rows (aligned to the on-disk chunks of
the ragged values when the reader tells their size) and mixes the rows of a
window of whole, consecutive permuted blocks (see :mod:`lstm_data.batching.order.block_plans`).
A window is read with one ``dataset.take`` (the reader coalesces chunk reads);
every value chunk overlaps at most two blocks, hence at most two windows, so it
is decompressed at most twice per epoch. The batches of a window are then padded
from RAM by the kernels: where each of the window's epoch positions sits in its RAM
copy is found once, as the window is read (:class:`LoadedWindow`), and a batch takes
its slice of that, with no search of its own.

While the batches of window ``w`` are built, window ``w + 1`` is read on a
background thread (``read_ahead``), so decompression overlaps batch building
when a core is free. Every window is still read once.

Memory is bounded by the window, not by the data: a window is dropped as soon as
every batch of the epoch that holds its rows is built, and the window after the
current one is read ahead only once the window before it is dropped. So at most two
windows are held: the one in use and the one read ahead (during a batch that spans
two windows, those two). The next epoch's first window follows the epoch's last one
the same way: read while the last window is in use, once the one before it is
dropped, so a run of epochs waits for no read after the first. A
consumer that skips batches (a shard, random access) keeps windows it does not
finish: the three used last at most.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, NamedTuple, Protocol, Sequence

import numpy as np

from lstm_data._util import forksafe
from lstm_data._util.once_cache import OnceCache
from lstm_data.batching.order.bucket_lengths import BucketLengths
from lstm_data.batching.building.builder import BatchBuilder
from lstm_data.batching.order.block_plans import BlockArrangement
from lstm_data.batching.order.plan import Plan
from lstm_data.batching.spec.batch_spec import Arrays, ResolvedField
from lstm_data.data.concat import concat_datasets
from lstm_data.data.dataset import Dataset

if TYPE_CHECKING:
    from concurrent.futures import Future

_log = logging.getLogger("lstm_data")
__all__ = ["BlockSource", "LoadedWindow", "PlansByEpoch"]


class PlansByEpoch(Protocol):
    """Where a block source gets the plan of an epoch it reads ahead (:class:`~lstm_data.batching.order.plan.EpochPlans`)."""

    def plan(self, epoch: int) -> Plan:
        """The plan of ``epoch``."""
        ...


class LoadedWindow(NamedTuple):
    """A window read into RAM: its builder, the view positions it holds and where its epoch
    positions sit in its RAM copy."""

    #: builds batches over the window's RAM copy
    builder: BatchBuilder
    #: the sorted view positions the window holds (its blocks whole, in block order)
    held: np.ndarray
    #: for each epoch position of the window, in epoch order, its row in the RAM copy (found
    #: once per window, where it is read: a batch takes its slice)
    local: np.ndarray


class BlockSource:
    """Loaded windows of one dataset view's block shuffle.

    Parameters
    ----------
    dataset, rows
        The full dataset and the view's rows, as
        :func:`~lstm_data.batching.order.block_plans.block_arrangement` takes them.
    fields
        The resolved spec (for the per-window builders).
    arrangement
        The view's blocks and window size
        (:func:`~lstm_data.batching.order.block_plans.block_arrangement`).
    plans
        The plans of the epochs; the next epoch's first window is read ahead only when given.
    nan_to, pad_to_multiple_of
        Passed to the builders.
    read_ahead
        Load the next window on a background thread while the current one is used
        (only for on-disk datasets; in RAM a window is a cheap copy). While the last
        window of an epoch is used, the first window of the next epoch is read ahead
        too, so in a run of epochs no read is waited for after the first one (set
        :attr:`next_epoch_ahead` to ``False`` to stop that).

    Attributes
    ----------
    block_loads : int
        Blocks loaded so far (each window loads its blocks once).
    """

    #: windows kept at most, finished or not: a batch spans at most two, plus one read ahead
    KEEP = 3
    #: windows whose built batches are counted at most (a consumer that skips batches
    #: leaves some unfinished)
    TRACKED = 16

    def __init__(self, dataset: Dataset, rows: np.ndarray | None, fields: Sequence[ResolvedField],
                 arrangement: BlockArrangement, plans: PlansByEpoch | None = None, *, nan_to: float | None = None,
                 read_ahead: bool | None = None, pad_to_multiple_of: int | None = None) -> None:
        self.dataset = dataset
        self.rows = rows
        self.fields = list(fields)
        self.nan_to = nan_to
        self.pad_to_multiple_of = pad_to_multiple_of
        self.bounds = arrangement.bounds
        self.window_rows = arrangement.window_rows
        self.plans = plans
        self.read_ahead = (not dataset.in_ram) if read_ahead is None else bool(read_ahead)
        self.next_epoch_ahead = True
        self._lock = threading.Lock()  # guards block_loads
        self._windows: OnceCache[tuple[int, int], LoadedWindow] = OnceCache(self.KEEP)
        # (epoch, window) -> positions built so far, and the batches counted (their first positions)
        self._built: OrderedDict[tuple[int, int], tuple[int, set[int]]] = OrderedDict()
        self.block_loads = 0
        forksafe.register(self)

    def _after_fork(self) -> None:
        self._lock = threading.Lock()  # a read-ahead thread may have held it (the cache resets itself)
        self._built = OrderedDict()

    def __len__(self) -> int:
        return int(self.bounds[-1])

    def _dataset_rows(self, positions: np.ndarray) -> np.ndarray:
        return positions if self.rows is None else self.rows[positions]

    def window(self, plan: Plan, epoch: int, window: int) -> LoadedWindow:
        """``window`` of ``epoch`` in RAM: a builder over its copy, the sorted view positions it
        holds and the rows in its copy of its epoch positions."""
        assert plan.windows is not None  # a block plan
        future: Future[LoadedWindow] = self._windows.prepare(
            (epoch, window), lambda: self._load(plan, epoch, window))
        if self.read_ahead and self._windows.peek((epoch, window - 1)) is None:  # else once it is dropped
            self._read_after(plan, epoch, window + 1)
        return future.result()

    def _read_after(self, plan: Plan, epoch: int, window: int) -> None:
        """Read ``window`` of ``epoch`` ahead; past the last window, the next epoch's first."""
        assert plan.windows is not None  # a block plan
        if window < len(plan.windows.block_ids):
            self._load_ahead(plan, epoch, window)
        elif window == len(plan.windows.block_ids) and self.next_epoch_ahead and self.plans is not None:
            self._load_ahead(None, epoch + 1, 0)  # the next epoch's plan, got on that thread

    def _load_ahead(self, plan: Plan | None, epoch: int, window: int) -> None:
        """Start loading ``window`` of ``epoch`` on a background thread, unless under way."""
        ahead, owner = self._windows.claim((epoch, window))
        if owner:
            threading.Thread(target=self._windows.fill,
                             args=((epoch, window), ahead, lambda: self._load(plan, epoch, window)),
                             daemon=True, name="lstm_data-read-ahead").start()

    def _load(self, plan: Plan | None, epoch: int, window: int) -> LoadedWindow:
        """Read the blocks of ``window`` (one coalesced read per group) into RAM.

        ``plan=None``: get the plan of ``epoch`` from :attr:`plans` first. A
        failed load reaches every waiter and is forgotten, so a later call retries.
        """
        if plan is None:
            assert self.plans is not None  # read ahead only with plans
            plan = self.plans.plan(epoch)
        assert plan.windows is not None  # a block plan
        ids = plan.windows.block_ids[window]
        held = np.concatenate([np.arange(self.bounds[b], self.bounds[b + 1], dtype=np.intp)
                               for b in ids])
        started = time.perf_counter()
        piece = self.dataset.take(self._dataset_rows(held))
        with self._lock:
            self.block_loads += len(ids)
        _log.debug("epoch %d window %d: read %d blocks, %d rows into RAM in %.3f s (%s)", epoch, window,
                   len(ids), len(held), time.perf_counter() - started, threading.current_thread().name)
        starts = plan.windows.starts
        local = self._local(plan, window, plan.order[int(starts[window]):int(starts[window + 1])])
        builder = BatchBuilder(piece, self.fields, nan_to=self.nan_to, pad_to_multiple_of=self.pad_to_multiple_of,
                               row_names=self._dataset_rows(held))
        return LoadedWindow(builder, held, local)

    def _local(self, plan: Plan, window: int, positions: np.ndarray) -> np.ndarray:
        """Where view ``positions`` (all in ``window``) sit in its RAM copy: the window holds
        its blocks whole, in block order, so a position's place is its block's start in the
        copy plus its offset in the block (found among the window's few block starts)."""
        assert plan.windows is not None  # a block plan
        ids = plan.windows.block_ids[window]
        first = self.bounds[ids]  # each block's first view position, ascending
        start = np.zeros(len(ids), dtype=np.int64)
        np.cumsum(self.bounds[ids + 1][:-1] - first[:-1], out=start[1:])
        k = np.searchsorted(first, positions, side="right") - 1
        local: np.ndarray = (positions - (first - start)[k]).astype(np.intp, copy=False)
        return local

    def build(self, plan: Plan, epoch: int, lo: int, hi: int,
              lengths: BucketLengths | None = None, end: int | None = None) -> tuple[Arrays, Arrays]:
        """Build the batch at epoch positions ``lo .. hi - 1`` (one or two windows).

        ``lengths``: an order's ``bucket_lengths``, as :meth:`BatchBuilder.build` takes them.
        ``end``: where the positions of the epoch's batches end (default: the plan's end;
        fewer with ``drop_last``); a window is dropped once its positions below it are built.
        """
        windows = plan.windows
        assert windows is not None  # a block plan
        held = windows.of(lo, hi)
        bounds = windows.bounds
        parts = []
        loaded: LoadedWindow | None = None
        for w in held:
            first = bounds[w]
            loaded = self.window(plan, epoch, w)
            parts.append((loaded.builder, loaded.local[max(lo, first) - first:min(hi, bounds[w + 1]) - first]))
        if len(parts) == 1:
            out = parts[0][0].build(parts[0][1], lengths=lengths)
        else:
            joined = concat_datasets([b.dataset.take(local) for b, local in parts])
            names = np.concatenate([b.row_names[local] for b, local in parts if b.row_names is not None])
            out = BatchBuilder(joined, self.fields, nan_to=self.nan_to, pad_to_multiple_of=self.pad_to_multiple_of,
                               row_names=names).build(np.arange(hi - lo, dtype=np.intp), lengths=lengths)
        del parts, loaded  # a finished window is freed when dropped below
        self._count_built(plan, epoch, lo, hi, len(plan.order) if end is None else end, held)
        return out

    def _count_built(self, plan: Plan, epoch: int, lo: int, hi: int, end: int, held: range) -> None:
        """Count the batch ``lo .. hi - 1`` (in windows ``held``) as built: drop the windows it
        finishes (every position of theirs below ``end`` built), then read the next ones ahead."""
        windows = plan.windows
        assert windows is not None  # a block plan
        bounds = windows.bounds
        finished = []
        with self._lock:
            for w in held:
                key = (epoch, w)
                first, stop = bounds[w], bounds[w + 1]
                done, batches = self._built.pop(key, (0, set()))
                if lo not in batches:  # a batch built again is counted once
                    batches.add(lo)
                    done += min(hi, stop) - max(lo, first)
                if done >= min(stop, end) - first:
                    finished.append(w)
                    continue
                self._built[key] = (done, batches)
                while len(self._built) > self.TRACKED:
                    self._built.popitem(last=False)
        for w in finished:
            # freed, not trimmed: the next window reuses the freed pages (trimming them, even once
            # an epoch, faults each window in afresh: a quarter of a block-shuffled epoch's time
            # here); the readers put large windows on pages of their own (_util/heap.py)
            self._windows.discard((epoch, w))
            if self.read_ahead:
                for ahead in (w + 1, w + 2):
                    self._read_after(plan, epoch, ahead)
