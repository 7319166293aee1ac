"""Large buffers on pages of their own, small ones from numpy; the heap trimmed on request."""
from __future__ import annotations

import mmap

import numpy as np
import pytest

from lstm_data._util.heap import PAGES_BYTES, empty_pages


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_a_large_buffer_is_a_writable_array_on_a_mapping_of_its_own(dtype):
    shape = (PAGES_BYTES // np.dtype(dtype).itemsize // 4 + 3, 4)
    out = empty_pages(shape, dtype)
    assert out.shape == shape and out.dtype == dtype and out.flags.c_contiguous and out.flags.writeable
    if hasattr(mmap, "MAP_PRIVATE"):
        base = out
        while isinstance(base, np.ndarray):
            base = base.base
        assert isinstance(getattr(base, "obj", base), mmap.mmap)
    out[...] = np.arange(out.size, dtype=dtype).reshape(shape)
    assert out[-1, -1] == out.size - 1
    view = out[1:]
    del out
    assert view[0, 0] == 4  # a view keeps the pages


def test_a_small_buffer_comes_from_numpy():
    out = empty_pages(10, np.float32)
    assert out.shape == (10,) and out.flags.owndata
    assert empty_pages((0, 3), np.float64).shape == (0, 3)
