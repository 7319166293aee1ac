"""A ragged job of several sources: rows of different counts padded into one output.

A padded output may take its columns from several ragged sources whose rows
have different numbers of records (weaver-core pads each variable by its own
count). :func:`with_sources` turns such a job, checked by
:func:`~lstm_data.kernels._ragged.ragged_job`, into one job per source, each
self-contained (its rows, its columns, its share of the per-column parameters)
plus the output columns it writes (``at``); both kernel backends pad source by
source into disjoint columns of the same output, in the same call.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

import numpy as np

from lstm_data.kernels._job import RaggedJob
from lstm_data.kernels._layouts import PACKED

__all__ = ["with_sources", "Source"]

Source = tuple[tuple[tuple[np.ndarray, np.ndarray], ...], "np.ndarray | None", int, Any]


def with_sources(first: RaggedJob, at: Any, more: Sequence[Source]) -> RaggedJob:
    """``first`` (source 0, its parameters given for every output column) with the sources ``more``.

    Parameters
    ----------
    first
        The checked job of source 0; ``center`` ... ``pad_values`` hold one value per
        output column of the whole output.
    at
        Source 0's output columns (``None``: the first ones).
    more
        Each further source as ``(parts, columns, n_cols, at)``.

    Returns
    -------
    RaggedJob
        ``first`` with ``sources`` (one job per source, ``at`` and ``out_cols`` set) and
        ``out_cols``; a single source with ``at`` given is a job of one source.

    Raises
    ------
    ValueError
        ``at`` that are not the output columns each once, ``sort_by`` or the ``packed``
        layout with several sources (a sort, a packing, is of one count per row), or a
        source's ``at`` of another length than its columns.
    """
    n_first = 1 if first.flat else (len(first.columns) if first.columns is not None else first.values.shape[1])
    counts = [n_first] + [m[2] for m in more]
    total = sum(counts)
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.intp)
    given = [at] + [m[3] for m in more]
    places = []
    for k, (spot, n) in enumerate(zip(given, counts)):
        name = "at" if k == 0 else f"more[{k - 1}]['at']"
        if spot is None:
            places.append(np.arange(starts[k], starts[k] + n, dtype=np.intp))
            continue
        arr = np.asarray(spot)
        if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
            raise ValueError(f"{name} must be a 1-D array of output column indices, got {arr.dtype} {arr.shape}")
        if len(arr) != n:
            raise ValueError(f"{name} holds {len(arr)} output columns for {n} columns of its source")
        places.append(arr.astype(np.intp))
    every = np.concatenate(places) if places else np.zeros(0, np.intp)
    if not np.array_equal(np.sort(every), np.arange(total)):
        raise ValueError(f"the sources' 'at' must name each output column 0..{total - 1} once, "
                         f"got {[p.tolist() for p in places]}")
    if more and first.sort_by is not None:
        raise ValueError("sort_by orders the records of one source: a job of several sources takes no sort_by")
    if more and first.layout == PACKED:
        raise ValueError("layout 'packed' needs one count per row: a job of several sources cannot be packed")
    sources = []
    own = [(first.parts, first.columns, first.flat)] + [(m[0], m[1], m[0][0][0].ndim == 1) for m in more]
    for (parts, columns, flat), spot in zip(own, places):
        part_rows = np.zeros(len(parts) + 1, dtype=np.int64)
        np.cumsum([len(o) - 1 for _, o in parts], out=part_rows[1:])
        sources.append(replace(first, 
            values=parts[0][0], offsets=parts[0][1], parts=parts, part_rows=part_rows, columns=columns,
            flat=flat, center=_pick(first.center, spot), scale=_pick(first.scale, spot),
            clip_min=_pick(first.clip_min, spot), clip_max=_pick(first.clip_max, spot),
            pad_values=_pick(first.pad_values, spot), at=spot, out_cols=total, sources=()))
    return replace(first, flat=False, sources=tuple(sources), out_cols=total)


def _pick(params: np.ndarray | None, at: np.ndarray) -> np.ndarray | None:
    """The per-output-column ``params`` of the columns ``at`` (C-contiguous), or ``None``."""
    return None if params is None else np.ascontiguousarray(params[at])
