"""Choosing columns of HDF5 files (lstm_ee/h5py, our layout, NOvA) by name or glob; only the chosen
datasets are read; NOvA columns that are not numbers are skipped and listed."""
from __future__ import annotations

import h5py
import numpy as np
import pytest

import lstm_data
from lstm_data import FormatError, SchemaError
from lstm_data.data.synthetic import make_dataset
from tests.io.test_hdf5_filters import UNKNOWN, filtered_dataset
from tests.nova_files import PNG, make_tables, write_nova


def test_lstm_ee_columns_read_only_the_chosen_datasets(tmp_path):
    path = tmp_path / "f.h5"
    rng = np.random.default_rng(0)
    with h5py.File(path, "w") as fh:
        fh["calE"] = rng.random(120)
        fh["m"] = rng.random((120, 3))
        vl = fh.create_dataset("png.calE", (120,), dtype=h5py.vlen_dtype(np.float32))
        for i in range(120):
            vl[i] = np.arange(i % 4, dtype=np.float32)
        filtered_dataset(fh, "unreadable", np.arange(120, dtype=np.float32), UNKNOWN)
    with pytest.raises(FormatError, match="filter id"):
        lstm_data.open(path)
    ds = lstm_data.open(path, exclude=["unread*"])
    assert ds.scalar_names == ["calE", "m[0]", "m[1]", "m[2]"] and list(ds.groups) == ["png"]
    ds = lstm_data.open(path, columns=["m[1]", "png"])  # an element; a group by its name
    assert ds.scalar_names == ["m[1]"] and ds.groups == {"png": ["png.calE"]}
    with h5py.File(path) as fh:
        np.testing.assert_array_equal(ds.scalar("m[1]"), fh["m"][:, 1])
    with pytest.raises(SchemaError, match="matches no column"):
        lstm_data.open(path, columns=["nope"])


def test_our_layout_loads_only_the_chosen_scalars_and_groups(tmp_path):
    path = tmp_path / "ours.h5"
    ref = make_dataset(100, seed=1)
    ref.to_hdf5(path)
    with lstm_data.open(path, columns=["calE", "png2d.calE"]) as ds:
        assert ds.scalar_names == ["calE"] and list(ds.groups) == ["png2d"]
        assert ds.groups["png2d"] == ref.groups["png2d"]  # a group is loaded whole
        np.testing.assert_array_equal(ds.ragged("png2d")[0], ref.ragged("png2d")[0])
    with lstm_data.open(path, exclude=["png*"]) as ds:
        assert ds.groups == {} and ds.scalar_names == ref.scalar_names


def test_nova_columns_choose_variables_and_never_read_the_others(tmp_path):
    path = write_nova(tmp_path / "nova.h5", make_tables(80, seed=3))
    with h5py.File(path, "a") as fh:
        filtered_dataset(fh["rec.mc.nu"], "blob", np.arange(len(fh["rec.mc.nu/E"]), dtype=np.float32),
                         UNKNOWN, chunk=16)
    with pytest.raises(FormatError, match="filter id"):
        lstm_data.open(path)
    ds = lstm_data.open(path, columns=["evt", "rec.slc.calE", "png"], aliases={"png": PNG})
    assert ds.scalar_names == ["evt", "rec.slc.calE"]
    assert list(ds.groups) == ["png"] and "png.calE" in ds.groups["png"]
    full = lstm_data.open(path, exclude=["rec.mc.nu.blob"])
    np.testing.assert_array_equal(ds.scalar("rec.slc.calE"), full.scalar("rec.slc.calE"))
    ds = lstm_data.open(path, exclude=["*blob", PNG + ".dir[1]"])
    assert PNG + ".dir[0]" in ds.groups[PNG] and PNG + ".dir[1]" not in ds.groups[PNG]
    np.testing.assert_array_equal(ds.ragged(PNG)[0][:, ds.groups[PNG].index(PNG + ".dir[2]")],
                                  full.ragged(PNG)[0][:, full.groups[PNG].index(PNG + ".dir[2]")])


def test_nova_columns_that_are_not_numbers_are_skipped(tmp_path):
    tables = make_tables(50, seed=4)
    n = len(tables["rec.slc"]["calE"])
    tables["rec.slc"]["name"] = np.array([b"x"] * n)
    path = write_nova(tmp_path / "nova.h5", tables)
    ds = lstm_data.open(path)
    assert ds.skipped == {"rec.slc.name": "strings of 1 bytes"}
    assert "rec.slc.calE" in ds.scalar_names
