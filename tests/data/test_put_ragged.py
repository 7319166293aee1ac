"""put_ragged writes rows taken by take_ragged back where they belong."""
from __future__ import annotations

import numpy as np
import pytest

from lstm_data.data.ragged import put_ragged, take_ragged


@pytest.mark.parametrize("rows", [[2, 3, 4], [4, 0, 2], [1], [0, 1, 2, 3, 4, 5]])
def test_rows_put_back_land_on_their_own_values(rows):
    off = np.array([0, 2, 2, 5, 6, 9, 10], dtype=np.int64)
    values = np.arange(20, dtype=np.float32).reshape(10, 2)
    block, block_off = take_ragged(values, off, np.array(rows))
    out = np.full_like(values, -1)
    put_ragged(out, off, np.array(rows), block, block_off)
    taken = np.zeros(len(values), dtype=bool)
    for r in rows:
        taken[off[r]:off[r + 1]] = True
    assert np.array_equal(out[taken], values[taken]) and np.all(out[~taken] == -1)


def test_rows_without_values_write_nothing():
    off = np.array([0, 0, 0, 3], dtype=np.int64)
    out = np.zeros(3)
    put_ragged(out, off, np.array([0, 1]), np.zeros(0), np.zeros(3, dtype=np.int64))
    assert np.all(out == 0)
