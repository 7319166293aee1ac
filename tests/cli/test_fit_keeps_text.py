"""``lstm-data fit`` writes the numbers in place of each "auto": the hand-written file keeps its
comments and layout; options are named as given on the command line."""
from __future__ import annotations

import logging

import pytest

import lstm_data
from lstm_data import BatchSpec
from lstm_data.batching.spec.fit_file import fit_spec_file
from lstm_data.cli import main

DATA = 'calE,png.calE,png.n\n1,"1,2",2\n4,"5",1\n3,"",0\n'
SPEC = """# my spec, by hand
version = 2

[inputs.s]
type = "scalars"
vars = ["calE"]   # energy
standardize = { calE = { center = "auto", scale = 2.0 } }

# the prongs
[inputs.p]
type = "ragged"
max_len = 2
vars = ["png.calE"]

[inputs.p.standardize."png.calE"]
center = "auto"   # fitted by lstm-data fit
scale = 'auto'

[order]
batch_size = 4  # small
"""


@pytest.fixture()
def files(tmp_path):
    (tmp_path / "d.csv").write_text(DATA)
    (tmp_path / "s.toml").write_text(SPEC)
    return tmp_path


def test_fit_changes_only_the_auto_values(files, capsys):
    spec = files / "s.toml"
    assert main(["fit", str(spec), "--data", str(files / "d.csv"), "--fraction", "1", "-q"]) == 0
    fitted = BatchSpec.from_toml(spec)
    s = fitted.inputs["s"].standardize["calE"]
    p = fitted.inputs["p"].standardize["png.calE"]
    text = spec.read_text()
    want = (SPEC.replace('center = "auto", scale = 2.0', f"center = {s.center!r}, scale = 2.0")
                .replace('center = "auto"   # fitted', f"center = {p.center!r}   # fitted")
                .replace("scale = 'auto'", f"scale = {p.scale!r}"))
    assert text == want  # comments, order, spacing and the [order] table as they were
    assert sorted(f.name for f in files.iterdir()) == ["d.csv", "s.toml"]  # no temporary left
    assert capsys.readouterr().out.splitlines()[0] == f"s.calE: center = {s.center!r}, scale = 2.0"


def test_an_auto_out_of_reach_of_a_line_edit_is_written_whole(files, caplog):
    spec = files / "s.toml"
    spec.write_text(SPEC.replace("scale = 'auto'", 'scale = """auto"""'))
    with caplog.at_level(logging.INFO, logger="lstm_data"):
        fit_spec_file(spec, lstm_data.open(files / "d.csv"), fraction=1)
    assert "written whole (its comments are not kept)" in caplog.text
    text = spec.read_text()
    assert "auto" not in text and "batch_size = 4" in text
    assert isinstance(BatchSpec.from_toml(spec).inputs["p"].standardize["png.calE"].scale, float)


def test_a_bad_fraction_is_named_as_the_option(files, capsys):
    assert main(["fit", str(files / "s.toml"), "--data", str(files / "d.csv"), "--fraction", "2"]) == 1
    assert capsys.readouterr().err == "lstm-data fit: error: --fraction must be in (0, 1], got 2\n"
    assert (files / "s.toml").read_text() == SPEC


def test_the_spec_may_follow_the_data_paths(files, capsys):
    spec = files / "s.toml"
    assert main(["fit", "--data", str(files / "d.csv"), str(spec), "--fraction", "1", "-q"]) == 0
    assert "auto" not in spec.read_text()
    assert capsys.readouterr().out.startswith("s.calE: center = ")


def test_a_missing_spec_is_named(files, capsys):
    assert main(["fit", "--data", str(files / "d.csv")]) == 1
    assert "the spec file is missing: lstm-data fit SPEC.toml --data PATH" in capsys.readouterr().err
