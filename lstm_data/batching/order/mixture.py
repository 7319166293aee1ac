"""A weighted mixture of sources: every batch draws its rows from the sources in set proportions.

``Order(policies={"mixture": {"weights": {"nue_*.csv": 0.25, "numu_*.csv": 0.75}}})``
(``[order.policies.mixture]`` in TOML). Options:

``weights``
    Source -> proportion, fixed for the run (any non-negative numbers with a positive sum;
    they are normalised).
``schedule``
    Instead of ``weights``: ``[[step, {source: proportion}], ...]`` (or tables
    ``{step = s, weights = {...}}``), steps strictly increasing from 0. Entry ``i`` holds
    from its global step (``epoch * epoch_batches + batch``) to the next entry's.
``by``
    A scalar column whose values name the sources (a source is every row holding that
    value). Without it the sources are the data's files, each named by its index
    (``"0"``) or by a glob of its path or file name (``"nue_*.csv"``; a glob may take
    several files, a file may be taken by one source only). Rows of no named source are
    never served.
``unit``
    ``"rows"`` (default): every batch holds ``batch_size`` rows, apportioned by rows.
    ``"elements"``: with ``max_elements`` (and ``bucket_by``), real elements are apportioned
    and every batch holds the rows that fit the budget
    (:mod:`~lstm_data.batching.order.mixture_elements`).
``epoch_batches``
    Batches of an epoch of the mixture. Default: until the source with the largest
    proportion relative to its rows (in the first weights) is drawn once,
    ``floor(min(rows_s / (batch_size * p_s)))`` batches, at least 1 (by elements: the source's
    elements over ``max_elements * p_s``).

Every batch holds ``batch_size`` rows. Within a stretch of the schedule, seats are
given out in the order of their ideal times: row ``j`` of source ``s`` (of proportion
``p_s``) comes at slot ``(j + 1/2) / p_s`` (ties to the source named first in sorted
order), a divisor (Sainte-Laguë) apportionment with exact integers. So every batch's
count of each source is ``batch_size * p_s`` when that is whole, and within one row of the
ideal over any run of batches otherwise, and the counts of step ``t`` are a function of the
schedule up to ``t`` alone: a schedule changed at step ``s`` leaves the batches before ``s``
as they were. Each source is its own stream of rows: its source-epoch ``k`` is a
permutation of its rows drawn from ``(seed, source name, k)`` (the rows in view order
without ``shuffle``), so no row of a source comes twice before all its rows came once.
The rows of step ``t`` are then a function of ``(seed, schedule, t)``: a run resumed at
any step (``load_state_dict`` of ``Batches``, or of its shards on another world size,
which deal the same global batches) serves the batches one that never stopped would. A state
saved at step ``k`` also resumes batches whose schedule differs only from a step ``s >= k`` on
(:meth:`Mixture.unchanged_before`; with ``bucket_by``, from the first step of the window holding
``s``): from ``k`` the run serves the new schedule's batches, which before ``s`` are the old ones.
Within a batch the rows come by source (sorted names), each in stream order.

With ``bucket_by`` the rows each source gives a window of ``bucket_window`` batches are
sorted by length and dealt in that order, so counts stay exact and rows of similar length
share a batch; the batches of a window are then permuted (with ``shuffle``). Windows end at
epoch ends and schedule steps. ``bucket_lengths`` composes as it is. A mixture cannot be
combined with ``max_elements`` by rows (a budget cuts its own batches, so counts could not be
kept: draw by elements instead), ``sample`` (another draw of the rows) or ``shuffle="block"``
(the sources' streams read rows anywhere): each is an :class:`~lstm_data.errors.OptionError` naming both.

The mixture makes the epoch's rows and batches itself, from the whole view: stages of a
lower rank than its own (85) have no effect on its batches.
"""
from __future__ import annotations

import sys
import zlib
from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

import numpy as np

from lstm_data.batching.order.bucketing import make_bucketing
from lstm_data.batching.order.budget import order_extras
from lstm_data.batching.order.mixture_elements import ElementDraws
from lstm_data.batching.order.mixture_options import (WHERE, column_sources, file_sources, integers,
                                                      schedule_of)
from lstm_data.batching.order.plan import EpochKey, Plan, StageDefaults
from lstm_data.batching.order.registry import PlanContext, register_policy
from lstm_data.batching.order.rows import epoch_rng
from lstm_data.errors import OptionError

__all__ = ["Mixture", "Segment", "make_mixture", "MIXTURE_STREAM"]

