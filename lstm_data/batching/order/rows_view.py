"""The rows an order plans: :class:`RowsView`, a dataset and which of its rows (as torch's ``Subset``).

Every order policy reads its data through a view: how many rows (:attr:`RowsView.n_rows`),
their lengths in a ragged group (:meth:`RowsView.lengths`), a scalar column
(:meth:`RowsView.column`), the files' row bounds (:attr:`RowsView.file_bounds`) and the
blocks of a block shuffle (:meth:`RowsView.blocks`), each by *view position*: position
``p`` is dataset row ``view.rows[p]``. Splits and folds are views too
(:meth:`RowsView.subset`), so the batches of a split are the batches of its view.

Example
-------
>>> view = RowsView(dataset)                                    # doctest: +SKIP
>>> scores = view.column("score")                               # one value per view position  # doctest: +SKIP
>>> train = view.subset(np.arange(0, view.n_rows, 2))           # doctest: +SKIP
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from lstm_data.batching.order.block_plans import BlockArrangement, block_arrangement
from lstm_data.batching.spec.derived import file_bounds
from lstm_data.data.dataset import Dataset
from lstm_data.errors import OptionError

__all__ = ["RowsView"]


class RowsView:
    """Rows of ``dataset``, in view order.

    Parameters
    ----------
    dataset
        The data (with a spec's derived variables and selection applied, when it has some).
    rows
        Dataset rows in view order (``None``: every row, in file order).
    lengths
        Row lengths of a group over the whole dataset (default: read from its offsets
        once per group); the batch builder shares its own.
    bounds
        The files' row bounds in ``dataset`` (default: those the dataset knows of).

    Raises
    ------
    OptionError
        ``rows`` is not 1-D integers, or names a row outside the dataset.
    """

    def __init__(self, dataset: Dataset, rows: np.ndarray | None = None, *,
                 lengths: Callable[[str], np.ndarray] | None = None, bounds: np.ndarray | None = None) -> None:
        self.dataset = dataset
        self.rows = None if rows is None else _checked_rows(rows, len(dataset))
        self._all_lengths = lengths
        self._lengths: dict[str, np.ndarray] = {}
        self._bounds = file_bounds(dataset) if bounds is None else np.asarray(bounds, dtype=np.int64)
        self._blocks: dict[tuple[int, int | None, int | None], BlockArrangement] = {}

    @property
    def n_rows(self) -> int:
        """Rows of the view."""
        return len(self.dataset) if self.rows is None else len(self.rows)

    def row_numbers(self) -> np.ndarray:
        """The dataset row of every view position (``arange`` for every row)."""
        return np.arange(len(self.dataset), dtype=np.intp) if self.rows is None else self.rows

    def all_lengths(self, group: str) -> np.ndarray:
        """Row lengths of ``group`` over the whole dataset (int64), read once."""
        if self._all_lengths is not None:
            return self._all_lengths(group)
        found = self._lengths.get(group)
        if found is None:
            off = self.dataset.offsets(group) if hasattr(self.dataset, "offsets") else self.dataset.ragged(group)[1]
            found = self._lengths[group] = np.diff(np.asarray(off)).astype(np.int64, copy=False)
        return found

    def lengths(self, group: str) -> np.ndarray:
        """Row lengths of ``group`` by view position."""
        full = self.all_lengths(group)
        return full if self.rows is None else full[self.rows]

    def column(self, name: str) -> np.ndarray:
        """The scalar column ``name`` by view position (a :class:`~lstm_data.errors.SchemaError` if none)."""
        values: np.ndarray = np.asarray(self.dataset.scalar(name))
        return values if self.rows is None else values[self.rows]

    @property
    def file_bounds(self) -> np.ndarray | None:
        """Row bounds of the dataset's files (``None`` for data of one file): file ``i`` holds dataset
        rows ``bounds[i]:bounds[i + 1]``."""
        return self._bounds

    def blocks(self, batch_size: int, block_rows: int | None, window_rows: int | None) -> BlockArrangement:
        """The blocks and window size of a block shuffle over this view's rows, made once.

        Block plans index the view's rows in file order: use it on a :meth:`sorted` view.
        """
        key = (batch_size, block_rows, window_rows)
        arrangement = self._blocks.get(key)
        if arrangement is None:
            rows = None if self.rows is None else np.sort(self.rows)
            arrangement = block_arrangement(self.dataset, rows, batch_size, block_rows, window_rows)
            self._blocks[key] = arrangement
        return arrangement

    def sorted(self) -> "RowsView":
        """The same rows in file order (the view itself when they are)."""
        if self.rows is None or bool(np.all(self.rows[1:] >= self.rows[:-1])):
            return self
        return self._over(np.sort(self.rows))

    def subset(self, positions: np.ndarray) -> "RowsView":
        """The view of the rows at ``positions`` of this one, in that order."""
        return self._over(self.row_numbers()[np.asarray(positions, dtype=np.intp)])

    def over(self, rows: np.ndarray | None) -> "RowsView":
        """The view of dataset ``rows`` (``None``: all) of the same data."""
        return self if rows is None and self.rows is None else self._over(rows)

    def _over(self, rows: np.ndarray | None) -> "RowsView":
        return RowsView(self.dataset, rows, lengths=self._all_lengths, bounds=self._bounds)

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        state["_lengths"], state["_blocks"], state["_all_lengths"] = {}, {}, None  # remade when asked for
        return state

    def __repr__(self) -> str:
        return f"RowsView({self.n_rows} of {len(self.dataset)} rows)"


def _checked_rows(rows: np.ndarray, n: int) -> np.ndarray:
    arr = np.asarray(rows)
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise OptionError(f"rows must be 1-D integers, got {arr.dtype} {arr.shape}")
    arr = arr.astype(np.intp, copy=False)
    if arr.size and (int(arr.min()) < 0 or int(arr.max()) >= n):
        raise OptionError(f"rows must lie in [0, {n}): got rows {int(arr.min())} .. {int(arr.max())}")
    return arr
