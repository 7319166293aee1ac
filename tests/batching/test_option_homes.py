"""Every option has one home: BatchSpec (what a batch looks like), Order (how rows are
ordered and grouped), ReadOptions (how data is read); each checked and round-tripped."""
from __future__ import annotations

import numpy as np
import pytest

import lstm_data
from lstm_data import Batches, BatchSpec, Ragged, Scalars
from lstm_data.batching.order.options import Order
from lstm_data.errors import OptionError
from lstm_data.io.read_options import ReadOptions
from lstm_data.synthetic import write_csv
from tests.helpers import assert_same_batch


@pytest.fixture(scope="module")
def csv_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("homes") / "events.csv"
    write_csv(path, 700, seed=4)
    return path


@pytest.fixture(scope="module")
def ds(csv_path):
    return lstm_data.open(csv_path)


def _spec(**kw):
    return BatchSpec(inputs={"input_png": Ragged(["png.calE", "png.nhit"], max_len=12, fixed=False),
                             "input_slice": Scalars(["calE", "nHit"])},
                     targets={"target_total": Scalars(["trueE"])}, **kw)


@pytest.mark.parametrize("order", [
    Order(batch_size=64, seed=3),
    Order(batch_size=50, seed=1, shuffle=False, drop_last=True, weights="calE"),
    Order(batch_size=32, seed=2, bucket_by="input_png", bucket_window=4),
    Order(batch_size=40, seed=5, cache="ram"),
])
def test_spec_and_order_through_toml_give_bitwise_the_same_batches(tmp_path, ds, order):
    spec = _spec(nan_to=-1.0, pad_to_multiple_of=4)
    path = tmp_path / "run.toml"
    path.write_text(spec.to_toml() + "\n" + order.to_toml())
    spec_back, order_back = BatchSpec.from_toml(path), Order.from_toml(path)
    assert spec_back == spec and order_back == order
    a, b = Batches(ds, spec, order), Batches(ds, spec_back, order_back)
    for epoch in (0, 1):
        for i in (0, len(a) - 1):
            assert_same_batch(a.batch(i, epoch), b.batch(i, epoch))


