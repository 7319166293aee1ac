"""Argument checks shared by both kernel backends (the compiled core and its Python twins).

Both :mod:`lstm_data.kernels._ext` and :mod:`lstm_data.kernels._py` validate
their arguments here, so they raise the same exception types with the same
messages, and the compiled code never imports its twin.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from lstm_data.kernels._form_args import PAD_MODES, as_column_params, as_forms
from lstm_data.kernels._job import RaggedJob
from lstm_data.kernels._source_kinds import SOURCE_DTYPES

__all__ = ["ARENA_ALIGN", "arena_array", "WHITESPACE", "check_dtype", "check_sep", "check_ragged", "as_rows", "as_columns",
           "as_sort_column", "as_max_len", "as_out", "RaggedJob", "prepare_table", "PAD_MODES", "as_column_params", "as_forms", "QUOTED", "MULTI", "BARE", "KINDS", "check_csv_seps", "check_max_line", "long_line_message", "csv_layout",
           "check_interleave", "check_csv_extend", "SOURCE_KINDS", "source_kind", "as_multiple_of", "locate_rows", "raise_bad_row"]

WHITESPACE = " \t\r\n\v\f"


_FLOAT32 = np.dtype(np.float32)
_FLOAT64 = np.dtype(np.float64)


def check_dtype(dtype: Any) -> np.dtype:
    """Return ``dtype`` as float32 or float64, or raise ``TypeError``."""
    if dtype is np.float32 or dtype is _FLOAT32:  # the default, at no cost for the kernels
        return _FLOAT32
    dt: np.dtype = np.dtype(dtype)
    if dt not in (_FLOAT32, _FLOAT64):
        raise TypeError(f"dtype must be float32 or float64, got {dt}")
    return dt


def check_sep(sep: str) -> None:
    """Raise ``ValueError`` unless ``sep`` can separate numbers unambiguously."""
    if (not isinstance(sep, str) or len(sep) != 1 or ord(sep) > 127 or sep.isalnum()
            or sep in ".+-" or sep in WHITESPACE):
        raise ValueError(f"sep must be one ASCII punctuation character other than . + -, got {sep!r}")


#: the source dtypes of ragged values (:data:`SOURCE_DTYPES`), in the order of the compiled
#: kernels' source kinds; booleans are read as uint8 (0 or 1)
SOURCE_KINDS = tuple(np.dtype(name) for name in SOURCE_DTYPES)


def source_kind(values: np.ndarray) -> int:
    """The index of ``values.dtype`` in :data:`SOURCE_KINDS` (call after :func:`check_ragged`)."""
    return SOURCE_KINDS.index(values.dtype)


def check_ragged(values: Any, offsets: Any) -> tuple[np.ndarray, np.ndarray]:
    """``values`` (1-D or 2-D, a float, integer or boolean dtype; booleans come back as a
    uint8 view) and ``offsets`` (int32/int64, starting at 0 and ending at ``len(values)``)
    as arrays, or the error that names what is wrong.

    Integer values convert to the float output as C converts them (to the nearest
    float); whether that is exact is the caller's to check and report.
    """
    values = np.asarray(values)
    if values.dtype == np.bool_:
        values = values.view(np.uint8)
    if values.dtype not in SOURCE_KINDS or not values.dtype.isnative:
        raise TypeError(f"values must be float32, float64, a native integer or boolean dtype, "
                        f"got {values.dtype}")
    if values.ndim not in (1, 2):
        raise ValueError(f"values must be 1-D or 2-D, got shape {values.shape}")
    offsets = np.asarray(offsets)
    if offsets.dtype not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise TypeError(f"offsets must be int32 or int64, got {offsets.dtype}")
    if offsets.ndim != 1 or len(offsets) < 1:
        raise ValueError(f"offsets must be 1-D with at least one entry, got shape {offsets.shape}")
    if offsets[0] != 0:
        raise ValueError(f"offsets[0] must be 0, got {offsets[0]}")
    if offsets[-1] != len(values):
        raise ValueError(f"offsets[-1] ({offsets[-1]}) != len(values) ({len(values)})")
    return values, offsets


def as_rows(rows: Any, n_rows: int) -> np.ndarray:
    """``rows`` as 1-D intp (``None``: every row), checked as the kernels check it up front.

    That is its shape and dtype and, for unsigned rows, the largest one. Signed rows are
    range-checked later, in batch order together with their offsets
    (:func:`lstm_data.kernels._py.pad.row_bounds`), so the first bad position is named.
    """
    if rows is None:
        return np.arange(n_rows, dtype=np.intp)
    arr = np.asarray(rows)
    if arr.size == 0:
        return np.zeros(0, dtype=np.intp)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise ValueError(f"rows must be a 1-D array of integers, got {arr.dtype} shape {arr.shape}")
    if arr.dtype.kind == "u" and arr.max() >= n_rows:
        raise ValueError(f"row {arr.max()} out of range for {n_rows} rows")
    return arr.astype(np.intp)


def as_columns(columns: Any, n_vars: int, flat: bool) -> np.ndarray:
    if columns is None:
        return np.arange(n_vars, dtype=np.intp)
    if flat:
        raise ValueError("columns cannot be given with 1-D values")
    arr = np.asarray(columns)
    if arr.size == 0:
        return np.zeros(0, dtype=np.intp)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise ValueError(f"columns must be a 1-D array of integers, got {arr.dtype} shape {arr.shape}")
    if arr.min() < 0 or arr.max() >= n_vars:
        raise ValueError(f"column index out of range for {n_vars} variables: {arr.tolist()}")
    return arr.astype(np.intp)


def as_sort_column(sort_by: Any, n_vars: int) -> int | None:
    if sort_by is None:
        return None
    if isinstance(sort_by, (bool, np.bool_)) or not isinstance(sort_by, (int, np.integer)):
        raise ValueError(f"sort_by must be a column index, got {sort_by!r}")
    if not 0 <= sort_by < n_vars:
        raise ValueError(f"sort_by column {sort_by} out of range for {n_vars} variables")
    return int(sort_by)


def as_max_len(max_len: Any) -> int:
    if isinstance(max_len, (bool, np.bool_)) or not isinstance(max_len, (int, np.integer)):
        raise ValueError(f"max_len must be an int or None, got {max_len!r}")
    if max_len < 0:
        raise ValueError(f"max_len must be >= 0, got {max_len}")
    return int(max_len)


def as_out(out: Any, shape: tuple[int, ...], dt: np.dtype) -> np.ndarray:
    if out is None:
        return np.empty(shape, dtype=dt)
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy array, got {type(out).__name__}")
    if out.dtype != dt:
        raise TypeError(f"out has dtype {out.dtype}, expected {dt}")
    if out.shape != shape:
        raise ValueError(f"out has shape {out.shape}, expected {shape}")
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError("out must be C-contiguous and writeable")
    return out


def as_multiple_of(multiple_of: Any) -> int | None:
    """``multiple_of`` of a ragged job: ``None`` or a positive int."""
    if multiple_of is None:
        return None
    if isinstance(multiple_of, (bool, np.bool_)) or not isinstance(multiple_of, (int, np.integer)) \
            or multiple_of < 1:
        raise ValueError(f"multiple_of must be a positive int or None, got {multiple_of!r}")
    return int(multiple_of)


def raise_bad_row(job: RaggedJob, row: int, out_of_range: bool) -> None:
    """Raise the ``ValueError`` of a bad batch ``row`` of ``job``: out of range, or bad offsets
    (named in its part's own numbering when the job has several parts)."""
    n_rows = int(job.part_rows[-1]) if job.part_rows is not None else len(job.offsets) - 1
    if out_of_range:
        raise ValueError(f"row {row} out of range for {n_rows} rows")
    parts = job.parts or ((job.values, job.offsets),)
    part, local = locate_rows(job.part_rows if job.part_rows is not None else np.array([0, n_rows]),
                              np.array([row]))
    values, offsets = parts[int(part[0])]
    r = int(local[0])
    where = f" (row {r} of part {int(part[0])})" if len(parts) > 1 else ""
    raise ValueError(f"bad offsets at row {row}{where}: offsets[{r}]={offsets[r]}, "
                     f"offsets[{r + 1}]={offsets[r + 1]} (must be non-decreasing within "
                     f"[0, {len(values)}])")


def locate_rows(part_rows: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(part, local row)`` of each of ``rows`` (in range) for parts starting at ``part_rows``."""
    part = np.searchsorted(part_rows, rows, side="right") - 1
    part = np.clip(part, 0, len(part_rows) - 2)
    return part, rows - part_rows[part]


def prepare_table(table: Any) -> np.ndarray:
    """Check one scalar table: 2-D float32/float64, made C-contiguous; output ``table[rows]``."""
    arr = np.asarray(table)
    if arr.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError(f"tables must be float32 or float64, got {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(f"tables must be 2-D (rows, columns), got shape {arr.shape}")
    return np.ascontiguousarray(arr)


#: outputs placed in an arena start at multiples of this many bytes from its start
ARENA_ALIGN = 64


def arena_array(arena: Any) -> np.ndarray:
    """``BatchGather``'s ``arena`` as a 1-D uint8 array over the same memory (no copy).

    Raises
    ------
    TypeError
        Not a writable, C-contiguous buffer.
    ValueError
        Its first byte is not at a multiple of ``ARENA_ALIGN`` (64) bytes: the
        outputs are placed at multiples of 64 from it, and must be aligned.
    """
    try:
        view = memoryview(arena)
    except TypeError:
        raise TypeError(f"arena must be a writable buffer, got {type(arena).__name__}") from None
    if view.readonly or not view.c_contiguous:
        raise TypeError("arena must be a writable, C-contiguous buffer")
    space = np.frombuffer(view.cast("B") if view.format != "B" or view.ndim != 1 else view, np.uint8)
    if len(space) and space.ctypes.data % ARENA_ALIGN:
        raise ValueError(f"arena must start at a multiple of {ARENA_ALIGN} bytes in memory "
                         f"(it starts {space.ctypes.data % ARENA_ALIGN} bytes past one)")
    return space


#: column flag: some committed cell of the column was quoted
QUOTED = 1
#: column flag: some committed cell of the column held two or more tokens
MULTI = 2
#: column flag: some committed unquoted cell of the column held a number
BARE = 4
KINDS = ("skip", "scalar", "ragged")


def check_csv_seps(sep: str, list_sep: str) -> tuple[int, int]:
    """Validate the field and list separators; return them as byte values.

    Raises
    ------
    ValueError
        ``sep`` is not one ASCII character other than a quote, a newline, a
        digit, a letter or ``. + -``; or ``list_sep`` fails
        :func:`~lstm_data.kernels._py.parse.check_sep`.
    """
    if (not isinstance(sep, str) or len(sep) != 1 or ord(sep) > 127 or sep.isalnum()
            or sep in '".+-\r\n'):
        raise ValueError(f"sep must be one ASCII character other than a quote, newline, "
                         f"letter, digit or . + -, got {sep!r}")
    check_sep(list_sep)
    if list_sep == '"':
        raise ValueError("list_sep cannot be a quote")
    return ord(sep), ord(list_sep)


def check_max_line(max_line: Any) -> int:
    """``max_line`` of a CSV parser as a count of bytes (``None``: 0, no bound), or ``ValueError``."""
    if max_line is None:
        return 0
    if isinstance(max_line, bool) or not isinstance(max_line, (int, np.integer)) or max_line < 1:
        raise ValueError(f"max_line must be a positive number of bytes or None, got {max_line!r}")
    return int(max_line)


def long_line_message(max_line: int) -> str:
    """The message of the error for a CSV line (or quoted record) longer than ``max_line`` bytes.

    :class:`CsvBlockParser` raises it for a record longer than its ``max_line``, and
    the CSV readers for a line that has not ended within ``max_line_bytes``.

    Parameters
    ----------
    max_line : int
        The bound, in bytes.

    Returns
    -------
    str
        The message (the error names the line itself).
    """
    return (f"a line longer than max_line_bytes = {max_line} bytes (a line that never ends, or a quote "
            "left open?); if the data holds such lines, raise max_line_bytes (lstm_data.ReadOptions)")


def csv_layout(names: Sequence[str], kinds: Sequence[str],
               groups: Mapping[str, Sequence[int]]) -> tuple[list[str], list[int], list[int]]:
    """Validate kinds and groups; return ``(kinds, group of column, leaders)``."""
    if len(kinds) != len(names):
        raise ValueError(f"{len(kinds)} kinds for {len(names)} columns")
    if not names:
        raise ValueError("a CSV needs at least one column")
    bad = [k for k in kinds if k not in KINDS]
    if bad:
        raise ValueError(f"unknown column kind {bad[0]!r}; expected one of {KINDS}")
    group_of = [-1] * len(names)
    for g, cols in enumerate(groups.values()):
        if not cols:
            raise ValueError(f"group {list(groups)[g]!r} has no columns")
        for c in cols:
            if not 0 <= c < len(names) or kinds[c] != "ragged" or group_of[c] != -1:
                raise ValueError(f"column {c} must be a ragged column of exactly one group")
            group_of[c] = g
    missing = [names[c] for c, k in enumerate(kinds) if k == "ragged" and group_of[c] == -1]
    if missing:
        raise ValueError(f"ragged columns without a group: {missing}")
    leaders = [min(cols) for cols in groups.values()]
    return list(kinds), group_of, leaders


_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def check_interleave(columns: Any, out: Any) -> tuple[list[np.ndarray], np.ndarray]:
    """Check :func:`interleave_columns`'s arguments; return the columns as 1-D arrays and ``out``.

    Raises
    ------
    TypeError
        ``out`` is not a numpy array, ``columns`` is not a sequence, or an array is not
        float32/float64 (a column may be of either byte order, ``out`` only native).
    ValueError
        ``out`` is not 2-D or not writeable; the number of columns is not ``out.shape[1]``;
        a column is not 1-D, has another length than ``out.shape[0]``, or shares memory
        with ``out``.
    """
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy array, got {type(out).__name__}")
    if out.dtype not in _FLOATS:
        raise TypeError(f"out must be float32 or float64, got {out.dtype}")
    if out.ndim != 2:
        raise ValueError(f"out must be 2-D (rows, columns), got shape {out.shape}")
    if not out.flags.writeable:
        raise ValueError("out is read-only")
    if isinstance(columns, (np.ndarray, str, bytes)) or not isinstance(columns, Sequence):
        raise TypeError(f"columns must be a sequence (list or tuple) of 1-D arrays, "
                        f"got {type(columns).__name__}")
    if len(columns) != out.shape[1]:
        raise ValueError(f"{len(columns)} columns for out of shape {out.shape}")
    arrays = []
    for j, col in enumerate(columns):
        arr = col if isinstance(col, np.ndarray) else np.asarray(col)
        if arr.dtype.newbyteorder("=") not in _FLOATS:  # either byte order
            raise TypeError(f"column {j} must be float32 or float64, got {arr.dtype}")
        if arr.ndim != 1:
            raise ValueError(f"column {j} must be 1-D, got shape {arr.shape}")
        if arr.shape[0] != out.shape[0]:
            raise ValueError(f"column {j} has {arr.shape[0]} values but out has {out.shape[0]} rows")
        if arr.size and np.may_share_memory(arr, out):
            raise ValueError(f"column {j} shares memory with out")
        arrays.append(arr)
    return arrays, out


def check_csv_extend(mine: tuple[object, ...], theirs: tuple[object, ...], same: bool) -> None:
    """Check that ``CsvBlockParser.extend`` may append the other parser's rows.

    ``mine`` and ``theirs`` are the parsers' layouts (names, kinds, groups, dtype,
    separators); ``same`` tells whether the other parser is this one.

    Raises
    ------
    ValueError
        The other parser is this one, or its layout differs.
    """
    if same:
        raise ValueError("a CsvBlockParser cannot extend itself")
    if mine != theirs:
        raise ValueError("extend needs a CsvBlockParser with the same names, kinds, groups, dtype "
                         "and separators")
