"""Compile once: :func:`compile` turns a rows view, a spec and an order into a :class:`Pipeline`.

A pipeline is everything that does not change from one epoch to the next: the spec
checked against the data (once), the rows it orders, the order's stages and their
epoch plans, the batch builder (and the block source of a block shuffle), the row
weights, and the identity a saved state is checked against. It builds batch ``slot``
of an epoch's plan; :class:`~lstm_data.batching.epochs.batches.Batches` adds the epoch
counter, the RAM cache and pickling on top.
"""
from __future__ import annotations

import numpy as np

from lstm_data.batching.building.blocks import BlockSource
from lstm_data.batching.building.builder import BatchBuilder
from lstm_data.batching.building.empty_rows import drop_empty_rows, make_one_step
from lstm_data.batching.building.noise import make_augmenter
from lstm_data.batching.epochs.data_digest import part_digests
from lstm_data.batching.epochs.identity import (data_fingerprint, full_data, identity_digest, legacy_digests,
                                                order_settings)
from lstm_data.batching.epochs.weights import resolve_weights
from lstm_data.batching.order.bucket_lengths import BucketLengths, bucket_widths
from lstm_data.batching.order.bucketing import Bucketing, make_bucketing
from lstm_data.batching.order.budget import ChosenWidths
from lstm_data.batching.order.options import Order
from lstm_data.batching.order.plan import EpochPlans, Plan
from lstm_data.batching.order.policies import order_stages
from lstm_data.batching.order.rows_view import RowsView
from lstm_data.batching.order.sampling import SampledRows, Sampling
from lstm_data.batching.spec.batch_spec import Arrays, Batch, BatchSpec, ResolvedField
from lstm_data.batching.spec.sizes import check_batch_bytes

__all__ = ["Pipeline", "compile"]


def compile(view: RowsView, spec: BatchSpec, order: Order) -> "Pipeline":  # noqa: A001 - the verb of the design
    """The :class:`Pipeline` of ``spec`` and ``order`` over ``view``: the spec validated once.

    Parameters
    ----------
    view
        The rows to batch (the spec's derived values and selection are applied to its data here).
    spec
        What a batch looks like.
    order
        The order, with ``shuffle`` resolved and a seed filled in.

    Returns
    -------
    Pipeline
    """
    derived = spec.derivation(view.dataset, view.file_bounds)  # derived variables, the selection's rows
    dataset = derived.dataset
    if dataset is not view.dataset:
        view = RowsView(dataset, view.rows, bounds=derived.bounds)
    fields = spec.validate(dataset)
    check_batch_bytes(spec.fields(), spec.pad_to_multiple_of, order.batch_size, len(dataset),
                      widths=bucket_widths(order, fields))
    bucketing = make_bucketing(spec, fields, order.bucket_by, order.bucket_window, spec.pad_to_multiple_of,
                               order.shuffle)
    if bucketing is not None:  # the bucketed group's fields are padded per batch
        spec = bucketing.spec
        fields = spec.validate(dataset)
    return Pipeline(view, spec, fields, order, bucketing)


