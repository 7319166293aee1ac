"""Column flags of ``CsvBlockParser.column_flags`` added to ``QUOTED``, ``MULTI`` and ``BARE``.

Shared by the compiled parser and its pure-Python twin (the values are fixed:
the compiled code has them as C constants too).
"""
from __future__ import annotations

__all__ = ["INEXACT", "LISTED"]

#: column flag: some committed integer token of the column is not held exactly by the
#: float dtype (beyond 2**24 in float32 or 2**53 in float64, and changed by rounding),
#: or has more than 19 significant digits
INEXACT = 8
#: column flag: some committed cell of the column was a bracketed list (``[0.2, 0.3]``)
LISTED = 16
