"""The order of a run as its stages: the one factory :func:`order_stages`, and the built-in policies.

Every stage comes from a registered policy (:mod:`lstm_data.batching.order.registry`),
the library's own as a user's: each reads the order, the rows view and the spec's
outputs from its :class:`~lstm_data.batching.order.registry.PlanContext`. The built-in
ones, by rank: the epoch's rows (the block plan of ``shuffle="block"``, a permutation
for ``shuffle=True``; none for the data's order), class sampling (``Order.sample``),
length bucketing (``bucket_by``) and the element budget with the chosen padded lengths
(``max_elements``, ``bucket_lengths``: it cuts its own batches and so replaces
bucketing's); a policy named in ``Order.policies`` runs at its own rank.
"""
from __future__ import annotations

from typing import Callable, Mapping, Sequence

from lstm_data.batching.order import mixture  # noqa: F401  (registers the "mixture" policy)
from lstm_data.batching.order.block_plans import BlockRows
from lstm_data.batching.order.bucketing import Bucketed, make_bucketing
from lstm_data.batching.order.budget import ChosenWidths, order_extras
from lstm_data.batching.order.plan import Stage
from lstm_data.batching.order.registry import (OrderSettings, PlanContext, Policy, PolicyTable, find_policy,
                                               register_policy, registered_policies)
from lstm_data.batching.order.rows import ShuffledRows
from lstm_data.batching.order.rows_view import RowsView
from lstm_data.batching.order.sampling import SampledRows, Sampling
from lstm_data.batching.spec.batch_spec import BatchSpec
from lstm_data.batching.spec.outputs import ResolvedField

__all__ = ["order_stages", "policy_stage"]


def order_stages(order: OrderSettings, rows: RowsView, spec: BatchSpec, fields: Sequence[ResolvedField],
                 width: Callable[[ResolvedField, int], int], policies: Mapping[str, Mapping[str, object]] | None = None) -> list[Stage]:
    """The stages of ``order``'s epochs, first to last.

    Parameters
    ----------
    order
        The :class:`~lstm_data.batching.order.options.Order`, ``shuffle`` and ``seed`` resolved.
    rows
        The rows the plans order (sorted for a block shuffle, whose plans index rows in file order).
    spec, fields, width
        The spec, its outputs resolved on the data and their padded-width rule.
    policies
        ``Order.policies`` (default: the order's own).

    Returns
    -------
    list of Stage
    """
    asked = dict(policies if policies is not None else (getattr(order, "policies", None) or {}))
    stages: list[Stage] = []
    for policy in _policies(order, asked):
        context = PlanContext(order, rows, spec, fields, width, dict(asked.get(policy.name, {})))
        stage = policy.make(context)
        if stage is not None:
            stages.append(stage)
    return stages


def policy_stage(order: OrderSettings, rows: RowsView, spec: BatchSpec, fields: Sequence[ResolvedField],
                 width: Callable[[ResolvedField, int], int], name: str, options: Mapping[str, object]) -> Stage | None:
    """The stage policy ``name`` makes from ``options`` (not necessarily the order's own), as :func:`order_stages` would.

    Parameters
    ----------
    order, rows, spec, fields, width
        As for :func:`order_stages`.
    name, options
        A policy the order names, and a table of options for it.

    Returns
    -------
    Stage or None
    """
    table = getattr(order, "policies", None)
    carried = table.policies if isinstance(table, PolicyTable) else {}
    policy = carried[name] if name in carried else find_policy(name)
    return policy.make(PlanContext(order, rows, spec, fields, width, dict(options)))


def _policies(order: OrderSettings, asked: Mapping[str, object]) -> list[Policy]:
    """The built-in policies and those the order asks for (the ones it carries first), by rank."""
    table = getattr(order, "policies", None)
    carried = table.policies if isinstance(table, PolicyTable) else {}
    chosen = [p for p in registered_policies() if p.builtin]
    chosen += [carried[name] if name in carried else find_policy(name) for name in asked]
    return sorted(chosen, key=lambda p: (p.rank, p.name))


def _epoch_rows(context: PlanContext) -> Stage | None:
    order = context.order
    if order.shuffle == "block":
        return BlockRows(context.rows.blocks(order.batch_size, order.block_rows, order.window_rows))
    if order.shuffle is True and order.sample is None:  # draws are shuffled by the sampling stage
        return ShuffledRows()
    return None


def _sampled(context: PlanContext) -> Stage | None:
    sample = context.order.sample
    return None if sample is None else SampledRows(Sampling(context.rows.dataset, context.rows.row_numbers(),
                                                            sample))


def _bucketed(context: PlanContext) -> Stage | None:
    order = context.order
    if order.bucket_by is None or order.max_elements is not None:  # the budget cuts its own batches
        return None
    bucketing = make_bucketing(context.spec, context.fields, order.bucket_by, order.bucket_window,
                               context.spec.pad_to_multiple_of, order.shuffle)
    return None if bucketing is None else Bucketed(bucketing, context.lengths)


def _budget(context: PlanContext) -> Stage | None:
    order = context.order
    windows = None
    if order.shuffle == "block":
        windows = context.rows.blocks(order.batch_size, order.block_rows, order.window_rows).max_windows
    budget, widths = order_extras(order, context.fields, context.width, context.rows.all_lengths,
                                  context.lengths, windows)
    return None if budget is None and widths is None else ChosenWidths(budget, widths)


register_policy("shuffle", _epoch_rows, rank=-1, builtin=True)  # the epoch's rows come first
register_policy("sample", _sampled, rank=10, builtin=True)
register_policy("bucket_by", _bucketed, rank=80, builtin=True)
register_policy("max_elements", _budget, rank=90, builtin=True)
