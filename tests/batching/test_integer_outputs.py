"""Integer ``Scalars`` outputs (labels, event ids) and ``squeeze``: spec, batches, stores, the integer rule."""
from __future__ import annotations

import numpy as np
import pytest

import lstm_data
from lstm_data import Batches, BatchSpec, InMemoryDataset, Order, Ragged, Scalars, Standardize
from lstm_data.data.ragged import RaggedGroup
from lstm_data.errors import SchemaError

N = 120
BIG = 2**53 + 1  # not a float64: only an integer path keeps it


def _data(label: np.ndarray | None = None) -> InMemoryDataset:
    rng = np.random.default_rng(3)
    lens = rng.integers(0, 6, N)
    off = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(lens, out=off[1:])
    scalars = {"label": rng.integers(0, 4, N).astype(np.float32) if label is None else label,
               "event": np.arange(N, dtype=np.int64) + BIG,
               "x": rng.normal(size=N).astype(np.float32)}
    return InMemoryDataset(scalars, {"p": RaggedGroup(["a", "b"], rng.normal(size=(off[-1], 2)).astype(np.float32),
                                                      off)})


def _spec(**targets: Scalars) -> BatchSpec:
    return BatchSpec(inputs={"x": Scalars(["x"]), "p": Ragged(["a", "b"], max_len=4)},
                     targets=targets or {"label": Scalars(["label"], dtype="int64", squeeze=True),
                                         "event": Scalars(["event"], dtype="int64")},
                     nan_to=0.0)


def _all(batches: Batches, part: int, name: str) -> np.ndarray:
    return np.concatenate([batches[i][part][name] for i in range(len(batches))])


def test_spec_options_are_checked():
    assert Scalars(["a"], dtype="int32").np_dtype == np.int32 and Scalars(["a"], dtype=np.int64).integer
    assert not Scalars(["a"]).integer and Scalars(["a"]).dtype == "float32"  # the default is unchanged
    with pytest.raises(SchemaError, match="float32, float64, int64 or int32, got int16"):
        Scalars(["a"], dtype=np.int16)
    with pytest.raises(SchemaError, match="float32 or float64, got int64"):
        Ragged(["a"], dtype="int64")
    with pytest.raises(SchemaError, match="standardize.*float outputs only.*int64") as err:
        Scalars(["a", "b"], dtype="int64", standardize={"b": Standardize(center=1.0)})
    assert err.value.variable == "b"
    with pytest.raises(SchemaError, match="squeeze=True gives a \\(B,\\) output of one variable"):
        Scalars(["a", "b"], squeeze=True)
    with pytest.raises(SchemaError, match="squeeze must be True or False"):
        Scalars(["a"], squeeze="yes")
    with pytest.raises(SchemaError, match="augment: 'event' is a variable of input 'ids'.*int64"):
        BatchSpec(inputs={"ids": Scalars(["event"], dtype="int64")}, augment={"event": {"gaussian": 0.1}})
    with pytest.raises(SchemaError, match=r"\[targets.y\]: unknown option\(s\) \['sqeeze'\].*'squeeze'"):
        BatchSpec.from_dict({"targets": {"y": {"type": "scalars", "vars": ["a"], "sqeeze": True}}})


def test_signature_and_toml_round_trip(tmp_path):
    spec = _spec()
    sig = spec.signature()
    assert (sig["label"].dtype, sig["label"].shape) == (np.dtype(np.int64), (None,))
    assert (sig["event"].dtype, sig["event"].shape) == (np.dtype(np.int64), (None, 1))
    assert (sig["x"].dtype, sig["x"].shape) == (np.dtype(np.float32), (None, 1))
    path = tmp_path / "spec.toml"
    path.write_text(spec.to_toml())
    text = path.read_text()
    assert 'dtype = "int64"\nsqueeze = true' in text and text.count("squeeze") == 1  # only when set
    back = BatchSpec.from_toml(path)
    assert back == spec and back.targets["label"].squeeze and back.signature() == sig
    assert BatchSpec.from_dict(spec.to_dict()) == spec


@pytest.mark.parametrize("where", ["ram", "disk"])
def test_int64_label_and_ids_through_batches(tmp_path, where):
    ds = _data()
    if where == "disk":
        ds.to_hdf5(tmp_path / "d.h5")
        ds = lstm_data.open(tmp_path / "d.h5")
        assert not ds.in_ram
    for shuffle in (False, True):  # on disk: rows in file order, and block-shuffled windows
        batches = Batches(ds, _spec(), Order(batch_size=32, seed=2, shuffle=shuffle))
        inputs, targets, _ = batches[1]
        assert targets["label"].dtype == np.int64 and targets["label"].shape == (32,)
        assert targets["event"].dtype == np.int64 and targets["event"].shape == (32, 1)
        assert inputs["x"].dtype == np.float32 and inputs["x"].shape == (32, 1)  # the float path as it was
        rows = np.concatenate([batches.rows_of(i) for i in range(len(batches))])
        np.testing.assert_array_equal(_all(batches, 1, "label"), _data().scalar("label")[rows].astype(np.int64))
        events = _all(batches, 1, "event")[:, 0]
        np.testing.assert_array_equal(events, np.arange(N, dtype=np.int64)[rows] + BIG)  # 2**53 + 1 kept
        assert BIG in events.tolist()


