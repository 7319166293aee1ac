"""Train and validation parts, and k folds, of stored batches: :class:`StoredPart`.

A store keeps batches, not the rows they were built from, so its splits are cut by
batch: :func:`split_stored` shuffles the stored batches with ``seed`` (the store's
seed by default) and cuts them as :meth:`Batches.split <lstm_data.Batches.split>`
cuts rows with ``by="rows"`` (a fraction or a count of batches, or fold ``fold`` of
``k``). Each part is a view over the store, as torch's ``Subset``: it reads the
stored batches it holds, in stored order in epoch 0; the training part permutes them
per epoch when the store does (``permute``), the validation part never (as the
validation view of ``Batches`` is not shuffled). A part shards, resumes, splits again
and pickles (as its store's path, read options and batch numbers) like the store.
"""
from __future__ import annotations

import hashlib
import threading
from typing import Any, Protocol

import numpy as np

from lstm_data._util.checks import check_count, check_index
from lstm_data._util.once_cache import OnceCache
from lstm_data.batching.order.splits import split_positions
from lstm_data.batching.spec.batch_spec import Batch, BatchSpec, OutputSignature
from lstm_data.errors import OptionError
from lstm_data.store.shards import StoreEpochs

__all__ = ["StoredBatches", "StoredPart", "split_stored", "fold_stored"]


class StoredBatches(Protocol):
    """What a part reads off the batches it is cut from: a store, or a part of one."""

    meta: dict[str, Any]
    spec: BatchSpec
    seed: int
    batch_size: int
    permute: bool

    def __len__(self) -> int: ...

    def stored_batch(self, slot: int) -> Batch: ...

    @property
    def recorded_elements(self) -> np.ndarray | None: ...

    def identity(self) -> dict[str, object]: ...


def split_stored(source: StoredBatches, test_size: int | float | None = None, seed: int | None = None, *,
                 by: str = "batches", k: int | None = None, fold: int = 0) -> tuple[StoredPart, StoredPart]:
    """Train and validation parts of stored batches, cut by batch.

    Parameters
    ----------
    source
        The stored batches (:func:`lstm_data.open_batches`, or a part of them).
    test_size
        Validation batches: a count (an int) or a fraction of the stored batches (a
        float, ``int(n * (1 - test_size))`` train); not with ``k``.
    seed
        Seed of the shuffle of the batches (default: the store's seed).
    by
        ``"batches"``, the only cut a store allows: it keeps batches, not the rows
        (nor the files or keys) they were built from.
    k, fold
        ``k`` folds of the shuffled batches; the validation part is fold ``fold``.

    Returns
    -------
    train, validation : StoredPart
        Disjoint parts covering the stored batches.

    Raises
    ------
    OptionError
        ``by`` is not ``"batches"``; neither or both of ``test_size`` and ``k``; a bad
        ``k`` or ``fold``.
    ValueError
        A negative ``test_size``, a count above the batches, a fraction above 1.
    """
    if by != "batches":
        raise OptionError(f"split of stored batches: by={by!r} needs the rows of the data, but a store keeps "
                          "batches, not rows: split by='batches' (the default), or split Batches(dataset, spec, "
                          "order) by rows, files or key and precompute each part")
    seed = source.seed if seed is None else check_count(seed, "seed")
    train, val = split_positions(None, np.arange(len(source), dtype=np.intp), by="rows", test_size=test_size,
                                 seed=seed, k=k, fold=fold)
    return (StoredPart(source, np.sort(train), permute=source.permute),
            StoredPart(source, np.sort(val), permute=False))


def fold_stored(source: StoredBatches, k: int, *, seed: int | None = None) -> list[tuple[StoredPart, StoredPart]]:
    """The ``k`` train/validation pairs of k-fold cross-validation by batch (:func:`split_stored` with each fold)."""
    return [split_stored(source, seed=seed, k=k, fold=i) for i in range(k)]


class StoredPart(StoreEpochs):
    """Some of the batches of a store (a split or fold of it), with the store's interface.

    Parameters
    ----------
    source
        The store, or a part of it.
    slots
        The batches of ``source`` this part holds (in ``source``'s stored order).
    permute
        Permute this part's batches each epoch after the first.
    """

    def __init__(self, source: StoredBatches, slots: np.ndarray, *, permute: bool) -> None:
        self.source = source
        self.part = np.asarray(slots, dtype=np.intp)
        self.meta, self.spec = source.meta, source.spec
        self.seed, self.batch_size = source.seed, source.batch_size
        self.permute = bool(permute)
        self.epoch = 0
        self._setup()

    def _setup(self) -> None:
        elements = self.source.recorded_elements
        self._elements = None if elements is None else elements[self.part]
        self._slots: OnceCache[tuple[int, bool], np.ndarray] = OnceCache(keep=2)
        parent = str(self.source.identity().get("identity"))
        self._digest = hashlib.sha256((parent + "/batches:").encode() + self.part.astype(np.int64).tobytes()
                                      ).hexdigest()[:32]
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.part)

    def stored_batch(self, slot: int) -> Batch:
        """Stored batch ``slot`` of this part (its epoch-0 batch ``slot``)."""
        return self.source.stored_batch(int(self.part[check_index(slot, len(self.part))]))

    def batch(self, index: int, epoch: int | None = None) -> Batch:
        """Batch ``index`` of ``epoch`` (default: the current :attr:`epoch`), read from the store."""
        epoch = self.epoch if epoch is None else check_count(epoch, "epoch")
        return self.stored_batch(int(self.slots(epoch)[check_index(index, len(self))]))

    def __getitem__(self, index: int) -> Batch:
        return self.batch(index)

    def signature(self) -> dict[str, OutputSignature]:
        return self.spec.signature()

    def split(self, test_size: int | float | None = None, seed: int | None = None, *, by: str = "batches",
              k: int | None = None, fold: int = 0) -> tuple[StoredPart, StoredPart]:
        """Train and validation parts of this part (see :func:`split_stored`)."""
        return split_stored(self, test_size, seed, by=by, k=k, fold=fold)

    def folds(self, k: int, *, seed: int | None = None) -> list[tuple[StoredPart, StoredPart]]:
        """The ``k`` train/validation pairs of this part (see :func:`fold_stored`)."""
        return fold_stored(self, k, seed=seed)

    def __repr__(self) -> str:
        return f"StoredPart({len(self)} of {len(self.source)} stored batches, epoch={self.epoch})"

    def __getstate__(self) -> dict[str, Any]:
        return {"source": self.source, "part": self.part, "permute": self.permute, "epoch": self.epoch}

    def __setstate__(self, state: dict[str, Any]) -> None:
        type(self).__init__(self, state["source"], state["part"], permute=state["permute"])
        self.epoch = state["epoch"]

