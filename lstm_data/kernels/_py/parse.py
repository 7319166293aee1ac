"""Pure-Python twin of :mod:`lstm_data.kernels._ext.parse`: comma-string cells to ragged floats.

Number grammar
--------------
A token is, after stripping ASCII whitespace (space, tab, CR, LF, VT, FF)::

    [+-] ( digits [ "." [digits] ] | "." digits ) [ (e|E) [+-] digits ]
    [+-] ( "nan" | "inf" | "infinity" )          (any letter case)

Everything else is rejected with :class:`~lstm_data.ParseError`, including
Python's rarer ``float()`` spellings: underscores (``1_000``), non-ASCII digits
and hexadecimal. A float64 result is bitwise equal to ``float(token)``; a
float32 result is bitwise equal to ``numpy.float32(float(token))`` (the double
rounding that lstm_ee's ``np.array([float(y) ...], dtype=float32)`` did).

Cells
-----
``None``, a float NaN (how pandas marks a missing cell) and a cell that is empty
or only whitespace are empty lists. Inside a non-empty cell an empty token is an
error: ``"1,,2"`` and a trailing separator ``"1,2,"`` both raise, as they did in
lstm_ee (``float('')`` fails), so no number is invented or silently dropped.
"""
from __future__ import annotations

import math
import re
from typing import Any, Sequence

import numpy as np

from lstm_data.errors import ParseError
from lstm_data.kernels._args import WHITESPACE, check_dtype, check_sep

__all__ = ["parse_float_lists", "TOKEN_RE", "cell_text"]

TOKEN_RE = re.compile(
    r"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|(?:nan|inf|infinity))",
    re.IGNORECASE | re.ASCII,  # ASCII: "ınf" (dotless i) is not "inf"
)


def cell_text(cell: Any, index: int) -> str | None:
    """Return the text of one cell, or ``None`` for a missing cell.

    Raises
    ------
    TypeError
        For a cell that is not ``str``, ``bytes``, ``None`` or a float NaN.
    """
    if cell is None:
        return None
    if isinstance(cell, str):
        return cell
    if isinstance(cell, (bytes, bytearray, memoryview)):
        return bytes(cell).decode("utf-8", errors="surrogateescape")
    if isinstance(cell, (float, np.floating)) and math.isnan(cell):
        return None
    raise TypeError(
        f"cell {index}: expected str, bytes, None or NaN, got {type(cell).__name__}"
    )


def parse_float_lists(cells: Sequence[Any] | np.ndarray[Any, Any], dtype: Any = np.float32,
                      sep: str = ",") -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Parse separated-number cells into one flat values array plus offsets.

    Parameters
    ----------
    cells
        A list (or any other iterable) or 1-D ndarray of ``str``, ``bytes``, ``None``
        or float NaN.
    dtype
        ``numpy.float32`` (default) or ``numpy.float64``.
    sep
        The one-character separator between numbers inside a cell.

    Returns
    -------
    values : ndarray of ``dtype``, shape ``(total,)``
        Every number of every cell, in order.
    offsets : ndarray of int64, shape ``(len(cells) + 1,)``
        Cell ``i`` holds ``values[offsets[i]:offsets[i + 1]]``.

    Raises
    ------
    ParseError
        A token is not a number; names the cell index, the character offset of
        the token inside the cell, and the token.
    TypeError
        A cell has an unsupported type (checked for every cell before any token is
        parsed), or ``dtype`` is not float32/float64.
    ValueError
        ``sep`` is not a single non-space ASCII character other than ``.``, ``+``,
        ``-``, a digit or a letter.
    """
    dt = check_dtype(dtype)
    check_sep(sep)
    if isinstance(cells, np.ndarray):
        if cells.ndim != 1:
            raise ValueError(f"cells must be 1-D, got shape {cells.shape}")
        cells = cells.tolist()
    # every cell's type is checked before any number is parsed, as the compiled kernel does
    texts = [cell_text(cell, i) for i, cell in enumerate(cells)]
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    numbers: list[float] = []
    for i, text in enumerate(texts):
        if text is not None and text.strip(WHITESPACE):
            pos = 0
            for token in text.split(sep):
                numbers.append(_parse_token(token, i, pos))
                pos += len(token) + 1
        offsets[i + 1] = len(numbers)
    with np.errstate(over="ignore"):
        values = np.array(numbers, dtype=np.float64).astype(dt)
    return values, offsets


def _parse_token(token: str, cell: int, pos: int) -> float:
    stripped = token.strip(WHITESPACE)
    if not TOKEN_RE.fullmatch(stripped):
        lead = len(token) - len(token.lstrip(WHITESPACE))
        what = "empty token" if not stripped else "invalid number"
        raise ParseError(what, cell=cell, offset=pos + (lead if stripped else 0), token=token)
    return float(stripped)
