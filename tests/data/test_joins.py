"""Parts of different dtypes joined: an integer that changes warns once per column."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from lstm_data.data.joins import check_join, exact_in, joined
from lstm_data.errors import PrecisionWarning


@pytest.mark.parametrize("dtype, into, exact", [
    (np.int16, np.float32, True), (np.int32, np.float64, True), (np.int32, np.float32, False),
    (np.int64, np.float64, False), (np.uint64, np.float64, False), (np.float32, np.float64, True),
    (np.float64, np.float32, False), (np.int32, np.int64, True), (np.float32, np.float32, True)])
def test_exact_in_follows_the_mantissa(dtype, into, exact):
    assert exact_in(np.dtype(dtype), np.dtype(into)) is exact


def test_an_integer_changed_by_a_join_warns_once_per_column():
    big = np.array([3, 2**53 + 1], dtype=np.int64)
    small = np.array([0.5], dtype=np.float32)
    warned: set[str] = set()
    with pytest.warns(PrecisionWarning, match=r"scalar 'evt': integer 9007199254740993 .* becomes 9007199254740992"):
        out = joined([small, big], "scalar 'evt'", warned)
    assert out.dtype == np.float64 and out.tolist() == [0.5, 3.0, float(2**53)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        joined([small, big], "scalar 'evt'", warned)  # once per column of a dataset
        joined([small, np.array([3, 2**53], dtype=np.int64)], "scalar 'run'", warned)  # exact: silent
        check_join(np.arange(10, dtype=np.int64), np.dtype(np.float64), "group 'hit'", set())
    with pytest.warns(PrecisionWarning, match="group 'hit'"):
        check_join(np.array([2**24 + 1], np.int32), np.dtype(np.float32), "group 'hit'", set())
    with pytest.raises(ValueError):
        joined([], "scalar 'x'")
