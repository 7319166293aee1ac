"""torch adapter: :class:`TorchBatches`, a map-style ``torch.utils.data.Dataset`` of whole batches.

Example
-------
>>> loader = DataLoader(TorchBatches(batches), batch_size=None, num_workers=2)  # doctest: +SKIP
>>> for epoch in range(n):                                                   # doctest: +SKIP
...     loader.dataset.set_epoch(epoch)        # before iterating: workers start per epoch
...     for inputs, targets, weights in loader: ...

Item ``i`` is batch ``i`` as ``(inputs, targets, weights)`` dicts of tensors:
float data as float32 (or the spec's float64), lengths as int64. Use
``batch_size=None`` in the ``DataLoader``: the batches are already batched.
Leave ``persistent_workers`` off: persistent workers keep the copy of this
object they started with, so :meth:`TorchBatches.set_epoch` would not reach
them and every epoch would repeat the first one's order.
"""
from __future__ import annotations

from typing import Any

import numpy as np

try:
    import torch
    from torch.utils.data import Dataset as _TorchDataset
except ImportError as _exc:  # pragma: no cover - depends on the environment
    raise ImportError("lstm_data.torch needs PyTorch: pip install 'lstm_data[torch]'") from _exc

__all__ = ["TorchBatches"]


def _tensors(part: dict) -> dict:
    """Tensors sharing each array's memory, or copies of read-only arrays (a RAM cache's)."""
    return {k: torch.from_numpy(np.ascontiguousarray(v)) if v.flags.writeable else torch.tensor(v)
            for k, v in part.items()}


class TorchBatches(_TorchDataset):
    """Whole batches of a ``Batches`` (or precomputed store) as torch tensors.

    Parameters
    ----------
    batches
        A :class:`~lstm_data.batching.batches.Batches` or the result of
        :func:`lstm_data.open_batches`.
    """

    def __init__(self, batches: Any) -> None:
        self.batches = batches

    def __len__(self) -> int:
        return len(self.batches)

    def __getitem__(self, index: int) -> tuple[dict, dict, dict]:
        inputs, targets, weights = self.batches[index]
        return _tensors(inputs), _tensors(targets), _tensors(weights)

    def set_epoch(self, epoch: int) -> None:
        """Use the row order of ``epoch`` (call before creating the epoch's iterator)."""
        self.batches.set_epoch(epoch)
