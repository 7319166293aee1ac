"""The one plan of an epoch, and the stages that make it.

A :class:`Plan` is everything an epoch's order decides: the rows in batch order
(positions into the view's rows), where each batch starts, and, for a block
shuffle, the read windows. The order of a run is a list of stages (see
:func:`~lstm_data.batching.order.policies.order_stages`): the first makes the
epoch's rows (file order, a shuffle or the block plan), each later one reorders,
draws or cuts them. :class:`EpochPlans` runs the stages once per epoch and keeps
the last two plans. ``Batches``, its shards and splits, ``precompute`` and the
order's stats read plans and never ask which policy made them.
"""
from __future__ import annotations

import bisect
import dataclasses
import math
from concurrent.futures import Future
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Protocol, Sequence

import numpy as np

from lstm_data._util.once_cache import OnceCache
from lstm_data.batching.order.bucket_lengths import BucketLengths

__all__ = ["Plan", "Windows", "EpochKey", "Stage", "StageDefaults", "EpochPlans"]


@dataclass(frozen=True)
class Windows:
    """The read windows of a block-shuffled epoch.

    Attributes
    ----------
    starts : ndarray of int64
        First epoch position of each window, plus the total at the end.
    block_ids : list of ndarray
        The blocks (ids into the block bounds) each window reads, sorted. The rows of the
        plan's ``order`` in a window are rows of its blocks (their index among the
        window's sorted rows is found once, when the window is read, not kept in the plan).
    """

    starts: np.ndarray
    block_ids: list[np.ndarray]

    @cached_property
    def bounds(self) -> list[int]:
        """:attr:`starts` as a list of ints (looked up per batch, made once)."""
        return [int(s) for s in self.starts]

    def of(self, lo: int, hi: int) -> range:
        """Windows holding epoch positions ``lo .. hi - 1``."""
        bounds = self.bounds
        first = bisect.bisect_right(bounds, lo) - 1
        if first + 1 < len(bounds) and lo < hi <= bounds[first + 1]:  # one window: most batches
            return range(first, first + 1)
        return range(first, bisect.bisect_right(bounds, hi - 1))


@dataclass(frozen=True)
class Plan:
    """One epoch's order: the rows in batch order and the batch bounds.

    Attributes
    ----------
    order : ndarray of intp (or int32)
        The view position of each epoch position (a block plan holds int32 when the
        positions fit: take slices as intp).
    starts : ndarray of int64 or None
        First position of each batch, plus the total; ``None``: a batch every
        ``batch_size`` positions (the last one may be short).
    windows : Windows or None
        The read windows of a block shuffle.
    widths : BucketLengths or None
        The padded lengths the batches of the ``bucket_by`` group are cut to
        (``Order.bucket_lengths``), which the builder pads to.
    """

    order: np.ndarray
    starts: np.ndarray | None = None
    windows: Windows | None = None
    widths: BucketLengths | None = None

    def span(self, slot: int, batch_size: int) -> tuple[int, int]:
        """Epoch positions ``lo, hi`` of batch ``slot``."""
        if self.starts is not None:
            return int(self.starts[slot]), int(self.starts[slot + 1])
        return slot * batch_size, min((slot + 1) * batch_size, len(self.order))

    def sizes(self, slots: np.ndarray, batch_size: int) -> np.ndarray:
        """Rows of each batch in ``slots``."""
        if self.starts is not None:
            out: np.ndarray = np.diff(self.starts)[slots]
            return out
        clipped: np.ndarray = np.clip(len(self.order) - slots * batch_size, 0, batch_size)
        return clipped

    def replace(self, **changes: object) -> "Plan":
        """A copy with some parts changed."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True)
class EpochKey:
    """What every stage is given besides the plan: the run's seed, the epoch, the resolved shuffle."""

    seed: int
    epoch: int
    shuffle: bool | str
    batch_size: int


class Stage(Protocol):
    """One step of an epoch's order: a function of the plan so far and the epoch.

    A stage draws its random numbers from ``epoch_rng(key.seed, key.epoch, stream)``
    with a stream of its own, so stages compose without changing each other's draws.
    """

    def plan(self, plan: Plan, key: EpochKey) -> Plan:
        """The plan after this stage."""
        ...

    def epoch_rows(self, rows: int) -> int:
        """Rows an epoch holds after this stage, of ``rows`` before it."""
        ...

    def epoch_batches(self) -> int | None:
        """Batches of every epoch when this stage fixes them (its own cuts), else ``None``."""
        ...


class StageDefaults:
    """Defaults of :class:`Stage` for stages that keep every row and cut nothing."""

    def epoch_rows(self, rows: int) -> int:
        """Rows are kept: ``rows``."""
        return rows

    def epoch_batches(self) -> int | None:
        """Batches follow from the rows and the batch size."""
        return None

    def unchanged_before(self, old: object) -> int | None:
        """The first global step (``epoch * batches + batch``) whose batch may differ from ``old``'s.

        ``old`` is the stage of the same policy made from the options a saved state
        names. A stage that can tell lets a state saved before that step resume
        under its new options; by default it cannot (``None``: the state is refused).
        """
        return None


class EpochPlans:
    """The stages of an order, run once per epoch; the last two plans are kept.

    Parameters
    ----------
    stages
        The stages, first to last (:func:`~lstm_data.batching.order.policies.order_stages`).
    n_rows
        Rows of the view.
    seed, shuffle, batch_size, drop_last
        The order's settings (``shuffle`` resolved).
    first_epoch_only
        Every epoch uses epoch 0's plan (``Order.cache="ram"``).
    """

    def __init__(self, stages: Sequence[Stage], n_rows: int, *, seed: int, shuffle: bool | str, batch_size: int,
                 drop_last: bool, first_epoch_only: bool = False) -> None:
        self.stages = list(stages)
        self.n_rows = n_rows
        self.seed = seed
        self.shuffle = shuffle
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.first_epoch_only = first_epoch_only
        self._plans: OnceCache[int, Plan] = OnceCache(keep=2)

    def __len__(self) -> int:
        """Batches in every epoch."""
        for stage in self.stages:
            fixed = stage.epoch_batches()
            if fixed is not None:
                return fixed
        rows = self.n_rows
        for stage in self.stages:
            rows = stage.epoch_rows(rows)
        return rows // self.batch_size if self.drop_last else math.ceil(rows / self.batch_size)

    def order_epoch(self, epoch: int) -> int:
        """The epoch whose plan serves ``epoch``."""
        return 0 if self.first_epoch_only else epoch

    def make(self, epoch: int) -> Plan:
        """Run the stages for ``epoch`` (no cache)."""
        key = EpochKey(self.seed, epoch, self.shuffle, self.batch_size)
        plan = Plan(np.arange(self.n_rows, dtype=np.intp))
        for stage in self.stages:
            plan = stage.plan(plan, key)
        return plan

    def plan(self, epoch: int) -> Plan:
        """The plan serving ``epoch``, made once (the last two are kept)."""
        epoch = self.order_epoch(epoch)
        return self._plans.get(epoch, lambda: self.make(epoch))

    def prepare(self, epoch: int) -> Callable[[], object]:
        """A job that makes the plan of ``epoch`` ahead of need (for a spare worker)."""
        epoch = self.order_epoch(epoch)
        return lambda: self._plans.prepare(epoch, lambda: self.make(epoch))

    def peek(self, epoch: int) -> Future[Plan] | None:
        """The plan made for order epoch ``epoch`` (or under way), else ``None``."""
        return self._plans.peek(epoch)
