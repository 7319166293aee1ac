"""Build items ahead of use on worker threads, in order, with bounded memory.

Workers pull the next index themselves from a shared counter and park results in
a table the consumer drains in order. The consumer is a worker too: when the
item it needs is not built yet, it builds the next unclaimed item instead of
sleeping. So ``workers=n`` means ``n`` threads building at once, the caller
included (``n - 1`` background threads), and never more threads busy than
``n``: on a 2-core machine, a third busy thread only adds context switches and
GIL hand-offs, each tens of microseconds on a virtual machine.
"""
from __future__ import annotations

import _thread
import sys
import threading
from typing import Callable, Iterator, TypeVar

__all__ = ["prefetch"]

T = TypeVar("T")


class _Pipeline:
    """Shared state of one :func:`prefetch` run.

    One lock guards it; the consumer and blocked workers wait on two separate
    conditions and are notified only when someone actually waits for that event.
    """

    def __init__(self, build: Callable[[int], object], n: int, ahead: int) -> None:
        self.build = build
        self.n = n
        self.ahead = ahead
        lock = threading.Lock()
        self.ready = threading.Condition(lock)  # the consumer waits here
        self.space = threading.Condition(lock)  # workers too far ahead wait here
        self.results: dict[int, tuple[bool, object]] = {}
        self.next_index = 0
        self.consumed = 0
        self.wanted = -1  # index the consumer is waiting for, or -1
        self.blocked = 0  # workers waiting for space
        self.stopped = False
        self.running = 0  # background workers not yet returned
        self.finished = threading.Condition(lock)  # stop() waits here for them

    def _claim(self) -> int:
        """Claim the next index inside the ``ahead`` window, or -1 (caller holds the lock)."""
        if self.stopped or self.next_index >= self.n or self.next_index - self.consumed >= self.ahead:
            return -1
        self.next_index += 1
        return self.next_index - 1

    def _run(self, index: int) -> None:
        """Build ``index`` and park the result (or the exception) for the consumer."""
        try:
            result: tuple[bool, object] = (True, self.build(index))
        except BaseException as exc:  # handed to the consumer, in order
            result = (False, exc)
        with self.ready:
            self.results[index] = result
            if self.wanted == index:
                self.ready.notify()

    def work(self, side_job: Callable[[], object] | None = None) -> None:
        """Background worker: ``side_job`` first, then build items until none is left.

        While it runs the side job the worker does not count as running, so
        :meth:`stop` never waits for that work; it joins the building only if
        the run was not stopped meanwhile.
        """
        if side_job is not None:
            self._sign_off()
            side_job()
            with self.finished:
                if self.stopped:
                    return
                self.running += 1
        try:
            self._work()
        finally:
            self._sign_off()

    def _sign_off(self) -> None:
        with self.finished:
            self.running -= 1
            if not self.running:
                self.finished.notify_all()

    def start_workers(self, count: int, side_job: Callable[[], object] | None = None) -> None:
        """Start ``count`` background workers without waiting for them to run.

        ``threading.Thread.start`` blocks until the new thread has been scheduled
        and taken the GIL, a few hundred microseconds on a busy virtual machine,
        at the start of every epoch. Low-level threads start without that wait,
        while the caller already builds the first item. Fewer workers if the
        system refuses more threads: the caller builds whatever is left. The
        first worker runs ``side_job`` before it builds.
        """
        for k in range(count):
            with self.finished:
                self.running += 1
            try:
                _thread.start_new_thread(self.work, (side_job if k == 0 else None,))
            except RuntimeError:
                with self.finished:
                    self.running -= 1
                break

    def _work(self) -> None:
        while True:
            with self.space:
                index = self._claim()
                while index < 0 and not self.stopped and self.next_index < self.n:
                    self.blocked += 1
                    self.space.wait()
                    self.blocked -= 1
                    index = self._claim()
                if index < 0:
                    return
            self._run(index)

    def take(self, index: int) -> object:
        """The result of ``index``; builds other items meanwhile rather than sleep."""
        while True:
            with self.ready:
                if index in self.results:
                    ok, value = self.results.pop(index)
                    self.consumed = index + 1
                    if self.blocked:
                        self.space.notify()
                    break
                mine = self._claim()
                if mine < 0:  # nothing left to build: wait for a worker's result
                    self.wanted = index
                    self.ready.wait()
                    self.wanted = -1
                    continue
            self._run(mine)
        if not ok:
            raise value  # type: ignore[misc]
        return value

    def stop(self) -> None:
        """Stop handing out items and wait for the workers to finish the ones they build.

        At interpreter exit (a generator closed as the modules are torn down) the workers
        never run again, so nothing is waited for then.
        """
        with self.ready:
            self.stopped = True
            self.results.clear()
            self.space.notify_all()
            while self.running and not sys.is_finalizing():
                self.finished.wait(timeout=1.0)


def prefetch(build: Callable[[int], T], n: int, workers: int = 1,
             ahead: int | None = None, side_job: Callable[[], object] | None = None) -> Iterator[T]:
    """Yield ``build(0) .. build(n - 1)`` in order, computing up to ``ahead`` items early.

    Parameters
    ----------
    build
        Called from several threads; must be thread-safe (batch building is: the
        kernels release the GIL and keep no shared mutable state).
    n
        Number of items.
    workers
        Threads building at once, the calling thread included: ``workers - 1``
        background threads build ahead, and the caller builds the next unclaimed
        item whenever the one it needs is not ready. ``1``: the caller alone,
        item by item, no threads.
    ahead
        Items in flight at most, built or being built (default ``2 * workers``).
    side_job
        Work for a spare thread, run once by the first background worker before
        it builds items (while the caller builds the first ones): e.g. the next
        epoch's row order. Not run with ``workers=1``. It must not raise, and
        closing the iterator does not wait for it.

    Notes
    -----
    Closing the generator early stops the workers after the items they are
    building; an exception raised by ``build(i)`` is raised when item ``i`` is due.
    """
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if workers == 1:
        for i in range(n):
            yield build(i)
        return
    pipe = _Pipeline(build, n, max(1, ahead or 2 * workers))
    pipe.start_workers(min(workers - 1, max(n - 1, 0)), side_job)
    try:
        for i in range(n):
            yield pipe.take(i)  # type: ignore[misc]
    finally:
        pipe.stop()
