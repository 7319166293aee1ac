"""Options that used to be accepted silently (issue 16, item 7) and the one ``shuffle="auto"`` rule (item 9)."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import lstm_data
from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars
from lstm_data.errors import SchemaError
from lstm_data.store.read import read_metadata

DS_ROWS = 600

SPEC = BatchSpec(inputs={"png": Ragged(["png.calE", "png.nhit"], max_len=4)},
                 targets={"t": Scalars(["trueE"])})


def test_ragged_max_len_zero_is_an_error():
    with pytest.raises(SchemaError, match="max_len must be a positive int"):
        Ragged(["png.calE"], max_len=0)
    assert Ragged(["png.calE"], max_len=1).max_len == 1


def test_nan_to_nan_is_an_error(ds):
    with pytest.raises(ValueError, match="nan_to=NaN"):
        Batches(ds, SPEC.replace(nan_to=float("nan")))
    assert Batches(ds, SPEC.replace(nan_to=0.0)).nan_to == 0.0


@pytest.mark.parametrize("size", [math.nan, np.float64("nan")])
def test_split_nan_is_an_error(ds, size):
    with pytest.raises(ValueError, match="test_size is NaN"):
        Batches(ds, SPEC, Order(seed=1)).split(size)


def test_from_lstm_ee_unknown_key_suggests_the_close_one():
    with pytest.raises(SchemaError, match=r"unknown key 'max_prong'; did you mean 'max_prongs'\?") as err:
        BatchSpec.from_lstm_ee({"vars_input_png3d": ["png.calE"], "max_prong": 5})
    assert "vars_input_slice" in str(err.value)  # the known keys are listed
    with pytest.raises(SchemaError, match="unknown key 'zzz'"):
        BatchSpec.from_lstm_ee({"zzz": 1})


def test_from_lstm_ee_accepts_the_training_keys_and_warns_about_ignored_batch_changes():
    config = {"vars_input_png3d": ["png.calE"], "max_prongs": 5, "batch_size": 1024, "epochs": 3,
              "model": {"name": "lstm"}, "seed": 1, "test_size": 0.2}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        spec = BatchSpec.from_lstm_ee(config)
    assert spec.inputs["input_png3d"].max_len == 5
    with pytest.warns(UserWarning, match="prong_sorters"):
        BatchSpec.from_lstm_ee({**config, "prong_sorters": {"input_png3d": "-calE"}})


def test_layout_stores_refuse_schema_and_root(ds, tmp_path):
    ds.to_hdf5(tmp_path / "d.h5")
    ds.to_zarr(tmp_path / "d.zarr")
    with pytest.raises(SchemaError, match="schema given") as err:
        lstm_data.open(tmp_path / "d.h5", schema={"png": ["png.calE"]})
    assert "d.h5" in str(err.value)
    with pytest.raises(SchemaError, match="root given"):
        lstm_data.open(tmp_path / "d.h5", root="/data")
    with pytest.raises(SchemaError, match="schema given") as err:
        lstm_data.open(tmp_path / "d.zarr", schema={"png": ["png.calE"]})
    assert "d.zarr" in str(err.value)


def test_shuffle_auto_is_one_rule(ds, tmp_path):
    ds.to_zarr(tmp_path / "d.zarr")
    on_disk = lstm_data.open(tmp_path / "d.zarr")
    assert ds.in_ram and not on_disk.in_ram
    assert Batches(ds, SPEC, Order(seed=1)).shuffle is True
    assert Batches(on_disk, SPEC, Order(seed=1)).shuffle == "block"
    both = lstm_data.open([tmp_path / "d.zarr", tmp_path / "d.zarr"])
    assert Batches(both, SPEC, Order(seed=1)).shuffle == "block"
    for explicit in (True, False, "block"):
        assert Batches(on_disk, SPEC, Order(seed=1, shuffle=explicit)).shuffle == explicit
    with pytest.raises(ValueError, match="'auto', True, False or 'block'"):
        Batches(ds, SPEC, Order(shuffle="random"))
    # precompute's default follows the same rule and records the choice made
    lstm_data.precompute(on_disk, SPEC, tmp_path / "b.zarr", Order(batch_size=128, seed=1), progress=False)
    assert read_metadata(tmp_path / "b.zarr")["shuffle"] == "block"
    lstm_data.precompute(ds, SPEC, tmp_path / "r.zarr", Order(batch_size=128, seed=1), progress=False)
    assert read_metadata(tmp_path / "r.zarr")["shuffle"] is True


@pytest.mark.parametrize("make, wrong, close", [
    (lambda: lstm_data.Order(batchsize=3), "batchsize", "batch_size"),
    (lambda: lstm_data.Ragged(["a"], maxlen=3), "maxlen", "max_len"),
    (lambda: lstm_data.Scalars(["a"], dtyp="float32"), "dtyp", "dtype"),
    (lambda: lstm_data.ReadOptions(thread=2), "thread", "threads"),
    (lambda: lstm_data.Batches(None, None, batchsize=3), "batchsize", "batch_size"),
])
def test_a_mistyped_keyword_names_the_close_one(make, wrong, close):
    """Python's TypeError names no close keyword; ours does, and is still a TypeError."""
    with pytest.raises(TypeError, match=rf"got an unexpected keyword argument '{wrong}' \(did you mean '{close}'\?\)") as info:
        make()
    assert isinstance(info.value, lstm_data.OptionError)
