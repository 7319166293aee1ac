"""Parity with lstm_ee: BatchSpec.from_lstm_ee batches equal lstm_ee's path (tests/oracles) bitwise."""
from __future__ import annotations

import numpy as np
import pytest

import lstm_data
from lstm_data import Batches, BatchSpec, Order
from lstm_data.data.synthetic import PNG2D_VARS, PNG3D_VARS, SLICE_VARS, write_csv
from tests.helpers import assert_same_arrays
from tests.oracles.lstm_ee import LstmEeBatches

CONFIG = dict(vars_input_slice=SLICE_VARS, vars_input_png3d=PNG3D_VARS, vars_input_png2d=PNG2D_VARS,
              var_target_total="trueE", var_target_primary="trueLepE")


@pytest.fixture(scope="module")
def csv_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("parity") / "numu.csv"
    dataset = write_csv(path, 1500, seed=11)
    return path, dataset


def _datasets(csv_file):
    path, generated = csv_file
    yield generated
    yield lstm_data.open(path)


@pytest.mark.parametrize("max_prongs", [None, 3])
def test_batches_equal_legacy_path_bitwise(csv_file, max_prongs):
    config = dict(CONFIG, max_prongs=max_prongs)
    legacy = LstmEeBatches(str(csv_file[0]), **config)
    spec = BatchSpec.from_lstm_ee(config)
    for dataset in _datasets(csv_file):
        batches = Batches(dataset, spec, Order(batch_size=512, seed=3))
        for i in range(len(batches)):
            rows = batches.rows_of(i)
            x, y, w = batches[i]
            lx, ly, lw = legacy.get_data(rows)
            assert_same_arrays(x, lx)
            assert_same_arrays(y, ly)
            assert len(lw) == len(w) == 2
            for ours, theirs in zip(w.values(), lw):
                np.testing.assert_array_equal(ours, theirs)
        if max_prongs is not None:
            assert x["input_png3d"].shape[1] <= max_prongs


def test_lstm_ee_split_matches_its_train_test_rule(csv_file):
    dataset = csv_file[1]
    spec = BatchSpec.from_lstm_ee(CONFIG)
    train, val = Batches(dataset, spec, Order(batch_size=100, seed=5)).split(0.2)
    assert (train.n_rows, val.n_rows) == (int(1500 * 0.8), 300)
    rows_t = np.concatenate([train.rows_of(i) for i in range(len(train))])
    rows_v = np.concatenate([val.rows_of(i) for i in range(len(val))])
    assert len(np.intersect1d(rows_t, rows_v)) == 0
    assert len(np.union1d(rows_t, rows_v)) == 1500
    assert not np.array_equal(np.sort(rows_v), rows_v)  # shuffled before the cut
