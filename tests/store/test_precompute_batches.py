"""``precompute(batches, out)``: a store of exactly the batches given, splits included."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

from lstm_data import Batches, Order, open_batches, precompute
from lstm_data.store.format import StoreMismatchError
from tests.adapters.rows import row_dataset, row_spec
from tests.helpers import assert_same_batch


@pytest.fixture(scope="module")
def data():
    return row_dataset(700)


def _stored_equal(batches, out) -> None:
    stored = open_batches(out, permute=False)
    assert len(stored) == len(batches)
    for i in range(len(batches)):
        assert_same_batch(stored[i], batches.batch(i, epoch=0))


def test_the_store_holds_the_batches_given_with_their_default_seed(data, tmp_path):
    b = Batches(data, row_spec(), Order(batch_size=64))  # seed 0
    summary = precompute(b, tmp_path / "s.zarr", progress=False)
    assert summary.n_batches == len(b)
    _stored_equal(b, tmp_path / "s.zarr")
    assert precompute(b, out=tmp_path / "s.zarr", progress=False).reused
    # the same batches made again from what they were made from: the same store
    again = Batches(*b.made_from()[:3], rows=b.made_from()[3])
    assert precompute(again, tmp_path / "s.zarr", progress=False).reused


def test_a_split_is_stored_with_its_rows(data, tmp_path):
    b = Batches(data, row_spec(), Order(batch_size=50, seed=4, bucket_by="input_png3d", bucket_window=3))
    train, val = b.split(0.25)
    precompute(train, tmp_path / "train.zarr", progress=False)
    precompute(val, tmp_path / "val.zarr", progress=False)
    _stored_equal(train, tmp_path / "train.zarr")
    _stored_equal(val, tmp_path / "val.zarr")
    with pytest.raises(StoreMismatchError):  # other rows: not the same store
        precompute(val, tmp_path / "train.zarr", progress=False)


def test_derived_values_and_a_selection_are_made_from_the_given_data(data, tmp_path):
    spec = row_spec().replace(derived={"e2": "trueE * 2"}, selection="row % 3 != 0")
    spec = spec.replace(targets={"target_total": spec.targets["target_total"].__class__(["e2"])})
    b = Batches(data, spec, Order(batch_size=40, seed=1))
    dataset, given, order, rows = b.made_from()
    assert dataset is data and given == spec and order == b.order and rows is None
    precompute(b, tmp_path / "d.zarr", progress=False)
    _stored_equal(b, tmp_path / "d.zarr")
    # the equivalent call with the dataset: the same store, reused
    assert precompute(data, spec, tmp_path / "d.zarr", b.order, progress=False).reused


def test_made_from_of_a_copy_in_another_process(data):
    plain = pickle.loads(pickle.dumps(Batches(data, row_spec(), Order(batch_size=64, seed=2))))
    assert np.array_equal(plain.made_from()[0].scalar("row"), data.scalar("row"))
    derived = Batches(data, row_spec().replace(selection="row > 5"), Order(batch_size=64, seed=2))
    with pytest.raises(RuntimeError, match="call it on the original"):
        pickle.loads(pickle.dumps(derived)).made_from()


def test_wrong_calls_say_what_to_give(data, tmp_path):
    b = Batches(data, row_spec(), Order(batch_size=64, seed=2))
    with pytest.raises(TypeError, match="carry their spec and order"):
        precompute(b, tmp_path / "x.zarr", Order(batch_size=8))
    with pytest.raises(TypeError, match="out .* is missing"):
        precompute(b)
    with pytest.raises(TypeError, match="carries its spec and order"):
        precompute(b.shard(0, 2), tmp_path / "x.zarr", Order(batch_size=8))
    with pytest.raises(TypeError, match="expected a Dataset or a batch source"):
        precompute([1, 2], tmp_path / "x.zarr")
    with pytest.raises(TypeError, match="spec must be a BatchSpec"):
        precompute(data, tmp_path / "x.zarr")
    assert not (tmp_path / "x.zarr").exists()
