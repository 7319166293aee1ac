"""Splits and folds of stored batches: views over the store, cut by batch."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

from lstm_data import Batches, Order, open_batches, precompute
from lstm_data.errors import OptionError
from tests.adapters.rows import row_dataset, row_spec, rows_in
from tests.helpers import assert_same_batch


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    out = tmp_path_factory.mktemp("splits") / "s.zarr"
    precompute(Batches(row_dataset(500), row_spec(), Order(batch_size=25, seed=3)), out, progress=False)
    return out


def _rows(part, epoch=0) -> list[tuple[int, ...]]:
    return [tuple(rows_in(part.batch(i, epoch)[0])) for i in range(len(part))]


def test_a_split_is_two_disjoint_parts_of_the_stored_batches(store):
    stored = open_batches(store)
    train, val = stored.split(0.2)
    assert (len(train), len(val)) == (16, 4)
    whole = _rows(stored)
    assert sorted(_rows(train) + _rows(val)) == sorted(whole)
    assert _rows(train) == [b for b in whole if b in set(_rows(train))]  # epoch 0: in stored order
    # seeded: the same parts from the same seed, other parts from another
    assert _rows(open_batches(store).split(0.2)[1]) == _rows(val)
    assert _rows(stored.split(0.2, seed=9)[1]) != _rows(val)
    assert len(stored.split(3)[1]) == 3
    # the training part is permuted per epoch as the store is, validation never
    assert _rows(train, 1) != _rows(train) and sorted(_rows(train, 1)) == sorted(_rows(train))
    assert _rows(val, 1) == _rows(val)
    assert train.identity() != val.identity() != stored.identity()
    assert_same_batch(val[0], stored.stored_batch(int(val.part[0])))


def test_folds_cover_the_store_and_parts_shard_resume_and_pickle(store):
    stored = open_batches(store)
    folds = stored.folds(4)
    vals = [b for _, v in folds for b in _rows(v)]
    assert sorted(vals) == sorted(_rows(stored)) and len(set(vals)) == len(vals)
    train, _ = folds[1]
    copy = pickle.loads(pickle.dumps(train))
    assert _rows(copy, 2) == _rows(train, 2)
    shards = [train.shard(r, 3) for r in range(3)]
    served = [tuple(rows_in(s.batch(i, 1)[0])) for s in shards for i in range(len(s))]
    assert len(set(served)) == len(served) == 3 * (len(train) // 3)
    it = train.iter()
    next(it), next(it)
    state = train.state_dict()
    again = stored.folds(4)[1][0]
    again.load_state_dict(state)
    assert [tuple(rows_in(b[0])) for b in again.iter()] == _rows(train)[2:]
    with pytest.raises(OptionError, match="another"):
        stored.folds(4)[2][0].load_state_dict(state)


def test_a_store_cannot_be_split_by_rows(store):
    with pytest.raises(OptionError, match="keeps batches, not rows"):
        open_batches(store).split(0.2, by="rows")
    with pytest.raises(OptionError, match="test_size"):
        open_batches(store).split()
