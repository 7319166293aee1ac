"""Floored ratios are medians of per-round ratios of interleaved cases."""
from __future__ import annotations

import pytest

bench_timing = pytest.importorskip("bench.timing")


def test_median_ratio_takes_the_median_of_per_round_ratios():
    # round 2 is hit by a burst on both sides: the ratio of medians (2/1.1 = 1.8) is not any round's
    samples = {"theirs": [2.0, 8.0, 1.9, 2.1, 1.0], "ours": [1.0, 4.0, 1.1, 1.0, 1.2]}
    assert bench_timing.median_ratio(samples, "theirs", "ours") == pytest.approx(2.0)


def test_interleaved_samples_times_every_case_every_round():
    calls = []
    samples = bench_timing.interleaved_samples({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")},
                                               repeats=3, warmup=1)
    assert calls == ["a", "b"] * 4
    assert [len(s) for s in samples.values()] == [3, 3]
    assert set(bench_timing.interleaved_medians({"a": lambda: None}, repeats=2)) == {"a"}


def test_rotated_rounds_start_each_at_the_next_case():
    calls = []
    samples = bench_timing.interleaved_samples({k: (lambda k=k: calls.append(k)) for k in "abc"},
                                               repeats=3, warmup=0, rotate=True)
    assert "".join(calls) == "abcbcacab"
    assert [len(s) for s in samples.values()] == [3, 3, 3]


def test_median_of_ratios_pairs_rounds_and_refuses_unpaired_lists():
    assert bench_timing.median_of_ratios([2.0, 9.0, 3.0], [1.0, 3.0, 1.0]) == pytest.approx(3.0)
    with pytest.raises(ValueError, match="equally long"):
        bench_timing.median_of_ratios([1.0, 2.0], [1.0])
