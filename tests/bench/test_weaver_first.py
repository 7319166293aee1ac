"""The first-pass bench against weaver-core's ``_load_next``: a tiny run reports both formats (and ours over
the physical limit of writing the same batches), bounded by the floors file."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow  # a run of the bench stage against weaver-core (a heavy peer)

pytest.importorskip("weaver.utils.dataset")
pytest.importorskip("uproot")

from bench import weaver_first  # noqa: E402
from bench.data import BenchData  # noqa: E402
from bench.floors import apply_floors, load_floors  # noqa: E402


def test_tiny_run_reports_root_and_parquet_and_the_floors_bound_them(tmp_path, monkeypatch):
    monkeypatch.setattr(weaver_first, "files", lambda data, jets: {
        fmt: str(p) for fmt, p in _files(tmp_path, jets).items()})
    report = weaver_first.run(quick=True, data=BenchData(quick=True, root=tmp_path), rounds=1,
                              sizes=(20_000,), log=lambda *_: None)
    names = [r.name for r in report.ratios]
    assert names == ["root: first pass over 20000 jets vs weaver-core _load_next",
                     "root: first pass over 20000 jets / writing its batches",
                     "parquet: first pass over 20000 jets vs weaver-core _load_next",
                     "parquet: first pass over 20000 jets / writing its batches"]
    apply_floors(report, load_floors())
    assert all(r.floor is not None and r.value > 0 for r in report.ratios)


def _files(folder, jets):
    """One small file per format (the name says 20000 jets; 600 are written, to stay quick)."""
    target = folder / "jets"
    if not target.exists():
        weaver_first._write(target, 600, 0)
    return {"root": target / "jets.root", "parquet": target / "jets.parquet"}
