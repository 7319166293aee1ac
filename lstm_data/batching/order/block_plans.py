"""The order of ``shuffle="block"``: blocks of consecutive rows, permuted and mixed inside windows.

Each epoch permutes blocks of consecutive rows (aligned to the on-disk chunks of the
ragged values when the reader tells their size) and groups them, in that order, into
windows of at least ``window_rows`` rows; each window's rows are permuted. A window is
read from disk once, and a batch touches at most two consecutive windows. The windows
are read by :class:`~lstm_data.batching.building.blocks.BlockSource`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lstm_data.batching.order.plan import EpochKey, Plan, StageDefaults, Windows
from lstm_data.batching.order.rows import epoch_rng
from lstm_data.data.dataset import Dataset

__all__ = ["BlockArrangement", "block_arrangement", "block_bounds", "block_plan", "BlockRows",
           "value_chunk_rows"]


def value_chunk_rows(dataset: Dataset) -> list[np.ndarray]:
    """For each ragged group chunked on disk, the rows where its value chunks start; and the
    rows where chunks of on-disk rows start, when the scalars are read in chunks too."""
    starts = [dataset.value_chunk_starts(name) for name in dataset.groups] + [dataset.row_chunk_starts()]
    return [s for s in starts if len(s)]


def block_bounds(n_rows: int, chunk_bounds: list[np.ndarray], min_rows: int) -> np.ndarray:
    """Row boundaries of shuffle blocks, aligned to on-disk chunks where known.

    Parameters
    ----------
    n_rows
        Rows of the dataset.
    chunk_bounds
        For each on-disk ragged group, the rows where its value chunks start
        (sorted, first 0). Blocks start on chunk boundaries of the coarsest group
        (the one whose chunks span most rows), so each of its chunks lies in one
        block.
    min_rows
        Merge blocks until each holds at least this many rows, and at least the
        widest chunk span of the other groups, so every chunk overlaps at most two
        blocks.

    Returns
    -------
    ndarray of int64
        ``bounds[0] == 0``, ``bounds[-1] == n_rows``; block ``k`` is
        ``[bounds[k], bounds[k + 1])``.
    """
    spans = []
    for b in chunk_bounds:
        b = np.unique(np.append(np.asarray(b, dtype=np.int64), [0, n_rows]))
        spans.append((float(np.median(np.diff(b))) if len(b) > 1 else 0.0, b))
    spans.sort(key=lambda item: item[0])
    if spans:
        coarse = spans[-1][1]
        others = [int(np.diff(b).max()) for _, b in spans[:-1] if len(b) > 1]
        need = max([min_rows] + others)
    else:
        coarse = np.append(np.arange(0, n_rows, max(1, min_rows), dtype=np.int64), n_rows)
        need = min_rows
    keep = [0]
    for edge in coarse[1:]:  # one pass over chunk boundaries (not rows), at plan time
        if edge - keep[-1] >= need:
            keep.append(int(edge))
    if keep[-1] != n_rows:
        if len(keep) > 1 and n_rows - keep[-1] < need:
            keep[-1] = n_rows
        else:
            keep.append(n_rows)
    return np.asarray(keep, dtype=np.int64)


@dataclass(frozen=True)
class BlockArrangement:
    """The blocks and window size of one view's block shuffle.

    Attributes
    ----------
    bounds : ndarray of int64
        Block ``k`` is view positions ``[bounds[k], bounds[k + 1])``.
    window_rows : int
        Rows mixed together (whole batches).
    """

    bounds: np.ndarray
    window_rows: int

    @property
    def max_windows(self) -> int:
        """The most windows an epoch can have."""
        return min(len(self.bounds) - 1, -(-int(self.bounds[-1]) // self.window_rows))


def block_arrangement(dataset: Dataset, rows: np.ndarray | None, batch_size: int, block_rows: int | None,
                 window_rows: int | None) -> BlockArrangement:
    """The blocks of a view of ``dataset``, aligned to its chunks, and its window size.

    Parameters
    ----------
    dataset
        The full dataset.
    rows
        The view's rows, sorted ascending, or ``None`` for all rows.
    batch_size
        Rows per batch.
    block_rows
        Minimum rows per block (default: the batch size, or the widest chunk span).
    window_rows
        Rows mixed together (default: the larger of 16 batches and 4 blocks, rounded up
        to whole batches).
    """
    bounds = block_bounds(len(dataset), value_chunk_rows(dataset), block_rows or batch_size)
    if rows is not None:  # block bounds in the view's own positions
        bounds = np.unique(np.searchsorted(rows, bounds)).astype(np.int64)
        if bounds[0] != 0:
            bounds = np.insert(bounds, 0, 0)
    if window_rows is None:
        typical = int(np.median(np.diff(bounds))) if len(bounds) > 1 else batch_size
        window_rows = max(16 * batch_size, 4 * typical)
    return BlockArrangement(bounds, -(-int(window_rows) // batch_size) * batch_size)


def block_plan(arrangement: BlockArrangement, seed: int, epoch: int) -> Plan:
    """The plan of ``epoch``: permuted blocks, grouped into windows, rows mixed inside each window.

    Its ``order`` is int32 when the positions fit (half the memory an epoch keeps per
    row); readers take slices of it as intp.
    """
    bounds, window_rows = arrangement.bounds, arrangement.window_rows
    rng = epoch_rng(seed, epoch, stream=1)
    n_blocks = len(bounds) - 1
    block_order = rng.permutation(n_blocks).astype(np.intp)
    sizes = np.diff(bounds)[block_order]
    ends = np.cumsum(sizes)
    # close a window at the first block end reaching each multiple of window_rows
    cuts = np.unique(np.searchsorted(ends, np.arange(window_rows, int(ends[-1]) + window_rows,
                                                     window_rows)).clip(0, n_blocks - 1))
    starts = np.concatenate([[0], ends[cuts]]).astype(np.int64)
    first_block = np.concatenate([[0], cuts + 1])
    # the plan is kept all epoch: 4 bytes a row when that holds every position
    order = np.empty(int(ends[-1]), dtype=np.int32 if int(ends[-1]) <= np.iinfo(np.int32).max else np.intp)
    window_block_ids = []
    for w in range(len(cuts)):  # one permutation per window (not per row)
        ids = np.sort(block_order[first_block[w]:first_block[w + 1]])
        rows = np.concatenate([np.arange(bounds[b], bounds[b + 1], dtype=np.intp) for b in ids])
        perm = rng.permutation(len(rows)).astype(np.intp)
        order[starts[w]:starts[w + 1]] = rows[perm]
        window_block_ids.append(ids)
    return Plan(order, windows=Windows(starts, window_block_ids))


class BlockRows(StageDefaults):
    """The first stage of ``shuffle="block"``: the epoch's block plan over the view's rows."""

    def __init__(self, arrangement: BlockArrangement) -> None:
        self.arrangement = arrangement

    def plan(self, plan: Plan, key: EpochKey) -> Plan:
        """The block plan of the epoch (the rows of ``plan`` are the view's, in file order)."""
        return block_plan(self.arrangement, key.seed, key.epoch)
