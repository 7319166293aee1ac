"""Element-budget batches: as many rows per batch as fit in ``max_elements`` padded slots.

With ``Order(bucket_by=F, max_elements=N)`` a batch holds rows whose count times
the batch's padded length of ``F`` (after ``max_len``, ``pad_to_multiple_of`` and
``bucket_lengths``; at least 1) is at most ``N``, and at most ``batch_size`` rows:
short events travel in large batches, long ones in small batches, at a constant
memory footprint. A row longer than the budget is a batch of its own.

How an epoch is made (a pure function of ``(seed, epoch)``):

* ``shuffle=True`` / ``False``: the epoch's rows (shuffled, or in the view's order)
  are sorted by padded width, ties keeping that order, and cut greedily into the
  longest runs that fit. The cut depends on the widths' histogram alone, so every
  epoch has the same number of batches; with ``shuffle=True`` the batches are then
  permuted.
* ``shuffle="block"``: the same inside each read window of the
  block plan (:mod:`lstm_data.batching.order.block_plans`) (a batch never spans two windows),
  so each window is read once. Windows hold other rows every epoch, so the count
  is made equal by a bound known before any epoch: the batches with most rows are
  split in halves (deterministically) until the epoch has :func:`block_count`
  batches. A half of a batch is within the budget, since it is a subset.

Why the bound holds: the greedy cut of width-sorted rows is the fewest batches
any partition of those rows can have (the longest row's batch is best filled with
the next longest rows, and the greedy cut of a sorted run is the fewest runs).
Rounding widths up to a grid of classes cannot lower that minimum, and filling
batches of one class only is a partition; so a window needs at most
``sum(ceil(n_c / cap_c))`` batches, ``n_c`` its rows of class ``c`` and ``cap_c`` the
rows a batch of that class holds. Summed over at most ``W`` windows this is at most
``n_c / cap_c + min(W, n_c) * (1 - 1 / cap_c)`` per class; the grid minimising the
sum is found by dynamic programming over the distinct widths.
"""
from __future__ import annotations

import heapq
from typing import Any, Callable, Sequence

import numpy as np

from lstm_data.batching.order.bucket_lengths import BucketLengths
from lstm_data.batching.order.plan import EpochKey, Plan, StageDefaults
from lstm_data.batching.order.rows import epoch_rng

__all__ = ["Budget", "ChosenWidths", "pack", "block_count", "split_largest",
           "BUDGET_STREAM", "order_extras", "caps_of", "row_widths"]

#: the :func:`~lstm_data.batching.order.rows.epoch_rng` stream that permutes budget batches
BUDGET_STREAM = 3


