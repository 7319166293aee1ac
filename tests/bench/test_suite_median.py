"""A group re-measured after a missed floor reports the median of its runs, never the best."""
from __future__ import annotations

from bench import suite
from bench.timing import Report


def _run(value: float, seconds: float) -> Report:
    report = Report()
    report.time("csv", "ours", seconds)
    report.ratio("csv", "speedup", value, 1.0)
    report.ratio("csv", "slowdown", 1 / value, 1.0, "max")
    return report


def test_median_report_takes_the_middle_run():
    runs = [_run(0.5, 3.0), _run(2.0, 1.0), _run(1.2, 2.0)]
    merged = suite._median_report(runs)
    ratios = {r.name: r.value for r in merged.ratios}
    assert ratios == {"speedup": 1.2, "slowdown": 1 / 1.2}
    assert [t["seconds"] for t in merged.timings] == [2.0]


def test_missed_floor_is_measured_attempts_times_and_reports_the_median(monkeypatch):
    values = iter([0.5, 3.0, 0.8])  # best-of would pass; the median (0.8) does not
    calls = []

    def fake_group(name, quick, seed, data):
        calls.append(name)
        return _run(next(values), 1.0)

    monkeypatch.setattr(suite, "_run_group", fake_group)
    monkeypatch.setattr(suite, "load_floors", lambda path: {("csv", "speedup"): (1.0, "min", False)})
    report, meta = suite.run_suite(["readers"], data=object(), log=lambda msg: None)
    assert len(calls) == suite.ATTEMPTS == 3 and meta["attempts"]["readers"] == 3
    assert {r.name: r.value for r in report.ratios}["speedup"] == 0.8
