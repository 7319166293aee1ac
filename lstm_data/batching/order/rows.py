"""Row orders of an epoch: plain, shuffled, block-shuffled; and train/validation splits.

Every order is a pure function of ``(seed, epoch)``, so runs reproduce and worker
threads or processes agree on it without talking to each other.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["resolve_shuffle", "epoch_rng", "shuffled_order", "BlockPlan", "block_bounds", "split_rows", "fresh_seed"]


def fresh_seed() -> int:
    """A random 63-bit seed, drawn when the user gives none (stored so the run can be repeated)."""
    entropy = np.random.SeedSequence().entropy
    assert isinstance(entropy, int)  # drawn from the OS when none is given: always an int
    return int(entropy % (2 ** 63))


def resolve_shuffle(shuffle: Any, in_ram: bool) -> bool | str:
    """The row order that ``shuffle`` asks for, with ``"auto"`` resolved.

    One rule for :class:`~lstm_data.batching.epochs.batches.Batches` and ``precompute``:
    ``"auto"`` is ``True`` (a fresh permutation of all rows each epoch) for data in
    RAM and ``"block"`` for data read from disk, where random row reads would
    decompress a chunk per row.

    Raises
    ------
    ValueError
        ``shuffle`` is not ``"auto"``, ``True``, ``False`` or ``"block"``.
    """
    if isinstance(shuffle, np.bool_):
        shuffle = bool(shuffle)
    if shuffle == "auto":
        return True if in_ram else "block"
    if shuffle is True or shuffle is False or shuffle == "block":
        return shuffle  # type: ignore[no-any-return]
    raise ValueError(f"shuffle must be 'auto', True, False or 'block', got {shuffle!r}")


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
    if isinstance(test_size, (float, np.floating)) and math.isnan(test_size):
        raise ValueError("test_size is NaN: give a fraction in [0, 1] or a number of rows")
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


@dataclass
class BlockPlan:
    """One epoch of ``shuffle="block"``: permuted blocks, mixed inside windows of whole blocks.

    The blocks are permuted and grouped, in that order, into windows of at least
    ``window_rows`` rows; each window's rows are permuted. A window is read from
    disk once, and a batch touches at most two consecutive windows.

    Attributes
    ----------
    order : ndarray of intp
        Row of each epoch position (indices into the view's rows).
    window_starts : ndarray of int64
        First position of each window, plus the total at the end.
    window_block_ids : list of ndarray
        The blocks (ids into the bounds) of each window, sorted.
    local : ndarray of intp
        For each position, the index of its row among its window's rows (sorted).
    """

    order: np.ndarray
    window_starts: np.ndarray
    window_block_ids: list[np.ndarray]
    local: np.ndarray

    @classmethod
    def make(cls, bounds: np.ndarray, seed: int, epoch: int, window_rows: int) -> "BlockPlan":
        """Build the plan of ``epoch`` for blocks ``bounds`` (rows ``0 .. bounds[-1]``)."""
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
        order = np.empty(int(ends[-1]), dtype=np.intp)
        local = np.empty(int(ends[-1]), dtype=np.intp)
        window_block_ids = []
        for w in range(len(cuts)):  # one permutation per window (not per row)
            ids = np.sort(block_order[first_block[w]:first_block[w + 1]])
            rows = np.concatenate([np.arange(bounds[b], bounds[b + 1], dtype=np.intp) for b in ids])
            perm = rng.permutation(len(rows)).astype(np.intp)
            order[starts[w]:starts[w + 1]] = rows[perm]
            local[starts[w]:starts[w + 1]] = perm
            window_block_ids.append(ids)
        return cls(order, starts, window_block_ids, local)

    def windows_of(self, lo: int, hi: int) -> range:
        """Windows holding epoch positions ``lo .. hi - 1``."""
        first = int(np.searchsorted(self.window_starts, lo, side="right")) - 1
        last = int(np.searchsorted(self.window_starts, hi - 1, side="right")) - 1
        return range(first, last + 1)
