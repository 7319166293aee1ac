"""Compile once: :func:`compile` turns a rows view, a spec and an order into a :class:`Pipeline`.

A pipeline is everything that does not change from one epoch to the next: the spec
checked against the data (once), the rows it orders, the order's stages and their
epoch plans, the batch builder (and the block source of a block shuffle), the row
weights, and the identity a saved state is checked against. It builds batch ``slot``
of an epoch's plan; :class:`~lstm_data.batching.epochs.batches.Batches` adds the epoch
counter, the RAM cache and pickling on top.
"""
from __future__ import annotations

import json
from typing import Any, Mapping, TypeVar

import numpy as np

from lstm_data.batching.building.blocks import BlockSource
from lstm_data.batching.building.builder import BatchBuilder
from lstm_data.batching.building.empty_rows import drop_empty_rows, make_one_step
from lstm_data.batching.building.noise import make_augmenter
from lstm_data.batching.epochs.data_digest import part_digests
from lstm_data._util.docs import shares_doc
from lstm_data._util.forward import Forward
from lstm_data.batching.epochs.identity import (data_fingerprint, full_data, identity_digest, legacy_digests,
                                                order_settings)
from lstm_data.batching.epochs.resume import batch_elements
from lstm_data.batching.epochs.source import BatchSource
from lstm_data.batching.epochs.weights import resolve_weights
from lstm_data.batching.order.bucket_lengths import BucketLengths, bucket_widths
from lstm_data.batching.order.bucketing import Bucketing, make_bucketing
from lstm_data.batching.order.budget import ChosenWidths
from lstm_data.batching.order.options import Order
from lstm_data.batching.order.plan import EpochPlans, Plan
from lstm_data.batching.order.policies import order_stages, policy_stage
from lstm_data.batching.order.rows_view import RowsView
from lstm_data.batching.order.sampling import SampledRows, Sampling
from lstm_data.batching.spec.batch_spec import Arrays, Batch, BatchSpec, OutputSignature, ResolvedField
from lstm_data.data.dataset import Dataset
from lstm_data.errors import OptionError
from lstm_data.batching.spec.sizes import check_batch_bytes

__all__ = ["Pipeline", "compile", "CompiledReads"]


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
            arrangement = self.rows.blocks(order.batch_size, order.block_rows, order.window_rows)
            self.blocks = BlockSource(self.dataset, self.rows.rows, fields, arrangement, self.plans,
                                      nan_to=spec.nan_to, read_ahead=order.read_ahead, pad_to_multiple_of=spec.pad_to_multiple_of)
            self.blocks.next_epoch_ahead = order.cache != "ram"  # cached batches never come back after epoch 0
        self._identity: tuple[str, list[str]] | None = None  # the data's digests, made when a state first asks
        self._own_identity: dict[str, object] | None = None
        self._target_names = spec.target_names  # every batch's weights are keyed by them
        self._parts: list[tuple[str, str]] | None = None
        self._end_of: tuple[Plan, int] | None = None  # the last plan built from and its batches' end

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
        plan = self.plan(epoch)  # once: each look-up takes the plan cache's lock
        lo, hi = plan.span(slot, self.order.batch_size)
        hi = max(lo, min(hi, len(plan.order)))  # as the slice plan.order[lo:hi] takes them
        if self.blocks is not None:
            inputs, targets = self.blocks.build(plan, order_epoch, lo, hi, plan.widths, end=self._end(plan))
            if self.one_step is None and self.weights is None:  # no use for the batch's rows
                return inputs, targets, self._weights_for(None, hi - lo)
            rows = self.rows_at(plan.order[lo:hi].astype(np.intp, copy=False))
        else:
            rows = self.rows_at(plan.order[lo:hi].astype(np.intp, copy=False))
            inputs, targets = self.builder.build(rows, arena, plan.widths)
        if self.one_step is not None:
            self.one_step.apply(inputs, targets, rows)
        return inputs, targets, self._weights_for(rows, hi - lo)

    def _end(self, plan: Plan) -> int:
        """Where the positions of ``plan``'s batches end: short of its end with ``drop_last``
        (made once per plan)."""
        known = self._end_of  # read once: another thread may replace it
        if known is None or known[0] is not plan:
            known = self._end_of = (plan, plan.span(len(self) - 1, self.order.batch_size)[1])
        return known[1]

    def _weights_for(self, rows: np.ndarray | None, n: int) -> Arrays:
        """Each target's weights of the batch's ``n`` rows: ones without ``Order.weights``
        (then ``rows`` may be ``None``)."""
        w = np.ones(n, dtype=np.float32) if self.weights is None or rows is None else self.weights[rows]
        return {name: w for name in self._target_names}

    # -- identity: what a saved state is checked against ------------------------------------------
    def identity(self) -> dict[str, object]:
        """The order's settings by name, the rows, one digest of spec, settings and data, and the digest
        of each file part's values."""
        if self._own_identity is None:
            self._own_identity = self._identity_of(order_settings(self.order))
        parts = self._own_identity["data_parts"]
        return {**self._own_identity, "data_parts": list(parts) if isinstance(parts, list) else parts}

    def _identity_of(self, settings: dict[str, Any]) -> dict[str, object]:
        if self._identity is None:
            parts = [digest for _, digest in self.data_parts()]
            self._identity = (full_data(data_fingerprint(self.dataset, self.data.rows), parts), parts)
        data, parts = self._identity
        return {**settings, "n_rows": self.n_rows, "identity": identity_digest(self.spec, settings, data),
                "data_parts": list(parts)}

    def resumed_identity(self, saved: object, step: int) -> dict[str, object] | None:
        """The identity these batches would have with a state's ``policies``, when that state may resume here.

        It may when every policy whose options differ says its stage serves, before
        global step ``step``, the batches it served under the saved options
        (:meth:`~lstm_data.batching.order.plan.StageDefaults.unchanged_before`): the
        batches from the saved step on are then those of the options now.

        Parameters
        ----------
        saved
            The ``policies`` a state was saved with.
        step
            The first global step (``epoch * len + batch``) the resumed run serves.

        Returns
        -------
        dict or None
            :meth:`identity` with the saved policies (so the state's digest checks spec and
            data), or ``None`` when the change is not one the policies can take.
        """
        now = dict(self.order.policies or {})
        if self.order.cache == "ram" or not isinstance(saved, Mapping) or set(saved) != set(now):
            return None
        for name, options in now.items():
            old = saved[name]
            if _plain(old) == _plain(options):
                continue
            if not isinstance(old, Mapping):
                return None
            try:
                stage, before = (policy_stage(self.order, self.rows, self.spec, self.fields, self.builder.width,
                                              name, table) for table in (options, old))
            except OptionError:  # the saved options are not ones the policy takes
                return None
            first = getattr(stage, "unchanged_before", None)
            if before is None or first is None or (at := first(before)) is None or at < step:
                return None
        return self._identity_of({**order_settings(self.order), "policies": dict(saved)})
    def data_parts(self) -> list[tuple[str, str]]:
        """Each file part's label and the digest of its values, made once."""
        if self._parts is None:
            self._parts = part_digests(self.dataset, self.data.file_bounds)
        return self._parts

    def legacy_identities(self, state_format: int) -> set[str]:
        """The identity digests of these batches in an earlier state format (by its own recipe)."""
        return legacy_digests(self.spec, order_settings(self.order), data_fingerprint(self.dataset, self.data.rows),
                              state_format)



