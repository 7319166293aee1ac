"""The strict integer mode: ``PrecisionWarning`` turned into an error refuses, in every reader and in
batch building, naming the file (where there is one), the column and the first changed value; no
half-read dataset or batch comes back."""
from __future__ import annotations

import gzip
import warnings

import h5py
import numpy as np
import pytest

import lstm_data
from lstm_data import BatchSpec, Batches, Order, Ragged, Scalars
from lstm_data.data.dataset import InMemoryDataset
from lstm_data.data.ragged import RaggedGroup
from lstm_data.errors import PrecisionWarning

EVT = 2**24 + 1  # not a float32
BIG = 2**53 + 1  # not a float64


@pytest.fixture()
def strict():
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrecisionWarning)
        yield


def _csv_text(rows=3000, at=2500):
    lines = ["evt,calE,png.x"]
    lines += [f'{EVT if i == at else i},{i / 8},"{i / 4},{i / 2}"' for i in range(rows)]
    return "\n".join(lines) + "\n", at + 2


@pytest.mark.parametrize("name", ["ev.csv", "ev.csv.gz"])
@pytest.mark.parametrize("threads", [1, 2])
def test_csv_refuses(tmp_path, strict, name, threads):
    text, line = _csv_text()
    path = tmp_path / name
    path.write_bytes(gzip.compress(text.encode()) if name.endswith(".gz") else text.encode())
    with pytest.raises(PrecisionWarning, match=rf"'evt'.*line {line}: {EVT} reads as {2**24}") as info:
        lstm_data.open(path, threads=threads, block_bytes=4096)
    assert str(path) in str(info.value)


def test_csv_float64_is_not_refused(tmp_path, strict):
    text, _ = _csv_text()
    (tmp_path / "ev.csv").write_text(text)
    ds = lstm_data.open(tmp_path / "ev.csv", dtype="float64")
    assert ds.scalar("evt")[2500] == EVT


def test_parquet_refuses(tmp_path, strict):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    ids = [[i] for i in range(200)]
    ids[150] = [1, BIG]
    path = tmp_path / "ids.parquet"
    pq.write_table(pa.table({"hit.id": pa.array(ids, pa.list_(pa.int64())),
                             "e": np.linspace(0, 1, 200)}), path, row_group_size=64)
    with pytest.raises(PrecisionWarning, match=rf"'hit.id'.*row 150: {BIG}") as info:
        lstm_data.open(path)
    assert str(path) in str(info.value)


def test_hdf5_refuses(tmp_path, strict):
    path = tmp_path / "ints.h5"
    evt = np.arange(50, dtype=np.int64) + 2**24 - 3
    with h5py.File(path, "w") as fh:
        fh["evt"] = evt
        fh["calE"] = np.ones(50, np.float32)
    assert np.array_equal(lstm_data.open(path).scalar("evt"), evt)  # exact integers: nothing to refuse
    with pytest.raises(PrecisionWarning, match=rf"'evt'.*row 4: {EVT}"):
        lstm_data.open(path, dtype="float32", columns=["evt"])


def test_root_refuses(tmp_path, strict):
    uproot = pytest.importorskip("uproot")
    ak = pytest.importorskip("awkward")
    ids = [[i, i + 1] for i in range(100)]
    ids[60] = [3, EVT]
    path = tmp_path / "ids.root"
    with uproot.recreate(path) as fh:
        fh["t"] = {"Jet": ak.zip({"id": ak.Array(ids), "flav": ak.Array([[1, 2]] * 100)})}
    ds = lstm_data.open(path)  # an all-integer group stays integers while read
    spec = BatchSpec(inputs={"jets": Ragged(["Jet_id", "Jet_flav"], max_len=4)})
    batches = Batches(ds, spec, Order(batch_size=32, shuffle=False))
    with pytest.raises(PrecisionWarning, match=rf"'Jet'.*{EVT} becomes {2**24}"):
        batches[0]


