"""Where each scored row comes from: the (file, entry) of a batch's rows.

:class:`~lstm_data.batching.epochs.batches.Batches` numbers rows in the data the
spec derives (its selected rows); :class:`RowMap` takes them back to the rows of
the data as stored, whose files' bounds give each row's file index and entry.
The selection is evaluated again as a derived variable of the stored rows, one
block at a time, and kept as one byte per row plus a count per block.
"""
from __future__ import annotations

import numpy as np

from lstm_data.batching.spec.batch_spec import BatchSpec, Scalars
from lstm_data.batching.spec.derived import file_bounds
from lstm_data.data.concat import ConcatDataset
from lstm_data.data.dataset import Dataset
from lstm_data.errors import SchemaError

__all__ = ["RowMap"]

#: rows per block of the selection's mask (and of its per-block counts)
_BLOCK = 1 << 16
#: the derived variable that holds the selection's value
_SELECTED = "lstm_data_predict_selected"


def _all_file_bounds(base: Dataset) -> np.ndarray:
    """Row bounds of every file of ``base``, those without rows included (``n_files + 1`` values)."""
    n = len(base)
    bounds = file_bounds(base)
    sources = tuple(base.source)
    if bounds is None:
        return np.array([0, n], dtype=np.int64)
    if len(bounds) - 1 == len(sources) or not isinstance(base, ConcatDataset):
        return bounds
    # files without rows are left out of the concatenation: give them an empty range
    sizes = {tuple(part.source): len(part) for part in base.datasets}
    lengths = [sizes.get((src,), 0) for src in sources]
    if sum(lengths) != n:
        raise SchemaError(f"the files of the data ({len(sources)}) do not add up to its {n} rows")
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


class RowMap:
    """Rows of the spec's derived data -> rows, files and entries of the stored data.

    Parameters
    ----------
    base
        The stored data.
    spec
        The spec whose selection made ``derived``.
    derived
        ``spec.derive(base)``: the data the batches number their rows in.
    """

    def __init__(self, base: Dataset, spec: BatchSpec, derived: Dataset) -> None:
        n = len(base)
        self.bounds = _all_file_bounds(base)
        self.n_rows = n
        self.mask: np.ndarray | None = None
        self.counts = np.zeros(1, dtype=np.int64)
        if spec.selection is not None:
            self.mask = self._selection_mask(base, spec)
            per_block = np.add.reduceat(self.mask, np.arange(0, n, _BLOCK)) if n else np.zeros(0, np.int64)
            self.counts = np.concatenate([[0], np.cumsum(per_block, dtype=np.int64)])
            if int(self.counts[-1]) != len(derived):
                raise SchemaError(f"the selection {spec.selection!r} keeps {int(self.counts[-1])} rows here "
                                  f"but {len(derived)} where the batches were made; the data changed "
                                  "while it was read", variable=_SELECTED)

    @staticmethod
    def _selection_mask(base: Dataset, spec: BatchSpec) -> np.ndarray:
        """One bool per stored row: whether the spec's selection keeps it."""
        derived = dict(spec.derived)
        derived[_SELECTED] = str(spec.selection)
        probe = BatchSpec(inputs={"selected": Scalars([_SELECTED])}, derived=derived)
        values = probe.derive(base)
        mask = np.zeros(len(base), dtype=bool)
        for lo in range(0, len(base), _BLOCK):
            hi = min(lo + _BLOCK, len(base))
            mask[lo:hi] = np.asarray(values.scalar(_SELECTED, slice(lo, hi))) != 0
        return mask

    def base_rows(self, rows: np.ndarray) -> np.ndarray:
        """Stored rows of the derived ``rows`` (ascending in, ascending out)."""
        rows = np.asarray(rows, dtype=np.int64)
        if self.mask is None or len(rows) == 0:
            return rows
        out = np.empty(len(rows), dtype=np.int64)
        blocks = np.searchsorted(self.counts, rows, side="right") - 1
        for block in np.unique(blocks):
            at = blocks == block
            lo = int(block) * _BLOCK
            kept = np.flatnonzero(self.mask[lo:lo + _BLOCK]) + lo
            out[at] = kept[rows[at] - self.counts[block]]
        return out

    def keys(self, base_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(file_index, entry)`` of stored rows."""
        files = np.searchsorted(self.bounds, base_rows, side="right") - 1
        return files.astype(np.int64), (base_rows - self.bounds[files]).astype(np.int64)
