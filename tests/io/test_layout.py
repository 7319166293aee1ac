"""Our layout (HDF5 and zarr v3): stored arrays are checked at open, and ``dtype=`` casts.

Every store is written by lstm_data itself into ``tmp_path`` and then damaged with
h5py or zarr, as a broken copy or another tool would leave it.
"""
from __future__ import annotations

import json
import pickle

import h5py
import numpy as np
import pytest
import zarr

import lstm_data
from lstm_data import FormatError
from lstm_data.io.ours.manifest import write_manifest

FORMATS = ["h5", "zarr"]


DS_ROWS, DS_SEED = 40, 3  # the ``ds`` fixture (tests/conftest.py)


def write(ds, tmp_path, fmt: str):
    """``ds`` in our layout as ``tmp_path/d.<fmt>``."""
    path = tmp_path / f"d.{fmt}"
    (ds.to_hdf5 if fmt == "h5" else ds.to_zarr)(path)
    return path


def read_array(path, key: str) -> np.ndarray:
    if str(path).endswith(".h5"):
        with h5py.File(path, "r") as f:
            return f[key][()]
    return np.asarray(zarr.open_group(path, mode="r")[key][...])


def replace_array(path, key: str, data: np.ndarray) -> None:
    """Overwrite array ``key`` of the store with ``data`` (any dtype or shape), as a writer
    would have written it (a zarr store's manifest records the new array)."""
    if str(path).endswith(".h5"):
        from lstm_data.io.ours.hdf5_out import LAYOUT_DIGEST_ATTR, layout_digest

        with h5py.File(path, "r+") as f:
            del f[key]
            f.create_dataset(key, data=data)
            f.attrs[LAYOUT_DIGEST_ATTR] = layout_digest(f)  # as a writer would have recorded it
        return
    group, _, name = key.rpartition("/")
    root = zarr.open_group(path, mode="r+")
    (root[group] if group else root).create_array(name, data=data, overwrite=True)
    write_manifest(path)


def as_text(path, data: np.ndarray) -> np.ndarray:
    """``data`` as strings: fixed-length bytes for HDF5, variable-length str for zarr."""
    return data.astype("S12") if str(path).endswith(".h5") else data.astype(np.dtypes.StringDType())


def scalar_key(path, var: str) -> str:
    if str(path).endswith(".h5"):
        with h5py.File(path, "r") as f:
            return json.loads(f.attrs["lstm_data_layout"])["scalars"][var]
    return zarr.open_group(path, mode="r").attrs["lstm_data_layout"]["scalars"][var]


def open_error(path, **options) -> FormatError:
    with pytest.raises(FormatError) as err:
        lstm_data.open(path, **options)
    assert err.value.file == str(path)
    return err.value


@pytest.mark.parametrize("fmt", FORMATS)
def test_decreasing_offsets_name_the_first_backwards_row(ds, tmp_path, fmt):
    path = write(ds, tmp_path, fmt)
    off = read_array(path, "png/offsets")
    off[5], off[6] = off[8] + 3, 1  # first and last stay right: only the order is wrong
    replace_array(path, "png/offsets", off)
    err = open_error(path)
    assert err.variable == "png" and err.row == 5
    assert "png/offsets" in str(err) and "never decrease" in str(err)


@pytest.mark.parametrize("fmt", FORMATS)
def test_offsets_must_start_at_zero_and_end_at_the_values(ds, tmp_path, fmt):
    path = write(ds, tmp_path, fmt)
    good = read_array(path, "png/offsets")
    shifted = good.copy()
    shifted[0] = 1
    replace_array(path, "png/offsets", shifted)
    err = open_error(path)
    assert err.row == 0 and "start at 0" in str(err)
    short = good.copy()
    short[-1] -= 1
    replace_array(path, "png/offsets", short)
    err = open_error(path)
    assert err.row == len(ds) - 1 and f"{good[-1]} values" in str(err)


@pytest.mark.parametrize("fmt", FORMATS)
def test_float_offsets_are_a_format_error(ds, tmp_path, fmt):
    path = write(ds, tmp_path, fmt)
    off = read_array(path, "png/offsets").astype(np.float64)
    off[3] += 0.5  # 22.5 would silently become 22
    replace_array(path, "png/offsets", off)
    err = open_error(path)
    assert err.variable == "png" and "png/offsets" in str(err) and "integers" in str(err)


@pytest.mark.parametrize("fmt", FORMATS)
def test_string_values_are_a_format_error(ds, tmp_path, fmt):
    path = write(ds, tmp_path, fmt)
    replace_array(path, "png2d/values", as_text(path, read_array(path, "png2d/values")))
    err = open_error(path)
    assert err.variable == "png2d" and "png2d/values" in str(err) and "numeric" in str(err)


@pytest.mark.parametrize("fmt", FORMATS)
def test_string_scalar_is_a_format_error(ds, tmp_path, fmt):
    path = write(ds, tmp_path, fmt)
    var = ds.scalar_names[1]
    key = scalar_key(path, var)
    replace_array(path, key, as_text(path, read_array(path, key)))
    err = open_error(path)
    assert err.variable == var and repr(key) in str(err) and "numeric" in str(err)


@pytest.mark.parametrize("fmt", FORMATS)
def test_integer_and_bool_arrays_still_open(ds, tmp_path, fmt):
    path = write(ds, tmp_path, fmt)
    off = read_array(path, "png/offsets")
    replace_array(path, "png/offsets", off.astype(np.int32))
    key = scalar_key(path, ds.scalar_names[0])
    replace_array(path, key, np.arange(len(ds)) % 2 == 0)
    with lstm_data.open(path) as d:
        assert np.array_equal(d.ragged("png")[1], off)
        assert d.scalar(ds.scalar_names[0]).dtype == bool


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_missing_array_is_a_format_error(ds, tmp_path, fmt):
    path = write(ds, tmp_path, fmt)
    if fmt == "h5":
        with h5py.File(path, "r+") as f:
            del f["png/offsets"]
    else:
        del zarr.open_group(path, mode="r+")["png"]["offsets"]
    err = open_error(path)
    assert err.variable == "png" and "png/offsets" in str(err) and "damaged" in str(err)


@pytest.mark.parametrize("fmt", FORMATS)
def test_dtype_option_casts_scalars_and_values(ds, tmp_path, fmt):
    path = write(ds, tmp_path, fmt)
    rows = np.random.default_rng(1).integers(0, len(ds), 25)
    with lstm_data.open(path) as kept:
        assert kept.ragged("png")[0].dtype == ds.ragged("png")[0].dtype == np.float32
    with lstm_data.open(path, dtype=np.float64) as d:
        for s in ds.scalar_names:
            assert d.scalar(s).dtype == np.float64
            assert np.array_equal(d.scalar(s), ds.scalar(s).astype(np.float64))
        for g in ds.groups:
            for sel in (None, rows, np.arange(len(ds))):
                (v, o), (rv, ro) = d.ragged(g, sel), ds.ragged(g, sel)
                assert v.dtype == np.float64 and np.array_equal(o, ro)
                assert np.array_equal(v, rv.astype(np.float64))
        again = pickle.loads(pickle.dumps(d))
        assert again.ragged("png", rows)[0].dtype == np.float64
        again.close()


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("bad", [np.int32, "int64", "float16", "not a dtype"])
def test_dtype_option_must_be_float32_or_float64(ds, tmp_path, fmt, bad):
    path = write(ds, tmp_path, fmt)
    with pytest.raises(ValueError, match="float32 or float64") as err:
        lstm_data.open(path, dtype=bad)
    assert str(path) in str(err.value)
