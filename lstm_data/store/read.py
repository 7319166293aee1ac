"""Reading a precomputed-batch store: :func:`open_batches` and :class:`PrecomputedBatches`.

A lost chunk of a store that records that every chunk was written, a chunk
that fails its checksum, a chunk moved from another place, or edited metadata
(stores with a manifest, :mod:`lstm_data.io.ours.manifest`) is a
:class:`~lstm_data.errors.FormatError` naming the store, the file, and the array
and chunk (see :mod:`lstm_data.io.ours.checked_store` and
:func:`lstm_data.io.ours.zarr.read_rows`). A store whose metadata requires its
manifest is refused without it (:func:`~lstm_data.store.format.check_requires`).
Stores written before manifests keep reading, with an
:class:`~lstm_data.errors.UncheckedStoreWarning` naming what is not checked
(:attr:`PrecomputedBatches.notes`), unless ``ReadOptions(trust_unchecked=True)``.
A handle whose store was written anew since it opened it says so. The index
(each batch's offsets and shape) is checked against the store's metadata and
spec at open (:mod:`lstm_data.store.index_checks`).
"""
from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import zarr

from lstm_data._util.types import PlainDict
from lstm_data._util.checks import check_count, check_index
from lstm_data._util.deprecation import OldAttribute, refuses_renamed
from lstm_data.batching.order.options import Order
from lstm_data.batching.spec.batch_spec import Batch, BatchSpec, OutputSignature
from lstm_data.data.dataset import Dataset
from lstm_data.errors import FormatError, OptionError, UncheckedStoreWarning, warn_user
from lstm_data._util.redact import redact
from lstm_data.io.ours.checked_store import confine_node, open_checked, opened_token, records_every_chunk, store_token
from lstm_data.io.ours.layout import OLD_ZARR_NOTE
from lstm_data.io.ours.manifest import UNCHECKED_NOTE, Manifest
from lstm_data.io.read_options import ReadOptions
from lstm_data.io.plumbing.remote import is_url, remote_format
from lstm_data.io.ours.zarr import read_rows
from lstm_data.store.format import (
    ATTR,
    STORE_FORMAT,
    STORE_VERSION,
    check_requires,
    compare_metadata,
    fingerprint,
    output_key,
)
from lstm_data.store.index_checks import check_batch_shapes, check_index_arrays, stored_batch_count
from lstm_data.store.parts import StoredPart, fold_stored, split_stored
from lstm_data.store.shards import StoreEpochs
from lstm_data._util.plural import counted

__all__ = ["open_batches", "PrecomputedBatches", "read_metadata", "stored_node"]

N = TypeVar("N", zarr.Array[Any], zarr.Group)


def _open_store(path: str | os.PathLike[str], read: ReadOptions | None = None
                ) -> tuple[dict[str, Any], zarr.Group, Manifest | None]:
    """``(recorded metadata, root group, manifest or None)`` of the store at ``path``, its
    metadata and what it requires checked (see :func:`read_metadata`); a store at a URL is read
    with the timeouts and retries of ``read``."""
    remote = (read or ReadOptions()).remote_settings()
    if is_url(path):
        remote_format(str(path), remote)  # a zarr v3 root, or FileNotFoundError / FormatError
        p: str | Path = str(path)
    else:
        p = Path(path)
        if not (p / "zarr.json").is_file():
            if p.exists():
                raise FormatError(f"{p} is not a precomputed batch store (no zarr.json); make one with "
                                  "lstm-data precompute", file=str(p))
            raise FileNotFoundError(f"no precomputed batch store at {p}")
    name = redact(p)
    root, manifest = open_checked(str(p), name, remote)
    meta = root.attrs.get(ATTR)
    if not (isinstance(meta, dict) and meta.get("format") == STORE_FORMAT):
        raise FormatError(f"{name} is a zarr store but not a precomputed batch store", file=name)
    if meta.get("version") != STORE_VERSION:
        raise FormatError(f"{name}: unsupported batch store version {meta.get('version')!r}", file=name)
    check_requires(meta, has_manifest=manifest is not None, name=name)
    return meta, root, manifest


def stored_metadata(path: str | os.PathLike[str]) -> PlainDict | None:
    """The batch-store attribute of the zarr group at ``path`` (any version), or None if it has none."""
    meta = open_checked(str(path), str(path))[0].attrs.get(ATTR)
    return meta if isinstance(meta, dict) and meta.get("format") == STORE_FORMAT else None


