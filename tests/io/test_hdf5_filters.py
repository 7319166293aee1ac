"""HDF5 datasets compressed with a filter this machine's HDF5 lacks: the error names the filter and
what provides it, in every HDF5 reader; it never says "damaged"."""
from __future__ import annotations

import importlib.util

import h5py
import numpy as np
import pytest

import lstm_data
from lstm_data import FormatError
from lstm_data.data.synthetic import make_dataset
from lstm_data.io.hdf5.checks import PLUGIN_FILTERS
from tests.nova_files import make_tables, write_nova

#: a filter id no plugin package provides
UNKNOWN = 32099
HAVE_HDF5PLUGIN = importlib.util.find_spec("hdf5plugin") is not None


def filtered_dataset(group, name, data, filter_id, chunk=50):
    """A chunked dataset whose pipeline holds ``filter_id`` (absent here), chunks written raw."""
    data = np.ascontiguousarray(data)
    assert not h5py.h5z.filter_avail(filter_id)
    ds = group.create_dataset(name, shape=data.shape, dtype=data.dtype, chunks=(chunk,) + data.shape[1:],
                              compression=filter_id, allow_unknown_filter=True)
    for a in range(0, len(data), chunk):
        piece = np.zeros((chunk,) + data.shape[1:], data.dtype)
        piece[:len(data[a:a + chunk])] = data[a:a + chunk]
        ds.id.write_direct_chunk((a,) + (0,) * (data.ndim - 1), piece.tobytes(), filter_mask=0)
    return ds


def test_lstm_ee_layout_names_an_unknown_filter(tmp_path):
    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as fh:
        fh["y"] = np.arange(120.0)
        filtered_dataset(fh, "x", np.arange(120, dtype=np.float32), UNKNOWN)
    with pytest.raises(FormatError, match=f"filter id {UNKNOWN}") as err:
        lstm_data.open(path)
    msg = str(err.value)
    assert "not damaged" in msg and "damaged or" not in msg and "HDF5_PLUGIN_PATH" in msg
    assert err.value.variable == "x" and err.value.file == str(path)


@pytest.mark.skipif(HAVE_HDF5PLUGIN, reason="hdf5plugin installed: its filters are loaded")
@pytest.mark.parametrize("fid", [32001, 32008, 32015])
def test_a_plugin_filter_names_hdf5plugin(tmp_path, fid):
    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as fh:
        filtered_dataset(fh, "x", np.arange(120, dtype=np.float32), fid)
    with pytest.raises(FormatError, match="pip install hdf5plugin") as err:
        lstm_data.open(path)
    assert f"{PLUGIN_FILTERS[fid]} (HDF5 filter id {fid})" in str(err.value)


def test_pytables_blosc_file(tmp_path):
    tables = pytest.importorskip("tables")
    path = tmp_path / "blosc.h5"
    values = np.arange(5000, dtype=np.float32) * 0.25
    with tables.open_file(str(path), "w") as f:
        f.create_earray("/", "calE", atom=tables.Float32Atom(), shape=(0,),
                        filters=tables.Filters(complib="blosc:zstd", complevel=5)).append(values)
    if HAVE_HDF5PLUGIN:
        np.testing.assert_array_equal(lstm_data.open(path).scalar("calE"), values)
        return
    with pytest.raises(FormatError, match="blosc") as err:
        lstm_data.open(path)
    assert "hdf5plugin" in str(err.value) and err.value.variable == "calE"


def test_our_layout_names_the_filter_when_values_are_read(tmp_path):
    path = tmp_path / "ours.h5"
    make_dataset(200, seed=4).to_hdf5(path)
    with h5py.File(path, "a") as fh:
        values = fh["png/values"][...]
        del fh["png/values"]
        filtered_dataset(fh["png"], "values", values, UNKNOWN)
    ds = lstm_data.open(path)  # values stay on disk until asked for
    with pytest.raises(FormatError, match=f"filter id {UNKNOWN}") as err:
        ds.ragged("png", np.arange(10))
    assert err.value.variable == "png"
    ds.close()


def test_nova_names_the_filter(tmp_path):
    path = write_nova(tmp_path / "nova.h5", make_tables(80, seed=3))
    with h5py.File(path, "a") as fh:
        col = fh["rec.slc/calE"][...]
        del fh["rec.slc/calE"]
        filtered_dataset(fh["rec.slc"], "calE", col, UNKNOWN, chunk=16)
    with pytest.raises(FormatError, match=f"filter id {UNKNOWN}") as err:
        lstm_data.open(path)
    assert err.value.variable == "rec.slc.calE"


def test_pytables_lzo_says_how_to_rewrite_the_file(tmp_path):
    path = tmp_path / "lzo.h5"
    with h5py.File(path, "w") as fh:
        filtered_dataset(fh, "x", np.arange(120, dtype=np.float32), 305)
    with pytest.raises(FormatError, match="ptrepack") as err:
        lstm_data.open(path)
    assert "(HDF5 filter id 305)" in str(err.value) and "not damaged" in str(err.value)
