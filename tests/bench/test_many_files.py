"""The many-files bench: a tiny run reports every row (in RAM and on disk), and the floors file bounds its
acceptance rows."""
from __future__ import annotations

import pytest

from bench import many_files
from bench.data import BenchData
from bench.floors import apply_floors, load_floors


@pytest.mark.slow
def test_tiny_run_reports_the_rows_and_the_packaged_floors_bound_them(monkeypatch, tmp_path):
    monkeypatch.setattr(many_files, "ROUNDS", {True: 3, False: 3})
    monkeypatch.setattr(many_files, "LEGACY_ROUNDS", {True: 1, False: 1})
    monkeypatch.setattr(many_files, "RSS_ROWS", 3000)
    monkeypatch.setattr(many_files, "DISK_ROUNDS", {True: 2, False: 2})
    report = many_files.run(quick=True, data=BenchData(n_rows=3000, root=tmp_path))
    apply_floors(report, load_floors())
    ratios = {r.name: r for r in report.ratios}
    guarded = {name for name, r in ratios.items() if r.floor is not None}
    on_disk = {f"on-disk zarr, shuffle={s}: epoch N={n} stores / 1 store, speed (target >= 0.87)"
               for s in ("False", "block") for n in (2, 50)}
    assert guarded == {"epoch N=2 files / 1 file, speed (target >= 0.87)",
                       "epoch N=50 files / 1 file, speed (target >= 0.87)",
                       "peak RSS, N=50 files / 1 file (target <= 1.1)"} | on_disk
    assert all(r.value > 0 for r in ratios.values())
    # the legacy per-file path batches the same rows far more slowly, whatever the size
    assert ratios["legacy per-file path: epoch N=50 files / 1 file, speed"].value < 1.0
