"""Large blocks that the next block of about the same size reuses once they are freed.

A fresh large block costs its page faults at its first write: on a virtual machine, with
transparent huge pages compacted on fault (``defrag=madvise``, as NumPy advises its large
arrays), tens of milliseconds for tens of MiB, as much as computing what is written into
it. A process that builds such a block per file (the derived columns of every file of an
epoch read into RAM, or the same file opened again) would pay them every time, as NumPy
hands a freed large block back to the system.

:func:`reusable_empty` keeps the blocks it made: a block no array refers to any more (its
reference count is back to what this module holds) is idle, and a later request that fits
it takes it, its pages (huge ones included) still in place. The blocks it keeps, in use or
idle, hold at most :data:`RETAIN_BYTES`: the oldest idle ones are freed to make room for a
new one, and a block that does not fit is not kept (NumPy frees it with its last array).
So a process holds at most that much memory no array uses. Blocks stay NumPy's own arrays
(``numpy.empty``), so their pages are what NumPy's are.
"""
from __future__ import annotations

import sys
import threading
from typing import Any

import numpy as np

from lstm_data._util.forksafe import on_fork_in_child

__all__ = ["reusable_empty", "REUSE_BYTES", "RETAIN_BYTES"]

#: blocks of at least this many bytes are kept for reuse; smaller ones come from ``numpy.empty``
REUSE_BYTES = 4 << 20
#: bytes of the blocks kept (in use or idle) at most
RETAIN_BYTES = 256 << 20
#: a block is reused for a request of at least this share of its size
_FIT = 0.75

_lock = threading.Lock()
_blocks: list[np.ndarray] = []  # flat uint8 owners, oldest first


def _after_fork() -> None:
    """A forked child: a new lock (a thread of the parent may have held it at the fork)."""
    global _lock
    _lock = threading.Lock()


on_fork_in_child(_after_fork)


def _idle(i: int) -> bool:
    """Whether no array refers to block ``i`` (its references: the list's and the call's)."""
    return sys.getrefcount(_blocks[i]) <= 2


def reusable_empty(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """An uninitialised C-contiguous array, on an idle block of about its size when there is one.

    Parameters
    ----------
    shape, dtype
        As ``numpy.empty``'s.

    Returns
    -------
    numpy.ndarray
        A view of a block this module keeps (for arrays of at least :data:`REUSE_BYTES`),
        else a new array. The block becomes idle when no array refers to it any more.
    """
    dt = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    nbytes = count * dt.itemsize
    if nbytes < REUSE_BYTES or dt.hasobject:
        return np.empty(shape, dt)
    with _lock:
        found = None
        for i in range(len(_blocks)):
            size = _blocks[i].nbytes
            if _FIT * size <= nbytes <= size and _idle(i) and (found is None or size < _blocks[found].nbytes):
                found = i
        if found is not None:
            block = _blocks.pop(found)
            _blocks.append(block)
        else:
            block = np.empty(nbytes, np.uint8)
            if _make_room(RETAIN_BYTES - nbytes):
                _blocks.append(block)
    out: np.ndarray = block[:nbytes].view(dt).reshape(shape)
    return out


def _make_room(keep: int) -> bool:
    """Free the oldest idle blocks until the blocks kept hold at most ``keep`` bytes; whether
    they do (lock held)."""
    if keep < 0:
        return False
    total = sum(b.nbytes for b in _blocks)
    i = 0
    while total > keep and i < len(_blocks):
        if _idle(i):
            total -= _blocks[i].nbytes
            del _blocks[i]
        else:
            i += 1
    return total <= keep
