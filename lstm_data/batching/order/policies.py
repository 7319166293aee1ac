"""The order of a run as its stages: the one factory :func:`order_stages`, and the built-in policies.

The first stage makes the epoch's rows: the block plan (``shuffle="block"``), a fresh
permutation (``shuffle=True``) or the data's order (no stage). The registered
policies follow by rank (:mod:`lstm_data.batching.order.registry`): the built-in ones
are class sampling (``Order.sample``), length bucketing (``bucket_by``) and the
element budget (``max_elements``, which cuts its own batches and so replaces
bucketing's), and any policy named in ``Order.policies``.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from lstm_data.batching.order.block_plans import BlockLayout, BlockRows
from lstm_data.batching.order.bucketing import Bucketed, Bucketing
from lstm_data.batching.order.budget import Budget, BudgetCuts
from lstm_data.batching.order.plan import Stage
from lstm_data.batching.order.registry import (PlanContext, Policy, PolicyTable, find_policy, register_policy,
                                               registered_policies)
from lstm_data.batching.order.rows import ShuffledRows
from lstm_data.batching.order.sampling import SampledRows, Sampling

__all__ = ["order_stages"]


def order_stages(order: Any, n_rows: int, lengths: Callable[[str], np.ndarray], *,
                 blocks: BlockLayout | None = None, sampling: Sampling | None = None,
                 budget: Budget | None = None, bucketing: Bucketing | None = None) -> list[Stage]:
    """The stages of ``order``'s epochs, first to last.

    Parameters
    ----------
    order
        The :class:`~lstm_data.batching.order.options.Order`, ``shuffle`` resolved.
    n_rows
        Rows of the view.
    lengths
        Row lengths of a group by view position.
    blocks, sampling, budget, bucketing
        What the built-in policies are made from (``None`` where the order does not ask).

    Returns
    -------
    list of Stage
    """
    stages: list[Stage] = []
    if blocks is not None:
        stages.append(BlockRows(blocks))
    elif order.shuffle is True and sampling is None:  # draws are shuffled by the sampling stage
        stages.append(ShuffledRows())
    parts = {"sampling": sampling, "budget": budget, "bucketing": bucketing, "blocks": blocks}
    asked = dict(getattr(order, "policies", None) or {})
    for policy in _policies(order, asked):
        context = PlanContext(order, n_rows, lengths, asked.get(policy.name, {}), parts)
        stage = policy.make(context)
        if stage is not None:
            stages.append(stage)
    return stages


def _policies(order: Any, asked: dict[str, Any]) -> list[Policy]:
    """The built-in policies and those the order asks for (the ones it carries first), by rank."""
    carried = order.policies.policies if isinstance(order.policies, PolicyTable) else {}
    chosen = [p for p in registered_policies() if p.builtin]
    chosen += [carried[name] if name in carried else find_policy(name) for name in asked]
    return sorted(chosen, key=lambda p: (p.rank, p.name))


def _sampled(context: PlanContext) -> Stage | None:
    sampling = context.parts.get("sampling")
    return None if sampling is None else SampledRows(sampling)


def _bucketed(context: PlanContext) -> Stage | None:
    bucketing = context.parts.get("bucketing")
    if bucketing is None or context.parts.get("budget") is not None:  # the budget cuts its own batches
        return None
    return Bucketed(bucketing, context.lengths)


def _budget(context: PlanContext) -> Stage | None:
    budget = context.parts.get("budget")
    return None if budget is None else BudgetCuts(budget)


register_policy("sample", _sampled, rank=10, builtin=True)
register_policy("bucket_by", _bucketed, rank=80, builtin=True)
register_policy("max_elements", _budget, rank=90, builtin=True)
