"""A buffer per thread that baskets are inflated into, reused from task to task.

A basket inflated into a new buffer costs that buffer's pages, faulted in afresh, and
(with the ``deflate`` package's own function) a copy of every block. A thread's tasks
instead take pieces of the buffer it keeps (libdeflate writes into it in place, see
:mod:`~lstm_data.io.root.inflate_into`), and give them back once the values are written
where they go.
"""
from __future__ import annotations

import threading

import numpy as np

__all__ = ["Arena", "thread_arena", "KEEP_BYTES"]

#: bytes a thread's buffer starts with (it grows to the largest share of a chunk it has read)
_FIRST_BYTES = 1 << 20
#: the most bytes a thread's buffer keeps between tasks (larger shares get buffers of their own)
KEEP_BYTES = 64 << 20
_ALIGN = 64


class Arena:
    """A thread's reusable buffer, handed out in aligned pieces until :meth:`reset`
    (its pieces are then the next task's)."""

    def __init__(self) -> None:
        self.buffer = np.empty(_FIRST_BYTES, dtype=np.uint8)
        self.used = 0
        self.wanted = 0

    def reset(self) -> None:
        if len(self.buffer) < self.wanted <= KEEP_BYTES:  # the last task did not fit: grow once
            self.buffer = np.empty(self.wanted, dtype=np.uint8)
        self.used = self.wanted = 0

    def take(self, n: int) -> np.ndarray:
        start = -(-self.used // _ALIGN) * _ALIGN
        self.wanted = max(self.wanted, start) + n
        if start + n <= len(self.buffer):
            self.used = start + n
            return self.buffer[start:start + n]
        self.used = len(self.buffer)  # the rest of this task gets buffers of its own
        return np.empty(n, dtype=np.uint8)


_MINE = threading.local()


def thread_arena() -> Arena:
    """The calling thread's :class:`Arena`."""
    arena: Arena | None = getattr(_MINE, "arena", None)
    if arena is None:
        arena = _MINE.arena = Arena()
    return arena
