"""Timing primitives: interleaved medians, ratio rows, floor checks.

Same-run ratios on a noisy shared machine: every compared function is timed in
round-robin order (warm-ups first), so a burst of load hits all of them alike,
and only medians are reported.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Callable, Mapping

__all__ = ["interleaved_medians", "interleaved_samples", "median_ratio", "median_of_ratios", "Ratio",
           "Report"]


def interleaved_medians(cases: Mapping[str, Callable[[], object]], *, repeats: int = 15,
                        warmup: int = 2, min_seconds: float = 0.0,
                        calls: int = 1, rotate: bool = False) -> dict[str, float]:
    """Median seconds per call of each case, measured round-robin (see :func:`interleaved_samples`)."""
    samples = interleaved_samples(cases, repeats=repeats, warmup=warmup, min_seconds=min_seconds, calls=calls,
                                  rotate=rotate)
    return {name: statistics.median(s) for name, s in samples.items()}


def median_ratio(samples: Mapping[str, list[float]], numerator: str, denominator: str) -> float:
    """The median over rounds of ``numerator``'s seconds over ``denominator``'s in the same round.

    A ratio of two medians mixes rounds a burst of load hit with rounds it missed; the
    per-round ratio compares two cases measured a moment apart, so its median is what a
    floor can be set on for a busy machine.
    """
    return median_of_ratios(samples[numerator], samples[denominator])


def median_of_ratios(numerators: list[float], denominators: list[float]) -> float:
    """The median of ``numerators[i] / denominators[i]``: one ratio per round, both lists round by round.

    Raises
    ------
    ValueError
        The lists differ in length or are empty (the rounds would not pair up).
    """
    if len(numerators) != len(denominators) or not numerators:
        raise ValueError(f"per-round ratios need two equally long lists of rounds, got "
                         f"{len(numerators)} and {len(denominators)}")
    return statistics.median(a / b for a, b in zip(numerators, denominators))


def interleaved_samples(cases: Mapping[str, Callable[[], object]], *, repeats: int = 15,
                        warmup: int = 2, min_seconds: float = 0.0,
                        calls: int = 1, rotate: bool = False) -> dict[str, list[float]]:
    """Seconds per call of each case in every round, measured round-robin.

    Parameters
    ----------
    cases
        Name -> zero-argument callable.
    repeats
        Timed rounds (at least this many; more while ``min_seconds`` is not reached).
    warmup
        Untimed rounds first.
    min_seconds
        Keep adding rounds (up to 10× ``repeats``) until this much time was spent.
    calls
        Consecutive calls per sample. With ``calls > 1`` each sample follows
        one untimed call of the same case, so a case is timed in its own warm
        steady state (as in a loop over batches) rather than right after
        another case evicted its working set; the round-robin order still
        spreads bursts of load over every case.
    rotate
        Start round ``k`` at case ``k mod len(cases)`` (a, b, c; b, c, a; ...), so no case
        always runs first (right after the warm-ups or a slow neighbour) or always last.
    """
    if calls < 1:
        raise ValueError(f"calls must be >= 1, got {calls}")
    for _ in range(warmup):
        for fn in cases.values():
            fn()
    samples: dict[str, list[float]] = {name: [] for name in cases}
    start = time.perf_counter()
    rounds = 0
    order = list(cases.items())
    while rounds < repeats or (time.perf_counter() - start < min_seconds and rounds < 10 * repeats):
        shift = rounds % len(order) if rotate and order else 0
        for name, fn in order[shift:] + order[:shift]:
            if calls > 1:
                fn()
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            samples[name].append((time.perf_counter() - t0) / calls)
        rounds += 1
    return samples


@dataclass
class Ratio:
    """One same-run comparison: ``value = baseline_time / our_time`` (higher is better).

    For a ceiling (``kind="max"``), ``value = our_time / reference_time`` and
    lower is better.
    """

    stage: str
    name: str
    value: float
    floor: float | None = None
    kind: str = "min"  # "min": value must be >= floor; "max": value must be <= floor
    #: why the floor cannot be judged on this machine right now (e.g. no free second core)
    waived: str | None = None
    #: a known, documented miss: reported, but it does not fail ``--check``
    advisory: bool = False

    @property
    def meets(self) -> bool:
        """The value is within its bound (or there is none)."""
        if self.floor is None:
            return True
        return self.value >= self.floor if self.kind == "min" else self.value <= self.floor

    @property
    def ok(self) -> bool:
        """Meets its bound, or the bound cannot be judged here (``waived``) or is advisory."""
        return self.meets or bool(self.waived) or self.advisory

    def describe(self) -> str:
        bound = "" if self.floor is None else (
            f"  (floor >= {self.floor:g})" if self.kind == "min" else f"  (ceiling <= {self.floor:g})")
        waived = f"  [not judged: {self.waived}]" if self.waived and not self.meets else ""
        return f"{self.stage}: {self.name} = {self.value:.2f}x{bound}{waived}"


@dataclass
class Report:
    """Timings and ratios of one or more stages."""

    timings: list[dict] = field(default_factory=list)
    ratios: list[Ratio] = field(default_factory=list)

    def time(self, stage: str, name: str, seconds: float, *, items: float | None = None,
             unit: str = "rows", nbytes: float | None = None, ours: bool = False) -> None:
        """Record a median time (and throughput when ``items`` or ``nbytes`` is given).

        ``ours`` marks lstm_data's own path (as opposed to a baseline).
        """
        self.timings.append({"stage": stage, "name": name, "seconds": seconds, "items": items,
                             "unit": unit, "bytes": nbytes, "ours": ours})

    def ratio(self, stage: str, name: str, value: float, floor: float | None = None,
              kind: str = "min") -> Ratio:
        r = Ratio(stage, name, value, floor, kind)
        self.ratios.append(r)
        return r

    def failures(self) -> list[Ratio]:
        return [r for r in self.ratios if not r.ok]

    def merge(self, other: "Report") -> None:
        self.timings += other.timings
        self.ratios += other.ratios

    def render(self) -> str:
        """A plain-text table of medians, throughputs and ratios."""
        lines = [f"{'stage':<10} {'measurement':<44} {'median':>11} {'throughput':>16}"]
        for t in self.timings:
            thr = ""
            if t["bytes"]:
                thr = f"{t['bytes'] / t['seconds'] / 1e6:,.0f} MB/s"
            elif t["items"]:
                thr = f"{t['items'] / t['seconds']:,.0f} {t['unit']}/s"
            lines.append(f"{t['stage']:<10} {t['name']:<44} {_fmt_seconds(t['seconds']):>11} {thr:>16}")
        lines.append("")
        lines.append(f"{'stage':<10} {'ratio':<52} {'value':>9} {'bound':>10}  ok")
        for r in self.ratios:
            bound = "" if r.floor is None else (">= " if r.kind == "min" else "<= ") + f"{r.floor:g}"
            verdict = "yes" if r.meets else ("n/a" if r.waived else
                                             "NO (advisory)" if r.advisory else "NO")
            lines.append(f"{r.stage:<10} {r.name:<52} {r.value:>8.2f}x {bound:>10}  {verdict}")
        for r in self.ratios:
            if r.waived and not r.meets:
                lines.append(f"  n/a: {r.stage}: {r.name}: {r.waived}")
        return "\n".join(lines)


def _fmt_seconds(s: float) -> str:
    if s < 1e-3:
        return f"{s * 1e6:.1f} us"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"
