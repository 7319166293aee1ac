"""Every floor in floors.toml names a ratio row some stage reports (no floor left unjudged)."""
from __future__ import annotations

from bench import floors as floors_mod


def test_every_packaged_floor_is_a_row_some_stage_reports():
    assert floors_mod.orphan_floors(floors_mod.load_floors()) == []


def test_a_floor_of_a_renamed_row_or_another_stage_is_an_orphan(tmp_path):
    stage = tmp_path / "stage.py"
    stage.write_text('STAGE = "pad"\n'
                     'def run(report, n):\n'
                     '    report.ratio(STAGE, "pad vs numpy gather+pad", 1.0)\n'
                     '    report.ratio(STAGE, f"epoch N={n} files / 1 file", 1.0)\n'
                     '    report.ratio(STAGE, "machine ceiling: " + str(n) + " on 2 vs 1 threads", 1.0)\n'
                     '    report.ratio(STAGE, f"{n}", 1.0)\n')
    floors = [("pad", "pad vs numpy gather+pad"), ("pad", "epoch N=50 files / 1 file"),
              ("pad", "machine ceiling: np.sort on 2 vs 1 threads"),
              ("pad", "pad vs numpy gather + pad"),  # the row was renamed
              ("parse", "pad vs numpy gather+pad"),  # no such stage
              ("pad", "anything at all")]  # f"{n}" alone spells any name: it names no row
    assert floors_mod.orphan_floors(floors, [stage]) == floors[3:]
