"""Batches.split / folds: by rows, by file, by a key column (event % k), fractions and k-fold, with every order."""
from __future__ import annotations

import numpy as np
import pytest

import lstm_data
from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars
from lstm_data.batching.order.rows import split_rows
from lstm_data.data.dataset import InMemoryDataset
from lstm_data.data.synthetic import PNG3D_VARS, make_dataset
from lstm_data.errors import OptionError, SchemaError

ROWS_PER_FILE = 300
SPEC = BatchSpec(inputs={"evt": Scalars(["evt"]), "input_png3d": Ragged(PNG3D_VARS[:2], max_len=8)},
                 targets={"label": Scalars(["label"])})


def _file(path, index: int):
    """A real HDF5 file of ours: events ``evt`` numbered across files, labels about 1:3."""
    base = make_dataset(ROWS_PER_FILE, seed=index)
    evt = np.arange(index * ROWS_PER_FILE, (index + 1) * ROWS_PER_FILE) * 7 + 3  # not the row number
    label = np.random.default_rng(index).random(ROWS_PER_FILE) < 0.25
    scalars = {"evt": evt.astype(np.int64), "label": label.astype(np.float32)}
    InMemoryDataset(scalars, {g: base.group(g) for g in base.groups}).to_hdf5(path)
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("split")
    return [str(_file(d / f"part{i}.h5", i)) for i in range(6)]


def _evts(b, epoch=0):
    return np.concatenate([b.batch(i, epoch)[0]["evt"][:, 0] for i in range(len(b))]).astype(np.int64)


def _all_evts(b):
    return np.sort(np.asarray(b.dataset.scalar("evt", np.sort(b.view_rows)), dtype=np.int64))


def test_by_rows_is_lstm_ee_split_and_k_fold_cuts_the_rows(files):
    ds = lstm_data.open(files[:3])
    b = Batches(ds, SPEC, Order(batch_size=64, seed=3))
    train, val = b.split(0.25)
    want_train, want_val = split_rows(len(ds), 0.25, 3)
    np.testing.assert_array_equal(train.view_rows, want_train)
    np.testing.assert_array_equal(val.view_rows, want_val)
    vals = [v.view_rows for _, v in b.folds(4)]
    assert sorted(np.concatenate(vals).tolist()) == list(range(len(ds)))
    assert {len(v) for v in vals} == {len(ds) // 4}


def test_by_file_takes_whole_files_and_k_fold_is_stable_when_files_are_added(files):
    ds = lstm_data.open(files[:5])
    b = Batches(ds, SPEC, Order(batch_size=64, seed=1, shuffle=True))
    train, val = b.split(2, by="file")
    val_files = np.unique(_all_evts(val) // 7 // ROWS_PER_FILE)
    assert len(val_files) == 2 and len(val) * 64 >= 2 * ROWS_PER_FILE
    assert not set(_all_evts(train) // 7 // ROWS_PER_FILE) & set(val_files)
    _, val3 = b.split(by="file", k=3, fold=1)
    assert sorted(set(_all_evts(val3) // 7 // ROWS_PER_FILE)) == [1, 4]
    more = Batches(lstm_data.open(files), SPEC, Order(batch_size=64, seed=1))
    _, val3b = more.split(by="file", k=3, fold=1)
    assert sorted(set(_all_evts(val3b) // 7 // ROWS_PER_FILE)) == [1, 4]  # the new file 5 goes to fold 2


def test_by_key_modulo_and_fraction_are_stable_when_files_are_added(files):
    small = Batches(lstm_data.open(files[:3]), SPEC, Order(batch_size=64, seed=1))
    big = Batches(lstm_data.open(files), SPEC, Order(batch_size=64, seed=1))
    train, val = small.split(by="key", key="evt", k=5, fold=2)
    assert np.all(_all_evts(val) % 5 == 2) and np.all(_all_evts(train) % 5 != 2)
    assert len(_all_evts(val)) + len(_all_evts(train)) == 3 * ROWS_PER_FILE
    _, val_big = big.split(by="key", key="evt", k=5, fold=2)
    assert set(_all_evts(val)) == set(_all_evts(val_big)) & set(_all_evts(small.split(0.0)[0]))
    # a hashed fraction: each key's side is fixed by the key and the seed alone
    tr_s, va_s = small.split(0.2, by="key", key="evt")
    tr_b, va_b = big.split(0.2, by="key", key="evt")
    assert set(_all_evts(va_s)) <= set(_all_evts(va_b)) and not set(_all_evts(tr_s)) & set(_all_evts(va_b))
    n = 6 * ROWS_PER_FILE
    assert abs(len(_all_evts(va_b)) - 0.2 * n) <= 5 * np.sqrt(n * 0.2 * 0.8)
    _, va_other = big.split(0.2, by="key", key="evt", seed=2)
    assert set(_all_evts(va_other)) != set(_all_evts(va_b))


POLICIES = {
    "shuffle": dict(shuffle=True),
    "block": dict(shuffle="block", block_rows=50, window_rows=200),
    "bucket": dict(shuffle=True, bucket_by="input_png3d", bucket_window=4),
    "sample": dict(shuffle=True, sample={"classes": "label"}),
    "plain": dict(shuffle=False),
}


@pytest.mark.parametrize("policy", list(POLICIES))
@pytest.mark.parametrize("by", ["rows", "file", "key"])
def test_every_split_works_with_every_order(files, policy, by):
    b = Batches(lstm_data.open(files[:4]), SPEC, Order(batch_size=50, seed=5, **POLICIES[policy]))
    pairs = b.folds(4, by=by, key="evt")
    covered = []
    for train, val in pairs:
        tr, va = set(_evts(train, 1)), set(_evts(val))
        assert not tr & va  # no validation event in a training batch, whatever the order
        assert tr <= set(_all_evts(train)) and va == set(_all_evts(val))  # validation: every row once
        covered += _all_evts(val).tolist()
        if policy == "sample":
            assert abs(train.draws(1)[1] - train.draws(1)[0]) <= 1
    assert sorted(covered) == sorted(_all_evts(b.split(0.0)[0]).tolist())


def test_split_arguments_are_checked(files):
    one = Batches(make_dataset(100, seed=1), BatchSpec(inputs={"x": Scalars(["calE"])}), Order(seed=1))
    with pytest.raises(OptionError, match="several files"):
        one.split(0.2, by="file")
    with pytest.raises(OptionError, match="not both"):
        one.split(0.2, k=3)
    with pytest.raises(OptionError, match="not neither"):
        one.split()
    with pytest.raises(OptionError, match="fold must be an int in"):
        one.split(k=3, fold=3)
    with pytest.raises(OptionError, match="one of 'rows', 'file', 'key'"):
        one.split(0.2, by="event")
    with pytest.raises(SchemaError, match="key= naming a scalar column"):
        one.split(0.2, by="key", key="evt")
    with pytest.raises(SchemaError, match="not an integer"):
        one.split(0.2, by="key", key="calE")
    with pytest.raises(OptionError, match="fraction test_size"):
        Batches(lstm_data.open(files[:2]), SPEC, Order(seed=1)).split(10, by="key", key="evt")