def test_batches_refuse_a_scalar(strict):
    evt = np.arange(40, dtype=np.int64) + 2**24 - 1
    ds = InMemoryDataset({"evt": evt}, {"g": RaggedGroup(["g.x"], np.ones((40, 1), np.float32),
                                                         np.arange(41, dtype=np.int64))})
    spec = BatchSpec(inputs={"s": Scalars(["evt"])}, targets={"t": Ragged(["g.x"], max_len=2)})
    with pytest.raises(PrecisionWarning, match=rf"'evt'.*{EVT} becomes {2**24}"):
        Batches(ds, spec, Order(batch_size=8, shuffle=False))[0]
    spec64 = BatchSpec(inputs={"s": Scalars(["evt"], dtype="float64")}, targets={"t": Ragged(["g.x"], max_len=2)})
    inputs, _, _ = Batches(ds, spec64, Order(batch_size=8, shuffle=False))[0]
    assert inputs["s"][2, 0] == EVT


@pytest.mark.parametrize("threads", [1, 2])
def test_root_mixed_group_refuses_a_changed_integer(tmp_path, strict, threads):
    """An int64 branch beside a float branch of one counter goes into a float64 block: an id above 2**53
    changes there, so the reader says which branch, file and entry."""
    uproot = pytest.importorskip("uproot")
    ak = pytest.importorskip("awkward")
    ids = [[i, i + 1] for i in range(100)]
    ids[70] = [3, BIG]
    path = tmp_path / "mixed.root"
    with uproot.recreate(path) as fh:
        fh["t"] = {"Jet": ak.zip({"id": ak.Array(ids), "pt": ak.Array([[1.5, 2.5]] * 100)})}
    with pytest.raises(PrecisionWarning, match=rf"'Jet_id'.*(entry|row) 70: {BIG} reads as {2**53}") as info:
        lstm_data.open(path, threads=threads)
    assert str(path) in str(info.value)


def test_mixed_group_from_awkward_refuses(strict):
    ak = pytest.importorskip("awkward")
    ids = [[i] for i in range(50)]
    ids[20] = [1, 2, BIG]
    pts = [[0.5] * len(r) for r in ids]
    with pytest.raises(PrecisionWarning, match=rf"'Jet_id'.*row 20: {BIG}"):
        lstm_data.from_awkward({"Jet": ak.zip({"id": ak.Array(ids), "pt": ak.Array(pts)})})


def test_cli_strict_integers(tmp_path, capsys):
    from lstm_data.cli import main

    text, line = _csv_text()
    (tmp_path / "ev.csv").write_text(text)
    with pytest.warns(PrecisionWarning, match="'evt'"):
        assert main(["inspect", str(tmp_path / "ev.csv")]) == 0
    assert main(["--strict-integers", "inspect", str(tmp_path / "ev.csv")]) == 1
    err = capsys.readouterr().err
    assert f"line {line}: {EVT} reads as {2**24}" in err and "'evt'" in err


def test_integers_a_reader_holds_as_float64_are_checked_in_a_float32_batch(tmp_path, strict):
    """A Parquet list<int64> group is read as float64 (exact below 2**53); a float32 batch would change
    an id above 2**24, so batching refuses in strict mode (and warns otherwise)."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    ids = [[i, i + 1] for i in range(20)]
    ids[3] = [3, EVT]
    pq.write_table(pa.table({"q.id": pa.array(ids, pa.list_(pa.int64())), "e": np.arange(20.0)}),
                   tmp_path / "q.parquet")
    ds = lstm_data.open(tmp_path / "q.parquet")
    spec = BatchSpec(inputs={"x": Ragged(["q.id"], max_len=2)})
    with pytest.raises(PrecisionWarning, match=rf"'q'.*{EVT} becomes {2**24}"):
        Batches(ds, spec, Order(batch_size=8, shuffle=False))[0]
    wide = BatchSpec(inputs={"x": Ragged(["q.id"], max_len=2, dtype="float64")})
    assert Batches(ds, wide, Order(batch_size=8, shuffle=False))[0][0]["x"][3, 1, 0] == EVT


def test_measured_float64_values_that_round_are_not_integers(strict):
    from lstm_data.batching.building.exactness import first_inexact

    assert first_inexact(np.array([16777217.5, 3e9 + 0.25, np.nan]), np.float32) is None
    assert first_inexact(np.array([1.0, np.nan, -16777219.0]), np.float32) == -16777219
    assert first_inexact(np.array([2.0**30, 16777216.0]), np.float32) is None  # float32 holds these
