"""The checked job of one ragged output: :func:`ragged_job` from typed arguments (what the
batch builder calls), :func:`prepare_ragged` from ``BatchGather``'s public mapping of them.

Both kernel backends take the resulting :class:`~lstm_data.kernels._job.RaggedJob`,
so they raise the same exception types with the same messages.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from lstm_data.kernels._args import (
    as_columns,
    as_max_len,
    as_multiple_of,
    as_sort_column,
    check_dtype,
    check_ragged,
)
from lstm_data.kernels._form_args import as_column_params, as_forms, check_forms, check_pad_mode, float_columns
from lstm_data.kernels._job import RaggedJob, RaggedSource
from lstm_data.kernels._layouts import KERNEL_LAYOUTS, PADDED
from lstm_data.kernels._sources import Source, with_sources

__all__ = ["RAGGED_KEYS", "ragged_job", "prepare_ragged", "prepare_parts"]

#: the keys of a ragged job given as a mapping (``BatchGather``'s public argument)
RAGGED_KEYS = ("values", "offsets", "parts", "max_len", "fixed", "pad_value", "columns", "sort_by",
               "descending", "padding", "truncating", "dtype", "multiple_of", "center", "scale",
               "clip_min", "clip_max", "pad_values", "pad_mode", "layout", "at", "more")

Parts = Sequence[tuple[Any, Any]]


def ragged_job(parts: Parts, *, max_len: int | None = None, fixed: bool = True, pad_value: float = math.nan,
               columns: Any = None, sort_by: int | None = None, descending: bool = True,
               padding: str = "post", truncating: str = "post", dtype: Any = np.float32,
               multiple_of: int | None = None, center: Any = None, scale: Any = None, clip_min: Any = None,
               clip_max: Any = None, pad_values: Any = None, pad_mode: str = "constant",
               layout: int = PADDED, at: Any = None, more: Sequence[RaggedSource] = ()) -> RaggedJob:
    """One ragged output's job, checked, with :func:`pad_ragged`'s rules and errors.

    Parameters
    ----------
    parts : sequence of ``(values, offsets)`` pairs
        The rows, numbered one after another across the pairs (the files of a
        dataset); each pair as ``pad_ragged`` takes ``values`` and ``offsets``. The
        pairs share dtype and variables.
    max_len : int, optional
        Prong slots per row. ``None``: the longest row of each batch.
    fixed : bool
        ``True``: an int ``max_len`` is the exact width, as in ``pad_ragged``;
        ``False``: it caps the batch's longest row.
    pad_value, columns
        As for :func:`pad_ragged`.
    sort_by : int, optional
        As for :func:`pad_ragged`, of one source only.
    descending, padding, truncating, dtype
        As for :func:`pad_ragged`.
    multiple_of : int, optional
        Rounds a width that follows the batch's longest row up to a multiple of it,
        capped at ``max_len``.
    center, scale, clip_min, clip_max : sequence of float, optional
        One value per output column: each real element ``x`` becomes
        ``clip((x - center) * scale, clip_min, clip_max)``, computed in the output
        dtype (the parameters cast to it first; NaN stays NaN). A missing one is the
        identity.
    pad_values : sequence of float, optional
        Each output column's own fill (default: ``pad_value`` everywhere).
    pad_mode : {"constant", "wrap"}
        ``"wrap"`` fills slot ``k`` of a row of ``n > 0`` kept elements with element
        ``k % n`` (``padding="post"`` only).
    layout : int
        A code of ``KERNEL_LAYOUTS``: padded ``(B, P, V)``, channels-first ``(B, V, P)``
        or packed ``(T, V)``, the kept elements of every row one after another (``T``
        the sum of the lengths; the width is the longest kept row, never rounded to
        ``multiple_of``).
    at : sequence of int, optional
        With ``more``: the output columns this job's ``columns`` go to (default: the
        first ones).
    more : sequence of RaggedSource
        Further sources, rows of other counts per row; each is padded by its own
        counts into its output columns (by default the next ones in order). The width
        follows the longest row of any source; ``lengths`` are the first source's.

    Returns
    -------
    RaggedJob
        The checked job ``BatchGather`` takes as it is.

    Raises
    ------
    TypeError, ValueError
        An argument of the wrong type or value, named.
    """
    checked_parts, part_rows = prepare_parts({"parts": parts})
    values, offsets = checked_parts[0]
    flat = values.ndim == 1
    n_vars = 1 if flat else values.shape[1]
    cols = None if columns is None else as_columns(columns, n_vars, flat)
    if padding not in ("post", "pre"):
        raise ValueError(f"padding must be 'post' or 'pre', got {padding!r}")
    if truncating not in ("post", "pre"):
        raise ValueError(f"truncating must be 'post' or 'pre', got {truncating!r}")
    dt = check_dtype(dtype)
    n_cols = 1 if flat else (len(cols) if cols is not None else n_vars)
    check_pad_mode(pad_mode)
    if isinstance(layout, bool) or not isinstance(layout, (int, np.integer)) or not 0 <= layout < len(KERNEL_LAYOUTS):
        raise ValueError(f"layout must be a code of {KERNEL_LAYOUTS} (0 to {len(KERNEL_LAYOUTS) - 1}), "
                         f"got {layout!r}")
    check_forms(pad_mode, int(layout), padding)
    sources = [_source(m, i) for i, m in enumerate(more, 1)]
    n_cols += sum(m[2] for m in sources)  # several sources: the columns of all of them
    params = as_column_params({"center": center, "scale": scale, "clip_min": clip_min, "clip_max": clip_max},
                              n_cols, dt)
    if pad_values is not None:
        pad_values = float_columns("pad_values", pad_values, n_cols)
    c, s, lo, hi = params if params is not None else (None,) * 4
    checked = RaggedJob(values, offsets, None if max_len is None else as_max_len(max_len), bool(fixed),
                        float(pad_value), cols, as_sort_column(sort_by, n_vars), bool(descending),
                        padding, truncating, dt, flat, as_multiple_of(multiple_of), checked_parts, part_rows,
                        c, s, lo, hi, pad_values, pad_mode, int(layout))
    if not sources and at is None:
        return checked
    return with_sources(checked, at, sources)


def prepare_ragged(job: Mapping[str, Any] | RaggedJob) -> RaggedJob:
    """A ragged job of ``BatchGather``: a :class:`RaggedJob` (made by :func:`ragged_job`) as it is,
    or a mapping of :func:`ragged_job`'s arguments by name, checked.

    In a mapping, the rows are ``values`` and ``offsets`` or ``parts``; ``layout`` is a
    name of ``KERNEL_LAYOUTS`` (``"padded"``, ``"channels_first"``, ``"packed"``);
    ``more`` lists mappings of ``parts`` (or ``values`` and ``offsets``), ``columns`` and
    ``at``.

    Raises
    ------
    TypeError
        An unknown key, or rows that are neither ``values`` and ``offsets`` nor ``parts``.
    ValueError
        As :func:`ragged_job`, and a layout name that is not a kernel layout.
    """
    if isinstance(job, RaggedJob):
        return job
    unknown = sorted(set(job) - set(RAGGED_KEYS))
    if unknown:
        raise TypeError(f"unknown ragged job keys {unknown}; expected some of {list(RAGGED_KEYS)}")
    parts, _ = prepare_parts(job)
    padding = job.get("padding", "post")
    _, layout = as_forms(job, padding if padding in ("post", "pre") else "post")
    more = [_mapped_source(m, i) for i, m in enumerate(job.get("more") or (), 1)]
    return ragged_job(parts, max_len=job.get("max_len"), fixed=job.get("fixed", True),
                      pad_value=job.get("pad_value", np.nan), columns=job.get("columns"),
                      sort_by=job.get("sort_by"), descending=job.get("descending", True), padding=padding,
                      truncating=job.get("truncating", "post"), dtype=job.get("dtype", np.float32),
                      multiple_of=job.get("multiple_of"), center=job.get("center"), scale=job.get("scale"),
                      clip_min=job.get("clip_min"), clip_max=job.get("clip_max"),
                      pad_values=job.get("pad_values"), pad_mode=job.get("pad_mode", "constant"),
                      layout=layout, at=job.get("at"), more=more)


def _mapped_source(entry: Any, i: int) -> RaggedSource:
    """Source ``i`` of a mapping job's ``more`` as a :class:`RaggedSource`, its keys checked."""
    if not isinstance(entry, Mapping):
        raise TypeError(f"more[{i - 1}] must be a mapping of parts (or values and offsets), columns and at")
    unknown = sorted(set(entry) - {"values", "offsets", "parts", "columns", "at"})
    if unknown:
        raise TypeError(f"unknown keys {unknown} in more[{i - 1}]; expected some of "
                        "['values', 'offsets', 'parts', 'columns', 'at']")
    parts, _ = prepare_parts(entry)
    return RaggedSource(parts, entry.get("columns"), entry.get("at"))


