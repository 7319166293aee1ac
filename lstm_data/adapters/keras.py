"""Keras 3 adapter: :class:`KerasBatches`, a ``keras.utils.PyDataset`` over ``Batches``.

Example
-------
>>> from lstm_data.keras import KerasBatches
>>> train = KerasBatches(Batches(ds, spec, seed=1), workers=2)   # doctest: +SKIP
>>> model.fit(train, epochs=10, shuffle=False)                     # doctest: +SKIP

Each item is ``(inputs, targets, weights)``: dicts keyed by the spec's output
names, so a functional model whose ``Input`` layers carry those names (see
:func:`keras_inputs`) and whose outputs are a dict keyed by the target names
(``keras.Model(inputs, {"target_total": out})``) trains on it directly. Pass
``shuffle=False`` to ``fit``: the rows are already shuffled per epoch, from the
seed, and Keras would reorder the batches with an unseeded generator. With
``use_multiprocessing=True`` the object is pickled to the worker processes; an
in-RAM dataset then travels as memory-mapped files (:mod:`lstm_data.data.shared`)
and an on-disk dataset as its path, never as pickled arrays.
"""
from __future__ import annotations

from typing import Any

try:
    import keras
except ImportError as _exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "lstm_data.keras needs Keras 3: pip install 'lstm_data[keras]' plus a backend "
        "(e.g. 'lstm_data[keras,torch]' with KERAS_BACKEND=torch)") from _exc

__all__ = ["KerasBatches", "keras_inputs"]


class KerasBatches(keras.utils.PyDataset):
    """A ``keras.utils.PyDataset`` serving the batches of a ``Batches`` (or precomputed store).

    Parameters
    ----------
    batches
        A :class:`~lstm_data.batching.batches.Batches` or the result of
        :func:`lstm_data.open_batches`.
    workers, use_multiprocessing, max_queue_size
        Passed to ``PyDataset``: Keras builds batches on ``workers`` threads
        (processes with ``use_multiprocessing``) ahead of training.
    weights
        Return the per-target weights as the third item (default). ``False``
        returns ``(inputs, targets)``.
    """

    def __init__(self, batches: Any, workers: int = 1, use_multiprocessing: bool = False,
                 max_queue_size: int = 10, weights: bool = True) -> None:
        super().__init__(workers=workers, use_multiprocessing=use_multiprocessing,
                         max_queue_size=max_queue_size)
        self.batches = batches
        self.with_weights = bool(weights)

    def __len__(self) -> int:
        return len(self.batches)

    def __getitem__(self, index: int):
        inputs, targets, weights = self.batches[index]
        return (inputs, targets, weights) if self.with_weights else (inputs, targets)

    def on_epoch_end(self) -> None:
        self.batches.on_epoch_end()

    @property
    def num_batches(self) -> int:
        return len(self.batches)


def keras_inputs(spec) -> dict:
    """One named ``keras.Input`` per input of ``spec``, shaped and typed by its signature."""
    return {name: keras.Input(shape=sig.sample_shape, dtype=str(sig.dtype), name=name)
            for name, sig in spec.signature().items() if sig.role == "input"}
