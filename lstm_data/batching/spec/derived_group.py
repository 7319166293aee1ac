"""A group's derived columns, computed block by block into its new ``(total, V + D)`` block.

The rows are cut into blocks of about :data:`EVAL_ELEMENTS` prongs, so that the
intermediate results of a block stay in cache; a block's stored values and derived
columns are then written side by side into the new block (float columns in one
compiled pass over its rows). The first block is computed on the calling thread
(its columns give the block's dtype); the others on a thread per core, as NumPy's
loops and the compiled write release the GIL. What a sequential pass would give is
kept: the precision warnings are given afterwards in row order, each expression's
first only, and an error is the one of the first block that fails (after the
warnings of the blocks before it).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Mapping

import numpy as np

from lstm_data.batching.spec.derived_reads import Reads, stored_needs
from lstm_data.batching.spec.expressions import Column, Expression
from lstm_data.data.dataset import InMemoryDataset
from lstm_data.data.ragged import RaggedGroup
from lstm_data._util.cores import available_cores
from lstm_data._util.reuse import reusable_empty
from lstm_data.kernels import interleave_columns

__all__ = ["EVAL_ELEMENTS", "group_with_derived"]

#: prong elements per block when an in-RAM group's derived columns are computed
EVAL_ELEMENTS = 1 << 15
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
#: a precision warning held back: the expression and its message
_Deferred = list[tuple[Expression, str]]


def group_with_derived(data: InMemoryDataset, group: str, extra: list[str], derived: Mapping[str, Expression],
                       prong_of: Mapping[str, str], per_row: Mapping[str, np.ndarray],
                       rows: np.ndarray | None, *, threads: bool = True) -> np.ndarray:
    """``group``'s values with the ``extra`` derived columns appended, computed block by block
    (``rows``: the data's row number of each row of ``data``, named in errors; ``None``: the same;
    ``threads``: on a thread per core, else on the calling thread alone, e.g. in a thread of its own).

    Raises
    ------
    SchemaError
        An expression that has no right result in some row (the first block's that fails).

    Warns
    -----
    PrecisionWarning
        As a pass over the blocks in order would give them.
    """
    values, offsets = data.ragged(group)
    n, width = len(offsets) - 1, values.shape[1]
    read, counted = stored_needs(extra, derived, per_row)
    scalars = [name for name in read if name not in prong_of]
    groups = {g: data.ragged(g) for g in dict.fromkeys([group] + [prong_of[v] for v in read + counted
                                                                   if v in prong_of])}
    in_groups = {v: g for v, g in prong_of.items() if g in groups}
    step = max(1, EVAL_ELEMENTS * n // max(1, int(offsets[-1])))  # rows per block
    blocks = [(r0, min(n, r0 + step)) for r0 in range(0, max(n, 1), step)]

    def columns(r0: int, r1: int, deferred: _Deferred) -> list[np.ndarray]:
        part = InMemoryDataset({s: data.scalar(s)[r0:r1] for s in scalars},
                               {g: RaggedGroup(data.groups[g], v[o[r0]:o[r1]], o[r0:r1 + 1] - o[r0])
                                for g, (v, o) in groups.items()})
        numbers = np.arange(r0, r1, dtype=np.intp) if rows is None else rows[r0:r1]
        reads = Reads(part, None, derived, in_groups, row_numbers=numbers, deferred=deferred)
        reads.done.update({name: Column(col[r0:r1]) for name, col in per_row.items()})
        return reads.values(extra)

    first: _Deferred = []
    cols = columns(*blocks[0], first)
    out = reusable_empty((len(values), width + len(extra)), np.result_type(values.dtype, *[c.dtype for c in cols]))

    def fill(block: tuple[int, int], cols: list[np.ndarray] | None = None) -> _Deferred:
        deferred: _Deferred = []
        if cols is None:
            cols = columns(*block, deferred)
        p0, p1 = int(offsets[block[0]]), int(offsets[block[1]])
        _write_rows(out[p0:p1], values[p0:p1], cols)
        return deferred

    fill(blocks[0], cols)
    _give(first)
    workers = min(len(blocks) - 1, available_cores()) if threads else 1
    if workers < 2:
        for block in blocks[1:]:
            _give(fill(block))
        return out
    with ThreadPoolExecutor(workers, thread_name_prefix="lstm_data-derive") as pool:
        done = pool.map(fill, blocks[1:])
        try:
            for deferred in done:
                _give(deferred)
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise
    return out


def _give(deferred: _Deferred) -> None:
    for expr, message in deferred:
        expr.warn_once(message)


def _write_rows(out: np.ndarray, values: np.ndarray, cols: list[np.ndarray]) -> None:
    """``out`` = ``values`` with ``cols`` as its last columns; float32/float64 columns in one
    compiled pass over the rows (which converts as numpy's assignment does), others one by one."""
    width = values.shape[1]
    out[:, :width] = values
    if out.dtype in _FLOATS and all(c.dtype in _FLOATS and c.ndim == 1 and len(c) == len(out) for c in cols):
        interleave_columns(cols, out[:, width:])
        return
    for j, col in enumerate(cols, start=width):
        out[:, j] = col
