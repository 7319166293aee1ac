"""Row orders of an epoch: plain, shuffled, block-shuffled; and train/validation splits.

Every order is a pure function of ``(seed, epoch)``, so runs reproduce and worker
threads or processes agree on it without talking to each other.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["epoch_rng", "shuffled_order", "BlockPlan", "block_bounds", "split_rows", "fresh_seed"]


def fresh_seed() -> int:
    """A random 63-bit seed, drawn when the user gives none (stored so the run can be repeated)."""
    return int(np.random.SeedSequence().entropy % (2 ** 63))


def epoch_rng(seed: int, epoch: int, stream: int = 0) -> np.random.Generator:
    """The generator of one epoch: independent streams for every ``(seed, epoch, stream)``."""
    return np.random.default_rng([int(seed), int(epoch), int(stream)])


def shuffled_order(n: int, seed: int, epoch: int) -> np.ndarray:
    """A permutation of ``range(n)`` for ``epoch``."""
    return epoch_rng(seed, epoch).permutation(n).astype(np.intp)


def split_rows(n: int, test_size: int | float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """lstm_ee's train/test split: shuffle all rows with ``seed``, the first part trains.

    Parameters
    ----------
    n
        Number of rows.
    test_size
        A fraction in ``[0, 1]`` (float) or a number of rows (int). As in lstm_ee,
        ``n_train = int(n * (1 - test_size))`` for a fraction and ``n - test_size``
        for a count.

    Raises
    ------
    ValueError
        Negative, or a count larger than ``n``, or a fraction above 1.
    """
    if isinstance(test_size, bool) or not isinstance(test_size, (int, float, np.integer, np.floating)):
        raise ValueError(f"test_size must be an int or a float, got {test_size!r}")
    if test_size < 0:
        raise ValueError(f"test_size must be >= 0, got {test_size}")
    if isinstance(test_size, (float, np.floating)):
        if test_size > 1:
            raise ValueError(f"a fractional test_size must be <= 1, got {test_size}")
        n_train = int(n * (1 - test_size))
    else:
        if test_size > n:
            raise ValueError(f"test_size {test_size} is larger than the {n} rows")
        n_train = n - int(test_size)
    rows = np.random.default_rng([int(seed), 2 ** 32 - 1]).permutation(n).astype(np.intp)
    return rows[:n_train], rows[n_train:]


def block_bounds(n_rows: int, chunk_bounds: list[np.ndarray], min_rows: int) -> np.ndarray:
    """Row boundaries of shuffle blocks, aligned to on-disk chunks where known.

    Parameters
    ----------
    n_rows
        Rows of the dataset.
    chunk_bounds
        For each on-disk ragged group, the rows where its value chunks start
        (sorted, first 0). The blocks start on the boundaries of the coarsest
        group, so each of its chunks lies in one block.
    min_rows
        Merge blocks until each holds at least this many rows (and at least the
        widest chunk span of any group, so every chunk overlaps at most two blocks).

    Returns
    -------
    ndarray of int64
        ``bounds[0] == 0``, ``bounds[-1] == n_rows``; block ``k`` is
        ``[bounds[k], bounds[k + 1])``.
    """
    widest = 1
    coarse = None
    for b in chunk_bounds:
        b = np.unique(np.append(np.asarray(b, dtype=np.int64), n_rows))
        spans = np.diff(b)
        if len(spans):
            widest = max(widest, int(spans.max()))
        if coarse is None or len(b) < len(coarse):
            coarse = b
    if coarse is None:
        coarse = np.arange(0, n_rows, max(1, min_rows), dtype=np.int64)
    need = max(min_rows, widest)
    cand = np.unique(np.concatenate([[0], coarse, [n_rows]])).astype(np.int64)
    keep = [0]
    for edge in cand[1:]:  # one pass over chunk boundaries (not rows), at plan time
        if edge - keep[-1] >= need:
            keep.append(int(edge))
    if keep[-1] != n_rows:
        if len(keep) > 1 and n_rows - keep[-1] < need:
            keep[-1] = n_rows
        else:
            keep.append(n_rows)
    return np.asarray(keep, dtype=np.int64)


@dataclass
class BlockPlan:
    """One epoch of ``shuffle="block"``: permuted blocks, mixed inside windows.

    The blocks are permuted; their rows, laid end to end, are cut into windows of
    ``window_rows`` positions (a multiple of the batch size), and each window's rows
    are permuted. A batch therefore lies in one window, and a window touches a run
    of consecutive blocks of the permutation.

    Attributes
    ----------
    order : ndarray of intp
        Row of each epoch position (indices into the view's rows).
    block_of_position : ndarray of intp
        Index into ``block_order`` of the block each position came from.
    block_order : ndarray of intp
        The permuted block indices.
    window_rows : int
    """

    order: np.ndarray
    block_of_position: np.ndarray
    block_order: np.ndarray
    window_rows: int

    @classmethod
    def make(cls, bounds: np.ndarray, seed: int, epoch: int, window_rows: int) -> "BlockPlan":
        """Build the plan of ``epoch`` for blocks ``bounds`` (rows ``0 .. bounds[-1]``)."""
        rng = epoch_rng(seed, epoch, stream=1)
        n_blocks = len(bounds) - 1
        block_order = rng.permutation(n_blocks).astype(np.intp)
        sizes = np.diff(bounds)[block_order]
        starts = bounds[:-1][block_order]
        n = int(sizes.sum())
        # rows of the permuted blocks laid end to end, without a Python loop over rows
        pos_block = np.repeat(np.arange(n_blocks, dtype=np.intp), sizes)
        first_pos = np.zeros(n_blocks, dtype=np.int64)
        np.cumsum(sizes[:-1], out=first_pos[1:])
        laid = (np.arange(n, dtype=np.int64) - first_pos[pos_block] + starts[pos_block]).astype(np.intp)
        mixed = np.empty(n, dtype=np.intp)
        for w0 in range(0, n, window_rows):  # one permutation per window
            w1 = min(n, w0 + window_rows)
            mixed[w0:w1] = w0 + rng.permutation(w1 - w0)
        return cls(laid[mixed], pos_block[mixed], block_order, window_rows)

    def window_blocks(self, window: int) -> np.ndarray:
        """Indices into ``block_order`` of the blocks that window ``window`` touches (sorted)."""
        w0 = window * self.window_rows
        part = self.block_of_position[w0:w0 + self.window_rows]
        return np.unique(part)
