"""HDF5: lstm_ee's PyTables layout, plain h5py vlen datasets, and our layout."""
from __future__ import annotations

import csv
import warnings

import h5py
import numpy as np
import pytest

import lstm_data
from lstm_data import FormatError, SchemaError
from lstm_data.data import synthetic
from lstm_data.io.hdf5.reader import HDF5Dataset, read_hdf5
from tests.helpers import assert_same_by_name


def pytables():
    """PyTables, or a skip of the calling test only: the h5py-only tests run without it."""
    return pytest.importorskip("tables")


def csv_to_hdf_like_lstm_ee(csv_path, h5_path):
    """What lstm_ee's scripts/data/csv_to_hdf.py did: PyTables, zlib 5, earrays + VLArrays."""
    tables = pytables()
    with open(csv_path, newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader)
        rows = list(reader)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tables.NaturalNameWarning)
        f = tables.open_file(str(h5_path), "w", filters=tables.Filters(complib="zlib", complevel=5))
        try:
            for j, var in enumerate(header):
                cells = [r[j] for r in rows]
                if var.startswith("png"):
                    arr = f.create_vlarray("/", var, atom=tables.Float32Atom(shape=()))
                    for s in cells:
                        arr.append(np.array([float(y) for y in s.split(",")] if s else [],
                                            dtype=np.float32))
                else:
                    arr = f.create_earray("/", var, atom=tables.Float32Atom(), shape=(0,))
                    arr.append(np.array([float(y) for y in cells], dtype=np.float32))
        finally:
            f.close()
    return header


def csv_reference(csv_path, generated):
    """The CSV read by lstm_data when the CSV reader exists, else the generator's dataset."""
    try:
        from lstm_data.io.csv.reader import read_csv
    except ImportError:
        return generated
    return read_csv(csv_path)


@pytest.fixture(scope="module")
def lstm_ee_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("ee")
    generated = synthetic.write_csv(d / "events.csv", n_rows=1200, seed=11)
    header = csv_to_hdf_like_lstm_ee(d / "events.csv", d / "events.h5")
    return d / "events.h5", d / "events.csv", generated, header


def test_lstm_ee_layout_gives_the_csv_numbers(lstm_ee_file):
    h5_path, csv_path, generated, header = lstm_ee_file
    ds = lstm_data.open(h5_path)
    assert len(ds) == 1200
    assert set(ds.groups) == {"png", "png2d"}
    assert ds.ragged("png")[0].dtype == np.float32
    assert_same_by_name(ds, csv_reference(csv_path, generated))
    assert_same_by_name(ds, generated)


def test_vlen_is_read_in_few_slices(lstm_ee_file, monkeypatch):
    h5_path = lstm_ee_file[0]
    calls = []
    original = h5py.Dataset.__getitem__

    def counting(self, key):
        calls.append((self.name, key))
        return original(self, key)

    monkeypatch.setattr(h5py.Dataset, "__getitem__", counting)
    ds = read_hdf5(h5_path)
    n_vars = len(ds.scalar_names) + sum(len(v) for v in ds.groups.values())
    assert len(calls) == n_vars  # one slice per dataset, not one per row
    calls.clear()
    ds.take(np.arange(0, 1200, 7)[::-1])
    assert calls == []  # batches never touch the file


