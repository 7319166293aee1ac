"""``lstm_data.open``: detection by content first, extension second; the round-trip acceptance."""
from __future__ import annotations

import gzip
import lzma
import shutil

import h5py
import numpy as np
import pytest

import lstm_data
from lstm_data import FormatError, Order
from lstm_data.data import synthetic
from lstm_data.io.dispatch import detect_format
from lstm_data.io.hdf5.reader import HDF5Dataset
from lstm_data.io.ours.zarr import ZarrDataset
from tests.helpers import assert_same_dataset


@pytest.fixture(scope="module")
def csv_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("csv")
    generated = synthetic.write_csv(d / "events.csv", n_rows=3000, seed=21)
    with open(d / "events.csv", "rb") as src, lzma.open(d / "events.csv.xz", "wb", preset=0) as dst:
        shutil.copyfileobj(src, dst)
    return d / "events.csv.xz", generated


def test_round_trip_csv_zarr_hdf5_bitwise(csv_file, tmp_path):
    path, generated = csv_file
    from_csv = lstm_data.open(path)
    assert_same_dataset(from_csv, generated)  # the CSV reader reads what was written
    from_csv.to_zarr(tmp_path / "e.zarr")
    from_csv.to_hdf5(tmp_path / "e.h5")
    z, h = lstm_data.open(tmp_path / "e.zarr"), lstm_data.open(tmp_path / "e.h5")
    assert isinstance(z, ZarrDataset) and isinstance(h, HDF5Dataset)
    assert_same_dataset(z, from_csv)
    assert_same_dataset(h, from_csv)
    rows = np.random.default_rng(3).permutation(len(from_csv))[:700]
    assert_same_dataset(z.take(rows), from_csv.take(rows))
    assert_same_dataset(h.take(rows), from_csv.take(rows))


def test_csv_with_schema_float64_round_trip(csv_file, tmp_path):
    path, _ = csv_file
    schema = {"groups": {"png": "png.*", "png2d": "png2d.*"}, "dtype": "float64"}
    ds = lstm_data.open(path, schema=schema)
    assert ds.ragged("png")[0].dtype == np.float64
    ds.to_zarr(tmp_path / "f64.zarr")
    assert_same_dataset(lstm_data.open(tmp_path / "f64.zarr"), ds)


def test_detection_by_content_not_extension(csv_file, tmp_path):
    path, generated = csv_file
    disguised = tmp_path / "events.dat"
    with lzma.open(path) as src, gzip.open(disguised, "wb", compresslevel=1) as dst:
        shutil.copyfileobj(src, dst)
    assert detect_format(disguised) == "csv"
    assert_same_dataset(lstm_data.open(disguised), generated)
    h5_named_csv = tmp_path / "really_hdf5.csv"
    generated.take(np.arange(10)).to_hdf5(h5_named_csv)
    assert detect_format(h5_named_csv) == "hdf5"
    assert len(lstm_data.open(h5_named_csv)) == 10


def test_hdf5_with_user_block(tmp_path):
    path = tmp_path / "ub.h5"
    with h5py.File(path, "w", userblock_size=1024) as f:
        f.create_dataset("E", data=np.arange(4.0))
    with open(path, "r+b") as fh:
        fh.write(b"not the signature")
    assert detect_format(path) == "hdf5"
    assert lstm_data.open(path).scalar("E").tolist() == [0.0, 1.0, 2.0, 3.0]


def test_unknown_and_damaged_inputs(tmp_path):
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01\x02binary")
    with pytest.raises(FormatError, match="cannot tell the format"):
        lstm_data.open(tmp_path / "blob.bin")
    (tmp_path / "fake.h5").write_bytes(b"hello, i am text")
    with pytest.raises(FormatError, match="no HDF5 signature") as err:
        lstm_data.open(tmp_path / "fake.h5")
    assert err.value.file == str(tmp_path / "fake.h5")
    (tmp_path / "empty_dir.zarr").mkdir()
    with pytest.raises(FormatError, match="not a zarr store"):
        lstm_data.open(tmp_path / "empty_dir.zarr")
    with pytest.raises(FileNotFoundError):
        lstm_data.open(tmp_path / "missing.csv")
    (tmp_path / "spec.toml").write_text('[inputs.x]\ntype = "scalars"\nvars = ["calE"]\n')
    with pytest.raises(FormatError, match=r"a \.toml file is not a data file; lstm_data reads CSV"):
        lstm_data.open(tmp_path / "spec.toml")  # a spec passed as data, by mistake


def test_a_damaged_store_or_file_is_a_format_error_naming_it(tmp_path):
    ds = synthetic.make_dataset(50, seed=1)
    ds.to_zarr(tmp_path / "m.zarr")
    shutil.rmtree(tmp_path / "m.zarr" / "calE")  # an array gone
    ds.to_hdf5(tmp_path / "ok.h5")
    ds.to_hdf5(tmp_path / "cut.h5")
    data = (tmp_path / "cut.h5").read_bytes()
    (tmp_path / "cut.h5").write_bytes(data[: len(data) // 2])  # a truncated copy
    ds.to_zarr(tmp_path / "j.zarr")
    (tmp_path / "j.zarr" / "calE" / "zarr.json").write_text('{"zarr_format": 3, "node_')  # cut
    for path, what in ((tmp_path / "m.zarr", "calE"), (tmp_path / "cut.h5", "truncated")):
        with pytest.raises(FormatError, match=f"damaged or incomplete.*{what}") as err:
            lstm_data.open(path)
        assert err.value.file == str(path)
    # a damaged metadata file: named itself (the store's manifest records its digest)
    with pytest.raises(FormatError, match="metadata file 'calE/zarr.json' was changed or damaged") as err:
        lstm_data.open(tmp_path / "j.zarr")
    assert err.value.file == str(tmp_path / "j.zarr" / "calE" / "zarr.json")
    with pytest.raises(FormatError) as err:  # among several files: the damaged one is named
        lstm_data.open([tmp_path / "ok.h5", tmp_path / "cut.h5"])
    assert err.value.file == str(tmp_path / "cut.h5")


def test_a_batch_store_is_not_opened_as_a_dataset(tmp_path):
    from lstm_data.store.write import precompute

    ds = synthetic.make_dataset(300, seed=2)
    spec = lstm_data.BatchSpec.from_lstm_ee({"var_target_total": "trueE"})
    precompute(ds, spec, tmp_path / "b.zarr", Order(batch_size=100), progress=False)
    with pytest.raises(FormatError, match=r"precomputed batches, not a dataset; open it with "
                                          r"lstm_data\.open_batches"):
        lstm_data.open(tmp_path / "b.zarr")
    assert len(lstm_data.open_batches(tmp_path / "b.zarr")) == 3


def test_options_reach_the_reader(tmp_path):
    ds = synthetic.make_dataset(50, seed=1)
    ds.to_zarr(tmp_path / "o.zarr")
    z = lstm_data.open(tmp_path / "o.zarr", max_run_chunks=1)
    z.take(np.arange(50))
    assert z.io_stats.reads == z.io_stats.chunks_read
    with pytest.raises(TypeError):
        lstm_data.open(tmp_path / "o.zarr", no_such_option=1)
