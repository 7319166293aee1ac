"""Typed doors to the ``distributed`` calls lstm_data makes (``distributed`` does not annotate them).

``distributed`` is imported when a function is called, never at import time.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Protocol

__all__ = ["as_completed", "wait", "DaskClient"]


class DaskClient(Protocol):
    """What lstm_data asks of a ``distributed.Client``: its workers, and tasks sent to them."""

    def scheduler_info(self) -> dict[str, Any]:
        """The scheduler's description of the cluster (its ``workers`` above all)."""
        ...

    def submit(self, func: Callable[..., object], *args: object, **kwargs: object) -> Any:
        """Run ``func(*args, **kwargs)`` on a worker; a future of its result."""
        ...

    def cancel(self, futures: Iterable[object]) -> None:
        """Cancel ``futures``."""
        ...


def as_completed(futures: Iterable[Any]) -> Iterator[Any]:
    """``distributed.as_completed(futures)``: the futures, each as it finishes."""
    from distributed import as_completed as completed

    each: Callable[[Iterable[Any]], Iterator[Any]] = completed
    return each(futures)


def wait(futures: Iterable[Any]) -> None:
    """``distributed.wait(futures)``: return once every future has finished (or failed)."""
    from distributed import wait as wait_all

    wait_for: Callable[[Iterable[Any]], object] = wait_all
    wait_for(futures)
