"""Reading a precomputed-batch store: :func:`open_batches` and :class:`PrecomputedBatches`.

A lost chunk of a store that records that every chunk was written, a chunk
that fails its checksum, a chunk moved from another place, or edited metadata
(stores with a manifest, :mod:`lstm_data.io.ours.manifest`) is a
:class:`~lstm_data.errors.FormatError` naming the store, the file, and the array
and chunk (see :mod:`lstm_data.io.ours.checked_store` and
:func:`lstm_data.io.ours.zarr.read_rows`). Stores written before keep reading;
:attr:`PrecomputedBatches.notes` says what is not detected there.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import zarr

from lstm_data._util.checks import check_count, check_index
from lstm_data._util.deprecation import RenamedAttribute, renamed_keywords, warn_renamed
from lstm_data._util.once_cache import OnceCache
from lstm_data.batching.epochs.iteration import EpochIteration
from lstm_data.batching.order.rows import shuffled_order
from lstm_data._util.declared import unknown_option
from lstm_data.batching.order.options import Order
from lstm_data.batching.spec.batch_spec import Batch, BatchSpec, OutputSignature
from lstm_data.errors import FormatError, OptionError
from lstm_data._util.redact import redact
from lstm_data.io.ours.checked_store import open_checked, records_every_chunk
from lstm_data.io.ours.layout import OLD_ZARR_NOTE
from lstm_data.io.ours.manifest import UNCHECKED_NOTE
from lstm_data.io.plumbing.remote import is_url, remote_format
from lstm_data.io.ours.zarr import read_rows
from lstm_data.store.format import (
    ATTR,
    STORE_FORMAT,
    STORE_VERSION,
    compare_metadata,
    fingerprint,
    output_key,
)

__all__ = ["open_batches", "PrecomputedBatches", "read_metadata", "stored_node"]

N = TypeVar("N", zarr.Array[Any], zarr.Group)


def stored_metadata(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The batch-store attribute of the zarr group at ``path`` (any version), or None if it has none."""
    meta = open_checked(str(path), str(path))[0].attrs.get(ATTR)
    return meta if isinstance(meta, dict) and meta.get("format") == STORE_FORMAT else None


def read_metadata(path: str | os.PathLike[str]) -> dict[str, Any]:
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
    name = redact(p)
    if meta is None:
        raise FormatError(f"{name} is a zarr store but not a precomputed batch store", file=name)
    if meta.get("version") != STORE_VERSION:
        raise FormatError(f"{name}: unsupported batch store version {meta.get('version')!r}", file=name)
    return meta


def stored_node(root: zarr.Group, key: str, kind: type[N], name: str) -> N:
    """The array or group (``kind``) at ``key`` of the store ``root`` named ``name``; a
    ``FormatError`` if the other kind is there."""
    node = root[key]
    if not isinstance(node, kind):
        raise FormatError(f"{key!r} is not the {kind.__name__.lower()} a batch store keeps there: the store "
                          "is damaged", file=f"{name}/{key}")
    return node


