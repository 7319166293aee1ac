"""A table that arrives in blocks of rows: what the streaming writers consume.

:class:`RowBlocks` knows its columns up front (scalar names and dtypes, groups,
their variables and dtype) and yields its rows as a sequence of in-RAM
:class:`~lstm_data.data.dataset.InMemoryDataset` blocks, each with the input
bytes consumed so far (for a progress bar). Nothing holds more than one block:
:func:`dataset_blocks` cuts any dataset (on disk or in RAM) into blocks, the CSV
reader parses text into blocks (:func:`lstm_data.io.csv.reader.csv_blocks`), and
:mod:`lstm_data.io.ours.external_shuffle` reorders blocks through disk.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from lstm_data.data.dataset import Dataset, InMemoryDataset

__all__ = ["RowBlocks", "dataset_blocks", "BLOCK_BYTES", "row_bytes_of", "RestartStream"]

#: uncompressed bytes per row block held in RAM while streaming
BLOCK_BYTES = 16 << 20


class RestartStream(Exception):
    """Raised by a stream that found, after handing out blocks, that they were made wrong.

    The writer removes what it wrote and calls ``blocks()`` again, which then gives
    the right blocks (e.g. a CSV file read whole, with its columns decided from all of
    it). A stream raises it at most once.
    """


@dataclass
class RowBlocks:
    """Columns known up front, rows in blocks.

    Attributes
    ----------
    scalar_dtypes : dict
        Scalar name -> dtype, in column order.
    groups : dict
        Group -> its variables, in order.
    group_dtypes : dict
        Group -> dtype of its values.
    blocks : callable
        ``blocks()`` -> iterator of ``(block, done)``: an :class:`InMemoryDataset` with
        exactly these columns, and the input units (bytes) consumed once it was made.
        Each call starts a fresh pass over the input.
    total : int
        Input units in all (the ``done`` of the last block), for progress.
    source : tuple of str
        The input files (never overwritten by a writer).
    n_rows : int or None
        Rows in all, when known before reading (``None`` for text).
    group_totals : dict or None
        Group -> its prong records in all, when known before reading.
    """

    scalar_dtypes: dict[str, np.dtype]
    groups: dict[str, list[str]]
    group_dtypes: dict[str, np.dtype]
    blocks: Callable[[], Iterator[tuple[InMemoryDataset, int]]]
    total: int
    source: tuple[str, ...] = ()
    n_rows: int | None = None
    group_totals: dict[str, int] | None = None

    @property
    def scalar_names(self) -> list[str]:
        return list(self.scalar_dtypes)


def row_bytes_of(dataset: Dataset) -> float:
    """Mean uncompressed bytes of one row of ``dataset`` (scalars plus its prongs)."""
    n = len(dataset)
    none = np.zeros(0, dtype=np.intp)
    total: float = sum(dataset.scalar(s, none).dtype.itemsize for s in dataset.scalar_names)
    for g, names in dataset.groups.items():
        itemsize = dataset.ragged(g, none)[0].dtype.itemsize
        total += int(dataset.offsets(g)[-1]) * len(names) * itemsize / max(n, 1)
    return float(total)


def dataset_blocks(dataset: Dataset, permutation: np.ndarray | None = None,
                   block_bytes: int = BLOCK_BYTES) -> RowBlocks:
    """``dataset`` (optionally in the row order ``permutation``) as blocks of about ``block_bytes``.

    Progress units are the rows' uncompressed bytes.
    """
    n = len(dataset)
    none = np.zeros(0, dtype=np.intp)
    row_bytes = row_bytes_of(dataset)
    block = max(1, int(block_bytes // max(row_bytes, 1.0)))

    def blocks() -> Iterator[tuple[InMemoryDataset, int]]:
        for a in range(0, n, block):
            b = min(n, a + block)
            rows = permutation[a:b] if permutation is not None else np.arange(a, b, dtype=np.intp)
            yield dataset.take(rows), int(row_bytes * b)

    return RowBlocks(scalar_dtypes={s: dataset.scalar(s, none).dtype for s in dataset.scalar_names},
                     groups={g: list(v) for g, v in dataset.groups.items()},
                     group_dtypes={g: dataset.ragged(g, none)[0].dtype for g in dataset.groups},
                     blocks=blocks, total=int(row_bytes * n),
                     source=tuple(getattr(dataset, "source", ())), n_rows=n,
                     group_totals={g: int(dataset.offsets(g)[-1]) for g in dataset.groups})
