"""The precomputed batch store: every batch of an epoch, built once, read by many trainings.

Modules
-------
format
    The store's metadata, the data fingerprint and the reuse check.
write
    :func:`precompute` (atomic: temporary name, then rename).
read
    :func:`open_batches` and :class:`PrecomputedBatches`, the ``Batches`` interface.
shards
    A store's epochs, its shards on any world size and its saved states.
"""
from lstm_data.store.read import PrecomputedBatches, open_batches
from lstm_data.store.write import PrecomputeSummary, precompute

__all__ = ["precompute", "open_batches", "PrecomputedBatches", "PrecomputeSummary"]