def test_schema_declares_groups_and_order(lstm_ee_file):
    h5_path = lstm_ee_file[0]
    ds = read_hdf5(h5_path, schema={"png": ["png.nhit", "png.calE"], "two": "png2d.c*"})
    assert ds.groups["png"] == ["png.nhit", "png.calE"]
    assert ds.groups["two"] == ["png2d.calE", "png2d.cvnpart.electronid", "png2d.cvnpart.muonid",
                                "png2d.cvnpart.pionid", "png2d.cvnpart.protonid"]
    assert len(ds.groups["png2d"]) == 8  # the rest, grouped by prefix
    ref = read_hdf5(h5_path)
    assert np.array_equal(ds.ragged("png")[0][:, 1], ref.ragged("png")[0][:, 0])
    with pytest.raises(SchemaError, match="png.nope") as err:
        read_hdf5(h5_path, schema={"png": ["png.nope"]})
    assert err.value.file == str(h5_path)
    with pytest.raises(SchemaError, match="not a variable-length"):
        read_hdf5(h5_path, schema={"png": ["calE"]})
    only = read_hdf5(h5_path, schema={"groups": {"png": ["png.calE"]}, "scalars": ["nHit"],
                                      "dtype": "float64"})
    assert only.scalar_names == ["nHit"] and only.scalar("nHit").dtype == np.float64


def test_length_mismatch_names_row_and_variables(tmp_path):
    path = tmp_path / "bad.h5"
    with h5py.File(path, "w") as f:
        vt = h5py.vlen_dtype(np.float64)
        a = np.empty(3, object)
        a[:] = [np.array([1.0]), np.array([2.0, 3.0]), np.array([])]
        b = np.empty(3, object)
        b[:] = [np.array([1.0]), np.array([2.0, 3.0, 4.0]), np.array([])]
        f.create_dataset("trk.a", data=a, dtype=vt)
        f.create_dataset("trk.b", data=b, dtype=vt)
    with pytest.raises(SchemaError) as err:
        lstm_data.open(path)
    assert err.value.row == 1 and err.value.variable == "trk.b"
    assert "trk.a" in str(err.value) and str(path) in str(err.value)


def test_plain_h5py_vlen_with_declared_groups(tmp_path):
    path = tmp_path / "plain.hdf5"
    rng = np.random.default_rng(0)
    lens = rng.integers(0, 5, 50)
    x = [rng.normal(size=n) for n in lens]
    y = [rng.normal(size=n) for n in lens]
    with h5py.File(path, "w") as f:
        vt = h5py.vlen_dtype(np.float64)
        for name, col in (("x", x), ("y", y)):
            arr = np.empty(50, object)
            arr[:] = col
            f.create_dataset(name, data=arr, dtype=vt, chunks=(8,))
        f.create_dataset("E", data=np.arange(50.0))
    ds = lstm_data.open(path, schema={"groups": {"hits": ["x", "y"]}, "dtype": "float64"})
    assert ds.groups == {"hits": ["x", "y"]} and ds.scalar_names == ["E"]
    values, offsets = ds.ragged("hits")
    assert np.array_equal(np.diff(offsets), lens)
    assert values.dtype == np.float64
    assert np.array_equal(values[:, 0], np.concatenate(x))
    assert np.array_equal(values[:, 1], np.concatenate(y))


def test_unequal_row_counts_are_a_format_error(tmp_path):
    path = tmp_path / "rows.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("a", data=np.arange(3.0))
        f.create_dataset("b", data=np.arange(4.0))
    with pytest.raises(FormatError, match="rows"):
        lstm_data.open(path)


def test_our_layout_round_trip_and_chunked_reads(tmp_path, monkeypatch):
    ds = synthetic.make_dataset(5000, seed=5)
    ds.to_hdf5(tmp_path / "ours.h5", chunk_bytes=16 << 10)
    with h5py.File(tmp_path / "ours.h5") as f:
        assert f.attrs["lstm_data_format"] == "lstm_data"
        # equal chunks of about chunk_bytes (their count the nearest to it: at most 3/2 of it)
        assert f["png/values"].compression == "gzip" and f["png/values"].chunks[0] * 132 <= 1.5 * (16 << 10) + 132
        assert list(f["png"].attrs["names"]) == ds.groups["png"]
    h = lstm_data.open(tmp_path / "ours.h5")
    assert isinstance(h, HDF5Dataset)
    for s in ds.scalar_names:
        assert h.scalar(s).tobytes() == ds.scalar(s).tobytes()
    rows = np.random.default_rng(2).integers(0, 5000, 200)
    calls = []
    original = h5py.Dataset.__getitem__
    monkeypatch.setattr(h5py.Dataset, "__getitem__",
                        lambda self, key: calls.append(key) or original(self, key))
    for g in ds.groups:
        v, o = h.ragged(g, rows)
        rv, ro = ds.ragged(g, rows)
        assert np.array_equal(o, ro) and v.tobytes() == rv.tobytes()
    assert len(calls) == h.io_stats.reads < 2 * 200  # coalesced, not one read per row
    for key in calls:  # every read is chunk-aligned
        assert key.start % h.value_chunk_len("png") == 0 or \
            key.start % h.value_chunk_len("png2d") == 0
    h.close()