class PrecomputedBatches(EpochIteration):
    """The batches of a store: a batch source, as :class:`~lstm_data.batching.epochs.batches.Batches` is.

    Item ``i`` is ``(inputs, targets, weights)``. With ``permute`` (default), epoch
    ``e > 0`` serves the stored batches in a permutation made from ``(seed, e)``
    alone; the rows inside each batch are those of the stored epoch. Pickling sends
    the path only.

    Parameters
    ----------
    path
        The store.
    permute
        Permute the order of the stored batches each epoch after the first.
        ``shuffle=`` is its deprecated spelling.

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

    #: the deprecated name of :attr:`permute`
    shuffle: RenamedAttribute[bool] = RenamedAttribute("permute")

    def __init__(self, path: str | os.PathLike[str], *, permute: bool = True, **old: bool) -> None:
        if old:
            permute = renamed_keywords("PrecomputedBatches", old, _RENAMED, strict=True)["permute"]
        self.path = str(path)
        self.meta = read_metadata(path)
        # with bucketing, the spec the batches were built with (its bucketed group padded per batch)
        self.spec = BatchSpec.from_dict(self.meta.get("batch_spec") or self.meta["spec"], source=redact(self.path))
        self.batch_size = int(self.meta["batch_size"])
        self.seed = int(self.meta["seed"])
        self.n_rows = int(self.meta["n_rows"])
        self.permute = bool(permute)
        self.epoch = 0
        self._open()

    def _open(self) -> None:
        self.name = redact(self.path)
        root, manifest = open_checked(self.path, self.name)
        redo = "recompute it (lstm-data precompute --force) to have damage detected"
        if not records_every_chunk(root):
            self.notes: tuple[str, ...] = (f"{self.name}: {OLD_ZARR_NOTE}; {redo}",)
        elif manifest is None:
            self.notes = (f"{self.name}: {UNCHECKED_NOTE}; {redo}",)
        else:
            self.notes = ()
        self._names = list(self.meta["outputs"])
        keys = {n: output_key(self.meta, n) for n in self._names}
        self._arrays = {n: stored_node(root, f"data/{keys[n]}", zarr.Array, self.name) for n in self._names}
        index = stored_node(root, "_index", zarr.Group, self.name)
        self._offsets = {n: self._whole(stored_node(index, f"{keys[n]}.offsets", zarr.Array, self.name))
                         for n in self._names}
        self._shapes = {n: self._whole(stored_node(index, f"{keys[n]}.shapes", zarr.Array, self.name))
                        for n in self._names}
        self._n_batches = int(self.meta["n_batches"])
        self._lock = threading.Lock()
        self._orders: OnceCache[int, np.ndarray] = OnceCache(keep=2)  # the permutations of the last epochs

    def __len__(self) -> int:
        return self._n_batches

    @property
    def varies_by_epoch(self) -> bool:
        """Whether epochs differ: the stored batches are permuted per epoch (``permute``)."""
        return self.permute and self._n_batches > 1

    def _slot(self, index: int, epoch: int) -> int:
        """The stored batch serving ``index`` in ``epoch``: a pure function of ``(seed, epoch)``."""
        n = self._n_batches
        index = check_index(index, n)
        if self.permute and epoch > 0:
            order = self._orders.get(epoch, lambda: shuffled_order(n, self.seed, epoch))
            return int(order[index])
        return int(index)

    def _whole(self, array: zarr.Array[Any]) -> np.ndarray:
        return np.asarray(read_rows(array, 0, array.shape[0], file=self.name))

    def _read(self, name: str, slot: int) -> np.ndarray:
        lo, hi = self._offsets[name][slot], self._offsets[name][slot + 1]
        values = read_rows(self._arrays[name], int(lo), int(hi), file=self.name)
        return np.asarray(values).reshape(tuple(self._shapes[name][slot]))

    def __getitem__(self, index: int) -> Batch:
        return self.batch(index)

    def batch(self, index: int, epoch: int | None = None) -> Batch:
        """Batch ``index`` of ``epoch`` (default: the current :attr:`epoch`), which stays as it is.

        Safe to call from several threads at once, for one epoch or different ones:
        the stored batch an index reads is a pure function of ``(seed, epoch)``.

        Parameters
        ----------
        index
            Batch index (negative counts from the end).
        epoch
            An int >= 0; ``None``: the current :attr:`epoch`.

        Returns
        -------
        tuple of dict
            ``(inputs, targets, weights)``: output name -> array.
        """
        epoch = self.epoch if epoch is None else check_count(epoch, "epoch")
        slot = self._slot(index, epoch)
        flat = {n: self._read(n, slot) for n in self._names}
        parts = self.spec.unflatten(flat)  # (inputs, targets[, weights]): no weights without targets
        return parts[0], parts[1], parts[2] if len(parts) == 3 else {}

    def signature(self) -> dict[str, OutputSignature]:
        return self.spec.signature()

    def __repr__(self) -> str:
        return (f"PrecomputedBatches({redact(self.path)!r}, {len(self)} batches of {self.batch_size}, "
                f"seed={self.seed}, epoch={self.epoch})")

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "permute": self.permute, "epoch": self.epoch}

    def __setstate__(self, state: dict[str, Any]) -> None:
        permute = state["permute"] if "permute" in state else state["shuffle"]  # pickled by an earlier release
        type(self).__init__(self, state["path"], permute=permute)
        self.epoch = state["epoch"]


#: keywords of earlier releases -> their names now
_RENAMED = {"shuffle": "permute"}


def _flat_record(meta: dict[str, Any]) -> dict[str, Any]:
    """The store's record with its order settings at the top level, as :meth:`Order.to_dict` names them."""
    flat = dict(meta)
    bucketing = meta.get("bucketing") or {}
    if bucketing:
        flat.update(bucket_by=bucketing.get("bucket_by"), bucket_window=bucketing.get("bucket_window"))
    flat.update(meta.get("order") or {})
    return flat


def open_batches(path: str | os.PathLike[str], *, spec: BatchSpec | None = None, order: Order | None = None,
                 dataset: Any = None, permute: bool = True, **options: Any) -> PrecomputedBatches:
    """Open a store written by ``lstm-data precompute``, checking it against what you expect.

    Parameters
    ----------
    path
        The store.
    spec
        When given, must equal the recorded spec (including ``nan_to`` and
        ``pad_to_multiple_of``).
    order
        When given, each setting it holds that differs from its default (batch size,
        seed, shuffle, bucketing, weights, ...) must equal the recorded one.
    dataset
        When given, its :func:`~lstm_data.store.format.fingerprint` must equal the
        recorded one (the store was made from this data).
    permute
        Permute the order of the stored batches each epoch after the first (from
        ``(seed, epoch)``: the rows inside a batch stay those stored).
    **options
        Spellings of earlier releases, with a ``DeprecationWarning``: ``shuffle=``
        (now ``permute=``), ``batch_size=`` and ``seed=`` (now
        ``order=Order(batch_size=..., seed=...)``).

    Returns
    -------
    PrecomputedBatches
        The stored batches: indexable, iterable per epoch, shardable, as ``Batches``.

    Raises
    ------
    StoreMismatchError
        A given expectation differs from the record; the message names each one.
    """
    meta = read_metadata(path)
    if options:
        unknown = set(options) - {"batch_size", "seed", *_RENAMED}
        if unknown:
            raise unknown_option(sorted(unknown)[0], ["spec", "order", "dataset", "permute"], "open_batches")
        options = renamed_keywords("open_batches", options, _RENAMED)
        permute = bool(options.pop("permute", permute))
    if options:
        moved = ", ".join(f"{k}=..." for k in options)
        warn_renamed(f"open_batches({moved})", f"order=Order({moved})")
        given = {k: v for k, v in options.items() if v is not None}
        order = (order or Order()).replace(**given) if given else order
    expected = {"spec": None if spec is None else spec.to_dict(),
                "fingerprint": None if dataset is None else fingerprint(dataset)}
    if order is not None:
        if not isinstance(order, Order):
            raise OptionError(f"open_batches: order must be an Order, got {type(order).__name__}")
        expected.update({k: v for k, v in order.to_dict().items() if k not in Order.NOT_IN_BATCHES})
    compare_metadata(_flat_record(meta), expected, where=str(path))
    return PrecomputedBatches(path, permute=permute)
