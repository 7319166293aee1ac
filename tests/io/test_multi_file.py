"""Multi-file datasets: global rows -> (file, local row) via cumulative counts + searchsorted."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import lstm_data
from lstm_data import SchemaError
from lstm_data.data import synthetic
from lstm_data.data.concat import ConcatDataset
from lstm_data.data.dataset import InMemoryDataset
from lstm_data.data.ragged import RaggedGroup
from tests.helpers import assert_same_dataset


def concat_in_ram(parts):
    scalars = {s: np.concatenate([p.scalar(s) for p in parts]) for s in parts[0].scalar_names}
    groups = {}
    for g, names in parts[0].groups.items():
        vals = np.concatenate([p.ragged(g)[0] for p in parts])
        lens = np.concatenate([np.diff(p.ragged(g)[1]) for p in parts])
        groups[g] = RaggedGroup(names, vals, np.concatenate([[0], np.cumsum(lens)]))
    return InMemoryDataset(scalars, groups)


@pytest.fixture(scope="module")
def parts():
    return [synthetic.make_dataset(n, seed=s) for n, s in ((700, 1), (1, 2), (1300, 3), (0, 4))]


@pytest.fixture(scope="module")
def files(parts, tmp_path_factory):
    d = tmp_path_factory.mktemp("multi")
    paths = []
    for i, p in enumerate(parts):
        path = d / (f"part{i}.zarr" if i % 2 == 0 else f"part{i}.h5")
        (p.to_zarr if i % 2 == 0 else p.to_hdf5)(path)
        paths.append(path)
    return paths


def test_open_list_mixes_formats(files, parts):
    ds = lstm_data.open(files)
    assert isinstance(ds, ConcatDataset) and len(ds) == 2001
    assert_same_dataset(ds, concat_in_ram(parts))


def test_random_rows_across_files(files, parts):
    ds = lstm_data.open(files)
    ref = concat_in_ram(parts)
    rows = np.random.default_rng(0).integers(0, len(ds), 500)
    rows[:3] = [700, 0, 2000]  # the one-row file, first and last row
    assert_same_dataset(ds.take(rows), ref.take(rows))
    assert np.array_equal(ds.offsets("png"), ref.ragged("png")[1])


def test_locate_uses_cumulative_counts(files):
    ds = lstm_data.open(files)
    f, local = ds.locate(np.array([0, 699, 700, 701, 2000]))
    assert f.tolist() == [0, 0, 1, 2, 2] and local.tolist() == [0, 699, 0, 0, 1299]


def test_glob_pattern_sorted(files, parts):
    ds = lstm_data.open(str(files[0].parent / "part*.zarr"))
    assert_same_dataset(ds, concat_in_ram([parts[0], parts[2]]))
    with pytest.raises(FileNotFoundError, match="matches no file"):
        lstm_data.open(str(files[0].parent / "nothing*.zarr"))


def test_pickle_keeps_it_cheap(files):
    ds = lstm_data.open(files)
    blob = pickle.dumps(ds)
    assert len(blob) < 10_000
    assert_same_dataset(pickle.loads(blob).take([5, 1500]), ds.take([5, 1500]))


def test_mismatched_columns_name_file_and_difference(tmp_path):
    a = synthetic.make_dataset(10, seed=1)
    a.to_zarr(tmp_path / "a.zarr")
    scalars = {s: a.scalar(s) for s in a.scalar_names if s != "nHit"}
    groups = {g: RaggedGroup(a.groups[g], *a.ragged(g)) for g in a.groups}
    InMemoryDataset(scalars, groups).to_zarr(tmp_path / "b.zarr")
    with pytest.raises(SchemaError, match=r"missing \['nHit'\]") as err:
        lstm_data.open([tmp_path / "a.zarr", tmp_path / "b.zarr"])
    assert err.value.file == str(tmp_path / "b.zarr")
    names = list(a.groups["png2d"])
    names[0], names[1] = names[1], names[0]
    groups["png2d"] = RaggedGroup(names, *a.ragged("png2d"))
    scalars = {s: a.scalar(s) for s in a.scalar_names}
    InMemoryDataset(scalars, groups).to_zarr(tmp_path / "c.zarr")
    with pytest.raises(SchemaError, match="variables of group 'png2d' in a different order") as err:
        lstm_data.open([tmp_path / "a.zarr", tmp_path / "c.zarr"])
    assert err.value.variable == "png2d"


def test_a_header_only_csv_among_parts_adds_no_rows_and_no_mismatch(tmp_path):
    synthetic.write_csv(tmp_path / "a.csv", n_rows=30, seed=1)
    synthetic.write_csv(tmp_path / "b.csv", n_rows=20, seed=2)
    header = (tmp_path / "a.csv").read_text().splitlines()[0]
    (tmp_path / "empty.csv").write_text(header + "\n")  # every column reads as a scalar
    paths = [tmp_path / "a.csv", tmp_path / "empty.csv", tmp_path / "b.csv"]
    ds = lstm_data.open(paths)
    assert len(ds) == 50 and str(paths[1]) in ds.source
    assert_same_dataset(ds, lstm_data.open([paths[0], paths[2]]))
    (tmp_path / "other.csv").write_text(header + ",extra\n")  # other names: still a mismatch
    with pytest.raises(SchemaError, match=r"extra") as err:
        lstm_data.open([paths[0], tmp_path / "other.csv"])
    assert err.value.file == str(tmp_path / "other.csv")
