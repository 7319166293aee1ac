"""Names read from a file, joined with the directory they belong to, never leaving it.

A checkpoint, a store's metadata, a manifest or an index names files and nodes of
its own directory. Such a name is data: an edited or foreign file can name
``../x``, ``/etc/x`` or a path through a symbolic link that leads elsewhere, and a
reader that joins it with the directory would read (or a writer delete) a file
that is not its own. :func:`confined` is the one place such names are checked.
"""
from __future__ import annotations

import os
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from lstm_data.errors import FormatError

__all__ = ["confined", "check_plain_name"]


def _refuse(name: Any, why: str, *, file: str, key: str) -> FormatError:
    return FormatError(f"the key {key!r} names {name!r}, which {why}: a name read from this file must stay "
                       "inside its directory; refused", file=file)


def check_plain_name(name: Any, *, file: str, key: str) -> str:
    """``name`` if it is a relative path of plain components (no ``..``, not absolute).

    Parameters
    ----------
    name
        The name as read (any JSON value).
    file
        The file it was read from (named in the error).
    key
        Where in that file it was read (named in the error).

    Returns
    -------
    str
        ``name``.

    Raises
    ------
    FormatError
        ``name`` is not a non-empty string, holds a NUL, is absolute
        (``/x``, ``C:\\x``, ``\\\\host\\x``) or has a ``..`` component.
    """
    if not isinstance(name, str) or not name:
        raise _refuse(name, "is not a non-empty string", file=file, key=key)
    if "\0" in name:
        raise _refuse(name, "holds a NUL character", file=file, key=key)
    if PurePosixPath(name).is_absolute() or PureWindowsPath(name).is_absolute() or name.startswith("\\") \
            or PureWindowsPath(name).drive:
        raise _refuse(name, "is an absolute path", file=file, key=key)
    if ".." in name.replace("\\", "/").split("/"):
        raise _refuse(name, "has a '..' component (it leads out of the directory)", file=file, key=key)
    return name


def confined(directory: str | os.PathLike[str], name: Any, *, file: str, key: str) -> Path:
    """``directory / name``, where ``name`` was read from ``file`` at ``key``, if it stays in ``directory``.

    Checked lexically (:func:`check_plain_name`), then resolved: a symbolic link on
    the way (the file itself included) that leads out of ``directory`` is refused
    too. A name that does not exist yet passes if its existing part stays inside.

    Parameters
    ----------
    directory
        The directory the name belongs to.
    name
        The name as read.
    file, key
        As for :func:`check_plain_name`.

    Returns
    -------
    pathlib.Path
        ``directory / name`` (not resolved).

    Raises
    ------
    FormatError
        ``name`` leaves ``directory``, lexically or through a link.
    """
    plain = check_plain_name(name, file=file, key=key)
    base = Path(directory)
    path = base / plain
    try:
        inside = path.resolve().is_relative_to(base.resolve())
    except (OSError, RuntimeError) as exc:  # a loop of links
        raise _refuse(name, f"cannot be resolved ({exc})", file=file, key=key) from None
    if not inside:
        raise _refuse(name, f"resolves to {str(path.resolve())!r}, outside {str(base)!r} (a symbolic link "
                      "leads out)", file=file, key=key)
    return path
