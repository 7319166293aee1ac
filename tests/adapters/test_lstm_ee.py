"""lstm_data.adapters.lstm_ee.join_varr_arrays reproduces lstm_ee's join exactly."""
from __future__ import annotations

import numpy as np
import pytest

from lstm_data.adapters.lstm_ee import join_varr_arrays
from lstm_data.data.synthetic import make_dataset
from tests.oracles.lstm_ee import join_varr_arrays as lstm_ee_join
from tests.oracles.lstm_ee import object_columns


def object_column(rows):
    col = np.empty(len(rows), dtype=object)
    col[:] = [np.asarray(r, dtype=np.float32) for r in rows]
    return col


def test_empty_list_gives_none():
    assert join_varr_arrays([]) is None


@pytest.mark.parametrize("limit", [None, 0, 2, 50])
def test_matches_lstm_ee_on_generated_rows(limit):
    ds = make_dataset(300, seed=4)
    values, offsets = ds.ragged("png")
    columns = object_columns(values[:, :5], offsets)
    got = join_varr_arrays(columns, length_limit=limit)
    want = lstm_ee_join(columns, length_limit=limit)
    assert got.dtype == np.float32 and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


def test_width_follows_first_variable_and_each_variable_pads_alone():
    first = object_column([[1, 2], [3]])
    second = object_column([[10, 20, 30], []])
    got = join_varr_arrays([first, second])
    assert got.shape == (2, 2, 2)
    np.testing.assert_array_equal(got[:, :, 0], [[1, 2], [3, np.nan]])
    np.testing.assert_array_equal(got[:, :, 1], [[10, 20], [np.nan, np.nan]])
    np.testing.assert_array_equal(got, lstm_ee_join([first, second]))


def test_float64_rows_are_rounded_like_lstm_ee():
    col = np.empty(2, dtype=object)
    col[:] = [np.array([0.1, 1e300]), np.array([1 / 3])]
    got = join_varr_arrays([col])
    with np.errstate(over="ignore"):
        want = lstm_ee_join([col])
    assert got.tobytes() == want.tobytes()


def test_zero_rows_and_all_empty():
    assert join_varr_arrays([object_column([])]).shape == (0, 0, 1)
    got = join_varr_arrays([object_column([[], []]), object_column([[1.0], []])])
    assert got.shape == (2, 0, 2)


def test_row_count_mismatch_is_an_error():
    with pytest.raises(ValueError, match="variable 1"):
        join_varr_arrays([object_column([[1]]), object_column([[1], [2]])])
