"""Large buffers whose memory goes back to the system when they are freed.

glibc serves an allocation from its heap unless it is larger than an adaptive
threshold, which grows to the size of the largest block freed (up to 32 MiB); freed
heap memory stays resident unless it lies at the top of its heap, and each thread may
allocate from a heap (arena) of its own. A reader that allocates and frees large
buffers one after another on different threads (the windows of a block shuffle read
on demand, a few MiB to a few tens of MiB each) would keep several of them resident.
:func:`empty_pages` gives such buffers pages of their own (an anonymous mapping).

A fresh mapping's pages are zeroed by the kernel as they are first written (a few
milliseconds per 40 MiB, more when huge pages must be compacted), so the mapping of
the last buffer freed is kept as a spare for the next one: a block shuffle frees a
window just before it reads the next, which then writes pages already in place. The
spare holds at most one buffer's pages, between one buffer's end and the next one's
start: a buffer that does not fit in it lets it go before its own mapping is made, the
spare's pages beyond a smaller buffer's end are given back, and so is the last eighth
of a freed buffer's pages at once (room for what is allocated in between). While no
buffer takes it, the spare's pages are marked free (``MADV_FREE``): the system takes
them back when it needs memory, and until then they are reused as they are.
:func:`release_spare` lets it go at once.
"""
from __future__ import annotations

import mmap
import threading
import weakref
from typing import Any

import numpy as np

__all__ = ["empty_pages", "release_spare", "PAGES_BYTES"]

#: buffers of at least this many bytes get pages of their own
PAGES_BYTES = 4 << 20
#: a new mapping's room beyond its buffer (address space only: pages never written take
#: no memory), so that the next buffer, a little larger, fits in it
_HEADROOM = 8
_PAGE = mmap.PAGESIZE
_HUGE = 2 << 20  # a transparent huge page (x86-64, arm64 with 4 KiB pages)
#: a freed buffer's last 1/_KEEP_SHARE of pages are given back at once, the rest kept as the spare
_KEEP_SHARE = 8

_spare: list[mmap.mmap] = []  # at most one mapping no buffer uses
_lock = threading.RLock()  # a buffer freed while the lock is held gives its pages back


def empty_pages(shape: int | tuple[int, ...], dtype: Any) -> np.ndarray:
    """An uninitialised array, on pages of its own when it holds at least :data:`PAGES_BYTES`.

    Its pages leave the process when the array (and every view of it) is freed, or
    serve the next such array (see the module). Smaller arrays come from ``numpy.empty``.
    """
    dt = np.dtype(dtype)
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    count = int(np.prod(dims, dtype=np.int64))
    nbytes = count * dt.itemsize
    if nbytes < PAGES_BYTES or dt.hasobject or not hasattr(mmap, "MAP_PRIVATE"):  # (not on Windows)
        return np.empty(dims, dt)
    pages = _take(nbytes)
    if pages is None:
        pages = _new(-(-(nbytes + nbytes // _HEADROOM) // _PAGE) * _PAGE)
    flat = np.frombuffer(pages, dtype=dt, count=count)
    _huge_pages(pages, flat.ctypes.data, nbytes)
    done = weakref.finalize(flat, _give_back, pages, nbytes)  # once the array and its views are gone
    done.atexit = False
    return flat.reshape(dims)


def release_spare() -> None:
    """Unmap the spare mapping now (see the module)."""
    with _lock:
        _spare.clear()


def _new(nbytes: int) -> mmap.mmap:
    # private (a shared mapping is never backed by transparent huge pages)
    return mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)


def _huge_pages(pages: mmap.mmap, address: int, nbytes: int) -> None:
    """Huge pages (as numpy advises its own large arrays) for the whole huge pages of the
    buffer's ``nbytes``, small ones after: a huge page across its end would hold up to 2 MiB
    of the mapping's room beyond it."""
    end = (address + nbytes) // _HUGE * _HUGE - address
    if end > 0:
        _advise(pages, getattr(mmap, "MADV_HUGEPAGE", None), 0, end)
    if end < len(pages):
        _advise(pages, getattr(mmap, "MADV_NOHUGEPAGE", None), max(end, 0))


def _advise(pages: mmap.mmap, advice: int | None, start: int = 0, length: int | None = None) -> None:
    if advice is None:
        return
    try:
        pages.madvise(advice, start, len(pages) - start if length is None else length)
    except OSError:  # pragma: no cover - a kernel without that advice
        pass


def _take(nbytes: int) -> mmap.mmap | None:
    """The spare mapping when ``nbytes`` fit in it (its pages beyond them given back), else
    ``None`` (the spare let go first)."""
    with _lock:
        pages = _spare.pop() if _spare else None
    if pages is None or len(pages) < nbytes:
        return None  # a spare too small is unmapped here, before the caller maps its own
    used = -(-nbytes // _PAGE) * _PAGE
    if used < len(pages):
        _advise(pages, getattr(mmap, "MADV_DONTNEED", None), used)
    return pages


def _give_back(pages: mmap.mmap, nbytes: int) -> None:
    """Keep ``pages`` (no array uses their first ``nbytes`` any more) as the spare: the last
    :data:`_KEEP_SHARE` of them given back at once (room for what is allocated before the next
    buffer takes the spare), the others marked free to the system."""
    keep = -(-(nbytes - nbytes // _KEEP_SHARE) // _PAGE) * _PAGE
    if keep < len(pages):
        _advise(pages, getattr(mmap, "MADV_DONTNEED", None), keep)
    _advise(pages, getattr(mmap, "MADV_FREE", None), 0, keep)
    spare = [pages]
    with _lock:
        _spare[:] = spare
