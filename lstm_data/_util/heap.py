"""Large buffers whose memory goes back to the system when they are freed.

glibc serves an allocation from its heap unless it is larger than an adaptive
threshold, which grows to the size of the largest block freed (up to 32 MiB); freed
heap memory stays resident unless it lies at the top of its heap, and each thread may
allocate from a heap (arena) of its own. A reader that allocates and frees large
buffers one after another on different threads (the windows of a block shuffle read
on demand, a few MiB to a few tens of MiB each) would keep several of them resident.
:func:`empty_pages` gives such buffers pages of their own (an anonymous mapping,
unmapped when the array is freed).
"""
from __future__ import annotations

import mmap
from typing import Any

import numpy as np

__all__ = ["empty_pages", "PAGES_BYTES"]

#: buffers of at least this many bytes get pages of their own
PAGES_BYTES = 4 << 20


def empty_pages(shape: int | tuple[int, ...], dtype: Any) -> np.ndarray:
    """An uninitialised array, on pages of its own when it holds at least :data:`PAGES_BYTES`.

    Its memory leaves the process when the array (and every view of it) is freed.
    Smaller arrays come from ``numpy.empty``.
    """
    dt = np.dtype(dtype)
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    count = int(np.prod(dims, dtype=np.int64))
    nbytes = count * dt.itemsize
    if nbytes < PAGES_BYTES or dt.hasobject or not hasattr(mmap, "MAP_PRIVATE"):  # (not on Windows)
        return np.empty(dims, dt)
    # private (a shared mapping is never backed by transparent huge pages)
    pages = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    advise = getattr(mmap, "MADV_HUGEPAGE", None)
    if advise is not None:  # as numpy advises its own large arrays
        try:
            pages.madvise(advise)
        except OSError:  # pragma: no cover - a kernel without transparent huge pages
            pass
    return np.frombuffer(pages, dtype=dt, count=count).reshape(dims)