def _source(entry: RaggedSource, i: int) -> Source:
    """Source ``i`` of a job's ``more``: ``(parts, columns, n_cols, at)``, checked as a job's own."""
    if not isinstance(entry, RaggedSource):
        raise TypeError(f"more[{i - 1}] must be a RaggedSource, got {type(entry).__name__}")
    parts, _ = prepare_parts({"parts": entry.parts})
    values = parts[0][0]
    flat = values.ndim == 1
    n_vars = 1 if flat else values.shape[1]
    cols = None if entry.columns is None else as_columns(entry.columns, n_vars, flat)
    return parts, cols, (n_vars if cols is None else len(cols)), entry.at


def prepare_parts(job: Mapping[str, Any]) -> tuple[tuple[tuple[np.ndarray, np.ndarray], ...], np.ndarray]:
    """The parts of a ragged job, checked, and the first row of each.

    A job holds either ``values`` and ``offsets`` (one part) or ``parts``: a
    sequence of ``(values, offsets)`` pairs whose rows are numbered one after
    another, as the files of a dataset are. Parts must share the values' dtype,
    number of variables and (after making them contiguous) strides; offsets become
    int64 when the parts' offsets differ in dtype. Nothing is copied otherwise.
    """
    if "parts" in job:
        if "values" in job or "offsets" in job:
            raise TypeError("a ragged job takes 'parts' or 'values' and 'offsets', not both")
        given = list(job["parts"])
        if not given:
            raise ValueError("parts must hold at least one (values, offsets) pair")
    elif "values" not in job or "offsets" not in job:
        raise TypeError("a ragged job needs 'values' and 'offsets' (or 'parts')")
    else:
        given = [(job["values"], job["offsets"])]
    checked = []
    for i, pair in enumerate(given):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(f"part {i} must be a (values, offsets) pair")
        checked.append(check_ragged(*pair))
    first = checked[0][0]
    for i, (values, _) in enumerate(checked[1:], 1):
        if values.dtype != first.dtype or values.ndim != first.ndim or values.shape[1:] != first.shape[1:]:
            raise TypeError(f"part {i} holds {values.dtype} {values.shape[1:]} values, part 0 "
                            f"{first.dtype} {first.shape[1:]}: parts must share dtype and variables")
    if len(checked) > 1:  # one stride rule for every part: C-contiguous records (copies only strided parts)
        checked = [(np.ascontiguousarray(v), o) for v, o in checked]
    off_dtypes = {o.dtype for _, o in checked}
    wide = len(off_dtypes) > 1
    parts = tuple((v, np.ascontiguousarray(o, dtype=np.int64) if wide else np.ascontiguousarray(o))
                  for v, o in checked)
    part_rows = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([len(o) - 1 for _, o in parts], out=part_rows[1:])
    return parts, part_rows
