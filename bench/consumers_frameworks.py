"""Keras and torch driving our batches as they really do (part of the ``consumers`` stage).

* Keras 3: a ``KerasBatches`` (a ``PyDataset``) iterated by Keras's own epoch
  iterator, the object ``model.fit`` loops over (``TorchEpochIterator`` under the
  torch backend, which wraps the dataset's generator in a torch ``DataLoader``
  and converts every array), without a model: the data path alone.
* torch: ``DataLoader(TorchBatches, batch_size=None, sampler=data.sampler,
  num_workers=0|2, pin_memory=False)``, workers persistent as in the README;
  and the same-run ceiling of ``num_workers=2`` over ``0``: ``num_workers=2`` over a
  dataset that builds each batch and returns only its index (a transfer that costs
  nothing), so no way of moving batches between processes can do better
  (``num_workers=0`` over it is timed too: a batch that outlives the next one's
  build costs the in-process loop its cache-warm buffers).

Each maker returns ``{name: one pass}`` (one epoch per call, epochs advancing as
in training) or ``{}`` with a note when the framework is missing.
"""
from __future__ import annotations

import gc
import os
import warnings
from typing import Callable

__all__ = ["keras_passes", "torch_passes", "torch_ceiling_passes", "epoch_of", "close_loaders"]


def epoch_of(iterable) -> Callable[[], None]:
    """One pass over ``iterable`` (batches dropped as the loop moves on)."""
    def run() -> None:
        for _ in iterable:
            pass
    return run


def _keras_epoch_iterator(data):
    """Keras's own epoch iterator for ``data``, as ``fit`` makes it for the active backend."""
    import keras

    if keras.backend.backend() == "torch":
        from keras.src.backend.torch.trainer import TorchEpochIterator
        return TorchEpochIterator(x=data, shuffle=False)
    from keras.src.trainers.epoch_iterator import EpochIterator
    return EpochIterator(x=data, shuffle=False)


def keras_passes(make_batches: Callable[[], object], workers=(1, 2),
                 max_queue_size: int = 10) -> tuple[dict[str, Callable[[], None]], str | None]:
    """One Keras epoch per call for ``KerasBatches(threads=w, max_queue_size=...)``."""
    os.environ.setdefault("KERAS_BACKEND", "torch")
    try:
        import keras  # noqa: F401

        from lstm_data.adapters.keras import KerasBatches
    except ImportError as exc:
        return {}, f"Keras rows skipped: {exc}"
    cases = {}
    for w in workers:
        data = KerasBatches(make_batches(), threads=w, max_queue_size=max_queue_size)
        try:
            it = _keras_epoch_iterator(data)
        except ImportError as exc:  # Keras's internals moved
            return {}, f"Keras rows skipped: no epoch iterator ({exc})"
        cases[f"Keras PyDataset loop, KerasBatches(workers={w}), max_queue_size={max_queue_size}"] = \
            epoch_of(it)
    return cases, None


def torch_passes(make_batches: Callable[[], object], workers=(0, 2), transfer: str = "shared",
                 threads: int = 1) -> tuple[dict[str, Callable[[], None]], list, str | None]:
    """One epoch per call of ``DataLoader(TorchBatches(...), num_workers=w)``; also the loaders
    (to shut their workers down)."""
    try:
        from torch.utils.data import DataLoader

        from lstm_data.adapters.torch import TorchBatches
    except ImportError as exc:
        return {}, [], f"torch rows skipped: {exc}"
    cases, loaders = {}, []
    for w in workers:
        try:
            data = TorchBatches(make_batches(), worker_transfer=transfer, threads=threads)
        except TypeError:  # a version before these options: torch's own transfer, no threads
            if threads > 1:
                continue
            data = TorchBatches(make_batches())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loader = DataLoader(data, batch_size=None, sampler=data.sampler, num_workers=w,
                                pin_memory=False, persistent_workers=w > 0)
        loaders.append(loader)
        what = "" if w == 0 else f", worker_transfer={transfer!r}"
        dataset = "TorchBatches" if threads == 1 else f"TorchBatches(threads={threads})"
        cases[f"torch DataLoader({dataset}, num_workers={w}){what}"] = epoch_of(loader)
    return cases, loaders, None


def close_loaders(loaders: list) -> None:
    """Stop the persistent worker processes of ``loaders`` (their iterators shut them down)."""
    for loader in loaders:
        loader._iterator = None
    gc.collect()


class _BuildOnly:
    """A map-style dataset that builds batch ``(epoch, i)`` and returns ``i`` (nothing to move)."""

    def __init__(self, batches) -> None:
        self.batches = batches

    def __len__(self) -> int:
        return len(self.batches)

    def __getitem__(self, key):
        from lstm_data.adapters.epochs import batch_of
        epoch, index = key
        batch_of(self.batches, index, epoch)
        return index


def torch_ceiling_passes(make_batches: Callable[[], object], workers=(0, 2),
                         ) -> tuple[dict[str, Callable[[], None]], list]:
    """One epoch per call of ``DataLoader(build-only dataset, num_workers=w)`` (see above)."""
    try:
        from torch.utils.data import DataLoader

        from lstm_data.adapters.torch import TorchBatches
    except ImportError:
        return {}, []
    cases, loaders = {}, []
    for w in workers:
        batches = make_batches()
        loader = DataLoader(_BuildOnly(batches), batch_size=None,
                            sampler=TorchBatches(batches).sampler, num_workers=w,
                            pin_memory=False, persistent_workers=w > 0)
        loaders.append(loader)
        cases[f"torch DataLoader(build only, index returned, num_workers={w})"] = epoch_of(loader)
    return cases, loaders
