"""Batches by index, epoch after epoch: :class:`~lstm_data.batching.epochs.batches.Batches` and its views.

The top stage of :mod:`lstm_data.batching`.

Modules
-------
batches, views, source
    :class:`Batches`; splits, folds and shards of any batch source; the batch-source protocol.
iteration, prefetch
    Iterating an epoch, building ahead on worker threads.
shard, resume, identity
    Ranks of a distributed run; saved states and what they are checked against.
legacy_options, weights
    Keyword spellings of earlier releases; per-row weights and the RAM cache's frozen batches.
"""
