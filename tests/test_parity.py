"""Parity with lstm_ee: BatchSpec.from_lstm_ee batches equal the legacy path's bitwise."""
from __future__ import annotations

import numpy as np
import pytest

import lstm_data
from lstm_data import Batches, BatchSpec
from lstm_data.bench.legacy_batches import LegacyCSVLoader, LegacyGenerator
from lstm_data.data.synthetic import PNG2D_VARS, PNG3D_VARS, SLICE_VARS, write_csv

pytest.importorskip("pandas")

CONFIG = dict(vars_input_slice=SLICE_VARS, vars_input_png3d=PNG3D_VARS, vars_input_png2d=PNG2D_VARS,
              var_target_total="trueE", var_target_primary="trueLepE")


def _bits(a: np.ndarray) -> np.ndarray:
    assert a.dtype == np.float32
    return a.view(np.uint32)


def _assert_bitwise(ours: dict, theirs: dict) -> None:
    assert list(ours) == list(theirs)
    for name in ours:
        assert ours[name].shape == theirs[name].shape, name
        np.testing.assert_array_equal(_bits(ours[name]), _bits(theirs[name]), err_msg=name)


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
    legacy = LegacyGenerator(LegacyCSVLoader(str(csv_file[0])), **config)
    spec = BatchSpec.from_lstm_ee(config)
    for dataset in _datasets(csv_file):
        batches = Batches(dataset, spec, batch_size=512, seed=3)
        for i in range(len(batches)):
            rows = batches.rows_of(i)
            x, y, w = batches[i]
            lx, ly, lw = legacy.get_data(rows)
            _assert_bitwise(x, lx)
            _assert_bitwise(y, ly)
            assert len(lw) == len(w) == 2
            for ours, theirs in zip(w.values(), lw):
                np.testing.assert_array_equal(ours, theirs)
        if max_prongs is not None:
            assert x["input_png3d"].shape[1] <= max_prongs


def test_lstm_ee_split_matches_its_train_test_rule(csv_file):
    dataset = csv_file[1]
    spec = BatchSpec.from_lstm_ee(CONFIG)
    train, val = Batches(dataset, spec, batch_size=100, seed=5).split(0.2)
    assert (train.n_rows, val.n_rows) == (int(1500 * 0.8), 300)
    rows_t = np.concatenate([train.rows_of(i) for i in range(len(train))])
    rows_v = np.concatenate([val.rows_of(i) for i in range(len(val))])
    assert len(np.intersect1d(rows_t, rows_v)) == 0
    assert len(np.union1d(rows_t, rows_v)) == 1500
    assert not np.array_equal(np.sort(rows_v), rows_v)  # shuffled before the cut
