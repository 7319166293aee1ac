"""HDF5 files that reach outside themselves: external links, external storage, virtual datasets.

Every HDF5 reader (our layout, lstm_ee's / plain h5py files, NOvA tables) refuses them
by default, naming the link or dataset and its target, and follows them with
``trust_external=True``. The files are made here by h5py.
"""
from __future__ import annotations

import h5py
import numpy as np
import pytest

import lstm_data
from lstm_data import FormatError
from lstm_data.data.synthetic import make_dataset
from lstm_data.io.read_options import ReadOptions
from tests.nova_files import PNG, make_tables, write_nova

SECRET = np.arange(40, dtype="<f8") * 1.5


@pytest.fixture()
def secret(tmp_path):
    """A plain local file (not HDF5) whose bytes are 40 float64 numbers, and an HDF5 file holding them."""
    raw = tmp_path / "secret.bin"
    raw.write_bytes(SECRET.tobytes())
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as fh:
        fh["data"] = SECRET
    return raw, other


def _plain(path, **extra):
    """A plain h5py file of 1-D scalars (the lstm_ee reader's layout) plus ``extra`` members."""
    with h5py.File(path, "w") as fh:
        fh["x"] = np.arange(40.0)
        for name, make in extra.items():
            make(fh, name)
    return path


def _external_link(other):
    def make(fh, name):
        fh[name] = h5py.ExternalLink(str(other), "/data")
    return make


def _external_storage(raw):
    def make(fh, name):
        fh.create_dataset(name, shape=(40,), dtype="<f8", external=[(str(raw), 0, SECRET.nbytes)])
    return make


def _virtual(other):
    def make(fh, name):
        layout = h5py.VirtualLayout(shape=(40,), dtype="f8")
        layout[:] = h5py.VirtualSource(str(other), "data", shape=(40,))
        fh.create_virtual_dataset(name, layout, fillvalue=-1)
    return make


@pytest.mark.parametrize("kind", ["link", "storage", "virtual"])
def test_lstm_ee_layout_refuses_what_lies_outside_and_trust_follows_it(tmp_path, secret, kind):
    raw, other = secret
    make = {"link": _external_link(other), "storage": _external_storage(raw),
            "virtual": _virtual(other)}[kind]
    path = _plain(tmp_path / "f.h5", leak=make)
    with pytest.raises(FormatError, match="trust_external") as err:
        lstm_data.open(path)
    target = str(raw) if kind == "storage" else str(other)
    assert "'/leak'" in str(err.value) or "'leak'" in str(err.value)
    assert target in str(err.value)
    assert err.value.file == str(path)
    ds = lstm_data.open(path, trust_external=True)
    np.testing.assert_array_equal(ds.scalar("leak"), SECRET)
    ds = lstm_data.open(path, read=ReadOptions(trust_external=True))
    np.testing.assert_array_equal(ds.scalar("leak"), SECRET)


def test_a_soft_link_through_an_external_link_is_refused(tmp_path, secret):
    _, other = secret

    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as fh:
        fh["hidden"] = h5py.ExternalLink(str(other), "/")  # outside the group read
        fh.create_group("g")["x"] = np.arange(40.0)
        fh["g/leak"] = h5py.SoftLink("/hidden/data")
    with pytest.raises(FormatError, match="another file") as err:
        lstm_data.open(path, root="g")
    assert str(other) in str(err.value)


def test_virtual_datasets_of_the_same_file_are_followed(tmp_path):
    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as fh:
        fh["x"] = np.arange(40.0)
        layout = h5py.VirtualLayout(shape=(40,), dtype="f8")
        layout[:] = h5py.VirtualSource(".", "x", shape=(40,))
        fh.create_virtual_dataset("y", layout, fillvalue=-1)
    ds = lstm_data.open(path)
    np.testing.assert_array_equal(ds.scalar("y"), np.arange(40.0))


def test_a_same_file_virtual_dataset_over_external_storage_is_refused(tmp_path, secret):
    raw, _ = secret
    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as fh:
        fh["x"] = np.arange(40.0)
        sub = fh.create_group("raw")
        _external_storage(raw)(sub, "bytes")
        layout = h5py.VirtualLayout(shape=(40,), dtype="f8")
        layout[:] = h5py.VirtualSource(".", "/raw/bytes", shape=(40,))
        fh.create_virtual_dataset("y", layout, fillvalue=-1)
    with pytest.raises(FormatError, match="external storage") as err:
        lstm_data.open(path)
    assert str(raw) in str(err.value)


