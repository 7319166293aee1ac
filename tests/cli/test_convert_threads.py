"""``lstm-data convert --threads N``: CSV inputs parsed on N threads, the same dataset."""
from __future__ import annotations

import pytest

import lstm_data
from lstm_data.cli import main
from lstm_data.data import synthetic
from tests.helpers import assert_same_dataset


def test_convert_threads(tmp_path, capsys):
    src = tmp_path / "ev.csv"
    synthetic.write_csv(src, n_rows=300, seed=4, token_mix=True)
    ref = lstm_data.open(src, threads=1)
    for threads in ("1", "2"):
        out = tmp_path / f"t{threads}.zarr"
        assert main(["convert", str(src), str(out), "--threads", threads, "--quiet"]) == 0
        assert_same_dataset(lstm_data.open(out), ref)
    with pytest.raises(SystemExit):
        main(["convert", str(src), str(tmp_path / "x.zarr"), "--threads", "0"])
    assert "must be at least 1" in capsys.readouterr().err
