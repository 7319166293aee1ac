"""Set values of a TOML text in place: its comments, order and layout kept.

Python reads TOML (``tomllib``) but does not write it. Rewriting a hand-written file
from its parsed tables loses its comments and layout; this module changes only the
values asked, where they are written, and leaves every other character as it was.

A value is found by its full key path (``("inputs", "p", "standardize", "png.calE",
"center")``) wherever the file spells it: under its table header, as a dotted key
(``standardize."png.calE".center = ...``) or inside an inline table on one line
(``"png.calE" = { center = "auto", scale = "auto" }``). A value written in an array of
tables (``[[...]]``) or over several lines is not found: :func:`set_values` names the
paths it could not set, and the caller decides (``lstm-data fit`` then rewrites the file).
"""
from __future__ import annotations

import re
from typing import Mapping

__all__ = ["set_values", "toml_number"]

KeyPath = tuple[str, ...]

_BARE = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}


class _NotToml(Exception):
    """A line this module does not read (it is left as it is)."""


def toml_number(value: float) -> str:
    """``value`` as a TOML float (``2.0``, ``0.49019607843137253``, ``1e-05``, ``inf``, ``nan``)."""
    number = float(value)
    if number != number:
        return "nan"
    if number in (float("inf"), float("-inf")):
        return "inf" if number > 0 else "-inf"
    return repr(number)


def _skip_space(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t":
        i += 1
    return i


def _string(text: str, i: int) -> tuple[str, int]:
    """The one-line string starting at ``text[i]`` (a quote) and the index after it."""
    quote = text[i]
    if text.startswith(quote * 3, i):
        raise _NotToml("multi-line string")
    j = i + 1
    out: list[str] = []
    while j < len(text):
        c = text[j]
        if c == quote:
            return "".join(out), j + 1
        if c == "\\" and quote == '"':
            nxt = text[j + 1:j + 2]
            if nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
                j += 2
                continue
            if nxt in ("u", "U"):
                width = 4 if nxt == "u" else 8
                out.append(chr(int(text[j + 2:j + 2 + width], 16)))
                j += 2 + width
                continue
            raise _NotToml("unknown escape")
        out.append(c)
        j += 1
    raise _NotToml("unterminated string")


def _key(text: str, i: int) -> tuple[KeyPath, int]:
    """The dotted key starting at ``text[i]`` and the index after it."""
    parts: list[str] = []
    while True:
        i = _skip_space(text, i)
        if i < len(text) and text[i] in "\"'":
            part, i = _string(text, i)
        else:
            match = _BARE.match(text, i)
            if match is None:
                raise _NotToml("no key")
            part, i = match.group(0), match.end()
        parts.append(part)
        i = _skip_space(text, i)
        if i < len(text) and text[i] == ".":
            i += 1
            continue
        return tuple(parts), i


def _value(text: str, i: int, path: KeyPath, found: dict[KeyPath, tuple[int, int]]) -> int:
    """Skip the value at ``text[i]`` (recording the span of every value by its path in ``found``);
    the index after it."""
    i = _skip_space(text, i)
    if i >= len(text):
        raise _NotToml("no value")
    c = text[i]
    if c in "\"'":
        _, end = _string(text, i)
    elif c == "{":
        end = _inline_table(text, i, path, found)
    elif c == "[":
        end = _array(text, i)
    else:
        match = re.compile(r"[^\s,}\]#]+").match(text, i)
        if match is None:
            raise _NotToml("no value")
        end = match.end()
    found[path] = (i, end)
    return end


def _inline_table(text: str, i: int, path: KeyPath, found: dict[KeyPath, tuple[int, int]]) -> int:
    i = _skip_space(text, i + 1)
    if text[i:i + 1] == "}":
        return i + 1
    while True:
        key, i = _key(text, i)
        if text[i:i + 1] != "=":
            raise _NotToml("no '=' in an inline table")
        i = _skip_space(text, _value(text, i + 1, path + key, found))
        if text[i:i + 1] == ",":
            i += 1
            continue
        if text[i:i + 1] == "}":
            return i + 1
        raise _NotToml("inline table not closed on its line")


def _array(text: str, i: int) -> int:
    depth = 0
    while i < len(text):
        c = text[i]
        if c in "\"'":
            _, i = _string(text, i)
            continue
        if c == "#":
            break
        depth += (c == "[") - (c == "]")
        i += 1
        if depth == 0:
            return i
    raise _NotToml("array over several lines")


def _line_values(line: str, table: KeyPath | None) -> tuple[KeyPath | None, dict[KeyPath, tuple[int, int]]]:
    """The table after ``line`` and the spans of the values it sets, by full key path."""
    i = _skip_space(line, 0)
    if line.startswith("[[", i):
        return None, {}  # an array of tables: its values are not found
    if line.startswith("[", i):
        key, end = _key(line, i + 1)
        if line[end:end + 1] != "]":
            raise _NotToml("bad table header")
        return key, {}
    if i >= len(line) or line[i] == "#" or table is None:
        return table, {}
    key, end = _key(line, i)
    if line[end:end + 1] != "=":
        return table, {}  # a line inside a value over several lines
    found: dict[KeyPath, tuple[int, int]] = {}
    _value(line, end + 1, table + key, found)
    return table, found


def set_values(text: str, values: Mapping[KeyPath, str]) -> tuple[str, set[KeyPath]]:
    """``text`` with the value at each key path of ``values`` replaced by its TOML text.

    Parameters
    ----------
    text
        A TOML document.
    values
        Full key path -> the new value's TOML text (``toml_number(2.5)``).

    Returns
    -------
    str
        The document with only those values changed.
    set of tuple
        The paths not found written on one line (left unset).
    """
    lines = text.splitlines(keepends=True)
    table: KeyPath | None = ()
    left = set(values)
    for n, line in enumerate(lines):
        try:
            table, found = _line_values(line, table)
        except _NotToml:
            continue
        hits = sorted(((span, path) for path, span in found.items() if path in left), reverse=True)
        for (start, end), path in hits:  # from the right, so earlier spans stay valid
            line = line[:start] + values[path] + line[end:]
            left.discard(path)
        lines[n] = line
    return "".join(lines), left
