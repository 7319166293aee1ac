"""NOvA HDF5 tables through ``lstm-data convert``, ``inspect`` and ``precompute``, and Batches over them."""
from __future__ import annotations

import json

import numpy as np
import pytest

import lstm_data
from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars, open_batches
from lstm_data.cli import main
from lstm_data.io.nova import read_nova
from tests.helpers import assert_same_batch, assert_same_dataset
from tests.nova_files import PNG, make_tables, write_nova

#: lstm_ee's names for the tables' variables (a schema of aliases)
ALIASES = f'''
[aliases]
png = "{PNG}"
png2d = "{PNG}2d"
calE = "rec.slc.calE"
nHit = "rec.slc.nhit"
trueE = "rec.mc.nu.E"
recoE = "rec.energy.numu.E"
'''
SPEC_TOML = '''
[inputs.input_slice]
type = "scalars"
vars = ["calE", "nHit", "recoE", "evt"]
[inputs.input_png3d]
type = "ragged"
pad_value = nan
max_len = 5
sort_by = "png.calE"
vars = ["png.calE", "png.len", "png.dir[0]", "png.nhit"]
[inputs.input_png2d]
type = "ragged"
pad_value = nan
vars = ["png2d.calE", "png2d.nplane"]
[targets.target_total]
type = "scalars"
vars = ["trueE"]
'''


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("nova_cli")
    nova = write_nova(d / "nova.h5", make_tables(400, seed=3))
    (d / "aliases.toml").write_text(ALIASES)
    (d / "spec.toml").write_text(SPEC_TOML)
    return d, nova


def test_convert_to_zarr_and_hdf5_keeps_every_value(files, tmp_path, capsys):
    _, nova = files
    ref = read_nova(nova)
    assert main(["convert", str(nova), str(tmp_path / "n.zarr")]) == 0
    assert "wrote" in capsys.readouterr().out
    assert main(["convert", str(nova), str(tmp_path / "n.h5"), "--quiet"]) == 0
    assert_same_dataset(lstm_data.open(tmp_path / "n.zarr"), ref)
    assert_same_dataset(lstm_data.open(tmp_path / "n.h5"), ref)
    assert lstm_data.open(tmp_path / "n.h5").scalar("evt").dtype == np.int64


def test_inspect_text_and_json(files, capsys):
    _, nova = files
    ds = read_nova(nova)
    assert main(["inspect", str(nova)]) == 0
    out = capsys.readouterr().out
    assert "rows: 400" in out and f"{PNG}.calE" in out and "rec.energy.numu.E" in out
    assert main(["inspect", str(nova), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    energy = next(s for s in doc["scalars"] if s["name"] == "rec.energy.numu.E")
    assert energy["nan"] == int(np.isnan(ds.scalar("rec.energy.numu.E")).sum()) > 0
    assert doc["groups"][PNG]["variables"][0]["count"] == int(ds.offsets(PNG)[-1])


def test_precompute_on_the_nova_file_and_on_its_aliased_conversion(files, tmp_path, capsys):
    d, nova = files
    spec = BatchSpec.from_toml(d / "spec.toml")
    # lstm_ee names: convert with the aliases, then precompute the converted store
    assert main(["convert", str(nova), str(tmp_path / "a.zarr"), "--schema", str(d / "aliases.toml"),
                 "--quiet"]) == 0
    assert main(["precompute", "--data", str(tmp_path / "a.zarr"), "--spec", str(d / "spec.toml"),
                 "--batch-size", "64", "--seed", "2", "--shuffle", "true", "--out",
                 str(tmp_path / "b.zarr"), "--no-progress"]) == 0
    assert "input_png3d" in capsys.readouterr().out
    aliased = read_nova(nova, schema=d / "aliases.toml")
    stored = open_batches(tmp_path / "b.zarr", order=Order(batch_size=64, seed=2), spec=spec)
    live = Batches(aliased, spec, Order(batch_size=64, seed=2))
    assert len(stored) == len(live) == 7
    for i in range(len(live)):
        assert_same_batch(live[i], stored[i])
    # the file's own names, straight from the .h5
    (tmp_path / "own.toml").write_text(
        f'[inputs.x]\ntype = "scalars"\nvars = ["rec.slc.calE", "evt"]\n'
        f'[inputs.p]\ntype = "ragged"\npad_value = nan\nmax_len = 4\nvars = ["{PNG}.calE", "{PNG}.dir[2]"]\n'
        '[targets.y]\ntype = "scalars"\nvars = ["rec.mc.nu.E"]\n')
    assert main(["precompute", "--data", str(nova), "--spec", str(tmp_path / "own.toml"),
                 "--batch-size", "100", "--seed", "1", "--out", str(tmp_path / "own.zarr"),
                 "--no-progress"]) == 0
    own = BatchSpec.from_toml(tmp_path / "own.toml")
    stored = open_batches(tmp_path / "own.zarr", order=Order(batch_size=100, seed=1), spec=own)
    live = Batches(read_nova(nova), own, Order(batch_size=100, seed=1))
    for i in range(len(live)):
        assert_same_batch(live[i], stored[i])


def _write_csv(ds, path):
    """lstm_ee's CSV of ``ds``: plain scalar cells (empty for NaN), one quoted list per prong variable."""
    def cell(x):
        return "" if np.isnan(x) else repr(float(x))

    names, columns = [], []
    for s in ds.scalar_names:
        col = ds.scalar(s)
        names.append(s)
        columns.append([str(int(x)) if col.dtype.kind == "i" else cell(x) for x in col])
    for g, variables in ds.groups.items():
        values, offsets = ds.ragged(g)
        for j, v in enumerate(variables):
            names.append(v)
            columns.append(['"' + ",".join(repr(float(x)) for x in values[a:b, j]) + '"'
                            for a, b in zip(offsets[:-1], offsets[1:])])
    path.write_text(",".join(names) + "\n" + "".join(",".join(r) + "\n" for r in zip(*columns)))


def test_batches_over_nova_equal_batches_over_the_same_data_as_csv(files, tmp_path):
    d, nova = files
    aliased = read_nova(nova, schema=d / "aliases.toml",
                        tables=["rec.slc", "rec.mc.nu", "rec.energy.numu", PNG, PNG + "2d"])
    _write_csv(aliased, tmp_path / "same.csv")
    csv = lstm_data.open(tmp_path / "same.csv", schema={"png": "png.*", "png2d": "png2d.*"})
    assert csv.groups == aliased.groups and len(csv) == len(aliased) == 400
    spec = BatchSpec(inputs={"s": Scalars(["calE", "nHit", "recoE", "evt"]),
                             "p": Ragged(["png.calE", "png.dir[1]", "png.nhit"], max_len=6,
                                         sort_by="png.calE", lengths=True),
                             "p2": Ragged(["png2d.calE"])},
                     targets={"t": Scalars(["trueE"])})
    for seed in (0, 5):
        order = Order(batch_size=128, seed=seed)
        a, b = Batches(aliased, spec, order), Batches(csv, spec, order)
        assert len(a) == len(b) == 4
        for i in range(len(a)):
            assert_same_batch(a[i], b[i])
    assert_same_batch(Batches(aliased, spec, Order(batch_size=400, shuffle=False))[0],
                      Batches(csv, spec, Order(batch_size=400, shuffle=False))[0])
