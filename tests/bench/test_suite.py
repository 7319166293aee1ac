"""The bench suite itself: floors, --check, JSON, --compare and the chart (tiny runs)."""
from __future__ import annotations

import json
import time

import numpy as np
import pytest

from lstm_data import kernels
from lstm_data.cli import main

from bench import floors as floors_mod
from bench import kernels as kernel_stage
from bench.timing import Report, interleaved_medians, interleaved_samples


@pytest.fixture
def tiny_kernels(monkeypatch):
    """Make the kernel stage tiny: few rows, few repeats."""
    monkeypatch.setattr(kernel_stage, "PAD_ROWS", 3000)
    monkeypatch.setattr(kernel_stage, "PARSE_ROWS", {True: 500, False: 500})
    monkeypatch.setattr(kernel_stage, "THREAD_BATCHES", 8)
    monkeypatch.setattr(kernel_stage, "BATCH", 256)
    monkeypatch.setattr(kernel_stage, "sort_scaling", lambda: 2.0)  # not under test here
    def quick_samples(cases, **kw):
        kw.update(repeats=3, warmup=1, min_seconds=0.0)
        return interleaved_samples(cases, **kw)

    monkeypatch.setattr(kernel_stage, "interleaved_samples", quick_samples)


def floors_file(tmp_path, body: str):
    path = tmp_path / "floors.toml"
    path.write_text(body)
    return path


def test_floors_parse_and_reject_bad_entries(tmp_path):
    good = floors_file(tmp_path, '[pad]\n"a" = { min = 2 }\n"b" = { max = 3.5 }\n')
    assert floors_mod.load_floors(good) == {("pad", "a"): (2.0, "min", False),
                                            ("pad", "b"): (3.5, "max", False)}
    advisory = floors_file(tmp_path, '[pad]\n"a" = { min = 2, advisory = true }\n')
    assert floors_mod.load_floors(advisory) == {("pad", "a"): (2.0, "min", True)}
    report = Report()
    report.ratio("pad", "a", 1.0)
    floors_mod.apply_floors(report, floors_mod.load_floors(advisory))
    assert report.failures() == [] and "NO (advisory)" in report.render()
    bad = floors_file(tmp_path, '[pad]\n"a" = 2\n')
    with pytest.raises(ValueError, match="min = X"):
        floors_mod.load_floors(bad)


def test_packaged_floors_cover_the_acceptance_ratios():
    floors = floors_mod.load_floors()
    # the guards are at least as strict as the acceptance goals (they sit below the figures seen)
    goals = {("pad", "pad vs numpy gather+pad"): (1.5, "min"), ("pad", "pad time / np.copyto of output"): (4.0, "max"),
             ("parse", "parse vs legacy per-cell float()"): (10.0, "min")}
    for key, (goal, kind) in goals.items():
        bound, got_kind, advisory = floors[key]
        assert got_kind == kind and not advisory
        assert (bound >= goal) if kind == "min" else (bound <= goal)


@pytest.mark.slow
@pytest.mark.skipif(kernels.BACKEND != "cython", reason="the floors hold for the compiled core only")
def test_check_fails_when_the_pad_kernel_is_made_slow(tiny_kernels, monkeypatch, tmp_path, capsys):
    floors = floors_file(tmp_path, '[pad]\n"pad vs numpy gather+pad" = { min = 1.0 }\n')
    assert main(["bench", "--only", "kernels", "--check", "--floors", str(floors)]) == 0

    real_pad = kernels.pad_ragged

    def slow_pad(*args, **kwargs):
        time.sleep(0.02)  # an artificial regression: far slower than numpy on a tiny batch
        return real_pad(*args, **kwargs)

    monkeypatch.setattr(kernels, "pad_ragged", slow_pad)
    assert main(["bench", "--only", "kernels", "--check", "--floors", str(floors)]) == 1
    err = capsys.readouterr().err
    assert "FLOOR MISSED" in err and "pad vs numpy gather+pad" in err


@pytest.mark.slow
def test_json_compare_and_plot(tiny_kernels, tmp_path, capsys):
    a, b, png = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "chart.png"
    floors = floors_file(tmp_path, "")
    for out in (a, b):
        assert main(["bench", "--only", "kernels", "--json", str(out), "--floors", str(floors),
                     "--plot", str(png)]) == 0
    record = json.loads(a.read_text())
    assert record["machine"]["backend"] == kernels.BACKEND and record["machine"]["cores"] >= 1
    assert {r["name"] for r in record["ratios"]} >= {"pad vs numpy gather+pad"}
    assert png.read_bytes().startswith(b"\x89PNG")
    capsys.readouterr()
    assert main(["bench", "--compare", str(a), str(b)]) == 0
    table = capsys.readouterr().out
    assert "pad vs numpy gather+pad" in table and "B/A" in table


def test_unknown_stage_is_a_clear_error(capsys):
    assert main(["bench", "--only", "nonsense"]) == 1
    assert "unknown bench stage" in capsys.readouterr().err


def test_thread_floor_is_not_judged_without_a_free_core():
    from bench.ceiling import waive_without_two_cores

    report = Report()
    judged = waive_without_two_cores(report.ratio("threads", "a", 1.2, 1.7),
                                     {"np.sort": 1.95, "random np.take": 1.9})
    waived = waive_without_two_cores(report.ratio("threads", "b", 1.2, 1.7),
                                     {"np.sort": 1.95, "random np.take": 1.1})
    assert not judged.ok and waived.ok and waived.waived
    assert "n/a" in report.render() and report.failures() == [judged]


def test_report_marks_ceiling_and_floor():
    report = Report()
    low = report.ratio("s", "speedup", 1.2, 1.5, "min")
    high = report.ratio("s", "slowdown", 5.0, 4.0, "max")
    assert not low.ok and not high.ok and report.failures() == [low, high]
    assert "NO" in report.render()
    assert np.isfinite(low.value)


def test_interleaved_medians_times_blocks_of_calls_per_call():
    counts = {"a": 0, "b": 0}

    def case(name, seconds):
        def run():
            counts[name] += 1
            time.sleep(seconds)
        return run

    med = interleaved_medians({"a": case("a", 0.002), "b": case("b", 0.004)},
                              repeats=3, warmup=1, calls=4)
    # per call, not per block of 4; each block follows one untimed call
    assert 0.0019 < med["a"] < 0.006 and 0.0039 < med["b"] < 0.012  # a block of 4: 0.008, 0.016
    assert counts == {"a": 1 + 3 * (1 + 4), "b": 1 + 3 * (1 + 4)}
    with pytest.raises(ValueError, match="calls must be >= 1"):
        interleaved_medians({"a": case("a", 0)}, calls=0)


def test_legacy_csv_time_is_bracketed_by_our_reads():
    from bench.readers import _bracketed

    calls = []

    def ours():
        calls.append("ours")
        time.sleep(0.001)

    def slow():
        calls.append("slow")
        time.sleep(0.02)

    legacy, around = _bracketed(slow, ours)
    assert calls == ["ours", "slow", "ours"]  # ours right before and right after
    assert legacy >= 0.019 and len(around) == 2 and all(0.0009 < s < legacy for s in around)
