"""Which columns a reader reads: the ``columns`` and ``exclude`` read options.

Both take column names or shell-style globs (``Muon_*``, ``Jet_?t``, ``png.*``),
matched case-sensitively against a column's full name, against the group its
source puts it in (a ROOT counter group ``Muon``, an awkward list-of-records
field) or the branch it is a part of (``xyz`` for ``xyz[0]``): ``columns=["Muon"]``
reads every variable of the group ``Muon``.

* ``columns`` (include): only matching columns are read; a pattern that matches
  no column at all is a :class:`~lstm_data.errors.SchemaError` naming it and the
  closest names (a typo is never silently an empty read);
* ``exclude``: matching columns are never read, even when ``columns`` matches them.

Columns left out this way are not "skipped" (that word is for columns a reader
cannot read): they are simply not there.
"""
from __future__ import annotations

import fnmatch
from typing import Iterable, Sequence

from lstm_data._util.close_names import did_you_mean
from lstm_data.errors import SchemaError
from lstm_data.io.schema_beside import schema_hint

__all__ = ["ColumnSelection"]

_GLOB = frozenset("*?[")


class ColumnSelection:
    """The ``columns`` / ``exclude`` patterns of one read.

    Parameters
    ----------
    columns
        Names or globs to read (``None``: every column).
    exclude
        Names or globs never to read.
    """

    def __init__(self, columns: Sequence[str] | str | None = None,
                 exclude: Sequence[str] | str | None = None) -> None:
        self.columns = _tuple(columns, "columns")
        self.exclude = _tuple(exclude, "exclude") or ()
        self._used: set[str] = set()
        # names without glob characters match only themselves: a set lookup, not a glob per pattern
        self._literal = frozenset(p for p in self.columns or () if not _GLOB.intersection(p))
        self._globs = tuple(p for p in self.columns or () if p not in self._literal)

    def __bool__(self) -> bool:
        return self.columns is not None or bool(self.exclude)

    def wants(self, name: str, *also: str | None) -> bool:
        """Whether the column ``name`` is read; ``also``: names it is known by too (its source
        group, the branch it is an element of), matched like ``name``."""
        names = (name,) + tuple(a for a in also if a)
        if any(_match(n, p) for p in self.exclude for n in names):
            return False
        if self.columns is None:
            return True
        hit = [n for n in names if n in self._literal]
        hit += [p for p in self._globs if any(_match(n, p) for n in names)]
        self._used.update(hit)
        return bool(hit)

    def check_all_used(self, available: Iterable[str], *, file: str | None = None,
                       where: str = "") -> None:
        """Raise if a ``columns`` pattern matched nothing (call after every :meth:`wants`).

        Raises
        ------
        SchemaError
            Names the pattern and the closest available names.
        """
        if self.columns is None:
            return
        unused = [p for p in self.columns if p not in self._used]
        if not unused:
            return
        names = sorted(set(available))
        p = unused[0]
        hint = did_you_mean(p, names) or \
            f"; there are {len(names)} columns: {', '.join(repr(n) for n in names[:8])}" \
            f"{' ...' if len(names) > 8 else ''}"
        beside = schema_hint([file], p) if file else ""
        text = f"{where}columns={p!r} matches no column{hint}"
        if beside:
            text += f"{' ' if text.endswith('?') else '. '}{beside}"
        raise SchemaError(text, file=file, variable=p)


def _match(name: str, pattern: str) -> bool:
    """``name`` is ``pattern`` itself (an element name such as ``dir[1]`` holds glob brackets) or
    matches it as a glob."""
    return name == pattern or fnmatch.fnmatchcase(name, pattern)


def _tuple(value: Sequence[str] | str | None, what: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return (value,)
    out = tuple(value)
    if not all(isinstance(v, str) and v for v in out):
        raise TypeError(f"{what} must be column names or glob patterns, got {value!r}")
    return out