def test_squeezed_float_output_equals_the_column():
    spec = BatchSpec(inputs={"x": Scalars(["x"], squeeze=True, standardize={"x": Standardize(center=1.0)})})
    batches = Batches(_data(), spec, Order(batch_size=32, shuffle=False))
    x = _all(batches, 0, "x")
    assert x.shape == (N,) and x.dtype == np.float32
    np.testing.assert_array_equal(x, _data().scalar("x") - np.float32(1.0))


@pytest.mark.parametrize("bad, why", [(1.5, "1.5, which is not a whole number"), (np.nan, "nan, which is NaN"),
                                      (2.0**63, "9.223372036854776e\\+18, which is outside the range of int64"),
                                      (-np.inf, "-inf, which is outside")])
@pytest.mark.parametrize("where", ["ram", "disk"])
def test_float_value_that_is_not_an_integer_is_an_error_naming_the_row(tmp_path, bad, why, where):
    label = np.zeros(N)
    label[77] = bad
    ds = _data(label)
    if where == "disk":
        ds.to_hdf5(tmp_path / "d.h5")
        ds = lstm_data.open(tmp_path / "d.h5")
    batches = Batches(ds, _spec(), Order(batch_size=32, shuffle=False))
    if where == "disk":
        batches[0]  # rows 0..31 are whole numbers; in RAM the whole column is checked at the first batch
    with pytest.raises(SchemaError, match=f"output 'label': variable 'label' holds {why}") as err:
        batches[2]
    assert (err.value.variable, err.value.row) == ("label", 77)


@pytest.mark.parametrize("bad", [7, 91, 119])
def test_block_windows_name_the_rows_of_the_data(tmp_path, bad):
    """Block-shuffled windows (and batches joined across two) name the row of the data, not of the window."""
    label = np.zeros(N)
    label[bad] = 0.25
    _data(label).to_hdf5(tmp_path / "d.h5", chunk_bytes=64)  # small chunks: many blocks, several windows
    ds = lstm_data.open(tmp_path / "d.h5")
    batches = Batches(ds, _spec(), Order(batch_size=8, seed=5, shuffle="block", block_rows=8, window_rows=16))
    failed = []
    for i in range(len(batches)):
        try:
            batches[i]
        except SchemaError as exc:
            assert "holds 0.25, which is not a whole number" in str(exc)
            failed.append(exc.row)
    assert failed and set(failed) == {bad} and len(failed) < len(batches) // 2  # only the windows holding it


def test_integers_out_of_range_of_int32():
    label = np.zeros(N, dtype=np.int64)
    label[9] = 2**31
    with pytest.raises(SchemaError, match="holds 2147483648, outside the range of int32") as err:
        Batches(_data(label), _spec(label=Scalars(["label"], dtype="int32")), Order(batch_size=32))[0]
    assert err.value.row == 9
    ok = Batches(_data(label.clip(0, 3)), _spec(label=Scalars(["label"], dtype="int32")),
                 Order(batch_size=32, shuffle=False))
    assert ok[0][1]["label"].dtype == np.int32


def test_nan_to_leaves_integer_inputs_alone():
    spec = BatchSpec(inputs={"ids": Scalars(["event"], dtype="int64", squeeze=True), "x": Scalars(["x"])},
                     nan_to=-1.0)
    inputs, _, _ = Batches(_data(), spec, Order(batch_size=N, shuffle=False))[0]
    np.testing.assert_array_equal(inputs["ids"], np.arange(N, dtype=np.int64) + BIG)


def test_precompute_and_open_batches_keep_int64(tmp_path):
    ds, spec = _data(), _spec()
    out = tmp_path / "b.zarr"
    order = Order(batch_size=32, seed=1)
    summary = lstm_data.precompute(ds, spec, out, order, progress=False)
    assert summary.outputs["label"] == {"dtype": "int64", "shape": "(B,)"}
    stored = lstm_data.open_batches(out, spec=spec, order=order, dataset=ds)
    live = Batches(ds, spec, order)
    for i in range(len(live)):
        for name in ("label", "event"):
            got, want = stored[i][1][name], live[i][1][name]
            assert got.dtype == want.dtype == np.int64 and got.shape == want.shape, name
            np.testing.assert_array_equal(got, want)
    assert BIG in np.concatenate([stored[i][1]["event"][:, 0] for i in range(len(stored))]).tolist()


def test_flatten_and_unflatten_carry_the_dtype():
    spec = _spec()
    batch = Batches(_data(), spec, Order(batch_size=16, shuffle=False))[0]
    flat = spec.flatten(batch, as_dict=True)
    assert flat["label"].dtype == np.int64 and flat["label"].shape == (16,)
    again = spec.unflatten(spec.flatten(batch))
    assert again[1]["label"].dtype == np.int64 and again[1]["label"].shape == (16,)