def read_metadata(path: str | os.PathLike[str], read: ReadOptions | None = None) -> PlainDict:
    """The recorded metadata of the store at ``path`` (at a URL: read with the timeouts and retries
    of ``read``, a :class:`~lstm_data.io.read_options.ReadOptions`).

    Raises
    ------
    FileNotFoundError
        No store there.
    FormatError
        Not a precomputed-batch store (or an unknown version of one), or a store
        that requires its manifest without one (see
        :func:`~lstm_data.store.format.check_requires`).
    """
    return _open_store(path, read)[0]


def stored_node(root: zarr.Group, key: str, kind: type[N], name: str) -> N:
    """The array or group (``kind``) at ``key`` of the store ``root`` named ``name``; a
    ``FormatError`` if the other kind is there."""
    node = root[key]
    if not isinstance(node, kind):
        raise FormatError(f"{key!r} is not the {kind.__name__.lower()} a batch store keeps there: the store "
                          "is damaged", file=f"{name}/{key}")
    return node


class PrecomputedBatches(StoreEpochs):
    """The batches of a store, with the interface of :class:`~lstm_data.batching.epochs.batches.Batches`.

    Item ``i`` is ``(inputs, targets, weights)``. :meth:`on_epoch_end` permutes the
    order of the stored batches reproducibly (``seed`` plus epoch) when
    ``permute`` is on; the rows inside each batch are those of the stored epoch.
    :meth:`shard` deals them to ranks, on any world size (see
    :mod:`lstm_data.store.shards`). Pickling sends the path and the read options only.

    Parameters
    ----------
    path
        The store.
    permute
        Permute the order of the stored batches each epoch after the first.
    read
        How the store is read: of :class:`~lstm_data.io.read_options.ReadOptions`,
        ``trust_unchecked`` applies, and for a store at a URL ``connect_timeout``,
        ``read_timeout`` and ``retries``.

    Raises
    ------
    FormatError
        At open or on a read, a lost or damaged chunk (naming store, array and chunk);
        a store that requires its manifest without one; on a read, a store written
        anew at the path since this handle opened it.

    Warns
    -----
    UncheckedStoreWarning
        The store has no manifest (written before manifests): the warning names what
        is not checked; ``ReadOptions(trust_unchecked=True)`` opens it without.

    Attributes
    ----------
    notes : tuple of str
        What this store cannot detect (a store written before manifests: moved or
        swapped chunks, edited metadata; before every chunk was stored: a lost
        chunk reads as zeros). Empty for stores written now.
    """

    #: the name of :attr:`permute` before the first release (an error naming it)
    shuffle = OldAttribute()
    shard_layout = OldAttribute()

    @refuses_renamed("PrecomputedBatches")
    def __init__(self, path: str | os.PathLike[str], *, permute: bool = True,
                 read: ReadOptions | None = None) -> None:
        self.path = str(path)
        self.read = _store_options(read, redact(self.path))
        self.meta, root, manifest = _open_store(path, self.read)
        # with bucketing, the spec the batches were built with (its bucketed group padded per batch)
        self.spec = BatchSpec.from_dict(self.meta.get("batch_spec") or self.meta["spec"], source=redact(self.path))
        self.batch_size = int(self.meta["batch_size"])
        self.seed = int(self.meta["seed"])
        self.n_rows = int(self.meta["n_rows"])
        self.permute = bool(permute)
        self.epoch = 0
        self._open(root, manifest)

    def _open(self, root: zarr.Group, manifest: Manifest | None) -> None:
        self.name = redact(self.path)
        #: the store as it was opened (see :func:`~lstm_data.io.ours.checked_store.store_token`)
        self._token = opened_token(root)
        redo = "recompute it (lstm-data precompute --overwrite) to have damage detected"
        if not records_every_chunk(root):
            also = "" if manifest is not None else f", and it {UNCHECKED_NOTE}"
            self.notes: tuple[str, ...] = (f"{self.name}: {OLD_ZARR_NOTE}{also}; {redo}",)
        elif manifest is None:
            self.notes = (f"{self.name}: {UNCHECKED_NOTE}; {redo}",)
        else:
            self.notes = ()
        if self.notes and not self.read.trust_unchecked:
            warn_user(f"{self.notes[0]}. To open it without this warning, give "
                      "read=ReadOptions(trust_unchecked=True)", UncheckedStoreWarning)
        self._names = list(self.meta["outputs"])
        keys = {n: output_key(self.meta, n, file=self.name) for n in self._names}
        for k in keys.values():  # a node directory that is a link leading out of the store is refused
            for node in (f"data/{k}", f"_index/{k}.offsets", f"_index/{k}.shapes"):
                confine_node(root, node, file=self.name, attr=f"{ATTR}: keys")
        self._arrays = {n: stored_node(root, f"data/{keys[n]}", zarr.Array, self.name) for n in self._names}
        index = stored_node(root, "_index", zarr.Group, self.name)
        self._n_batches = stored_batch_count(self.meta, len(self._names), self.name)
        self._offsets, self._shapes = {}, {}
        signature = self.spec.signature()
        for n in self._names:  # the index checked against the metadata and the spec (see index_checks)
            offsets = stored_node(index, f"{keys[n]}.offsets", zarr.Array, self.name)
            shapes = stored_node(index, f"{keys[n]}.shapes", zarr.Array, self.name)
            check_index_arrays(self.name, n, self._arrays[n], offsets, shapes, self._n_batches, signature.get(n))
            self._offsets[n], self._shapes[n] = self._whole(offsets), self._whole(shapes)
            check_batch_shapes(self.name, n, shapes.path, self._offsets[n], self._shapes[n],
                               int(self._arrays[n].shape[0]), signature.get(n))
        self._lock = threading.Lock()
        self._setup_epochs(index, self.name)

    def __len__(self) -> int:
        return self._n_batches

    def _slot(self, index: int, epoch: int) -> int:
        return int(self.slots(epoch)[check_index(index, self._n_batches)])

    def _whole(self, array: zarr.Array[Any]) -> np.ndarray:
        return np.asarray(read_rows(array, 0, array.shape[0], file=self.name))

    def _read(self, name: str, slot: int) -> np.ndarray:
        lo, hi = self._offsets[name][slot], self._offsets[name][slot + 1]
        values = read_rows(self._arrays[name], int(lo), int(hi), file=self.name)
        return np.asarray(values).reshape(tuple(self._shapes[name][slot]))

    def __getitem__(self, index: int) -> Batch:
        return self.batch(index)

    def batch(self, index: int, epoch: int | None = None) -> Batch:
        """Batch ``index`` of ``epoch`` (default: the current :attr:`epoch`), read from the store.

        Parameters and result as :meth:`lstm_data.batching.epochs.batches.Batches.batch`.
        Safe to call from several threads at once, for one epoch or different ones:
        the stored batch an index reads is a pure function of ``(seed, epoch)``.
        """
        return self.stored_batch(self._slot(index, self.epoch if epoch is None else check_count(epoch, "epoch")))

    def stored_batch(self, slot: int) -> Batch:
        """Stored batch ``slot`` (batch ``slot`` of epoch 0), read from the store.

        Parameters
        ----------
        slot
            An int in ``[0, len(self))``.

        Returns
        -------
        tuple of dict
            ``(inputs, targets, weights)``.
        """
        slot = check_index(slot, self._n_batches)
        try:
            flat = {n: self._read(n, slot) for n in self._names}
        except FormatError as exc:
            self._refuse_if_replaced(exc)
            raise
        parts = self.spec.unflatten(flat)  # (inputs, targets[, weights]): no weights without targets
        return parts[0], parts[1], parts[2] if len(parts) == 3 else {}

    def split(self, test_size: int | float | None = None, seed: int | None = None, *, by: str = "batches",
              k: int | None = None, fold: int = 0) -> tuple[StoredPart, StoredPart]:
        """Train and validation parts of the stored batches, cut by batch (a store keeps no rows).

        ``test_size`` counts batches (an int) or is a fraction of them; the batches are
        shuffled with ``seed`` (default: the store's) and cut, as
        :meth:`Batches.split <lstm_data.Batches.split>` cuts rows with ``by="rows"``; ``k``
        and ``fold`` give fold ``fold`` of ``k``. The training part permutes its batches
        per epoch when the store does, the validation part never. See
        :func:`~lstm_data.store.parts.split_stored`.
        """
        return split_stored(self, test_size, seed, by=by, k=k, fold=fold)

    def folds(self, k: int, *, seed: int | None = None) -> list[tuple[StoredPart, StoredPart]]:
        """The ``k`` train/validation pairs of k-fold cross-validation by batch (:meth:`split` with each ``fold``)."""
        return fold_stored(self, k, seed=seed)

    def _refuse_if_replaced(self, exc: FormatError) -> None:
        """Raise a ``FormatError`` saying so if the store at the path is no longer the one this
        handle opened (written anew, or removed): a failed read then says nothing of damage."""
        if self._token is None:  # not known at open: nothing to compare
            return
        now = store_token(self.path, self.name, self.read.remote_settings())
        if now == self._token:
            return
        what = "removed" if now is None else "replaced by another store (written anew there, e.g. by " \
                                              "lstm-data precompute --overwrite)"
        raise FormatError(f"the store was {what} since this handle opened it: its batches cannot be "
                          "read any more; open the store again (open_batches) to read what is there "
                          "now", file=self.name) from exc

    def signature(self) -> dict[str, OutputSignature]:
        return self.spec.signature()

    def __repr__(self) -> str:
        return (f"PrecomputedBatches({redact(self.path)!r}, {counted(len(self), 'batch')} of {self.batch_size}, "
                f"seed={self.seed}, epoch={self.epoch})")

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "permute": self.permute, "epoch": self.epoch, "read": self.read}

    def __setstate__(self, state: dict[str, Any]) -> None:
        permute = state["permute"] if "permute" in state else state["shuffle"]  # pickled by an earlier release
        type(self).__init__(self, state["path"], permute=permute, read=state.get("read"))
        self.epoch = state["epoch"]