class Pipeline:
    """The compiled batches of a view: stages, epoch plans, builder and identity (made by :func:`compile`).

    Attributes
    ----------
    data : RowsView
        The rows batched, in view order (rows a ``"drop"`` field has empty left out).
    rows : RowsView
        The rows the plans order (``data`` in file order for a block shuffle).
    spec, fields, order
        The spec the batches are built with (with ``bucket_by``, its group padded per
        batch), its outputs resolved on the data, and the order.
    builder, blocks, plans
        The batch builder, the block source of ``shuffle="block"`` (else ``None``) and
        the epoch plans of the order's stages.
    bucketing, weights
        The order's length bucketing (or ``None``) and the row weights (or ``None``).
    """

    def __init__(self, view: RowsView, spec: BatchSpec, fields: list[ResolvedField], order: Order,
                 bucketing: Bucketing | None) -> None:
        self.spec, self.fields, self.order, self.bucketing = spec, fields, order, bucketing
        self.dataset = view.dataset
        self.builder = BatchBuilder(self.dataset, fields, nan_to=spec.nan_to,
                                    pad_to_multiple_of=spec.pad_to_multiple_of)
        rows = drop_empty_rows(fields, self.dataset, view.rows)  # Ragged(empty="drop")
        self.data = RowsView(self.dataset, rows, lengths=self.builder.row_lengths, bounds=view.file_bounds)
        self.rows = self.data.sorted() if order.shuffle == "block" else self.data
        self.weights = resolve_weights(self.dataset, order.weights)
        self.one_step = make_one_step(fields, self.builder.row_lengths, spec.nan_to, self.padded_width)
        self.augmenter = make_augmenter(spec, fields, self.builder.row_lengths)
        self.stages = order_stages(order, self.rows, spec, fields, self.builder.width)
        assert order.seed is not None  # filled in before compiling
        self.plans = EpochPlans(self.stages, self.rows.n_rows, seed=order.seed, shuffle=order.shuffle,
                                batch_size=order.batch_size, drop_last=order.drop_last,
                                first_epoch_only=order.cache == "ram")
        self.widths: BucketLengths | None = next((s.widths for s in self.stages
                                                  if isinstance(s, ChosenWidths)), None)
        self.blocks: BlockSource | None = None
        if order.shuffle == "block":
            layout = self.rows.blocks(order.batch_size, order.block_rows, order.window_rows)
            self.blocks = BlockSource(self.dataset, self.rows.rows, fields, layout, self.plans, nan_to=spec.nan_to,
                                      read_ahead=order.read_ahead, pad_to_multiple_of=spec.pad_to_multiple_of)
            self.blocks.next_epoch_ahead = order.cache != "ram"  # cached batches never come back after epoch 0
        self._target_names = spec.target_names  # every batch's weights are keyed by them
        self._identity: tuple[str, list[str]] | None = None  # made when a state first asks
        self._parts: list[tuple[str, str]] | None = None

    @property
    def n_rows(self) -> int:
        """Rows batched."""
        return self.data.n_rows

    @property
    def sampling(self) -> Sampling | None:
        """The draws of ``Order.sample``, or ``None``."""
        return next((s.sampling for s in self.stages if isinstance(s, SampledRows)), None)

    def __len__(self) -> int:
        return len(self.plans)

    def plan(self, epoch: int) -> Plan:
        """The plan of ``epoch``: positions into :attr:`rows`, made once."""
        return self.plans.plan(epoch)

    def span(self, slot: int, epoch: int) -> tuple[int, int]:
        """Epoch positions ``lo, hi`` of the batch in ``slot``."""
        return self.plan(epoch).span(slot, self.order.batch_size)

    def positions(self, slot: int, epoch: int) -> np.ndarray:
        """Positions into :attr:`rows` of the batch in ``slot`` of ``epoch``."""
        lo, hi = self.span(slot, epoch)
        positions: np.ndarray = self.plan(epoch).order[lo:hi].astype(np.intp, copy=False)
        return positions

    def rows_at(self, positions: np.ndarray) -> np.ndarray:
        """The dataset rows at plan ``positions``."""
        return positions if self.rows.rows is None else self.rows.rows[positions]

    def padded_width(self, field: ResolvedField, longest: int) -> int:
        """The padded length of a Ragged output in a batch whose longest row has ``longest`` elements."""
        return self.builder.chosen_width(field, longest, self.widths)

    def build(self, slot: int, epoch: int, order_epoch: int, arena: np.ndarray | None = None) -> Batch:
        """The batch in ``slot`` of ``epoch``'s plan (before the spec's noise)."""
        plan = self.plan(epoch)
        positions = self.positions(slot, epoch)
        rows = self.rows_at(positions)
        if self.blocks is not None:
            lo = self.span(slot, epoch)[0]
            end = self.span(len(self) - 1, epoch)[1]  # short of the plan's end with drop_last
            inputs, targets = self.blocks.build(plan, order_epoch, lo, lo + len(positions), plan.widths, end=end)
        else:
            inputs, targets = self.builder.build(rows, arena, plan.widths)
        if self.one_step is not None:
            self.one_step.apply(inputs, targets, rows)
        return inputs, targets, self._weights_for(rows)

    def _weights_for(self, rows: np.ndarray) -> Arrays:
        w = np.ones(len(rows), dtype=np.float32) if self.weights is None else self.weights[rows]
        return {name: w for name in self._target_names}

    # -- identity: what a saved state is checked against ------------------------------------------
    def identity(self) -> dict[str, object]:
        """The order's settings by name, the rows, one digest of spec, settings and data, and the digest
        of each file part's values."""
        settings = order_settings(self.order)
        if self._identity is None:
            parts = [digest for _, digest in self.data_parts()]
            sampled = data_fingerprint(self.dataset, self.data.rows)
            self._identity = (identity_digest(self.spec, settings, full_data(sampled, parts)), parts)
        digest, parts = self._identity
        return {**settings, "n_rows": self.n_rows, "identity": digest, "data_parts": list(parts)}

    def data_parts(self) -> list[tuple[str, str]]:
        """Each file part's label and the digest of its values, made once."""
        if self._parts is None:
            self._parts = part_digests(self.dataset, self.data.file_bounds)
        return self._parts

    def legacy_identities(self, state_format: int) -> set[str]:
        """The identity digests of these batches in an earlier state format (by its own recipe)."""
        return legacy_digests(self.spec, order_settings(self.order), data_fingerprint(self.dataset, self.data.rows),
                              state_format)

