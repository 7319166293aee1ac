"""One writer per output: an exclusive lock while writing, and a final rename that never replaces.

Two ``convert`` runs to the same output used to both succeed, the second silently
replacing the first (and an output someone else created meanwhile was deleted).
Every writer now holds :func:`output_lock` while it writes: the second writer of
the same output fails at once with a ``FileExistsError`` naming the process that
holds it. The lock is an ``flock`` on a hidden sibling (``.NAME.lock``), which the
kernel releases when its process dies, so a killed writer never blocks the next
one. And a writer that may not replace puts its output in place with
:func:`rename_noreplace`, which fails rather than replace what appeared meanwhile.
"""
from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import socket
import threading
from pathlib import Path
from typing import Callable, Iterator

__all__ = ["output_lock", "rename_noreplace", "lock_path"]

_held: dict[tuple[str, int], int] = {}  # (lock file, thread) -> depth: re-entrant per thread
_held_lock = threading.Lock()
_RENAME_NOREPLACE = 1
_AT_FDCWD = -100


def lock_path(target: str | os.PathLike[str]) -> Path:
    """The lock file of ``target``: ``.NAME.lock`` next to it."""
    target = Path(target)
    return target.with_name(f".{target.name}.lock")


def _holder(path: Path) -> str:
    try:
        text = path.read_text().strip()
    except OSError:
        text = ""
    return f" ({text})" if text else ""


@contextlib.contextmanager
def output_lock(target: str | os.PathLike[str]) -> Iterator[None]:
    """Hold the exclusive right to write ``target`` (re-entrant within a thread).

    Raises
    ------
    FileExistsError
        Another process (or thread) writes ``target`` now.
    """
    path = lock_path(target)
    key = (str(path.resolve()), threading.get_ident())
    with _held_lock:
        if key in _held:
            _held[key] += 1
            nested = True
        else:
            nested = False
    if nested:
        try:
            yield
        finally:
            with _held_lock:
                _held[key] -= 1
        return
    fd = _acquire(path, target)
    with _held_lock:
        _held[key] = 1
    try:
        yield
    finally:
        with _held_lock:
            del _held[key]
        with contextlib.suppress(OSError):
            os.unlink(path)  # while locked: a process waiting on this inode re-checks the path
        os.close(fd)


def _acquire(path: Path, target: str | os.PathLike[str]) -> int:
    """An open, locked descriptor of the lock file at ``path`` (which still names it)."""
    path.parent.mkdir(parents=True, exist_ok=True)  # as a zarr output's folders are made
    for _ in range(100):
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise FileExistsError(errno.EEXIST, f"another lstm_data writer is writing {os.fspath(target)} "
                                  f"now{_holder(path)}; wait for it to finish, or choose another "
                                  "output", os.fspath(target)) from None
        except BaseException:
            os.close(fd)
            raise
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:  # else the holder removed this file as we locked it: take the new one
            os.ftruncate(fd, 0)
            os.write(fd, f"process {os.getpid()} on host {socket.gethostname()}".encode())
            return fd
        os.close(fd)
    raise FileExistsError(errno.EEXIST, f"cannot lock {path}", os.fspath(target))


def _renameat2() -> Callable[[int, bytes, int, bytes, int], int] | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_RENAMEAT2 = _renameat2()


def rename_noreplace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
    """Rename ``src`` to ``dst`` atomically, failing if ``dst`` exists (file or directory).

    Linux's ``renameat2(RENAME_NOREPLACE)``; elsewhere (or on file systems without
    it) a hard link for files and a checked rename for directories.

    Raises
    ------
    FileExistsError
        ``dst`` exists.
    """
    src_b, dst_b = os.fsencode(src), os.fsencode(dst)
    if _RENAMEAT2 is not None:
        if _RENAMEAT2(_AT_FDCWD, src_b, _AT_FDCWD, dst_b, _RENAME_NOREPLACE) == 0:
            return
        err = ctypes.get_errno()
        if err == errno.EEXIST:
            raise FileExistsError(err, os.strerror(err), os.fspath(dst))
        if err not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
            raise OSError(err, os.strerror(err), os.fspath(dst))
    if os.path.isdir(src):
        if os.path.lexists(dst):
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), os.fspath(dst))
        os.rename(src, dst)
        return
    os.link(src, dst)  # fails with FileExistsError if dst exists
    os.unlink(src)
