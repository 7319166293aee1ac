"""Large buffers on pages of their own, small ones from numpy; the heap trimmed on request."""
from __future__ import annotations

import mmap
import weakref

import numpy as np
import pytest

from lstm_data._util.heap import PAGES_BYTES, empty_pages, release_spare


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


def _mapping(array):
    """The mmap under a page-backed array."""
    base = array
    while isinstance(base, np.ndarray):
        base = base.base
    return getattr(base, "obj", base)


@pytest.mark.skipif(not hasattr(mmap, "MAP_PRIVATE"), reason="pages of their own only where mmap has MAP_PRIVATE")
def test_a_freed_buffer_s_pages_serve_the_next_one_unless_it_does_not_fit():
    """The pages of the last large buffer freed (array and views gone) serve the next one that
    fits in them (no fresh pages to zero); one that does not fit lets them go; a live view keeps
    them from being reused."""
    release_spare()
    n = PAGES_BYTES // 4 + 1000
    first = empty_pages((n,), np.float32)
    pages = weakref.ref(_mapping(first))
    view = first[10:]
    del first
    other = empty_pages((n,), np.float32)  # the view still uses them
    assert _mapping(other) is not pages()
    del other
    del view  # the last freed: the spare
    again = empty_pages((n - 500, 2), np.float16)  # smaller: reused
    assert again.nbytes >= PAGES_BYTES and _mapping(again) is pages()
    again[...] = 1.5
    del again
    assert pages() is not None  # the spare
    bigger = empty_pages((4 * n,), np.float32)  # does not fit: the spare is unmapped
    assert pages() is None and bigger.nbytes == 16 * n
    del bigger
    release_spare()


@pytest.mark.skipif(not hasattr(mmap, "MAP_PRIVATE"), reason="pages of their own only where mmap has MAP_PRIVATE")
def test_release_spare_unmaps_the_pages_no_buffer_uses():
    release_spare()
    out = empty_pages((PAGES_BYTES,), np.uint8)
    pages = weakref.ref(_mapping(out))
    del out
    assert pages() is not None
    release_spare()
    assert pages() is None
