"""Inputs that are not regular files: pipes, standard input, devices, sockets.

A named pipe (FIFO) or ``-`` (standard input; ``/dev/stdin`` when it is a pipe)
is read once, front to back, as CSV text (plain or compressed): the CSV reader
streams it, with no second pass and no memory map. Character and block devices
and sockets are refused with a :class:`~lstm_data.errors.FormatError`: reading
them could block for ever or never end.
"""
from __future__ import annotations

import io
import os
import stat

from lstm_data.errors import FormatError

__all__ = ["STDIN", "special_kind", "is_stream", "check_readable_kind", "open_stream"]

#: the path that means standard input
STDIN = "-"

_KINDS = ((stat.S_ISFIFO, "named pipe"), (stat.S_ISCHR, "character device"),
          (stat.S_ISBLK, "block device"), (stat.S_ISSOCK, "socket"))


def special_kind(path: str | os.PathLike[str]) -> str | None:
    """``"standard input"``, ``"named pipe"``, ``"character device"``, ``"block device"``,
    ``"socket"``, or ``None`` for a regular file, a directory or a path that does not exist."""
    text = os.fspath(path)
    try:
        mode = os.fstat(0).st_mode if text == STDIN else os.stat(text).st_mode
    except (OSError, ValueError):
        return None
    if text == STDIN:
        return "standard input"
    for test, name in _KINDS:
        if test(mode):
            return name
    return None


def is_stream(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is read as a stream: ``-`` or a named pipe."""
    return special_kind(path) in ("standard input", "named pipe")


def check_readable_kind(path: str | os.PathLike[str]) -> str | None:
    """:func:`special_kind` of ``path``, after refusing the kinds that cannot be read.

    Raises
    ------
    FormatError
        ``path`` is a character or block device or a socket (standard input
        that is a terminal, too: pipe the data in).
    """
    kind = special_kind(path)
    if kind == "standard input" and os.isatty(0):
        raise FormatError("standard input is a terminal: pipe the CSV text in "
                          "(cat events.csv | lstm-data convert - out.zarr)", file=STDIN)
    if kind in ("character device", "block device", "socket"):
        raise FormatError(f"this is a {kind}, not a data file: lstm_data reads regular files, "
                          "directories (stores), named pipes and standard input ('-') as CSV text",
                          file=os.fspath(path))
    return kind


def open_stream(path: str | os.PathLike[str]) -> io.FileIO:
    """A raw (unbuffered) binary file object of the stream ``path`` (``-``: a duplicate of
    standard input's descriptor, so closing it leaves ``sys.stdin`` open)."""
    text = os.fspath(path)
    if text == STDIN:
        return os.fdopen(os.dup(0), "rb", buffering=0)
    return open(text, "rb", buffering=0)
