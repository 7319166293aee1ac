"""Interleave the columns of one ragged group into its ``(total, V)`` block (every reader).

:func:`build_group` checks the columns' lengths and writes them side by side with the
compiled :func:`~lstm_data.kernels.interleave_columns`; :func:`interleave_pieces` does
the same for columns given as consecutive pieces that break at different rows.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np

from lstm_data.data.ragged import RaggedGroup
from lstm_data.io.columns.exact_ints import check_once
from lstm_data.io.columns.groups import check_group_lengths
from lstm_data.kernels import interleave_columns

__all__ = ["build_group", "interleave_pieces"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _as_pieces(values: Any) -> list[np.ndarray]:
    return [values] if isinstance(values, np.ndarray) else list(values)


def interleave_pieces(columns: Sequence[Sequence[np.ndarray]], out: np.ndarray) -> None:
    """Write column ``j``, given as consecutive 1-D pieces, into ``out[:, j]``.

    Pieces of different columns may break at different places (Arrow chunks, HDF5
    reads): the value range is cut at every break of any column and each cut is one
    call of the compiled :func:`~lstm_data.kernels.interleave_columns` on views, so
    no piece is concatenated or copied first.

    Parameters
    ----------
    columns
        Per column, its pieces; each column's pieces hold ``len(out)`` values in all.
    out
        ``(total, V)`` float32/float64 block (or a column slice of a wider block).
    """
    bounds = [np.cumsum([0] + [len(p) for p in pieces]) for pieces in columns]
    for j, b in enumerate(bounds):
        if int(b[-1]) != len(out):
            raise ValueError(f"column {j} has {int(b[-1])} values for {len(out)} rows of out")
    if all(len(pieces) == 1 for pieces in columns):
        interleave_columns([pieces[0] for pieces in columns], out)
        return
    cuts = np.unique(np.concatenate(bounds))
    for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
        views = []
        for pieces, pb in zip(columns, bounds):
            k = int(np.searchsorted(pb, a, side="right")) - 1
            views.append(pieces[k][a - int(pb[k]):b - int(pb[k])])
        interleave_columns(views, out[a:b])


def _row_of_value(offsets: np.ndarray, first_row: int, at: int) -> Callable[[int], int]:
    """The row of a piece's value ``k``, for the piece that starts at value ``at``."""
    return lambda k: first_row + int(np.searchsorted(offsets, at + k, side="right")) - 1


def _check_exact(pieces: Sequence[np.ndarray], dtype: np.dtype, name: str, offsets: np.ndarray, *,
                 file: str | None, first_row: int) -> None:
    """Warn once if an integer column changes in the float block (a group mixing ints and floats)."""
    start = 0
    for p in pieces:
        check_once(p, dtype, name, file=file, where="row", row_of=_row_of_value(offsets, first_row, start))
        start += len(p)


def build_group(group: str, columns: Mapping[str, tuple[Any, np.ndarray]], *,
                file: str | None = None, dtype: Any = None, first_row: int = 0) -> RaggedGroup:
    """Interleave same-length ragged columns into one :class:`RaggedGroup`.

    Float columns are written into the ``(total, V)`` block by the compiled
    :func:`~lstm_data.kernels.interleave_columns`, in one pass over the block.

    Parameters
    ----------
    columns
        Variable -> ``(flat values, per-row lengths)``, in column order. The flat
        values may also be a list of consecutive 1-D pieces (e.g. the chunks of an
        Arrow column); they are then used as they are, without concatenation.
    dtype
        Of the values block (default: the columns' common type).
    first_row
        Row number of the first row in the file, for errors.

    Raises
    ------
    SchemaError
        Two variables differ in length in some row (names the first such row).
    """
    names = list(columns)
    ref_lengths = check_group_lengths(group, {v: columns[v][1] for v in names}, file=file,
                                      first_row=first_row)
    pieces = [_as_pieces(columns[v][0]) for v in names]
    dt = np.dtype(dtype) if dtype is not None else np.result_type(*[p.dtype for ps in pieces for p in ps])
    offsets = np.zeros(len(ref_lengths) + 1, dtype=np.int64)
    np.cumsum(ref_lengths, out=offsets[1:])
    values = np.empty((int(offsets[-1]), len(names)), dtype=dt)
    if dt in _FLOATS:
        for name, ps in zip(names, pieces):
            _check_exact(ps, dt, name, offsets, file=file, first_row=first_row)
        interleave_pieces([[p if p.dtype in _FLOATS else p.astype(dt) for p in ps] for ps in pieces],
                          values)
    else:  # integer columns kept as integers: no compiled kernel for those
        for j, ps in enumerate(pieces):
            values[:, j] = ps[0] if len(ps) == 1 else np.concatenate(ps)
    return RaggedGroup(names, values, offsets)