def test_our_layout_with_lzf_and_permutation(tmp_path):
    ds = synthetic.make_dataset(800, seed=6)
    perm = np.random.default_rng(0).permutation(800)
    ds.to_hdf5(tmp_path / "p.h5", compression="lzf", permutation=perm)
    with lstm_data.open(tmp_path / "p.h5") as h:
        ref = ds.take(perm)
        for g in ds.groups:
            assert h.ragged(g)[0].tobytes() == ref.ragged(g)[0].tobytes()
            assert np.array_equal(h.ragged(g)[1], ref.ragged(g)[1])


@pytest.mark.parametrize("atom, row, kind", [
    ("ObjectAtom", [1, 2], "pickled Python objects"),
    ("VLStringAtom", b"1,2", "byte strings"),
    ("VLUnicodeAtom", "1,2", "unicode strings"),
])
def test_pytables_pseudo_atoms_are_skipped(tmp_path, atom, row, kind):
    tables = pytables()
    atom = getattr(tables, atom)()
    path = tmp_path / "pseudo.h5"
    with tables.open_file(str(path), "w") as f:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", tables.NaturalNameWarning)
            f.create_earray("/", "calE", atom=tables.Float32Atom(), shape=(0,)).append(
                np.array([1.0, 2.0], dtype=np.float32))
            good = f.create_vlarray("/", "png.calE", atom=tables.Float32Atom(shape=()))
            odd = f.create_vlarray("/", "png.obj", atom=atom)
            for _ in range(2):
                good.append(np.array([0.5, 1.5], dtype=np.float32))
                odd.append(row)
    with h5py.File(path, "r") as f:  # stored as vlen numbers: only the attribute tells
        assert h5py.check_vlen_dtype(f["png.obj"].dtype).kind == "u"
    ds = lstm_data.open(path)
    assert ds.groups == {"png": ["png.calE"]} and list(ds.skipped) == ["png.obj"]
    assert kind in ds.skipped["png.obj"]
    with pytest.raises(SchemaError, match=kind) as err:
        read_hdf5(path, schema={"png": ["png.calE", "png.obj"]})
    assert err.value.variable == "png.obj" and err.value.file == str(path)


def test_our_layout_honours_max_run_chunks(tmp_path, monkeypatch):
    ds = synthetic.make_dataset(3000, seed=8)
    ds.to_hdf5(tmp_path / "runs.h5", chunk_bytes=4 << 10)
    calls = []
    original = h5py.Dataset.__getitem__
    monkeypatch.setattr(h5py.Dataset, "__getitem__",
                        lambda self, key: calls.append((self.name, key)) or original(self, key))
    with read_hdf5(tmp_path / "runs.h5", max_run_chunks=1) as h:
        chunk = h.value_chunk_len("png")
        calls.clear()
        v, o = h.ragged("png", np.arange(0, 3000, 3))
        rv, ro = ds.ragged("png", np.arange(0, 3000, 3))
        assert v.tobytes() == rv.tobytes() and np.array_equal(o, ro)
    reads = [key for name, key in calls if name == "/png/values"]
    assert len(reads) > 1 and all(key.stop - key.start <= chunk for key in reads)