def _plain(value: object) -> object:
    """``value`` as it reads back from JSON (tuples as lists), for comparing saved options."""
    return json.loads(json.dumps(value, sort_keys=True, default=str))


T = TypeVar("T")
#: an attribute of a batch sequence read off its pipeline or order
_Read = Forward["CompiledReads", T]


class CompiledReads:
    """What a batch sequence over a :class:`Pipeline` reads off it and off its order, by name."""

    pipeline: Pipeline
    order: Order

    dataset: _Read[Dataset] = Forward(
        lambda b: b.pipeline.dataset, "The data batched (the spec's derived values applied).")
    spec: _Read[BatchSpec] = Forward(
        lambda b: b.pipeline.spec, "The spec the batches are built with (with ``bucket_by``, its group padded per batch).")
    fields: _Read[list[ResolvedField]] = Forward(
        lambda b: b.pipeline.fields, "The spec's outputs resolved on the data.")
    builder: _Read[BatchBuilder] = Forward(
        lambda b: b.pipeline.builder, "The builder that turns rows into batches.")
    n_rows: _Read[int] = Forward(lambda b: b.pipeline.n_rows, "Rows batched.")
    seed: _Read[int] = Forward(lambda b: b.pipeline.plans.seed, "The seed of every random order.")
    bucketing: _Read[Bucketing | None] = Forward(
        lambda b: b.pipeline.bucketing, "The order's length bucketing (``Order.bucket_by``), or ``None``.")
    file_bounds: _Read[np.ndarray | None] = Forward(
        lambda b: b.pipeline.data.file_bounds, "Row bounds of the data's files (``None`` for data of one file).")
    nan_to: _Read[float | None] = Forward(lambda b: b.pipeline.spec.nan_to, "The spec's ``nan_to``.")
    batch_size: _Read[int] = Forward(lambda b: b.order.batch_size, "Rows per batch.")
    shuffle: _Read[bool | str] = Forward(
        lambda b: b.order.shuffle, 'The shuffle in use: ``True``, ``False`` or ``"block"``.')
    drop_last: _Read[bool] = Forward(lambda b: b.order.drop_last, "Whether a short last batch is dropped.")
    cache: _Read[str | None] = Forward(
        lambda b: b.order.cache, '``"ram"`` when built batches are kept, else ``None``.')

    @property
    def view_rows(self) -> np.ndarray:
        """The dataset rows batched, in view order."""
        return self.pipeline.data.row_numbers()

    @property
    def varies_by_epoch(self) -> bool:
        """Whether epochs differ: a shuffled order, rows drawn anew (``sample``) or noise (``augment``)."""
        p = self.pipeline
        return self.order.shuffle is not False or p.sampling is not None or p.augmenter is not None

    def padded_width(self, field: ResolvedField, longest: int) -> int:
        """The padded length of a Ragged output in a batch whose longest row has ``longest`` elements.

        The builder's rule (``max_len``, ``pad_to_multiple_of``), then the order's
        ``bucket_lengths`` (never above the field's ``max_len``; not for a
        ``"packed"`` output, which has no padded slots).

        Parameters
        ----------
        field
            The output, as resolved by :meth:`BatchSpec.validate` (one of :attr:`fields`).
        longest
            Elements of the batch's longest row.

        Returns
        -------
        int
            The padded length of that output in such a batch.
        """
        return self.pipeline.padded_width(field, longest)

    @shares_doc(BatchSource.signature)
    def signature(self) -> dict[str, OutputSignature]:
        return self.spec.signature()

    @shares_doc(BatchSource.batch_elements)
    def batch_elements(self, epoch: int) -> np.ndarray:
        return batch_elements(self, epoch)  # type: ignore[arg-type]  # a sequence with rows_of and len
