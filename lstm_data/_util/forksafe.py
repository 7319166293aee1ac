"""Fresh thread state for a forked child (``torch`` ``DataLoader`` workers fork).

A child process has one thread: the parent's background threads (epoch-order
side jobs, block read-ahead, the decode helper) do not exist there. Whatever
they were doing at the fork stays half-done in the child's copy of memory:
a future nobody will fill, a lock nobody will release, a thread pool whose
threads are gone. Objects that hold such state register here, and their
``_after_fork`` method resets it in the child only.
"""
from __future__ import annotations

import os
import weakref
from typing import Callable, Protocol

__all__ = ["register", "on_fork_in_child", "ForkAware"]


class ForkAware(Protocol):
    def _after_fork(self) -> None:
        """Drop work under way and replace locks; runs in the forked child only."""


_OBJECTS: "weakref.WeakSet[ForkAware]" = weakref.WeakSet()


def register(obj: ForkAware) -> None:
    """Have ``obj._after_fork()`` called in every child forked from now on."""
    _OBJECTS.add(obj)


_FUNCTIONS: list[Callable[[], None]] = []


def on_fork_in_child(reset: Callable[[], None]) -> None:
    """Have ``reset()`` called in every child forked from now on (module-level state)."""
    _FUNCTIONS.append(reset)


def _reset_in_child() -> None:
    for reset in _FUNCTIONS:
        reset()
    for obj in list(_OBJECTS):
        obj._after_fork()


if hasattr(os, "register_at_fork"):  # POSIX; elsewhere children are spawned afresh
    os.register_at_fork(after_in_child=_reset_in_child)
