"""The many-files bench: a tiny run reports every row, and the floors file bounds its acceptance rows."""
from __future__ import annotations

from bench import many_files
from bench.data import BenchData
from bench.floors import apply_floors, load_floors


def test_tiny_run_reports_the_rows_and_the_packaged_floors_bound_them(monkeypatch, tmp_path):
    monkeypatch.setattr(many_files, "ROUNDS", {True: 3, False: 3})
    monkeypatch.setattr(many_files, "LEGACY_ROUNDS", {True: 1, False: 1})
    monkeypatch.setattr(many_files, "RSS_ROWS", 3000)
    report = many_files.run(quick=True, data=BenchData(n_rows=3000, root=tmp_path))
    apply_floors(report, load_floors())
    ratios = {r.name: r for r in report.ratios}
    guarded = {name for name, r in ratios.items() if r.floor is not None}
    assert guarded == {"epoch N=2 files / 1 file, speed (target >= 0.87)",
                       "epoch N=50 files / 1 file, speed (target >= 0.87)",
                       "peak RSS, N=50 files / 1 file (target <= 1.1)"}
    assert all(r.value > 0 for r in ratios.values())
    # the legacy per-file path batches the same rows far more slowly, whatever the size
    assert ratios["legacy per-file path: epoch N=50 files / 1 file, speed"].value < 1.0