def test_pad_to_multiple_of_rounds_per_batch_widths_without_bucketing(ds):
    plain = Batches(ds, _spec(), Order(batch_size=16, seed=0, shuffle=False))
    rounded = Batches(ds, _spec(pad_to_multiple_of=5), Order(batch_size=16, seed=0, shuffle=False))
    for i in range(len(plain)):
        w = plain[i][0]["input_png"].shape[1]
        assert rounded[i][0]["input_png"].shape[1] == min(12, -(-w // 5) * 5)


@pytest.mark.parametrize("bad, match", [
    (dict(batch_sise=3), r"unknown option 'batch_sise' \(did you mean 'batch_size'\?\)"),
    (dict(seed=-1), "seed must be an int >= 0"),
    (dict(shuffle="yes"), "shuffle must be"),
    (dict(cache="disk"), "cache must be"),
])
def test_order_options_are_checked(bad, match):
    with pytest.raises(OptionError, match=match):
        Order.from_dict(bad)


def test_an_unknown_batches_keyword_is_refused_by_the_signature(ds):
    with pytest.raises(TypeError, match="bucket_bye"):
        Batches(ds, _spec(), bucket_bye="input_png")


def test_the_batches_shorthand_builds_the_order_with_its_checks(ds):
    short = Batches(ds, _spec(), Order(batch_size=64), seed=3, shuffle=False, drop_last=True)
    assert short.order == Order(batch_size=64, seed=3, shuffle=False, drop_last=True)
    with pytest.raises(OptionError, match="batch_size"):
        Batches(ds, _spec(), batch_size=0)


def test_spec_checks_its_batch_options():
    with pytest.raises(OptionError, match="nan_to=NaN"):
        _spec(nan_to=float("nan"))
    with pytest.raises(OptionError, match="pad_to_multiple_of must be a positive int"):
        _spec(pad_to_multiple_of=0)
    with pytest.raises(lstm_data.SchemaError, match=r"'nan_too' \(did you mean 'nan_to'\?\)"):
        BatchSpec.from_dict({"nan_too": 0.0, **_spec().to_dict()})


def test_open_names_a_misspelt_option_for_every_format(tmp_path, csv_path, ds):
    paths = {"csv": csv_path, "zarr": tmp_path / "d.zarr", "hdf5": tmp_path / "d.h5"}
    ds.to_zarr(paths["zarr"])
    ds.to_hdf5(paths["hdf5"])
    for fmt, path in paths.items():
        with pytest.raises(OptionError, match=r"'treads' \(did you mean 'threads'\?"):
            lstm_data.open(path, treads=2)
    with pytest.raises(OptionError, match=r"'threads' does not apply to hdf5 data .*hdf5 takes"):
        lstm_data.open(paths["hdf5"], threads=2)
    with pytest.raises(OptionError, match="dtype must be float32 or float64"):
        lstm_data.open(csv_path, dtype="int8")
    assert lstm_data.open(csv_path, read=ReadOptions(dtype="float64")).ragged("png")[0].dtype == np.float64


def test_read_options_round_trip_and_leave_runtime_options_out(tmp_path):
    read = ReadOptions(dtype="float64", threads=2, tables=("rec.slc", "rec.png"), progress=print)
    path = tmp_path / "read.toml"
    path.write_text(read.to_toml())
    back = ReadOptions.from_toml(path)
    assert back == read.replace(progress=None)


def test_batches_precompute_open_batches_and_the_cli_agree_on_one_toml_file(tmp_path, csv_path, ds):
    from lstm_data.cli import main

    spec = _spec(nan_to=0.0, pad_to_multiple_of=4)
    order = Order(batch_size=96, seed=11, bucket_by="input_png", bucket_window=2)
    path = tmp_path / "run.toml"
    path.write_text(spec.to_toml() + "\n" + order.to_toml() + "\n" + ReadOptions(dtype="float32").to_toml())
    out = tmp_path / "stored.zarr"
    assert main(["precompute", "--data", str(csv_path), "--spec", str(path), "--out", str(out),
                 "--no-progress", "--quiet"]) == 0
    stored = lstm_data.open_batches(out, spec=BatchSpec.from_toml(path), order=Order.from_toml(path))
    live = Batches(ds, spec, order)
    assert len(stored) == len(live)
    for i in range(len(live)):
        assert_same_batch(stored[i], live[i])
    with pytest.raises(lstm_data.store.format.StoreMismatchError, match="batch_size"):
        lstm_data.open_batches(out, order=Order(batch_size=95))


@pytest.mark.parametrize("change, named", [
    (dict(seed=4), "seed: state has 3"),
    (dict(shuffle=False), "shuffle: state has True"),
    (dict(batch_size=65), "batch_size: state has 64"),
    (dict(bucket_by="input_png"), "bucket_by: state has None"),
])
def test_a_state_of_other_order_settings_is_refused_naming_the_setting(ds, change, named):
    saved = Batches(ds, _spec(), Order(batch_size=64, seed=3)).state_dict()
    other = Batches(ds, _spec(), Order(batch_size=64, seed=3).replace(**change))
    with pytest.raises(ValueError, match=named):
        other.load_state_dict(saved)


def test_a_state_of_other_data_or_spec_is_refused(ds, tmp_path):
    saved = Batches(ds, _spec(), Order(batch_size=64, seed=3)).state_dict()
    path = tmp_path / "other.csv"
    write_csv(path, 700, seed=5)  # same rows and columns, other values
    with pytest.raises(ValueError, match=r"the data of .*other\.csv \(file part 1 of 1\) differ"):
        Batches(lstm_data.open(path), _spec(), Order(batch_size=64, seed=3)).load_state_dict(saved)
    with pytest.raises(ValueError, match="the spec or the data differ"):
        Batches(ds, _spec(nan_to=1.0), Order(batch_size=64, seed=3)).load_state_dict(saved)
    Batches(ds, _spec(), Order(batch_size=64, seed=3)).load_state_dict(saved)  # the same: accepted


def test_more_ranks_than_batches_warns_with_the_numbers(ds):
    b = Batches(ds, _spec(), Order(batch_size=300, seed=3))
    with pytest.warns(UserWarning, match="3 batches per epoch for 4 ranks"):
        b.shard(0, 4)
