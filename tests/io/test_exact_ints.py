"""64-bit integers that a float dtype cannot hold exactly are never changed silently (Parquet, HDF5):
integer scalars read without a dtype stay exact integers; a cast that changes a value warns once per
column, naming the column and the first changed value."""
from __future__ import annotations

import warnings

import h5py
import numpy as np
import pytest

import lstm_data
from lstm_data.data.dataset import InMemoryDataset
from lstm_data.data.ragged import RaggedGroup
from lstm_data.io.columns.exact_ints import PrecisionWarning

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

BIG = 2**53 + 1  # not a float64
EVT = 2**24 + 1  # not a float32


def precision_warnings(record):
    return [str(w.message) for w in record if issubclass(w.category, PrecisionWarning)]


@pytest.fixture()
def parquet_file(tmp_path):
    n = 300
    evt = np.arange(n, dtype=np.int64) + 2**24 - 5  # row 6 is the first beyond 2**24 that changes
    ids = np.arange(n, dtype=np.int64)
    ids[100] = BIG
    table = pa.table({
        "evt": evt, "calE": np.linspace(0, 1, n),
        "hit.id": pa.array([[int(i), BIG] if i == 200 else [int(i)] for i in range(n)], pa.list_(pa.int64())),
        "hit.e": pa.array([[0.5, 0.25] if i == 200 else [0.5] for i in range(n)], pa.list_(pa.float32())),
        "nullable": pa.array([None if i == 3 else (BIG if i == 250 else i) for i in range(n)], pa.int64()),
    })
    path = tmp_path / "ints.parquet"
    pq.write_table(table, path, row_group_size=64)
    return path, evt


@pytest.mark.parametrize("in_ram", [True, False])
def test_parquet_integers(parquet_file, in_ram):
    path, evt = parquet_file
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        ds = lstm_data.open(path, in_ram=in_ram)
        values, _ = ds.ragged("hit", np.arange(len(ds)))
    assert ds.scalar("evt").dtype == np.int64
    np.testing.assert_array_equal(ds.scalar("evt"), evt)  # kept exact: no dtype asked
    msgs = precision_warnings(record)
    hit = [m for m in msgs if "'hit.id'" in m]
    assert len(hit) == 1 and f"first at row 200: {BIG} reads as {2**53}" in hit[0]
    null = [m for m in msgs if "'nullable'" in m]
    assert len(null) == 1 and f"row 250: {BIG}" in null[0]
    assert values.dtype == np.float64
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        ds = lstm_data.open(path, in_ram=in_ram, dtype="float32", columns=["evt"])
    msgs = precision_warnings(record)
    assert len(msgs) == 1 and "'evt'" in msgs[0] and "float32" in msgs[0]
    assert f"first at row 6: {EVT} reads as {2**24}" in msgs[0] and str(path) in msgs[0]


def test_hdf5_lstm_ee_integers(tmp_path):
    path = tmp_path / "ints.h5"
    evt = np.arange(50, dtype=np.int64) + 2**24 - 3
    with h5py.File(path, "w") as fh:
        fh["evt"] = evt
        ids = fh.create_dataset("png.id", (50,), dtype=h5py.vlen_dtype(np.int64))
        e = fh.create_dataset("png.e", (50,), dtype=h5py.vlen_dtype(np.float32))
        for i in range(50):
            ids[i] = np.array([i, BIG] if i == 7 else [i], np.int64)
            e[i] = np.array([0.5, 0.25] if i == 7 else [0.5], np.float32)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        ds = lstm_data.open(path)
    assert ds.scalar("evt").dtype == np.int64 and np.array_equal(ds.scalar("evt"), evt)
    msgs = precision_warnings(record)
    assert len(msgs) == 1 and "'png.id'" in msgs[0] and f"first at row 7: {BIG}" in msgs[0]
    with pytest.warns(PrecisionWarning, match=rf"'evt' holds integers that float32 .* row 4: {EVT}"):
        lstm_data.open(path, dtype="float32", columns=["evt"])


def test_hdf5_our_layout_integers(tmp_path):
    evt = np.arange(40, dtype=np.int64) + 2**24 - 1
    ds = InMemoryDataset({"evt": evt}, {"g": RaggedGroup(["g.x"], np.ones((40, 1), np.float32),
                                                         np.arange(41, dtype=np.int64))})
    ds.to_hdf5(tmp_path / "ours.h5")
    with lstm_data.open(tmp_path / "ours.h5") as back:
        assert back.scalar("evt").dtype == np.int64 and np.array_equal(back.scalar("evt"), evt)
    with pytest.warns(PrecisionWarning, match=rf"'evt' .* row 2: {EVT} reads as {2**24}"):
        lstm_data.open(tmp_path / "ours.h5", dtype="float32").close()
