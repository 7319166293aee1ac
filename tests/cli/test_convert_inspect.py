"""``lstm-data convert`` and ``lstm-data inspect`` through cli.main and the console script."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

import lstm_data
from lstm_data._util import progress as _progress
from lstm_data.cli import main
from lstm_data.data import synthetic
from tests.helpers import assert_same_dataset


@pytest.fixture(scope="module")
def csv_path(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    generated = synthetic.write_csv(d / "ev.csv", n_rows=1500, seed=8)
    return d / "ev.csv", generated


def test_convert_to_zarr_and_hdf5(csv_path, tmp_path, capsys):
    src, _ = csv_path
    ref = lstm_data.open(src)
    assert main(["convert", str(src), str(tmp_path / "a.zarr")]) == 0
    assert main(["convert", str(tmp_path / "a.zarr"), str(tmp_path / "a.h5"), "--quiet"]) == 0
    assert_same_dataset(lstm_data.open(tmp_path / "a.zarr"), ref)
    assert_same_dataset(lstm_data.open(tmp_path / "a.h5"), ref)
    err = capsys.readouterr()
    assert "wrote" in err.out and "1500 rows" in err.out


def test_convert_shuffle_is_seeded_permutation(csv_path, tmp_path):
    src, _ = csv_path
    ref = lstm_data.open(src)
    assert main(["convert", str(src), str(tmp_path / "s.zarr"), "--shuffle-seed", "5", "--quiet"]) == 0
    perm = np.random.default_rng(5).permutation(len(ref))
    assert_same_dataset(lstm_data.open(tmp_path / "s.zarr"), ref.take(perm))


def test_convert_several_sources_and_schema(csv_path, tmp_path):
    src, _ = csv_path
    shutil.copy(src, tmp_path / "b.csv")
    (tmp_path / "schema.toml").write_text('dtype = "float64"\n[groups]\npng = "png.*"\n'
                                          'png2d = "png2d.*"\n')
    assert main(["convert", str(src), str(tmp_path / "b.csv"), str(tmp_path / "two.h5"),
                 "--schema", str(tmp_path / "schema.toml"), "--quiet"]) == 0
    two = lstm_data.open(tmp_path / "two.h5")
    assert len(two) == 3000 and two.ragged("png")[0].dtype == np.float64


def test_convert_refuses_existing_and_bad_output(csv_path, tmp_path, capsys):
    src, _ = csv_path
    (tmp_path / "x.zarr").mkdir()
    assert main(["convert", str(src), str(tmp_path / "x.zarr"), "--quiet"]) == 1
    assert "exists" in capsys.readouterr().err
    assert main(["convert", str(src), str(tmp_path / "x.parquet")]) == 1
    assert ".zarr, .h5 or .hdf5" in capsys.readouterr().err
    assert main(["convert", str(src), str(tmp_path / "x.zarr"), "--overwrite", "--quiet"]) == 0
    assert len(lstm_data.open(tmp_path / "x.zarr")) == 1500


def test_convert_never_reads_its_own_output_back(csv_path, tmp_path, capsys):
    src, _ = csv_path
    parts = tmp_path / "parts"
    parts.mkdir()
    for k in range(2):
        assert main(["convert", str(src), str(parts / f"p{k}.h5"), "--quiet"]) == 0
    pattern, out = str(parts / "*.h5"), str(parts / "all.h5")
    assert main(["convert", pattern, out, "--quiet"]) == 0
    assert len(lstm_data.open(out)) == 3000
    # run again: the glob now matches all.h5 itself, which would be read into itself
    assert main(["convert", pattern, out, "--overwrite", "--quiet"]) == 1
    assert "would overwrite the input data" in capsys.readouterr().err
    assert len(lstm_data.open(out)) == 3000
    with pytest.raises(ValueError, match="would overwrite the input data"):  # the API as well
        lstm_data.open(parts / "p0.h5").to_zarr(parts)


@pytest.mark.parametrize("option, value, message", [
    ("--shuffle-seed", "-1", "must be at least 0, got -1"),
    ("--chunk-kib", "0", "must be at least 1, got 0"),
    ("--chunk-kib", "x", "expected an integer, got 'x'"),
])
def test_convert_checks_its_options_before_reading(csv_path, tmp_path, capsys, option, value,
                                                   message):
    src, _ = csv_path
    with pytest.raises(SystemExit) as info:
        main(["convert", str(src), str(tmp_path / "o.zarr"), option, value])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert option in err and message in err
    assert not (tmp_path / "o.zarr").exists()


def test_failed_convert_leaves_no_output(tmp_path, capsys):
    (tmp_path / "bad.csv").write_text("a,png.x\n1,\"1,2\"\n2,\"3,oops\"\n")
    assert main(["convert", str(tmp_path / "bad.csv"), str(tmp_path / "bad.zarr"), "--quiet"]) == 1
    assert "oops" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.csv"]


def test_progress_without_tqdm_falls_back(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    monkeypatch.setattr(_progress.ByteProgress, "_hinted", False)
    bar = _progress.ByteProgress("write")
    for done in range(0, 101, 25):
        bar(done, 100)
    err = capsys.readouterr().err
    assert "install tqdm" in err and "write: 100%" in err


def test_inspect_text_json_and_plot(csv_path, tmp_path, capsys):
    src, generated = csv_path
    assert main(["inspect", str(src), "--plot", str(tmp_path / "m.png")]) == 0
    out = capsys.readouterr().out
    lengths = np.diff(generated.ragged("png")[1])
    k99 = int(np.sort(lengths)[int(np.ceil(0.99 * len(lengths))) - 1])
    assert f"max_len {k99} keeps 99% of rows whole" in out
    assert "rows: 1500" in out and "png2d.calE" in out
    assert (tmp_path / "m.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["inspect", str(src), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    calE = next(s for s in doc["scalars"] if s["name"] == "calE")
    col = generated.scalar("calE")
    assert calE["min"] == float(col.min()) and calE["max"] == float(col.max())
    assert calE["mean"] == pytest.approx(float(col.astype(np.float64).mean()))
    var = doc["groups"]["png"]["variables"][3]
    vals = generated.ragged("png")[0][:, 3]
    assert var["count"] == len(vals) and var["max"] == float(vals.max())
    assert doc["groups"]["png"]["multiplicity"]["keeps"]["0.99"] == k99


def test_inspect_counts_nans(tmp_path, capsys):
    (tmp_path / "n.csv").write_text("a,png.x\n1,\"1,2\"\n,\"nan\"\n3,\"\"\n")
    assert main(["inspect", str(tmp_path / "n.csv"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["scalars"][0] == {"name": "a", "count": 3, "nan": 1, "min": 1.0, "max": 3.0,
                                 "mean": 2.0}
    x = doc["groups"]["png"]["variables"][0]
    assert (x["count"], x["nan"], x["mean"]) == (3, 1, 1.5)


def test_console_script(csv_path, tmp_path):
    exe = shutil.which("lstm-data")
    if exe is None:
        pytest.skip("lstm-data console script not installed")
    src, _ = csv_path
    run = subprocess.run([exe, "convert", str(src), str(tmp_path / "c.zarr"), "--quiet"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    run = subprocess.run([exe, "inspect", str(tmp_path / "c.zarr"), "--no-stats"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "rows: 1500" in run.stdout