#: the first word of every seed the mixture draws from (its streams differ from the other stages')
MIXTURE_STREAM = 7
_OPTIONS = ("weights", "schedule", "by", "epoch_batches", "unit")


@dataclass(frozen=True)
class Segment:
    """One stretch of the schedule: from global step ``start``, integer weights by source.

    Attributes
    ----------
    start
        Its first global step.
    weights
        Integer weight of every source (sorted names' order), with a positive sum.
    """

    start: int
    weights: tuple[int, ...]

    def seats(self, slots: int) -> list[int]:
        """Rows of each source among the segment's first ``slots`` rows (ideal-time order)."""
        w, total = self.weights, sum(self.weights)
        counts = [(2 * slots * wi + total) // (2 * total) if wi else 0 for wi in w]
        extra = sum(counts) - slots
        while extra > 0:  # drop the latest rows taken
            last = max((Fraction(2 * c - 1, w[i]), i) for i, c in enumerate(counts) if c)
            counts[last[1]] -= 1
            extra -= 1
        while extra < 0:  # add the earliest rows not taken
            nxt = min((Fraction(2 * c + 1, w[i]), i) for i, c in enumerate(counts) if w[i])
            counts[nxt[1]] += 1
            extra += 1
        return counts


class Mixture(StageDefaults):
    """The stage of the ``mixture`` policy (see the module docstring).

    Parameters
    ----------
    names
        The sources' names, sorted.
    members
        The view positions of each source's rows, in view order.
    segments
        The schedule, by start step (the first starts at 0).
    epoch_batches
        Batches of every epoch.
    batch_size
        Rows of every batch.
    lengths, window
        Sort keys of every view position and batches per window, when ``bucket_by`` is set.
    elements
        With ``unit="elements"``: each view position's real elements, its padded width and
        the budget (:mod:`~lstm_data.batching.order.mixture_elements`).
    """

    def __init__(self, names: Sequence[str], members: Sequence[np.ndarray], segments: Sequence[Segment],
                 epoch_batches: int, batch_size: int, lengths: np.ndarray | None = None, window: int = 1,
                 elements: tuple[np.ndarray, np.ndarray, int] | None = None) -> None:
        self.names = list(names)
        self.members = [np.asarray(m, dtype=np.intp) for m in members]
        self.segments = list(segments)
        self.n_batches = int(epoch_batches)
        self.batch_size = int(batch_size)
        self.lengths = lengths
        self.window = int(window)
        self._keys = [zlib.crc32(name.encode()) for name in self.names]
        self.draws = None if elements is None else ElementDraws(
            self._weights_at, self.stream, len(self.names), self.n_batches, *elements, self.batch_size)

    def _weights_at(self, step: int) -> tuple[int, tuple[int, ...]]:
        seg = self._segment_at(step)
        return seg.start, seg.weights

    def epoch_batches(self) -> int | None:
        """Batches of every epoch: the ``epoch_batches`` option or its default."""
        return self.n_batches

    def epoch_rows(self, rows: int) -> int:
        """Rows of every epoch: ``epoch_batches * batch_size``."""
        return self.n_batches * self.batch_size

    def drawn(self, step: int) -> np.ndarray:
        """Rows drawn from each source by the global steps before ``step`` (int64, by source)."""
        out = np.zeros(len(self.names), dtype=np.int64)
        for i, seg in enumerate(self.segments):
            if seg.start >= step:
                break
            end = step if i + 1 == len(self.segments) else min(step, self.segments[i + 1].start)
            out += np.asarray(seg.seats((end - seg.start) * self.batch_size), dtype=np.int64)
        return out

    def _segment_at(self, step: int) -> Segment:
        starts = [seg.start for seg in self.segments]
        return self.segments[int(np.searchsorted(starts, step, side="right")) - 1]

    def counts(self, first: int, last: int) -> np.ndarray:
        """Rows of each source in each global step ``first .. last - 1``: shape (steps, sources)."""
        rows = self.batch_size
        out = np.zeros((last - first, len(self.names)), dtype=np.int64)
        for t in range(first, last):
            seg = self._segment_at(t)
            k = t - seg.start
            out[t - first] = np.subtract(seg.seats((k + 1) * rows), seg.seats(k * rows))
        return out

    def stream(self, source: int, lo: int, hi: int, shuffle: bool, seed: int) -> np.ndarray:
        """View positions at stream positions ``lo .. hi - 1`` of ``source``."""
        rows = self.members[source]
        n = len(rows)
        pos = np.arange(lo, hi, dtype=np.int64)
        out = np.empty(len(pos), dtype=np.intp)
        cycle = pos // n
        for k in np.unique(cycle):
            taken = cycle == k
            order = rows
            if shuffle:
                rng = np.random.default_rng([int(seed), MIXTURE_STREAM, self._keys[source], int(k)])
                order = rows[rng.permutation(n)]
            out[taken] = order[pos[taken] - k * n]
        return out

    def plan(self, plan: Plan, key: EpochKey) -> Plan:
        """The epoch's batches: ``epoch_batches`` of ``batch_size`` rows drawn from the sources (by elements:
        as many as fit the budget)."""
        if self.draws is not None:
            return Plan(*self.draws.epoch(key.epoch, bool(key.shuffle), key.seed))
        first = key.epoch * self.n_batches
        last = first + self.n_batches
        counts = self.counts(first, last)
        before = self.drawn(first)
        shuffle = bool(key.shuffle)
        # every source's rows of the epoch, in stream order, then cut per batch
        ends = before[None, :] + np.cumsum(counts, axis=0)
        drawn = [self.stream(s, int(before[s]), int(ends[-1, s]), shuffle, key.seed)
                 for s in range(len(self.names))]
        offsets = np.vstack([np.zeros((1, len(self.names)), np.int64), np.cumsum(counts, axis=0)])
        if self.lengths is not None:
            self._bucket(drawn, offsets, first)
        batches = [np.concatenate([drawn[s][offsets[t, s]:offsets[t + 1, s]] for s in range(len(self.names))])
                   for t in range(len(counts))]
        if self.lengths is not None and shuffle:
            batches = self._permuted(batches, first, key.seed)
        order = np.concatenate(batches).astype(np.intp) if batches else np.zeros(0, np.intp)
        return Plan(order)

    def proportions_at(self, step: int) -> dict[str, Fraction]:
        """The proportion of each source drawn from at global ``step`` (sources of weight 0 left out)."""
        weights = self._segment_at(step).weights
        total = sum(weights)
        return {name: Fraction(w, total) for name, w in zip(self.names, weights) if w}

    def unchanged_before(self, old: object) -> int | None:
        """The first global step whose batch may differ from those of ``old``, a mixture of other options.

        The first step ``s`` where the schedules differ (another proportion, or a
        schedule step in one only): the counts and rows of every step before ``s`` are
        a function of the schedule before ``s``. With ``bucket_by``, the first step of
        the bucketing window holding ``s`` (a window sorts the rows of all its steps).
        ``None`` when the mixtures differ otherwise (sources' rows, epoch length, batch
        size, bucketing).
        """
        if not isinstance(old, Mixture) or (old.n_batches, old.batch_size, old.window, old.lengths is None) != (
                self.n_batches, self.batch_size, self.window, self.lengths is None):
            return None
        if (self.draws is None) != (old.draws is None) or (
                self.draws is not None and old.draws is not None and not self.draws.same_draws(old.draws)):
            return None
        if self.lengths is not None and (old.lengths is None or not np.array_equal(self.lengths, old.lengths)):
            return None
        theirs = dict(zip(old.names, old.members))
        if any(name in theirs and not np.array_equal(rows, theirs[name])
               for name, rows in zip(self.names, self.members)):
            return None
        mine, their_starts = {s.start for s in self.segments}, {s.start for s in old.segments}
        changed = [step for step in sorted(mine | their_starts)
                   if (step in mine) != (step in their_starts) or self.proportions_at(step) != old.proportions_at(step)]
        if not changed:
            return sys.maxsize  # the same schedule, written otherwise
        step = changed[0]
        if self.lengths is None or step in mine & their_starts:
            return step
        first = step - step % self.n_batches  # the epoch's first step; windows restart there and at schedule steps
        cut = max([first] + [s for s in mine if first < s < step])
        return cut + (step - cut) // self.window * self.window

    def _windows(self, first: int) -> list[tuple[int, int]]:
        """Epoch-relative ``(lo, hi)`` batch windows of bucketing: cut at schedule steps too."""
        cuts = sorted({first, first + self.n_batches} | {s.start for s in self.segments
                                                        if first < s.start < first + self.n_batches})
        out = []
        for a, b in zip(cuts[:-1], cuts[1:]):
            out += [(lo - first, min(lo + self.window, b) - first) for lo in range(a, b, self.window)]
        return out

    def _bucket(self, drawn: list[np.ndarray], offsets: np.ndarray, first: int) -> None:
        """Sort each source's rows of every bucketing window by length, in place."""
        assert self.lengths is not None
        for lo, hi in self._windows(first):
            for s in range(len(drawn)):
                a, b = int(offsets[lo, s]), int(offsets[hi, s])
                part = drawn[s][a:b]
                drawn[s][a:b] = part[np.argsort(self.lengths[part], kind="stable")]

    def _permuted(self, batches: list[np.ndarray], first: int, seed: int) -> list[np.ndarray]:
        out = list(batches)
        for lo, hi in self._windows(first):
            rng = epoch_rng(seed, first + lo, MIXTURE_STREAM)  # keyed by the window's global step
            out[lo:hi] = [batches[lo + int(i)] for i in rng.permutation(hi - lo)]
        return out


def make_mixture(context: PlanContext) -> Mixture:
    """The mixture's stage from its options (see the module docstring).

    Raises
    ------
    OptionError
        An unknown option or source, a proportion that is negative or not a number,
        proportions that do not sum to a positive number, schedule steps that do not
        increase from 0, an empty source, or an order it cannot be combined with.
    """
    options = context.options
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise OptionError(f"{WHERE}: unknown option {unknown[0]!r}; it takes {', '.join(_OPTIONS)}")
    order = context.order
    unit = options.get("unit", "rows")
    if unit not in ("rows", "elements"):
        raise OptionError(f"{WHERE}.unit must be 'rows' or 'elements', got {unit!r}")
    if unit == "elements" and order.max_elements is None:
        raise OptionError(f"{WHERE}.unit='elements' needs max_elements (and bucket_by): it draws every batch's "
                          "elements under that budget")
    for field, bad in (("max_elements", order.max_elements is not None and unit == "rows"),
                       ("sample", order.sample is not None),
                       ("shuffle='block'", order.shuffle == "block")):
        if bad:
            hint = {"max_elements": "; draw by elements with unit='elements'", "sample": ""}.get(
                field, "; use shuffle=True")
            raise OptionError(f"{WHERE} cannot be combined with {field}: the mixture draws every batch's "
                              f"rows itself{hint}")
    schedule = schedule_of(options)
    names = sorted({name for _, props in schedule for name in props})
    by = options.get("by")
    members = file_sources(context, names) if by is None else column_sources(context, by, names)
    for name, rows in zip(names, members):
        if not len(rows):
            raise OptionError(f"{WHERE}: source {name!r} has no rows in these data")
    segments = [Segment(step, integers(props, names)) for step, props in schedule]
    batch = order.batch_size
    first = segments[0].weights
    elements = None if unit == "rows" else _element_budget(context)
    # an epoch: until the source of the largest proportion for its rows (or elements) is drawn once
    sizes = [len(m) for m in members] if elements is None else [int(elements[0][m].sum()) for m in members]
    per_batch = batch if elements is None else elements[2]
    epoch = options.get("epoch_batches")
    if epoch is None:
        epoch = max(1, min(n * sum(first) // (per_batch * w) for n, w in zip(sizes, first) if w))
    elif isinstance(epoch, bool) or not isinstance(epoch, (int, np.integer)) or epoch < 1:
        raise OptionError(f"{WHERE}.epoch_batches must be a positive int, got {epoch!r}")
    lengths, window = None, 1
    if order.bucket_by is not None and elements is None:
        bucketing = make_bucketing(context.spec, context.fields, order.bucket_by, order.bucket_window,
                                   context.spec.pad_to_multiple_of, order.shuffle)
        if bucketing is not None:
            lengths, window = bucketing.lengths(context.lengths(bucketing.group)), bucketing.window
    return Mixture(names, members, segments, int(epoch), batch, lengths, window, elements)


def _element_budget(context: PlanContext) -> tuple[np.ndarray, np.ndarray, int]:
    """Real elements and padded width of every view position, and ``max_elements``."""
    order = context.order
    budget, chosen = order_extras(order, context.fields, context.width, context.rows.all_lengths, context.lengths,
                                  None)
    assert budget is not None and order.max_elements is not None  # max_elements is set (checked by Order too)
    group = next(f.group for f in context.fields if f.name == order.bucket_by)
    assert group is not None  # bucket_by names a Ragged output
    return np.minimum(context.lengths(group), budget.widths), budget.widths, int(order.max_elements)


register_policy("mixture", make_mixture, rank=85)
