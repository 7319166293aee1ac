"""Reading a precomputed-batch store: :func:`open_batches` and :class:`PrecomputedBatches`.

A lost chunk of a store that records that every chunk was written, or a chunk
that fails its checksum, is a :class:`~lstm_data.errors.FormatError` naming the
store, the array and the chunk (see :func:`lstm_data.io.zarr.strict_group` and
:func:`lstm_data.io.zarr.read_rows`). Stores written before keep reading; there
a lost chunk reads as zeros (:attr:`PrecomputedBatches.notes`).
"""
from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from lstm_data._util.checks import check_index
from lstm_data.batching.epoch import EpochIteration
from lstm_data.batching.order import shuffled_order
from lstm_data.batching.spec import BatchSpec
from lstm_data.errors import FormatError
from lstm_data.io.layout import OLD_ZARR_NOTE
from lstm_data.io.remote import is_url, remote_format
from lstm_data.io.zarr import read_rows, strict_group
from lstm_data.store.format import (
    ATTR,
    STORE_FORMAT,
    STORE_VERSION,
    compare_metadata,
    fingerprint,
)

__all__ = ["open_batches", "PrecomputedBatches", "read_metadata"]


def stored_metadata(path: str | os.PathLike) -> dict | None:
    """The batch-store attribute of the zarr group at ``path`` (any version), or None if it has none."""
    import zarr

    meta = zarr.open_group(str(path), mode="r").attrs.get(ATTR)
    return meta if isinstance(meta, dict) and meta.get("format") == STORE_FORMAT else None


def read_metadata(path: str | os.PathLike) -> dict:
    """The recorded metadata of the store at ``path``.

    Raises
    ------
    FileNotFoundError
        No store there.
    FormatError
        Not a precomputed-batch store (or an unknown version of one).
    """
    if is_url(path):
        remote_format(str(path))  # a zarr v3 root, or FileNotFoundError / FormatError
        p: str | Path = str(path)
    else:
        p = Path(path)
        if not (p / "zarr.json").is_file():
            if p.exists():
                raise FormatError(f"{p} is not a precomputed batch store (no zarr.json); make one with "
                                  "lstm-data precompute", file=str(p))
            raise FileNotFoundError(f"no precomputed batch store at {p}")
    meta = stored_metadata(p)
    if meta is None:
        raise FormatError(f"{p} is a zarr store but not a precomputed batch store", file=str(p))
    if meta.get("version") != STORE_VERSION:
        raise FormatError(f"{p}: unsupported batch store version {meta.get('version')!r}", file=str(p))
    return meta


class PrecomputedBatches(EpochIteration):
    """The batches of a store, with the interface of :class:`~lstm_data.batching.batches.Batches`.

    Item ``i`` is ``(inputs, targets, weights)``. :meth:`on_epoch_end` permutes the
    order of the stored batches reproducibly (``seed`` plus epoch) when
    ``shuffle`` is on; the rows inside each batch are those of the stored epoch.
    Pickling sends the path only.

    Raises
    ------
    FormatError
        At open or on a read, a lost or damaged chunk (naming store, array and chunk).

    Attributes
    ----------
    notes : tuple of str
        What this store cannot detect (a store written before every chunk was
        stored: a lost chunk reads as zeros). Empty for stores written now.
    """

    def __init__(self, path: str | os.PathLike, *, shuffle: bool = True) -> None:
        self.path = str(path)
        self.meta = read_metadata(path)
        # with bucketing, the spec the batches were built with (its bucketed group padded per batch)
        self.spec = BatchSpec.from_dict(self.meta.get("batch_spec") or self.meta["spec"], source=self.path)
        self.batch_size = int(self.meta["batch_size"])
        self.seed = int(self.meta["seed"])
        self.n_rows = int(self.meta["n_rows"])
        self.shuffle = bool(shuffle)
        self.epoch = 0
        self._open()

    def _open(self) -> None:
        import zarr

        plain = zarr.open_group(self.path, mode="r")
        root = strict_group(plain, self.path)
        old = (f"{self.path}: {OLD_ZARR_NOTE}; recompute it (lstm-data precompute --force) to "
               "have damage detected")
        self.notes = () if root is not plain else (old,)
        self._names = list(self.meta["outputs"])
        self._arrays = {n: root[f"data/{n}"] for n in self._names}
        index = root["_index"]
        self._offsets = {n: self._whole(index[f"{n}.offsets"]) for n in self._names}
        self._shapes = {n: self._whole(index[f"{n}.shapes"]) for n in self._names}
        self._n_batches = int(self.meta["n_batches"])
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._n_batches

    def _slot(self, index: int) -> int:
        n = self._n_batches
        index = check_index(index, n)
        if self.shuffle and self.epoch > 0:
            return int(shuffled_order(n, self.seed, self.epoch)[index])
        return int(index)

    def _whole(self, array: Any) -> np.ndarray:
        return np.asarray(read_rows(array, 0, array.shape[0], file=self.path))

    def _read(self, name: str, slot: int) -> np.ndarray:
        lo, hi = self._offsets[name][slot], self._offsets[name][slot + 1]
        values = read_rows(self._arrays[name], int(lo), int(hi), file=self.path)
        return np.asarray(values).reshape(tuple(self._shapes[name][slot]))

    def __getitem__(self, index: int) -> tuple[dict, dict, dict]:
        slot = self._slot(index)
        flat = {n: self._read(n, slot) for n in self._names}
        inputs, targets, weights = self.spec.unflatten(flat)
        return inputs, targets, weights

    def signature(self) -> dict:
        return self.spec.signature()

    def __repr__(self) -> str:
        return (f"PrecomputedBatches({self.path!r}, {len(self)} batches of {self.batch_size}, "
                f"seed={self.seed}, epoch={self.epoch})")

    def __getstate__(self) -> dict:
        return {"path": self.path, "shuffle": self.shuffle, "epoch": self.epoch}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["path"], shuffle=state["shuffle"])
        self.epoch = state["epoch"]


def open_batches(path: str | os.PathLike, *, spec: BatchSpec | None = None, batch_size: int | None = None,
                 seed: int | None = None, dataset: Any = None, shuffle: bool = True) -> PrecomputedBatches:
    """Open a store written by ``lstm-data precompute``, checking it against what you expect.

    Parameters
    ----------
    path
        The store.
    spec, batch_size, seed
        When given, must equal what the store records.
    dataset
        When given, its :func:`~lstm_data.store.format.fingerprint` must equal the
        recorded one (the store was made from this data).
    shuffle
        Permute the order of the stored batches each epoch after the first.

    Raises
    ------
    StoreMismatchError
        A given expectation differs from the record; the message names each one.
    """
    meta = read_metadata(path)
    expected = {"spec": None if spec is None else spec.to_dict(), "batch_size": batch_size,
                "seed": seed, "fingerprint": None if dataset is None else fingerprint(dataset)}
    compare_metadata(meta, expected, where=str(path))
    return PrecomputedBatches(path, shuffle=shuffle)
