"""The orders bench: a tiny run reports every policy, and the floors file guards its own ratios."""
from __future__ import annotations

import math

import pytest

from bench import orders
from bench.data import BenchData
from bench.floors import apply_floors, load_floors


@pytest.mark.slow
def test_tiny_run_reports_every_policy_and_the_floors_bound_them(tmp_path):
    report = orders.run(quick=True, data=BenchData(n_rows=4000, root=tmp_path))
    apply_floors(report, load_floors())
    ratios = {r.name: r for r in report.ratios}
    for policy in orders.POLICIES:
        assert f"{policy}: padded per real png3d element" in ratios, policy
    guarded = {name for name, r in ratios.items() if r.floor is not None}
    assert guarded == {"padding, budget / fixed-size bucketing", "events/s, budget / fixed-size bucketing",
                       "batches per epoch, block budget / in-RAM budget", "full shuffle mixing, rows",
                       "padding, auto lengths k=4 / best pad_to_multiple_of with 4 shapes"}
    # the figures the docs' table shows: budget pads less than bucketing, a full shuffle mixes as one
    pad = {p: ratios[f"{p}: padded per real png3d element"].value for p in ("budget", "bucketed", "full")}
    assert pad["budget"] < pad["bucketed"] < pad["full"]
    assert math.isclose(ratios["full: mixing, rows"].value, 1.0, abs_tol=0.1)
    assert 0 <= ratios["block: mixing, files"].value <= 1.1  # 8 files: measured, not None
