"""From rows to padded batches (the "Specs and batches" page of the documentation).

Modules
-------
spec, fields
    :class:`BatchSpec` (the declared outputs) and its fields :class:`Scalars`, :class:`Ragged`,
    with per-variable :class:`Standardize` (field_forms).
order, block_shuffle
    Each epoch's row order (seeded shuffles, train/validation splits) and
    ``shuffle="block"`` for on-disk data.
builder
    :class:`BatchBuilder`: one batch from dataset rows, in one kernel call.
prefetch, epoch
    Building ahead on worker threads; the epoch counter shared by batch sequences.
batches
    :class:`Batches`: the padded batches of an epoch, by index.
"""
from lstm_data.batching.batches import Batches
from lstm_data.batching.fields import Standardize
from lstm_data.batching.spec import BatchSpec, Ragged, Scalars

__all__ = ["Batches", "BatchSpec", "Ragged", "Scalars", "Standardize"]
