"""A small least-recently-used mapping, for caches of decoded chunks.

It has no lock of its own: its owner calls it under the lock that also guards what
it decodes.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Generic, Hashable, TypeVar

__all__ = ["Lru"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Lru(Generic[K, V]):
    """The ``keep`` most recently used values by key (``keep <= 0``: none are kept)."""

    def __init__(self, keep: int) -> None:
        self.keep = max(0, keep)
        self._entries: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        """The value of ``key`` (now the most recently used), or ``None``."""
        hit = self._entries.get(key)
        if hit is not None:
            self._entries.move_to_end(key)
        return hit

    def put(self, key: K, value: V) -> None:
        """Keep ``value`` for ``key``, dropping the least recently used beyond ``keep``."""
        if self.keep:
            self._entries[key] = value
            while len(self._entries) > self.keep:
                self._entries.popitem(last=False)
