"""Files of datasets read on demand, held open within the process's limit of open files.

A dataset read on demand (HDF5, ROOT) reads its file again for every batch, so it
keeps the file open. Thousands of them (5,000 files under ``ulimit -n 1024``) would
run out of file descriptors (``OSError`` errno 24). Each such dataset holds its file
as a :class:`PooledFile` instead: the file is opened when a read needs it, and the
files nobody is reading stay open only while fewer than :meth:`OpenFiles.limit` are
open; past that, the least recently used idle one is closed (and opened again when
it is next read). A file being read is never closed.

The limit is an eighth of the soft ``RLIMIT_NOFILE`` (between 4 and 512): 128 under
the usual 1024, leaving the rest to the program, the readers' own threads and
temporary opens. :func:`set_open_files_limit` sets it.
"""
from __future__ import annotations

import contextlib
import errno
import threading
import weakref
from collections import OrderedDict
from typing import Callable, Generic, Iterator, TypeVar

__all__ = ["OpenFiles", "PooledFile", "OPEN_FILES", "set_open_files_limit", "default_limit", "too_many_open_files"]

T = TypeVar("T")
#: the share of the soft limit of open files that datasets read on demand keep open
_SHARE = 8
_MIN, _MAX = 4, 512


def default_limit() -> int:
    """Files kept open at most: an eighth of the soft ``RLIMIT_NOFILE``, between 4 and 512."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, OSError, ValueError):  # not POSIX
        return 64
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return _MAX
    return max(_MIN, min(_MAX, soft // _SHARE))


class OpenFiles:
    """The files of :class:`PooledFile` objects open in this process: a bound and an LRU of the idle ones.

    Parameters
    ----------
    limit
        Files kept open at most (``None``: :func:`default_limit`, read at each open,
        so a limit changed with ``resource.setrlimit`` is followed).
    """

    def __init__(self, limit: int | None = None) -> None:
        self._lock = threading.Lock()
        self._idle: OrderedDict[int, weakref.ref[PooledFile[object]]] = OrderedDict()
        self._open = 0
        self._limit = limit

    def limit(self) -> int:
        """Files kept open at most."""
        return self._limit if self._limit is not None else default_limit()

    def set_limit(self, limit: int | None) -> None:
        """Set the bound (``None``: the default); idle files past it are closed now."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise ValueError(f"the limit of open files must be a positive int or None, got {limit!r}")
        self._limit = limit
        self.make_room(0)

    @property
    def n_open(self) -> int:
        """Files of :class:`PooledFile` objects open now."""
        return self._open

    def make_room(self, extra: int) -> None:
        """Close least recently used idle files until ``extra`` more fit under the limit."""
        victims = []
        limit = self.limit()
        with self._lock:
            while self._open + extra > limit and self._idle:
                _, ref = self._idle.popitem(last=False)
                pooled = ref()
                self._open -= 1
                if pooled is None:  # dropped while idle: its handle went with it
                    continue
                handle, pooled.handle = pooled.handle, None
                victims.append((pooled, handle))
        for pooled, handle in victims:  # outside the lock: closing may take a while
            pooled.close_handle(handle)

    def acquire(self, pooled: PooledFile[T]) -> None:
        """``pooled`` is being read: never closed until :meth:`release`."""
        with self._lock:
            self._idle.pop(id(pooled), None)
            pooled.busy += 1

    def opened(self) -> None:
        """One more file is open."""
        with self._lock:
            self._open += 1

    def release(self, pooled: PooledFile[T]) -> None:
        """A read of ``pooled`` ended; its file becomes the most recently used idle one."""
        with self._lock:
            pooled.busy -= 1
            if pooled.busy == 0 and pooled.handle is not None:
                self._idle[id(pooled)] = weakref.ref(pooled)  # type: ignore[arg-type] # any T
        self.make_room(0)

    def forget(self, pooled: PooledFile[T]) -> object | None:
        """Take ``pooled``'s handle out of the count (its owner closes or drops it); the handle."""
        with self._lock:
            self._idle.pop(id(pooled), None)
            handle, pooled.handle = pooled.handle, None
            if handle is not None:
                self._open -= 1
        return handle


#: the process's files of datasets read on demand
OPEN_FILES = OpenFiles()


def set_open_files_limit(limit: int | None) -> None:
    """Keep at most ``limit`` files of datasets read on demand open (``None``: :func:`default_limit`)."""
    OPEN_FILES.set_limit(limit)


def too_many_open_files(exc: BaseException, name: str, pool: OpenFiles | None = None) -> OSError | None:
    """The error for ``exc`` when it is the process running out of file descriptors (errno 24)
    while opening ``name``: what to do about it, naming the file; else ``None``."""
    if not (getattr(exc, "errno", None) == errno.EMFILE or "Too many open files" in str(exc)
            or "errno = 24" in str(exc)):
        return None
    held = (pool or OPEN_FILES).n_open
    return OSError(errno.EMFILE, f"too many open files in this process, opening {name}: lstm_data holds "
                                 f"{held} files of datasets read on demand open (at most "
                                 f"{(pool or OPEN_FILES).limit()}); the rest are the program's own. Raise "
                                 "the limit (ulimit -n), or keep fewer open "
                                 "(lstm_data.io.plumbing.open_files.set_open_files_limit)")


class PooledFile(Generic[T]):
    """The file of one dataset read on demand: opened for a read, closed when idle and room is needed.

    Parameters
    ----------
    opener
        Opens the file; returns its handle.
    closer
        Closes a handle.
    name
        The file, as errors name it.
    pool
        The bound it keeps to (default :data:`OPEN_FILES`).
    """

    def __init__(self, opener: Callable[[], T], closer: Callable[[T], object], name: str,
                 pool: OpenFiles | None = None) -> None:
        self.opener, self.closer, self.name = opener, closer, name
        self.pool = pool or OPEN_FILES
        self.handle: T | None = None
        self.busy = 0
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def use(self) -> Iterator[T]:
        """The open handle, for the duration of a read (opened first when it was closed)."""
        pool = self.pool
        pool.acquire(self)
        try:
            with self._lock:
                if self.handle is None:
                    pool.make_room(1)
                    try:
                        handle = self.opener()
                    except Exception as exc:
                        err = too_many_open_files(exc, self.name, pool)
                        if err is not None:
                            raise err from exc
                        raise
                    pool.opened()
                    self.handle = handle
                handle = self.handle
            yield handle
        finally:
            pool.release(self)

    def close_handle(self, handle: T) -> None:
        """Close ``handle`` (a handle this object opened)."""
        self.closer(handle)

    def close(self) -> None:
        """Close the file now (a later :meth:`use` opens it again)."""
        with self._lock:
            handle = self.pool.forget(self)
            if handle is not None:
                self.closer(handle)  # type: ignore[arg-type] # the handle this object opened

    def drop(self) -> None:
        """Forget the handle without closing it (a forked child: the parent's file stays open for it)."""
        with self._lock:
            self.pool.forget(self)
