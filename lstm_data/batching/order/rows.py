"""Row orders of an epoch: plain, shuffled, block-shuffled; and train/validation splits.

Every order is a pure function of ``(seed, epoch)``, so runs reproduce and worker
threads or processes agree on it without talking to each other.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from lstm_data.batching.order.plan import EpochKey, Plan, StageDefaults

__all__ = ["resolve_shuffle", "epoch_rng", "shuffled_order", "ShuffledRows", "split_rows", "DEFAULT_SEED"]

#: the seed of an order given none (``Order(seed=None)``), in the Python API as on the command
#: line: the same call gives the same batches in every run and every process
DEFAULT_SEED = 0


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


class ShuffledRows(StageDefaults):
    """The stage of ``shuffle=True``: a fresh permutation of the rows each epoch."""

    def plan(self, plan: Plan, key: EpochKey) -> Plan:
        """The rows of ``plan`` permuted by the epoch's generator (stream 0)."""
        perm = shuffled_order(len(plan.order), key.seed, key.epoch)
        return Plan(plan.order[perm])
