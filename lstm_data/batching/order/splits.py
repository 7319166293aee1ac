"""Train/validation splits of a view: by rows, by file, by a key column; a fraction or one fold of k.

:meth:`Batches.split <lstm_data.batching.epochs.batches.Batches.split>` and
:meth:`Batches.folds <lstm_data.batching.epochs.batches.Batches.folds>` cut the rows of
a view in two disjoint views, each then ordered by the same
:class:`~lstm_data.batching.order.options.Order` (shuffle, block shuffle,
buckets, budget batches, sampling):

``by="rows"``
    lstm_ee's split: the rows shuffled with ``seed``, then cut (``test_size``), or
    cut in ``k`` equal folds.
``by="file"``
    Whole files (the parts of data opened from several paths, also under the
    spec's ``selection``): ``test_size`` files (an int, or a fraction of the
    files), chosen with ``seed``; or with ``k`` (at most the number of files),
    the files whose index modulo ``k`` is ``fold``.
``by="key"``
    A scalar column of integers (an event number): with ``k``, the rows whose key
    modulo ``k`` is ``fold`` (``event % k``, the usual hold-out in HEP); with a
    fractional ``test_size``, the rows whose key hashes (with ``seed``) below it.
    A row's side depends on its key alone, so it stays when files are added.

Every split is a pure function of the data, the arguments and ``seed``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from lstm_data.batching.spec.derived import file_bounds
from lstm_data.batching.order.rows import split_rows
from lstm_data.errors import OptionError, SchemaError

__all__ = ["split_positions", "SPLIT_BY"]

#: the ways :func:`split_positions` cuts
SPLIT_BY = ("rows", "file", "key")

_MIX = np.uint64(0x9E3779B97F4A7C15)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser: a well-mixed 64-bit hash of every value of ``x`` (uint64)."""
    with np.errstate(over="ignore"):
        z = x + _MIX
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _check_k(k: Any, fold: Any) -> tuple[int, int]:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 2:
        raise OptionError(f"k must be an int >= 2 (the number of folds), got {k!r}")
    if isinstance(fold, bool) or not isinstance(fold, (int, np.integer)) or not 0 <= fold < k:
        raise OptionError(f"fold must be an int in [0, k) = [0, {k}), got {fold!r}")
    return int(k), int(fold)


def _key_values(dataset: Any, key: Any, rows: np.ndarray) -> np.ndarray:
    if key is None:
        raise OptionError(f"split: by='key' needs key=<a scalar column> (e.g. an event number); the data has "
                          f"{sorted(dataset.scalar_names)}")
    if not isinstance(key, str) or key not in dataset.scalar_names:
        raise SchemaError(f"split(by='key') needs key= naming a scalar column, got {key!r}; the data has "
                          f"{sorted(dataset.scalar_names)}", variable=str(key))
    values = np.asarray(dataset.scalar(key, rows))
    if values.dtype.kind == "f":
        bad = ~np.isfinite(values) | (values != np.round(values))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise SchemaError(f"split key {key!r} holds {values[i]!r}, not an integer", variable=key,
                              row=int(rows[i]))
        if values.size and np.abs(values).max() > 2 ** 53:
            raise SchemaError(f"split key {key!r} holds integers beyond 2**53 in floating point: they are not "
                              "exact; store the key as an integer column", variable=key)
    elif values.dtype.kind not in "iub":
        raise SchemaError(f"split key {key!r} is of type {values.dtype}, not integers", variable=key)
    return values.astype(np.int64)


def _file_of(dataset: Any, rows: np.ndarray, bounds: np.ndarray | None) -> tuple[np.ndarray, int]:
    bounds = file_bounds(dataset) if bounds is None else bounds
    if bounds is None:
        kind = type(dataset).__name__
        article = "an" if kind[:1].lower() in "aeiou" else "a"
        raise OptionError("split(by='file') needs data opened from several files (a ConcatDataset, e.g. "
                          f"lstm_data.open([...])); this is {article} {kind}")
    file_of = np.searchsorted(bounds, rows, side="right") - 1
    return file_of.astype(np.intp), len(bounds) - 1


def split_positions(dataset: Any, rows: np.ndarray, *, by: str = "rows", test_size: Any = None,
                    seed: int = 0, key: str | None = None, k: int | None = None,
                    fold: int = 0, bounds: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Positions into ``rows`` of the training and the validation side.

    Parameters
    ----------
    dataset
        The dataset ``rows`` index.
    rows
        The view's dataset rows.
    by
        ``"rows"``, ``"file"`` or ``"key"`` (see the module docstring).
    test_size
        Validation rows or files (an int), or a fraction (a float); not with ``k``.
    seed
        Seed of the shuffle of rows or files, or of the key hash.
    key
        The key column (``by="key"``).
    k, fold
        ``k`` folds; the validation side is fold ``fold``.
    bounds
        Row bounds of the dataset's files as its view knows them (default: the dataset's own).

    Returns
    -------
    train, validation : numpy.ndarray
        Disjoint positions into ``rows`` that cover them.

    Raises
    ------
    OptionError
        An unknown ``by``, neither or both of ``test_size`` and ``k``, a bad ``k``
        or ``fold``, ``by="file"`` on data of one file or with more folds than files,
        ``by="key"`` without ``key`` or with an int ``test_size``.
    SchemaError
        The key column is missing or does not hold integers.
    """
    if by not in SPLIT_BY:
        raise OptionError(f"split by must be one of {', '.join(map(repr, SPLIT_BY))}, got {by!r}")
    if (test_size is None) == (k is None):
        raise OptionError("split needs test_size= (a fraction or a count) or k= with fold= (k-fold), not "
                          + ("both" if k is not None else "neither"))
    n = len(rows)
    if by == "rows":
        if k is None:
            return split_rows(n, test_size, seed)
        k, fold = _check_k(k, fold)
        perm = np.random.default_rng([int(seed), 2 ** 32 - 2]).permutation(n).astype(np.intp)
        folds = np.array_split(perm, k)
        return np.concatenate([f for i, f in enumerate(folds) if i != fold]), folds[fold]
    if by == "file":
        file_of, n_files = _file_of(dataset, rows, bounds)
        if k is not None:
            k, fold = _check_k(k, fold)
            if k > n_files:
                raise OptionError(f"split(by='file') with k={k} folds needs at least {k} files, but the data "
                                  f"has {n_files}: fold {n_files} on would be empty; use k <= {n_files}")
            val = file_of % k == fold
        else:
            _, chosen = split_rows(n_files, test_size, seed)
            val = np.isin(file_of, chosen)
    else:
        values = _key_values(dataset, key, rows)
        if k is not None:
            k, fold = _check_k(k, fold)
            val = np.mod(values, k) == fold
        else:
            if not isinstance(test_size, (float, np.floating)) or not 0 <= test_size <= 1:
                raise OptionError(f"split(by='key') takes a fraction test_size in [0, 1] (or k=), got {test_size!r}")
            h = _splitmix64(values.view(np.uint64) ^ _splitmix64(np.array([seed], dtype=np.uint64)))
            val = (h >> np.uint64(11)).astype(np.float64) / 2.0 ** 53 < test_size
    return np.flatnonzero(~val).astype(np.intp), np.flatnonzero(val).astype(np.intp)