def _ours(path):
    make_dataset(60, seed=3).to_hdf5(path)
    return path


@pytest.mark.parametrize("key", ["calE", "png/values"])
def test_our_layout_refuses_an_array_replaced_by_an_external_link(tmp_path, key):
    path = _ours(tmp_path / "ours.h5")
    donor = tmp_path / "donor.h5"
    with h5py.File(path, "r") as src, h5py.File(donor, "w") as dst:
        dst["arr"] = src[key][...]
    with h5py.File(path, "a") as fh:
        del fh[key]
        fh[key] = h5py.ExternalLink(str(donor), "/arr")
    with pytest.raises(FormatError, match="external link") as err:
        lstm_data.open(path)
    assert str(donor) in str(err.value)
    ds = lstm_data.open(path, trust_external=True)
    ref = make_dataset(60, seed=3)
    if key == "calE":
        np.testing.assert_array_equal(ds.scalar("calE"), ref.scalar("calE"))
    else:
        np.testing.assert_array_equal(ds.ragged("png")[0], ref.ragged("png")[0])
    ds.close()


def test_our_layout_refuses_values_in_external_storage(tmp_path):
    path = _ours(tmp_path / "ours.h5")
    raw = tmp_path / "values.bin"
    with h5py.File(path, "a") as fh:
        values = fh["png/values"][...]
        raw.write_bytes(values.tobytes())
        del fh["png/values"]
        fh["png"].create_dataset("values", shape=values.shape, dtype=values.dtype,
                                 external=[(str(raw), 0, values.nbytes)])
    with pytest.raises(FormatError, match="external storage") as err:
        lstm_data.open(path)
    assert err.value.variable == "png/values"
    assert str(raw) in str(err.value)
    ds = lstm_data.open(path, trust_external=True)
    np.testing.assert_array_equal(ds.ragged("png")[0], values)
    ds.close()


def _nova(tmp_path):
    return write_nova(tmp_path / "nova.h5", make_tables(60, seed=2))


def test_nova_refuses_a_column_in_external_storage(tmp_path):
    path = _nova(tmp_path)
    raw = tmp_path / "calE.bin"
    with h5py.File(path, "a") as fh:
        col = fh["rec.slc/calE"][...]
        raw.write_bytes(col.tobytes())
        del fh["rec.slc/calE"]
        fh["rec.slc"].create_dataset("calE", shape=col.shape, dtype=col.dtype,
                                     external=[(str(raw), 0, col.nbytes)])
    with pytest.raises(FormatError, match="external storage") as err:
        lstm_data.open(path)
    assert "rec.slc/calE" in str(err.value) and str(raw) in str(err.value)
    ds = lstm_data.open(path, trust_external=True)
    np.testing.assert_array_equal(ds.scalar("rec.slc.calE"), col[:, 0])


def test_nova_refuses_a_table_and_a_key_column_behind_external_links(tmp_path):
    path = _nova(tmp_path)
    donor = tmp_path / "donor.h5"
    with h5py.File(path, "a") as fh, h5py.File(donor, "w") as dst:
        fh.copy(fh["rec.mc.nu"], dst, "nu")
        dst["evt"] = fh[PNG + "/evt"][...]
        del fh["rec.mc.nu"]
        fh["rec.mc.nu"] = h5py.ExternalLink(str(donor), "/nu")
    with pytest.raises(FormatError, match="external link") as err:
        lstm_data.open(path)
    assert "rec.mc.nu" in str(err.value) and str(donor) in str(err.value)
    ds = lstm_data.open(path, trust_external=True)
    assert "rec.mc.nu.E" in ds.scalar_names
    ds = lstm_data.open(path, tables=["rec.slc", PNG])  # not read: not followed
    assert "rec.mc.nu.E" not in ds.scalar_names
    with h5py.File(path, "a") as fh:
        del fh[PNG + "/evt"]
        fh[PNG + "/evt"] = h5py.ExternalLink(str(donor), "/evt")
    with pytest.raises(FormatError, match="external link") as err:
        lstm_data.open(path, tables=["rec.slc", PNG])
    assert err.value.variable == PNG + "/evt"


def test_trust_external_is_an_option_of_hdf5_and_nova_only(tmp_path):
    csv = tmp_path / "a.csv"
    csv.write_text("x\n1\n")
    with pytest.raises(lstm_data.errors.OptionError, match="trust_external"):
        lstm_data.open(csv, trust_external=True)