def _store_options(read: ReadOptions | None, where: str) -> ReadOptions:
    """``read`` (default: none set) once checked to hold only options of batch stores."""
    if read is None:
        return ReadOptions()
    if not isinstance(read, ReadOptions):
        raise OptionError(f"{where}: read must be a ReadOptions, got {type(read).__name__}")
    read.reader_keywords("batch store", where)  # an option of another format: an OptionError
    return read


def _flat_record(meta: dict[str, Any]) -> dict[str, Any]:
    """The store's record with its order settings at the top level, as :meth:`Order.to_dict` names them."""
    flat = dict(meta)
    bucketing = meta.get("bucketing") or {}
    if bucketing:
        flat.update(bucket_by=bucketing.get("bucket_by"), bucket_window=bucketing.get("bucket_window"))
    flat.update(meta.get("order") or {})
    return flat


@refuses_renamed("open_batches")
def open_batches(path: str | os.PathLike[str], *, spec: BatchSpec | None = None, order: Order | None = None,
                 dataset: Dataset | None = None, permute: bool = True, read: ReadOptions | None = None) -> PrecomputedBatches:
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
    read
        How the store is read (:class:`~lstm_data.io.read_options.ReadOptions`):
        ``trust_unchecked=True`` opens a store without a manifest (written before
        manifests) without the warning naming what is not checked there; a store at
        a URL is read with its ``connect_timeout``, ``read_timeout`` and ``retries``
        (as ``lstm_data.open`` reads one).

    Returns
    -------
    PrecomputedBatches
        The stored batches: indexable, iterable per epoch, shardable, as ``Batches``.

    Raises
    ------
    StoreMismatchError
        A given expectation differs from the record; the message names each one.
    FormatError
        Not a batch store, a damaged one, or one whose metadata requires a manifest
        that is missing (the message names it).

    Warns
    -----
    UncheckedStoreWarning
        The store has no manifest: the warning names what is not checked (see ``read``).
    """
    read = _store_options(read, redact(str(path)))
    meta = read_metadata(path, read)
    expected = {"spec": None if spec is None else spec.to_dict(),
                "fingerprint": None if dataset is None else fingerprint(dataset)}
    if order is not None:
        if not isinstance(order, Order):
            raise OptionError(f"open_batches: order must be an Order, got {type(order).__name__}")
        expected.update({k: v for k, v in order.to_dict().items() if k not in Order.NOT_IN_BATCHES})
    compare_metadata(_flat_record(meta), expected, where=str(path))
    return PrecomputedBatches(path, permute=permute, read=read)
