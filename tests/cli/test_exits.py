"""How a command ends when the way out is not in the data: a missing optional dependency (one line
naming the extra, exit 2, checked before any work) and a reader of stdout that left (``| head``)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lstm_data.cli import main
from lstm_data.data.synthetic import make_dataset
from lstm_data.errors import MissingExtraError
from tests.helpers import EXAMPLES

REPO = Path(__file__).resolve().parents[2]


def test_a_missing_extra_is_one_line_naming_the_extra_and_exit_2(tmp_path, capsys, monkeypatch):
    pytest.importorskip("pyarrow")
    path = tmp_path / "d.parquet"
    make_dataset(40, seed=1).to_parquet(path)
    for name in ("pyarrow", "pyarrow.parquet"):  # as if not installed
        monkeypatch.setitem(sys.modules, name, None)
    assert main(["inspect", str(path)]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err
    assert lines[0].startswith("lstm-data inspect: error: ")
    assert "pip install 'lstm_data[parquet]'" in lines[0]


def test_the_missing_extra_error_names_its_extra_and_is_an_import_error(monkeypatch):
    from lstm_data._util.optional import require

    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(MissingExtraError) as err:
        require("reading Parquet", "parquet", "pyarrow")
    assert isinstance(err.value, ImportError) and err.value.extra == "parquet"
    assert err.value.install == "pip install 'lstm_data[parquet]'"


def test_plot_without_matplotlib_is_said_before_the_report(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    png = tmp_path / "m.png"
    assert main(["inspect", str(EXAMPLES / "numu_v3.csv.xz"), "--no-stats", "--plot", str(png)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # no report first: nothing was read
    assert "--plot needs matplotlib: pip install 'lstm_data[plot]'" in captured.err
    assert len(captured.err.strip().splitlines()) == 1 and not png.exists()


def test_a_reader_that_leaves_ends_the_command_quietly(tmp_path):
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader left before the first line: `lstm-data inspect ... | head -0`
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    try:
        proc = subprocess.run([sys.executable, "-m", "lstm_data", "inspect", str(EXAMPLES / "numu_v3.csv.xz"),
                               "--no-stats"], stdout=write_end, stderr=subprocess.PIPE, env=env, cwd=tmp_path,
                              timeout=60)
    finally:
        os.close(write_end)
    assert proc.stderr.decode() == ""
    assert proc.returncode == 141
