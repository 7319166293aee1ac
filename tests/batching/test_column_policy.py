"""A policy that reads a data column is one function and its registration: a curriculum by a score."""
from __future__ import annotations

import numpy as np
import pytest

from lstm_data import Batches, Order
from lstm_data.batching.order import registry
from lstm_data.batching.order.plan import EpochKey, Plan, StageDefaults
from lstm_data.batching.order.registry import PlanContext, register_policy
from tests.adapters.rows import row_dataset, row_spec, rows_in


class EasiestFirst(StageDefaults):
    """The epoch's rows by ascending score (ties in the order they came)."""

    def __init__(self, scores: np.ndarray) -> None:
        self.scores = scores

    def plan(self, plan: Plan, key: EpochKey) -> Plan:
        return plan.replace(order=plan.order[np.argsort(self.scores[plan.order], kind="stable")])


def _curriculum(context: PlanContext) -> EasiestFirst:
    return EasiestFirst(context.rows.column(str(context.options.get("score", "row"))))


@pytest.fixture
def curriculum():
    register_policy("curriculum", _curriculum)
    yield
    registry._POLICIES.pop("curriculum", None)


def test_a_curriculum_policy_orders_rows_by_a_data_column(curriculum):
    b = Batches(row_dataset(120), row_spec(), Order(batch_size=20, seed=1, shuffle=True,
                                                    policies={"curriculum": {"score": "row"}}))
    seen = np.concatenate([rows_in(b[i][0]) for i in range(len(b))])
    np.testing.assert_array_equal(seen, np.arange(120))  # the shuffle, then the score's order


def test_the_column_is_read_by_view_position_in_a_split(curriculum):
    b = Batches(row_dataset(100), row_spec(), Order(batch_size=10, seed=2, policies={"curriculum": {}}))
    train, _ = b.split(0.3)
    served = np.concatenate([train.rows_of(i) for i in range(len(train))])
    np.testing.assert_array_equal(served, np.sort(train.view_rows))
