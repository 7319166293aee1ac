"""A path that is not there or not what it should be is named with the way out: the close names in
its folder for a mistyped spec, schema or data file, and the pattern for a folder of CSV files."""
from __future__ import annotations

import lzma
import shutil

import pytest

import lstm_data
from lstm_data.cli import main
from tests.helpers import EXAMPLES


@pytest.fixture()
def folder(tmp_path, monkeypatch):
    for name in ("numu_v3.toml", "numu_v3.csv.xz"):
        shutil.copyfile(EXAMPLES / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _error(argv, capsys) -> str:
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    return captured.err


def test_a_mistyped_spec_names_the_option_and_the_close_file(folder, capsys):
    err = _error(["inspect", "numu_v3.csv.xz", "--no-stats", "--spec", "numu_v2.toml"], capsys)
    assert err == "lstm-data inspect: error: --spec: no such file 'numu_v2.toml'; did you mean 'numu_v3.toml'?\n"
    # no close spelling: the folder's few files of the same kind
    err = _error(["precompute", "--data", "numu_v3.csv.xz", "--spec", "missing.toml", "--out", "o.zarr"], capsys)
    assert "--spec: no such file 'missing.toml'; did you mean 'numu_v3.toml'?" in err
    assert not (folder / "o.zarr").exists()
    err = _error(["fit", "numu_v2.toml", "--data", "numu_v3.csv.xz"], capsys)
    assert "SPEC.toml: no such file 'numu_v2.toml'; did you mean 'numu_v3.toml'?" in err
    err = _error(["inspect", "numu_v3.csv.xz", "--schema", "sub/schema.toml"], capsys)
    assert "--schema: no such file 'sub/schema.toml'\n" in err


def test_a_directory_given_as_the_spec_is_said_to_be_one(folder, capsys):
    (folder / "specs").mkdir()
    err = _error(["inspect", "numu_v3.csv.xz", "--spec", "specs"], capsys)
    assert err == "lstm-data inspect: error: --spec: 'specs' is a directory, not a file\n"


def test_a_mistyped_data_path_names_the_close_file(folder, capsys):
    err = _error(["inspect", "numu_v2.csv.xz"], capsys)
    assert "no such file or directory 'numu_v2.csv.xz'; did you mean 'numu_v3.csv.xz'?" in err
    with pytest.raises(FileNotFoundError, match=r"did you mean '[^']*numu_v3.csv.xz'"):
        lstm_data.open(folder / "numu_v3.csv.gz")


def test_a_folder_of_csv_files_names_how_many_and_the_pattern(folder, capsys):
    parts = folder / "parts"
    parts.mkdir()
    for i, name in enumerate(("a.csv.xz", "b.csv.xz", "c.csv.xz")):
        with lzma.open(parts / name, "wt") as fh:
            fh.write(f"calE,nHit\n{i}.5,{i}\n")
    (parts / "README.md").write_text("notes")
    with pytest.raises(lstm_data.FormatError) as err:
        lstm_data.open(parts)
    assert "a directory of 3 CSV files is not one dataset" in str(err.value)
    assert f"pass the pattern '{parts}/*.csv.xz'" in str(err.value) and err.value.file == str(parts)
    err_text = _error(["inspect", "parts", "--no-stats"], capsys)
    assert "pass the pattern 'parts/*.csv.xz'" in err_text
    assert len(lstm_data.open(str(parts / "*.csv.xz"))) == 3  # the pattern named reads them
