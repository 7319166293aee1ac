"""Messages for a path that is not there, or not a file: the close names in its folder.

A mistyped file name (``numu_v2.toml`` for ``numu_v3.toml``) is named with the files of
the same folder that it probably meant, as a misspelt option is named with its close match.
"""
from __future__ import annotations

import difflib
import os

__all__ = ["missing_path", "close_files", "not_a_file", "MAX_LISTED", "SAME_KIND"]

#: files of the same extensions named at most when none is close (more: none is named)
SAME_KIND = 3
#: entries of a folder looked at for close names at most (a folder of millions is not listed whole)
MAX_LISTED = 10_000


def close_files(path: str | os.PathLike[str], n: int = 2) -> list[str]:
    """The entries of ``path``'s folder whose names are close to its name, as paths spelt like
    ``path`` (same folder prefix), best first; without a close one, the folder's entries with the
    same extensions when there are at most :data:`SAME_KIND`; none when the folder does not exist."""
    text = os.fspath(path)
    folder, name = os.path.split(text.rstrip(os.sep) or text)
    try:
        with os.scandir(folder or ".") as entries:
            names = []
            for entry in entries:
                names.append(entry.name)
                if len(names) >= MAX_LISTED:
                    break
    except OSError:
        return []
    names.sort()
    close = difflib.get_close_matches(name, names, n=n, cutoff=0.6)
    suffix = _suffix(name)
    if not close and suffix:  # no close spelling: the folder's files of the same kind, if few
        same = [c for c in names if _suffix(c) == suffix]
        close = same if len(same) <= SAME_KIND else []
    return [os.path.join(folder, c) if folder else c for c in close]


def _suffix(name: str) -> str:
    """``".toml"``, ``".csv.xz"``: the extensions of a file name (none for a dotfile)."""
    stem = name.lstrip(".")
    return stem[stem.index("."):].lower() if "." in stem else ""


def missing_path(path: str | os.PathLike[str], what: str = "file or directory") -> str:
    """``"no such WHAT 'path'; did you mean 'close'?"`` (the close names only when there are)."""
    close = close_files(path)
    hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
    return f"no such {what} {os.fspath(path)!r}{hint}"


def not_a_file(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` cannot be read as a file (missing, with close names; a directory), or ``None``."""
    if os.path.isdir(path):
        return f"{os.fspath(path)!r} is a directory, not a file"
    if not os.path.exists(path):
        return missing_path(path, "file")
    return None
