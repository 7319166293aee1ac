"""Columns of several parts joined in one dtype, never changed silently.

Files of one dataset may store a column in different dtypes (an int64 event number in
one, float32 in another). Joined, they take the dtype that numpy's promotion rules give
(``float64`` here), which does not hold every int64: an integer beyond 2**53 would
change. Each join of a part whose dtype the joined one does not hold exactly checks
that part's values and warns (:class:`~lstm_data.errors.PrecisionWarning`) naming the
column and the first integer changed, once per column of a dataset.
"""
from __future__ import annotations

import numpy as np

from lstm_data.errors import PrecisionWarning, warn_user

__all__ = ["exact_in", "joined", "check_join"]

#: columns warned about by callers that keep no set of their own
_WARNED: set[str] = set()


def exact_in(dtype: np.dtype, joined_dtype: np.dtype) -> bool:
    """Whether every value of ``dtype`` converts to ``joined_dtype`` exactly (an integer of
    as many bytes as a float does not: int64 beyond 2**53 in float64)."""
    return dtype == joined_dtype or (
        bool(np.can_cast(dtype, joined_dtype, "safe"))
        and not (dtype.kind in "iu" and joined_dtype.kind == "f" and dtype.itemsize >= joined_dtype.itemsize))


def check_join(values: np.ndarray, dtype: np.dtype, what: str, warned: set[str] | None = None) -> None:
    """Warn when an integer of ``values`` changes as ``dtype`` (see the module's text).

    Parameters
    ----------
    values
        One part's values, in the dtype it stores them in.
    dtype
        The dtype they are joined in.
    what
        The column, for the message (``"scalar 'evt'"``).
    warned
        The columns already warned about (a dataset's own set, so that it warns once per
        column, not once per batch); default: one set for the process.
    """
    warned = _WARNED if warned is None else warned
    if exact_in(values.dtype, dtype) or values.dtype.kind not in "iu" or what in warned:
        return
    flat = values.reshape(-1)
    with np.errstate(invalid="ignore", over="ignore"):
        changed = np.flatnonzero(flat.astype(dtype).astype(flat.dtype) != flat)
    if not len(changed):
        return
    warned.add(what)
    value = int(flat[changed[0]])
    warn_user(f"{what}: integer {value} of a part stored as {values.dtype} becomes "
              f"{int(np.array(value).astype(dtype))} when joined with parts stored as other dtypes "
              f"in {dtype} (only integers up to 2**{np.finfo(dtype).nmant + 1} are exact); store the "
              "column in one dtype in every file, or leave such identifiers out", PrecisionWarning)


def joined(columns: list[np.ndarray], what: str, warned: set[str] | None = None) -> np.ndarray:
    """``columns`` (one per part, in order) as one array, each checked by :func:`check_join`."""
    if not columns:
        raise ValueError("nothing to join")
    if all(c.dtype == columns[0].dtype for c in columns):  # one dtype: nothing to check
        return np.concatenate(columns)
    dtype = np.result_type(*[c.dtype for c in columns])
    for c in columns:
        check_join(c, dtype, what, warned)
    return np.concatenate(columns).astype(dtype, copy=False)