def caps_of(widths: np.ndarray, max_elements: int, batch_size: int) -> np.ndarray:
    """Rows a batch of each padded width holds: ``max_elements // width``, in ``[1, batch_size]``."""
    w = np.maximum(np.asarray(widths, dtype=np.int64), 1)
    caps: np.ndarray = np.clip(max_elements // w, 1, batch_size)
    return caps


def pack(caps: np.ndarray) -> np.ndarray:
    """Greedy cut of rows sorted by width (``caps`` non-increasing) into the longest runs that fit.

    Returns
    -------
    ndarray of int64
        Batch starts plus the end: ``[0, ..., len(caps)]``.
    """
    n = len(caps)
    # run [s, j] fits iff j - s + 1 <= caps[j]; d is strictly increasing since caps never grow
    d = np.arange(n, dtype=np.int64) - caps + 1
    starts = [0]
    s = 0
    while s < n:  # one search per batch (not per row)
        s = int(np.searchsorted(d, s, side="right"))
        starts.append(s)
    return np.asarray(starts, dtype=np.int64)


def block_count(widths: np.ndarray, max_elements: int, batch_size: int, windows: int) -> int:
    """Batches per epoch of block-shuffled budget batches: a bound on every epoch's greedy count.

    Parameters
    ----------
    widths
        Padded width of every row of the view.
    max_elements, batch_size
        The budget and the row limit.
    windows
        The most read windows an epoch can have.

    Returns
    -------
    int
        At most the number of rows; never below any epoch's greedy count (see the module).
    """
    n = len(widths)
    if n == 0:
        return 0
    values, counts = np.unique(np.asarray(widths, dtype=np.int64), return_counts=True)
    caps = caps_of(values, max_elements, batch_size).astype(np.float64)
    c_cum = np.concatenate([[0.0], np.cumsum(counts, dtype=np.float64)])
    best = np.zeros(len(values) + 1)  # best[i]: classes covering values[:i]
    for i in range(1, len(values) + 1):  # a class (p, i] of widths padded to values[i - 1]
        rows = c_cum[i] - c_cum[:i]
        cap = caps[i - 1]
        best[i] = np.min(best[:i] + rows / cap + np.minimum(windows, rows) * (1.0 - 1.0 / cap))
    return int(min(n, np.floor(best[-1] + 1e-6)))


def split_largest(starts: np.ndarray, count: int) -> np.ndarray:
    """Split the batches with most rows in halves (first such batch first) until there are ``count``."""
    extra = count - (len(starts) - 1)
    if extra <= 0:
        return starts
    heap = [(-int(e - s), int(s), int(e)) for s, e in zip(starts[:-1], starts[1:])]
    heapq.heapify(heap)
    cuts = []
    for _ in range(extra):  # one split per missing batch
        size, s, e = heapq.heappop(heap)
        if -size < 2:
            raise RuntimeError(f"cannot make {count} batches of {int(starts[-1])} rows")
        mid = s + (e - s) // 2
        cuts.append(mid)
        heapq.heappush(heap, (-(mid - s), s, mid))
        heapq.heappush(heap, (-(e - mid), mid, e))
    return np.unique(np.concatenate([starts, np.asarray(cuts, dtype=np.int64)]))


def _permute_runs(order: np.ndarray, starts: np.ndarray, perm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Gather index that lays out the runs ``starts`` in ``perm`` order, and the new starts."""
    sizes = np.diff(starts)[perm]
    new = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=new[1:])
    idx = np.repeat(starts[:-1][perm] - new[:-1], sizes) + np.arange(int(new[-1]), dtype=np.int64)
    return idx, new


class Budget:
    """Checked element-budget settings of one ``Batches`` and the widths of its rows.

    Parameters
    ----------
    field
        The ``bucket_by`` output.
    max_elements, batch_size
        The budget (padded slots) and the most rows per batch.
    widths
        Padded width of every view position (in the order the plans index).
    windows
        ``None`` for in-RAM orders; with ``shuffle="block"``, the most read
        windows an epoch can have.

    Attributes
    ----------
    n_batches : int
        Batches in every epoch.
    """

    def __init__(self, field: str, max_elements: int, batch_size: int, widths: np.ndarray,
                 windows: int | None) -> None:
        self.field = field
        self.max_elements = int(max_elements)
        self.batch_size = int(batch_size)
        self.widths = np.asarray(widths, dtype=np.int64)
        # sort keys: 16-bit when they fit, so the stable sort of an epoch is a radix sort
        small = not len(self.widths) or int(self.widths.max()) < 2 ** 15
        self._keys = self.widths.astype(np.int16) if small else self.widths
        self.windows = windows
        if windows is None or windows <= 1:
            caps = caps_of(np.sort(self.widths), self.max_elements, self.batch_size)
            self.n_batches = len(pack(caps)) - 1
        else:
            self.n_batches = block_count(self.widths, self.max_elements, self.batch_size, windows)

    def _cut(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``positions`` sorted by width (ties keep their order) and their greedy starts."""
        srt = np.argsort(self._keys[positions], kind="stable")
        caps = caps_of(self.widths[positions[srt]], self.max_elements, self.batch_size)
        return srt, pack(caps)

    def order(self, order: np.ndarray, seed: int, epoch: int, shuffle: bool) -> Plan:
        """The budget batches of an in-RAM epoch whose rows come in ``order``."""
        srt, starts = self._cut(order)
        order = order[srt]
        if len(starts) - 1 != self.n_batches:
            raise RuntimeError(f"epoch {epoch}: {len(starts) - 1} budget batches, planned {self.n_batches}")
        if shuffle and self.n_batches > 1:
            perm = epoch_rng(seed, epoch, BUDGET_STREAM).permutation(self.n_batches)
            idx, starts = _permute_runs(order, starts, perm)
            order = order[idx]
        return Plan(order.astype(np.intp, copy=False), starts)

    def plan(self, plan: Plan, seed: int, epoch: int) -> Plan:
        """The budget batches of a block-shuffled epoch: cut inside each window, then permuted there."""
        assert plan.windows is not None  # a block plan
        order = plan.order.copy()
        ws = plan.windows.starts
        pieces = []
        for w in range(len(ws) - 1):  # one sort per window (not per row)
            lo, hi = int(ws[w]), int(ws[w + 1])
            srt, starts = self._cut(order[lo:hi])
            order[lo:hi] = order[lo:hi][srt]
            pieces.append(starts[:-1] + lo)
        starts = np.concatenate(pieces + [np.array([len(order)], dtype=np.int64)])
        if len(starts) - 1 > self.n_batches:
            raise RuntimeError(f"epoch {epoch}: {len(starts) - 1} budget batches exceed the bound "
                               f"{self.n_batches}")
        starts = split_largest(starts, self.n_batches)
        rng = epoch_rng(seed, epoch, BUDGET_STREAM)
        for w in range(len(ws) - 1):  # permute the batches of each window among themselves
            a, b = np.searchsorted(starts, [ws[w], ws[w + 1]])
            if b - a < 2:
                continue
            run = starts[a:b + 1]
            idx, new = _permute_runs(order, run - run[0], rng.permutation(b - a))
            lo = int(run[0])
            order[lo:int(run[-1])] = order[lo + idx]
            starts[a:b + 1] = new + lo
        return Plan(order, starts, plan.windows)


class ChosenWidths(StageDefaults):
    """The stage of ``Order.max_elements`` and ``bucket_lengths``: rows sorted by width and packed into
    budget batches (with ``max_elements``), and the plan's padded lengths (with ``bucket_lengths``)."""

    def __init__(self, budget: Budget | None, widths: BucketLengths | None) -> None:
        self.budget = budget
        self.widths = widths

    def plan(self, plan: Plan, key: EpochKey) -> Plan:
        """``plan`` cut into the epoch's budget batches (inside each window of a block plan), with its widths.

        A plan an earlier stage cut is kept as it is (a policy that keeps the budget itself, as a
        mixture drawing by elements)."""
        if self.budget is not None and plan.starts is None:
            if plan.windows is not None:
                plan = self.budget.plan(plan, key.seed, key.epoch)
            else:
                plan = self.budget.order(plan.order, key.seed, key.epoch, bool(key.shuffle))
        return plan.replace(widths=self.widths)

    def epoch_batches(self) -> int | None:
        """With a budget, the same number of batches every epoch, known before it."""
        return None if self.budget is None else self.budget.n_batches


def row_widths(width: Callable[[int], int], lengths: np.ndarray, cap: int | None) -> np.ndarray:
    """Each row's padded width if it were its batch's longest: ``width`` of its length capped at ``cap``.

    ``width`` (the builder's rule for the field) is called once per distinct length.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    if cap is not None:
        lengths = np.minimum(lengths, cap)
    uniq = np.unique(lengths)
    table = np.array([width(int(n)) for n in uniq], dtype=np.int64)
    out: np.ndarray = table[np.searchsorted(uniq, lengths)] if len(uniq) else np.zeros(0, dtype=np.int64)
    return out


def order_extras(order: Any, fields: Sequence[Any], width: Callable[[Any, int], int],
                 all_lengths: Callable[[str], np.ndarray], view_lengths: Callable[[str], np.ndarray],
                 windows: int | None) -> tuple[Budget | None, BucketLengths | None]:
    """The :class:`Budget` and :class:`BucketLengths` an order asks for (``None`` where it does not).

    Parameters
    ----------
    order
        The :class:`~lstm_data.batching.order.options.Order`.
    fields
        The resolved fields (the bucketed group already padded per batch).
    width
        The builder's width rule, ``(field, longest) -> width``.
    all_lengths, view_lengths
        Row lengths of a group over the whole dataset, and by view position.
    windows
        The most read windows of an epoch (``shuffle="block"``), else ``None``.
    """
    if order.bucket_by is None or (order.max_elements is None and order.bucket_lengths is None):
        return None, None
    f = next(f for f in fields if f.name == order.bucket_by)
    cap = f.ragged.max_len
    lengths = None
    if order.bucket_lengths is not None:
        lengths = BucketLengths.make(f.group, row_widths(lambda n: width(f, n), all_lengths(f.group), cap),
                                     order.bucket_lengths, order.max_shapes, cap, f.name)
    budget = None
    if order.max_elements is not None:
        widths = row_widths(lambda n: width(f, n), view_lengths(f.group), cap)
        budget = Budget(f.name, order.max_elements, order.batch_size,
                        widths if lengths is None else lengths.widths(widths), windows)
    return budget, lengths
