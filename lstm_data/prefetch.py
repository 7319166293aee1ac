"""Build items ahead of use on a thread pool, in order, with bounded memory."""
from __future__ import annotations

from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterator, TypeVar

__all__ = ["prefetch"]

T = TypeVar("T")


def prefetch(build: Callable[[int], T], n: int, workers: int = 1,
             ahead: int | None = None) -> Iterator[T]:
    """Yield ``build(0) .. build(n - 1)`` in order, computing up to ``ahead`` items early.

    Parameters
    ----------
    build
        Called from worker threads; must be thread-safe (batch building is: the
        kernels release the GIL and keep no shared mutable state).
    n
        Number of items.
    workers
        Threads; ``1`` or less builds in the calling thread with no pool.
    ahead
        Items in flight at most (default ``2 * workers``).

    Notes
    -----
    Closing the generator early cancels the items not started yet.
    """
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if workers == 1 and not ahead:
        for i in range(n):
            yield build(i)
        return
    ahead = max(1, ahead or 2 * workers)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lstm_data") as pool:
        pending: deque = deque()
        nxt = 0
        try:
            while nxt < n or pending:
                while nxt < n and len(pending) < ahead:
                    pending.append(pool.submit(build, nxt))
                    nxt += 1
                yield pending.popleft().result()
        finally:
            for fut in pending:
                fut.cancel()
