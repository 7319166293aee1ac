"""The cores this process may run on: what ``threads=None`` means wherever work is spread."""
from __future__ import annotations

import os

__all__ = ["available_cores"]


def available_cores() -> int:
    """Cores this process may run on (``os.sched_getaffinity``, else ``os.cpu_count``); at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)
