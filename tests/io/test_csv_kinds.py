"""Column kinds decided across the CSV files of one dataset (a prong variable with at most one
value per row in one file, or a header-only file, is still a list there)."""
from __future__ import annotations

import csv
import gzip

import numpy as np
import pytest

import lstm_data
from lstm_data.cli import main
from lstm_data.errors import SchemaError
from lstm_data.io.ours.convert import convert_streaming
from lstm_data.io.csv.kinds import common_schema, union_groups
from lstm_data.io.csv.reader import read_csv

MANY = [(1.0, [0.5, 0.25], [1, 2]), (2.0, [], [])]
ONE = [(3.0, [0.75], [3]), (4.0, [], [])]


def write(path, rows):
    """As ``csv.writer`` writes lists joined by commas: a one-number list comes out bare."""
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["calE", "png.x", "png.y"])
        for e, xs, ys in rows:
            w.writerow([e, ",".join(map(str, xs)), ",".join(map(str, ys))])
    return str(path)


@pytest.fixture
def files(tmp_path):
    return {"many": write(tmp_path / "many.csv", MANY), "one": write(tmp_path / "one.csv", ONE),
            "empty": write(tmp_path / "empty.csv", [])}


def _check(ds, order):
    rows = [r for name in order for r in {"many": MANY, "one": ONE, "empty": []}[name]]
    assert ds.scalar_names == ["calE"] and ds.groups == {"png": ["png.x", "png.y"]}
    values, offsets = ds.ragged("png")
    assert np.diff(offsets).tolist() == [len(xs) for _, xs, _ in rows]
    assert values[:, 0].tolist() == [x for _, xs, _ in rows for x in xs]
    assert values[:, 1].tolist() == [y for _, _, ys in rows for y in ys]


ORDERS = [("many", "one", "empty"), ("one", "many"), ("empty", "one", "many"), ("one", "empty", "many")]


@pytest.mark.parametrize("order", ORDERS, ids="-".join)
def test_open_of_several_files(files, order):
    paths = [files[n] for n in order]
    _check(lstm_data.open(paths), order)
    _check(read_csv(paths), order)


@pytest.mark.parametrize("order", ORDERS, ids="-".join)
def test_streaming_convert_of_several_files(files, order, tmp_path):
    paths = [files[n] for n in order]
    convert_streaming(paths, tmp_path / "out.zarr")
    _check(lstm_data.open(tmp_path / "out.zarr"), order)


def test_compressed_and_plain_mixed(files, tmp_path):
    gz = tmp_path / "one.csv.gz"
    gz.write_bytes(gzip.compress(open(files["one"], "rb").read()))
    _check(lstm_data.open([str(gz), files["many"]]), ("one", "many"))
    convert_streaming([str(gz), files["many"]], tmp_path / "o.zarr")
    _check(lstm_data.open(tmp_path / "o.zarr"), ("one", "many"))


def test_files_that_agree_are_read_as_they_are(files, tmp_path):
    """Two files of single values: nothing says they are lists; scalars in both."""
    other = write(tmp_path / "other.csv", ONE)
    ds = lstm_data.open([files["one"], other])
    assert ds.groups == {} and ds.scalar_names == ["calE", "png.x", "png.y"]
    assert common_schema([files["one"], other]) is None


def test_a_real_length_mismatch_is_still_an_error(files, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text('calE,png.x,png.y\n1,"1,2",3\n')  # png.y's lengths differ from png.x's here
    with pytest.raises(SchemaError, match="bad.csv"):
        lstm_data.open([files["many"], str(bad)])


def test_union_groups_first_file_names_the_group():
    layouts = [(["a", "p.x", "p.y"], {}), (["a"], {"p": ["p.x"], "p_2": ["p.y"]}),
               (["a"], {"p": ["p.x", "p.y"]})]
    assert union_groups(layouts) == {"p": ["p.x"], "p_2": ["p.y"]}


SPEC = """
[inputs.input_png]
type = "ragged"
pad_value = nan
max_len = 2
vars = ["png.x", "png.y"]

[targets.target_e]
type = "scalars"
vars = ["calE"]
"""


def test_precompute_of_several_files_and_schema(files, tmp_path):
    (tmp_path / "spec.toml").write_text(SPEC)
    args = ["precompute", "--spec", str(tmp_path / "spec.toml"), "--batch-size", "2", "-q"]
    assert main([*args, "--data", files["one"], files["many"], "--out", str(tmp_path / "a.zarr")]) == 0
    # one file alone shows no list: a schema says what it is
    (tmp_path / "schema.toml").write_text('[groups]\npng = ["png.x", "png.y"]\n')
    assert main([*args, "--data", files["one"], "--schema", str(tmp_path / "schema.toml"),
                 "--out", str(tmp_path / "b.zarr")]) == 0
    stored = lstm_data.open_batches(tmp_path / "b.zarr")
    assert len(stored) == 1
