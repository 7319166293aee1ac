"""The consumers bench stage runs every pattern and reports its ratios (a tiny run; no timing checks)."""
from __future__ import annotations

import math
import os

import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")

from bench import consumers  # noqa: E402
from bench.suite import STAGES  # noqa: E402


@pytest.mark.slow
def test_tiny_run_reports_every_pattern_and_the_acceptance_ratios(monkeypatch):
    monkeypatch.setattr(consumers, "N_ROWS", 6000)
    monkeypatch.setattr(consumers, "BATCH", 100)  # 60 batches: more than the 48 kept
    monkeypatch.setattr(consumers, "REPEATS", {True: 1})
    monkeypatch.setattr(consumers, "FRESH_RUNS", {True: 1})
    monkeypatch.setattr(consumers, "write_scaling", lambda: 1.2)  # not under test here
    monkeypatch.setattr(consumers, "sort_scaling", lambda: 2.0)
    report = consumers.run(quick=True)
    times = {t["name"]: t["seconds"] for t in report.timings}
    ratios = {r.name: r for r in report.ratios}
    for name in (consumers.DROP, consumers.NUMPY, "ThreadPoolExecutor(2).map, last 10 kept alive",
                 "Batches.iter(workers=2)", "an epoch collected into a list, first pass, fresh process"):
        assert times[f"{name} (per batch)"] > 0, name
        if name != consumers.NUMPY:
            assert ratios[f"{name} / NumPy fresh"].value > 0
    assert "48 kept, first pass, fresh process / NumPy fresh" in ratios
    if consumers.KERAS.format(2) + " (per batch)" in times:
        keras = ratios["KerasBatches workers=2 vs workers=1 batches/s"]
        assert keras.value > 0 and keras.waived  # a 1.2x fill ceiling: judged against the ceiling
        assert not ratios["KerasBatches workers=2 vs workers=1 / 2-thread fill ceiling"].waived
    if consumers.TORCH2 + " (per batch)" in times:
        assert ratios["DataLoader num_workers=2 vs num_workers=0 batches/s"].value > 0
        assert math.isfinite(ratios["torch's own worker transfer: num_workers=2 time / num_workers=0"].value)
    assert STAGES["consumers"] == "consumers"
