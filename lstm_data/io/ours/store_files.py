"""Read a file of a local store only when it can be one: a regular file of an acceptable size.

A chunk or metadata file replaced by a symbolic link to ``/dev/zero``, a FIFO or a
device, or by a sparse file of gigabytes, must be refused before it is read: a
device reads forever, a FIFO blocks the reader until a writer comes, a sparse
file is read whole into memory before any checksum can be compared.
:func:`read_store_file` therefore looks at the file first (``os.stat``, which
follows symbolic links): anything but a regular file is a
:class:`~lstm_data.errors.FormatError` naming what it is, and is never opened
(opening some devices has effects of its own). It then opens the file without
blocking, checks again what it opened, hands its size to the caller's check (the
size a store's manifest records) and reads exactly that many bytes.
"""
from __future__ import annotations

import errno
import os
import stat
from typing import Callable

from lstm_data.errors import FormatError

__all__ = ["read_store_file", "look_at", "refuse_special", "kind_of"]

#: what a file that is not a regular file is, by the test of :mod:`stat` that tells it
_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))
#: open for reading, never waiting for a FIFO's writer, never becoming a controlling terminal
_FLAGS = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
          | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))


def kind_of(mode: int) -> str:
    """What a file of mode ``mode`` (``st_mode``) is, in words: ``"a regular file"``, ``"a FIFO
    (named pipe)"``, ``"a character device"``, ..."""
    if stat.S_ISREG(mode):
        return "a regular file"
    return next((name for test, name in _KINDS if test(mode)), f"a special file (mode {mode:#o})")


def refuse_special(mode: int, what: str, file: str) -> None:
    """Raise :class:`FormatError` unless ``mode`` is a regular file's; a directory is an
    ``IsADirectoryError`` (a store reader takes it for an absent file, as zarr does).

    Parameters
    ----------
    mode
        ``st_mode`` of the file (of its target, for a symbolic link).
    what
        The file in words (``"chunk 3 of array 'png/values'"``), for the message.
    file
        Its path, named in the error.
    """
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), file)
    raise FormatError(f"{what} is {kind_of(mode)}, not a regular file: refused without reading "
                      "it (a store holds regular files only; a symbolic link to a device or a "
                      "pipe put in place of one)", file=file)


def look_at(path: str | os.PathLike[str], what: str, file: str) -> None:
    """Raise unless ``path`` is a regular file, without opening it (see :func:`refuse_special`;
    ``FileNotFoundError`` when there is none)."""
    refuse_special(os.stat(path).st_mode, what, file)


def read_store_file(path: str | os.PathLike[str], *, what: str, file: str | None = None,
                    check_size: Callable[[int], None] | None = None) -> tuple[bytes, os.stat_result]:
    """The bytes of the store file at ``path`` and its ``os.fstat``, checked before reading.

    Parameters
    ----------
    path
        The file (a symbolic link is followed).
    what
        The file in words, for messages.
    file
        Where it is named in errors (default: ``path``).
    check_size
        Called with the file's size before anything is read; raises to refuse it
        (e.g. :meth:`~lstm_data.io.ours.manifest.Manifest.check_size`).

    Returns
    -------
    (bytes, os.stat_result)
        Exactly the size seen by ``fstat`` (a file that grows meanwhile is not read
        further), and that ``fstat``.

    Raises
    ------
    FileNotFoundError, NotADirectoryError, IsADirectoryError
        There is no file there (a directory counts as none).
    FormatError
        Not a regular file (a FIFO, a device, a socket), or ``check_size`` refused it.
    OSError
        The file cannot be opened or read.
    """
    where = os.fspath(path) if file is None else file
    look_at(path, what, where)  # a device or FIFO is never opened
    fd = os.open(path, _FLAGS)
    try:
        st = os.fstat(fd)
        refuse_special(st.st_mode, what, where)  # replaced by another file since the stat
        if check_size is not None:
            check_size(st.st_size)
        data = os.read(fd, st.st_size)  # one call, unless the file is over 2 GiB
        if len(data) < st.st_size:
            parts = [data]
            left = st.st_size - len(data)
            while left > 0:
                part = os.read(fd, left)
                if not part:  # truncated meanwhile: what there was
                    break
                parts.append(part)
                left -= len(part)
            data = b"".join(parts)
        return data, st
    finally:
        os.close(fd)
