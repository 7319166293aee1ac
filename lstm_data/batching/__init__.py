"""From rows to padded batches (the "Specs and batches" page of the documentation).

The package is laid out by stage, each importing only from the stages below it (an
import-linter contract in ``pyproject.toml``):

``epochs``
    :class:`Batches`: the padded batches of an epoch, by index; splits, folds, shards, resume.
``building``
    :class:`~lstm_data.batching.building.builder.BatchBuilder` and block sources: rows to one batch.
``order``
    :class:`~lstm_data.batching.order.options.Order` and the plans of its stages.
``spec``
    :class:`BatchSpec` and its fields :class:`Scalars`, :class:`Ragged`, :class:`Standardize`.
"""
from lstm_data.batching.epochs.batches import Batches
from lstm_data.batching.spec.batch_spec import BatchSpec
from lstm_data.batching.spec.fields import Ragged, Scalars, Standardize

__all__ = ["Batches", "BatchSpec", "Ragged", "Scalars", "Standardize"]
