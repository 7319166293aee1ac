"""One helper thread per purpose, made at first use and made again in a forked child.

A caller that has two halves of GIL-free work (decoding, copying) hands one half to
its helper and does the other itself, so a read waits about half as long on 2 cores.
Each purpose has its own thread: work a helper runs may hand work to another purpose's
helper and wait for it, never to its own.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from lstm_data._util import forksafe

__all__ = ["helper", "on_helper"]

_POOLS: dict[str, ThreadPoolExecutor] = {}
_LOCK = threading.Lock()


def helper(purpose: str) -> ThreadPoolExecutor:
    """The one-thread pool of ``purpose`` (created at first use)."""
    with _LOCK:
        pool = _POOLS.get(purpose)
        if pool is None:
            pool = _POOLS[purpose] = ThreadPoolExecutor(max_workers=1,
                                                        thread_name_prefix=f"lstm_data-{purpose}")
        return pool


def on_helper(purpose: str) -> bool:
    """Whether the calling thread is ``purpose``'s helper: work it runs must not wait on its own
    helper (nested work, e.g. parts of parts, runs in the calling thread instead)."""
    return threading.current_thread().name.startswith(f"lstm_data-{purpose}_")


def _forget() -> None:
    """In a forked child: the threads are gone, so new pools are made at first use."""
    global _LOCK
    _POOLS.clear()
    _LOCK = threading.Lock()


forksafe.on_fork_in_child(_forget)
