"""A new order policy plugs in by registration alone: a stage made from ``Order.policies``."""
from __future__ import annotations

import tomllib

import numpy as np
import pytest

from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars, open_batches
from lstm_data.batching.order.plan import EpochKey, Plan, StageDefaults
from lstm_data.batching.order.registry import PlanContext, register_policy
from lstm_data.data.synthetic import PNG3D_VARS, SLICE_VARS, make_dataset
from lstm_data.errors import OptionError
from lstm_data.store.write import precompute
from tests.helpers import assert_same_batch

SPEC = BatchSpec(inputs={"input_slice": Scalars(SLICE_VARS), "input_png3d": Ragged(PNG3D_VARS[:3], max_len=8)},
                 targets={"target_total": Scalars(["trueE"])})


class KthFirst(StageDefaults):
    """Every k-th row of the epoch first, then the others, each part in the order it came."""

    def __init__(self, k: int) -> None:
        self.k = k

    def plan(self, plan: Plan, key: EpochKey) -> Plan:
        picked = np.zeros(len(plan.order), dtype=bool)
        picked[::self.k] = True
        return Plan(np.concatenate([plan.order[picked], plan.order[~picked]]))


def _kth_first(context: PlanContext) -> KthFirst:
    k = context.options.get("k", 2)
    if not isinstance(k, int) or k < 1:
        raise OptionError(f"policies.kth_first.k must be a positive int, got {k!r}")
    if context.order.shuffle == "block":
        raise OptionError("policies.kth_first does not reorder block plans")
    return KthFirst(k)


@pytest.fixture(scope="module", autouse=True)
def registered():
    register_policy("kth_first", _kth_first)


@pytest.fixture(scope="module")
def data():
    return make_dataset(1000, seed=3)


def _rows(b: Batches, epoch: int = 0) -> np.ndarray:
    return np.concatenate([b.rows_of(i, epoch) for i in range(len(b))])


def test_a_registered_policy_reorders_the_rows_of_every_epoch(data):
    plain = Batches(data, SPEC, Order(batch_size=100, shuffle=False))
    kth = Batches(data, SPEC, Order(batch_size=100, shuffle=False, policies={"kth_first": {"k": 3}}))
    want = np.concatenate([np.arange(0, 1000, 3), np.setdiff1d(np.arange(1000), np.arange(0, 1000, 3))])
    np.testing.assert_array_equal(_rows(kth), want)
    np.testing.assert_array_equal(np.sort(_rows(kth)), _rows(plain))
    first = Batches(data, SPEC, Order(batch_size=100, shuffle=False), rows=want[:100])
    assert_same_batch(kth[0], first[0])


def test_it_composes_with_the_shuffle_and_the_builtin_stages(data):
    shuffled = Batches(data, SPEC, Order(batch_size=100, seed=4))
    kth = Batches(data, SPEC, Order(batch_size=100, seed=4, policies={"kth_first": {"k": 2}}))
    for epoch in (0, 1):
        base = _rows(shuffled, epoch)
        np.testing.assert_array_equal(_rows(kth, epoch), np.concatenate([base[0::2], base[1::2]]))
    bucketed = Batches(data, SPEC, Order(batch_size=100, seed=4, bucket_by="input_png3d",
                                         policies={"kth_first": {"k": 2}}))
    assert sorted(_rows(bucketed)) == list(range(1000))  # bucketing runs after it, every row once


def test_shards_splits_and_stores_take_its_plans(data, tmp_path):
    order = Order(batch_size=100, seed=4, policies={"kth_first": {"k": 5}})
    b = Batches(data, SPEC, order)
    shards = [b.shard(r, 2) for r in range(2)]
    seen = np.concatenate([s.rows_of(i) for s in shards for i in range(len(s))])
    assert sorted(seen) == list(range(1000))
    train, val = b.split(0.2)
    assert sorted(np.concatenate([_rows(train), _rows(val)])) == list(range(1000))
    precompute(data, SPEC, tmp_path / "s.zarr", order=order)
    stored = open_batches(tmp_path / "s.zarr")
    for i in (0, len(b) - 1):
        assert_same_batch(stored[i], b.batch(i, 0))


def test_its_options_round_trip_through_toml_and_are_checked():
    order = Order(batch_size=64, seed=1, policies={"kth_first": {"k": 4}})
    assert Order.from_dict(order.to_dict()) == order
    text = order.to_toml()
    assert "[order.policies.kth_first]\nk = 4" in text
    assert Order.from_dict(tomllib.loads(text)["order"]) == order
    with pytest.raises(OptionError, match="unknown order policy 'kth_frist'.*did you mean 'kth_first'"):
        Order(policies={"kth_frist": {}})
    with pytest.raises(OptionError, match="must be a table of options"):
        Order(policies={"kth_first": 3})


def test_a_policy_refuses_what_it_cannot_honour(data, tmp_path):
    data.to_zarr(tmp_path / "d.zarr")
    import lstm_data

    with pytest.raises(OptionError, match="does not reorder block plans"):
        Batches(lstm_data.open(tmp_path / "d.zarr"), SPEC,
                Order(batch_size=100, seed=1, shuffle="block", policies={"kth_first": {}}))
