"""Integers of a CSV column that the float dtype does not hold exactly: one warning per column.

The parser flags such tokens as it reads them (:data:`~lstm_data.kernels.INEXACT`,
:meth:`~lstm_data.kernels.CsvBlockParser.inexact_ints`): an integer beyond
2**24 in float32 or 2**53 in float64 whose stored value differs (event, run and
hashed ids), or one of more than 19 significant digits. Values are never changed
without a word: the reader warns once per column, naming the file, the line and
the first changed value, and what it reads as.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from lstm_data.errors import warn_user
from lstm_data.io.csv.parallel import Parser
from lstm_data.io.nova.columns import PrecisionWarning

__all__ = ["Inexact", "note_inexact", "warn_inexact", "PrecisionWarning"]

#: column -> (file, line, token (its start), token length)
Inexact = dict[str, tuple[str, int, str, int]]


def note_inexact(seen: Inexact, parser: Parser, path: str) -> None:
    """Add the columns ``parser`` newly reports (after ``path`` was parsed) to ``seen``."""
    for name, (line, token, length) in parser.inexact_ints().items():
        seen.setdefault(name, (path, int(line), token, int(length)))


def warn_inexact(seen: Inexact, dtype: np.dtype[Any]) -> None:
    """Warn once per column of ``seen`` (:class:`PrecisionWarning`)."""
    dt = np.dtype(dtype)
    for name, (path, line, token, length) in seen.items():
        shown = token if length <= len(token) else f"{token}... ({length} digits)"
        with np.errstate(over="ignore"):
            became = dt.type(float(token)) if length <= len(token) else None
        reads = f" reads as {int(became)}" if became is not None and np.isfinite(became) else \
            " is not read exactly"
        fix = ("read with dtype=numpy.float64 (exact up to 2**53)" if dt == np.float32 else
               "float64 holds integers exactly only up to 2**53: keep such ids out of the numbers "
               "you read, or skip the column with a schema")
        warn_user(f"{path}: column {name!r} holds integers that {dt.name} does not hold exactly "
                  f"(first at line {line}: {shown}{reads}); {fix}", PrecisionWarning)
