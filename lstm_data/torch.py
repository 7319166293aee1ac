"""``lstm_data.torch``: the public path of :mod:`lstm_data.adapters.torch` (needs the ``torch`` extra)."""
from lstm_data.adapters.torch import EpochSampler, TorchBatches, nested_from_packed

__all__ = ["TorchBatches", "EpochSampler", "nested_from_packed"]
