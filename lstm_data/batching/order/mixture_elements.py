"""A mixture drawn by elements under a budget: ``policies.mixture.unit = "elements"``.

With ``Order(bucket_by=F, max_elements=N)`` a mixture may apportion real elements (the
prongs of ``F``'s group a row serves, at most ``max_len``) instead of rows. Rows are taken
one at a time in the order of their ideal times: the next row of source ``s`` (proportion
``p_s``, ``E_s`` elements taken so far in the stretch of the schedule, ``e`` elements in
that row) comes at ``(E_s + e / 2) / p_s`` (ties to the source named first), the divisor
(Sainte-Laguë) rule of the row mixture with elements for seats. A batch takes rows while
it fits the budget: its rows times the padded width of its longest row at most ``N``, and
at most ``batch_size`` rows (a row wider than the budget is a batch of its own). So over
any run of batches each source's elements stay within one row of ``p_s`` of them all.

What a step draws depends on where the streams and the element counts stand at its
start, so an epoch's batches are made from the last epoch start known (kept once made):
the rows of step ``t`` are a function of ``(seed, schedule up to t, t)``, as for rows.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Sequence

import numpy as np

__all__ = ["ElementDraws", "DrawState"]


@dataclass(frozen=True)
class DrawState:
    """Where the draws stand at a global step: each source's stream position and its elements
    taken since the current stretch of the schedule began."""

    positions: tuple[int, ...]
    elements: tuple[int, ...]


class ElementDraws:
    """The batches of a mixture drawn by elements (see the module docstring).

    Parameters
    ----------
    weights_at
        Global step -> ``(segment start, integer weight of every source)``.
    stream
        ``(source, lo, hi, shuffle, seed) ->`` view positions at stream positions ``lo .. hi - 1``.
    n_sources, epoch_batches
        Sources, and batches of every epoch.
    elements, widths
        Real elements and padded width of every view position.
    max_elements, batch_size
        The budget and the most rows of a batch.
    """

    def __init__(self, weights_at: Callable[[int], tuple[int, Sequence[int]]],
                 stream: Callable[[int, int, int, bool, int], np.ndarray], n_sources: int, epoch_batches: int,
                 elements: np.ndarray, widths: np.ndarray, max_elements: int, batch_size: int) -> None:
        self.weights_at, self.stream = weights_at, stream
        self.n_sources, self.n_batches = n_sources, epoch_batches
        self.elements = np.asarray(elements, dtype=np.int64)
        self.widths = np.asarray(widths, dtype=np.int64)
        self.max_elements, self.batch_size = int(max_elements), int(batch_size)
        self._starts: dict[tuple[int, bool, int], DrawState] = {}  # (epoch, shuffle, seed) -> state at its start
        self._lock = threading.Lock()

    def same_draws(self, other: ElementDraws) -> bool:
        """Whether ``other`` draws from the same elements, widths, budget and epoch length."""
        return ((self.n_batches, self.max_elements, self.batch_size) ==
                (other.n_batches, other.max_elements, other.batch_size) and
                np.array_equal(self.elements, other.elements) and np.array_equal(self.widths, other.widths))

    def epoch(self, epoch: int, shuffle: bool, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """The view positions of ``epoch`` in batch order, and the batches' starts (plus the total)."""
        with self._lock:
            known = max((e for (e, s, k) in self._starts if e <= epoch and (s, k) == (shuffle, seed)), default=0)
            state = self._starts.get((known, shuffle, seed), DrawState((0,) * self.n_sources, (0,) * self.n_sources))
        for e in range(known, epoch):
            state = self._run(e, state, shuffle, seed)[2]
        order, starts, end = self._run(epoch, state, shuffle, seed)
        with self._lock:
            self._starts[(epoch, shuffle, seed)] = state
            self._starts[(epoch + 1, shuffle, seed)] = end
        return order, starts

    def _run(self, epoch: int, state: DrawState, shuffle: bool, seed: int) -> tuple[np.ndarray, np.ndarray, DrawState]:
        positions, taken = list(state.positions), list(state.elements)
        rows: list[int] = []
        starts = [0]
        ahead: dict[int, np.ndarray] = {}  # each source's next rows, drawn a block at a time
        for step in range(epoch * self.n_batches, (epoch + 1) * self.n_batches):
            begin, weights = self.weights_at(step)
            if begin == step:  # a stretch of the schedule starts: its apportionment starts afresh
                taken = [0] * self.n_sources
            count, widest = 0, 0
            while count < self.batch_size:
                s = self._next_source(weights, taken, positions, ahead, shuffle, seed)
                row = int(ahead[s][0])
                wide = max(widest, int(self.widths[row]))
                if count and (count + 1) * wide > self.max_elements:
                    break
                rows.append(row)
                ahead[s] = ahead[s][1:]
                positions[s] += 1
                taken[s] += int(self.elements[row])
                count, widest = count + 1, wide
            starts.append(len(rows))
        return (np.asarray(rows, dtype=np.intp), np.asarray(starts, dtype=np.int64),
                DrawState(tuple(positions), tuple(taken)))

    def _next_source(self, weights: Sequence[int], taken: list[int], positions: list[int],
                     ahead: dict[int, np.ndarray], shuffle: bool, seed: int) -> int:
        """The source whose next row's ideal time comes first (ties to the lowest index)."""
        best: tuple[Fraction, int] | None = None
        for s, w in enumerate(weights):
            if not w:
                continue
            if not len(ahead.get(s, ())):
                ahead[s] = self.stream(s, positions[s], positions[s] + 64, shuffle, seed)
            due = (Fraction(2 * taken[s] + int(self.elements[int(ahead[s][0])]), w), s)
            if best is None or due < best:
                best = due
        assert best is not None  # a segment has a positive weight
        return best[1]
