"""Equal steps on every rank, and elastic exact resumption: a state of W ranks resumes W' ranks."""
from __future__ import annotations

import json
import warnings
from contextlib import contextmanager

import numpy as np
import pytest

from lstm_data import Batches, BatchSpec, Ragged, Scalars
from lstm_data.batching.order.options import Order
from lstm_data.batching.epochs.resume import deal, remaining_pool
from lstm_data.batching.epochs.shard import batch_elements
from lstm_data.data.synthetic import PNG3D_VARS, SLICE_VARS, make_dataset


@pytest.fixture(scope="module")
def data():
    return make_dataset(2000, seed=3)


def _spec() -> BatchSpec:
    return BatchSpec(inputs={"input_slice": Scalars(SLICE_VARS),
                             "input_png3d": Ragged(PNG3D_VARS[:3], max_len=12)},
                     targets={"target_total": Scalars(["trueE"])})


MODES = {
    "shuffle": dict(shuffle=True),
    "plain": dict(shuffle=False),
    "bucket": dict(shuffle=True, bucket_by="input_png3d", bucket_window=4),
    "block": dict(shuffle="block", block_rows=100, window_rows=400),
    "weights": dict(shuffle=True, weights="calE"),
}


@contextmanager
def _left_out(n: int):
    """Expect the warning that a resumption leaves ``n`` batches out of the epoch (``n == 0``: no warning)."""
    if n:
        with pytest.warns(UserWarning, match=rf"so {n} batch(es are| is) left out of this epoch"):
            yield
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def _make(data, mode, world=None, rank=0):
    b = Batches(data, _spec(), Order(batch_size=90, seed=8, **MODES[mode]))  # 23 batches, the last short
    return b if world is None else b.shard(rank, world)


def _rows(shard, epoch, steps):
    return [shard.rows_of(i, epoch) for i in steps]


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("world", [2, 3, 4])
def test_every_rank_has_the_same_steps_disjoint_and_covering_all_but_the_remainder(data, mode, world):
    full = _make(data, mode)
    shards = [_make(data, mode, world, r) for r in range(world)]
    assert {len(s) for s in shards} == {len(full) // world}
    for epoch in (0, 1):
        got = [s.parent_indices(epoch) for s in shards]
        taken = np.concatenate(got)
        assert len(np.unique(taken)) == len(taken) == len(full) // world * world
        assert len(full) - len(taken) < world  # the remainder: fewer batches than ranks
        for s, idx in zip(shards, got):
            for i, p in enumerate(idx):
                np.testing.assert_array_equal(s.rows_of(i, epoch), full.rows_of(int(p), epoch))
        rows = np.concatenate([r for s in shards for r in _rows(s, epoch, range(len(s)))])
        assert len(rows) == len(np.unique(rows))


def test_balanced_rounds_even_out_real_elements(data):
    """Bucketed batches differ in prongs: the rounds layout gives every rank about the same count."""
    world = 4
    full = _make(data, "bucket")
    costs = batch_elements(full, 0)
    assert costs.std() > 0.2 * costs.mean()  # batches differ a lot
    shards = [_make(data, "bucket", world, r) for r in range(world)]
    per_rank = np.array([costs[s.parent_indices(0)].sum() for s in shards])
    # without balancing: consecutive runs of the same order
    n = len(full) // world
    runs = np.array([costs[r * n:(r + 1) * n].sum() for r in range(world)])
    assert per_rank.max() - per_rank.min() <= costs.max() - costs.min()  # at most one batch apart
    assert per_rank.max() - per_rank.min() < runs.max() - runs.min()


def test_deal_is_deterministic_matches_sizes_per_step_and_leaves_a_prefix():
    rng = np.random.default_rng(0)
    costs = rng.integers(1, 100, size=37)
    a, b = deal(costs, 4, "rounds"), deal(costs.copy(), 4, "rounds")
    np.testing.assert_array_equal(a, b)
    assert len(np.unique(a)) == a.size == 36
    # batches of a step are of about the same size: the steps' largest batches sum to little more
    # than a rank's share (1.0 would be no waiting at all)
    step = costs[a].max(axis=0).sum() / (costs[a].sum() / 4)
    plain = np.arange(36).reshape(9, 4).T
    assert step < 1.15 < costs[plain].max(axis=0).sum() / (costs[plain].sum() / 4)
    totals = costs[a].sum(axis=1)
    assert totals.max() - totals.min() <= costs.max() - costs.min()
    # what 3 steps of 4 ranks saw is gone from the pool, the rest keeps the epoch's order
    pool = remaining_pool(costs, [(4, 3)], "rounds")
    np.testing.assert_array_equal(pool, np.setdiff1d(np.arange(37), a[:, :3]))
    pool = remaining_pool(costs, [(4, 3)], "runs")
    assert len(pool) == 37 - 12 and not np.isin(pool, [0, 1, 2, 9, 10, 11, 18, 19, 20, 27, 28, 29]).any()
    np.testing.assert_array_equal(deal(np.full(12, 5), 4, "rounds"), np.arange(12).reshape(3, 4).T)


def _run(shards, steps):
    """Every rank takes ``steps`` steps of its epoch (as synchronous DDP does); the rows each saw."""
    seen = []
    iters = [s.iter() for s in shards]
    for _ in range(steps):
        for s, it in zip(shards, iters):
            next(it)
            seen.append(s.rows_of(s.state_dict()["next_batch"] - 1))
    return seen, [s.state_dict() for s in shards]


@pytest.mark.parametrize("mode", ["shuffle", "bucket", "block", "plain"])
@pytest.mark.parametrize("new_world", [3, 2, 6])
def test_resume_on_another_world_sees_every_row_of_the_epoch_once(data, mode, new_world):
    k = 2
    old = [_make(data, mode, 4, r) for r in range(4)]
    for s in old:
        s.set_epoch(1)
    seen, states = _run(old, k)
    assert len({json.dumps(st, sort_keys=True) for st in states}) == 1  # no rank in the state
    state = json.loads(json.dumps(states[1]))  # any rank's state, through JSON
    new = [_make(data, mode, new_world, r) for r in range(new_world)]
    pool = 23 - 4 * k
    for s in new:
        with _left_out(pool % new_world):
            s.load_state_dict(state)
    steps = {len(s) - s._resume_at for s in new}
    assert len(steps) == 1  # every new rank has the same number of steps left
    more, _ = _run(new, steps.pop())
    seen += more
    rows = np.concatenate(seen)
    assert len(rows) == len(np.unique(rows))  # no row twice over the two worlds
    full = _make(data, mode)
    epoch_rows = np.concatenate([full.rows_of(i, 1) for i in range(len(full))])
    missed = np.setdiff1d(epoch_rows, rows)
    assert len(missed) <= (pool % new_world) * 90  # only the new world's remainder (< new_world batches)
    # the next epoch is the one a fresh world of new_world ranks has
    fresh = [_make(data, mode, new_world, r) for r in range(new_world)]
    for s, f in zip(new, fresh):
        s.on_epoch_end()
        f.set_epoch(2)
        assert len(s) == len(f)
        for i in range(len(s)):
            np.testing.assert_array_equal(s.rows_of(i), f.rows_of(i))


def test_chained_resumes_and_same_world_resume(data):
    old = [_make(data, "bucket", 4, r) for r in range(4)]
    seen, states = _run(old, 2)
    mid = [_make(data, "bucket", 3, r) for r in range(3)]
    for s in mid:
        s.load_state_dict(states[0])
    more, states = _run(mid, 1)
    seen += more
    assert states[2]["history"] == [[4, 2]] and states[2]["world_size"] == 3
    last = [_make(data, "bucket", 2, r) for r in range(2)]
    for s in last:
        s.load_state_dict(states[2])
    more, _ = _run(last, len(last[0]) - last[0]._resume_at)
    rows = np.concatenate(seen + more)
    assert len(rows) == len(np.unique(rows))
    assert 2000 - len(rows) < 2 * 90
    # the same world size goes on exactly as the uninterrupted run
    same = [_make(data, "bucket", 3, r) for r in range(3)]
    for s, m, st in zip(same, mid, states):
        s.load_state_dict(st)
        assert s._resume_at == m.state_dict()["next_batch"]
        for i in range(s._resume_at, len(s)):
            np.testing.assert_array_equal(s.rows_of(i), m.rows_of(i))


def test_states_of_other_batches_are_refused(data):
    state = _make(data, "shuffle", 4, 1).state_dict()
    with pytest.raises(ValueError, match="seed: state has 8, this sequence 9"):
        Batches(data, _spec(), Order(batch_size=90, seed=9)).shard(0, 2).load_state_dict(state)
    with pytest.raises(ValueError, match="identity digest"):
        Batches(make_dataset(2000, seed=4), _spec(), Order(batch_size=90, seed=8)).shard(0, 2).load_state_dict(
            state)
    other_spec = BatchSpec(inputs={"input_slice": Scalars(SLICE_VARS),
                                   "input_png3d": Ragged(PNG3D_VARS[:3], max_len=11)},
                           targets={"target_total": Scalars(["trueE"])})
    with pytest.raises(ValueError, match="identity digest"):
        Batches(data, other_spec, Order(batch_size=90, seed=8)).shard(0, 3).load_state_dict(state)
    with pytest.raises(ValueError, match="shard"):
        _make(data, "shuffle").load_state_dict(state)
    unsharded = _make(data, "shuffle")
    it = unsharded.iter()
    next(it)
    s = _make(data, "shuffle", 2, 0)
    s.load_state_dict(unsharded.state_dict())  # a world of one resumes two ranks
    assert s._resume_at == len(s) - (len(unsharded) - 1) // 2
    with pytest.raises(ValueError, match="outside the steps"):
        s.load_state_dict({**state, "next_batch": 99})


def test_a_state_of_another_sample_is_refused(data):
    def make(edges):
        order = Order(batch_size=90, seed=8, sample={"vars": ["trueE"], "bins": [edges], "overflow": "clip"})
        return Batches(data, _spec(), order).shard(0, 2)
    lo, hi = float(data.scalar("trueE").min()), float(data.scalar("trueE").max())
    make([lo, hi]).load_state_dict(make([lo, hi]).state_dict())
    with pytest.raises(ValueError, match="sample: state has"):
        make([lo, (lo + hi) / 2, hi]).load_state_dict(make([lo, hi]).state_dict())


@pytest.mark.parametrize("world", [3, 4])
def test_budget_batches_get_equal_steps_and_balanced_elements(data, world):
    pytest.importorskip("lstm_data.batching.order.budget")
    order = Order(batch_size=256, seed=2, bucket_by="input_png3d", max_elements=1024)
    full = Batches(data, _spec(), order)
    costs = batch_elements(full, 0)
    shards = [Batches(data, _spec(), order).shard(r, world) for r in range(world)]
    for epoch in (0, 1):
        lanes = [s.parent_indices(epoch) for s in shards]
        assert {len(lane) for lane in lanes} == {len(full) // world}
        assert len(np.unique(np.concatenate(lanes))) == len(full) // world * world
    per_rank = [int(batch_elements(full, 0)[s.parent_indices(0)].sum()) for s in shards]
    assert max(per_rank) - min(per_rank) <= costs.max()  # within one batch of each other
    seen, states = _run(shards, 1)
    new = [Batches(data, _spec(), order).shard(r, 2) for r in range(2)]
    for s in new:
        with _left_out((len(full) - world) % 2):
            s.load_state_dict(states[0])
    more, _ = _run(new, len(new[0]) - new[0].resume_point[1])
    rows = np.concatenate(seen + more)
    assert len(rows) == len(np.unique(rows))


def test_resuming_4_ranks_onto_29_warns_that_the_27_batches_left_are_left_out():
    """47 batches; 4 ranks take 5 steps (20 batches); 29 ranks cannot share the 27 left in equal steps."""
    data = make_dataset(470, seed=3)
    order = Order(batch_size=10, seed=8)
    old = [Batches(data, _spec(), order).shard(r, 4) for r in range(4)]
    _, states = _run(old, 5)
    new = [Batches(data, _spec(), order).shard(r, 29) for r in range(29)]
    for s in new:
        with pytest.warns(UserWarning, match=r"resuming epoch 0 \(47 batches\) on 29 ranks, saved on 4: 27 batches "
                                             r"are left to serve .* steps \(0\), so 27 batches are left out of this "
                                             r"epoch .*resume on 27 ranks"):
            s.load_state_dict(states[0])
    assert {s.resume_point[1] for s in new} == {len(new[0])}  # no step left on any rank
    with _left_out(0):  # 27 ranks serve all 27: no warning
        for r in range(27):
            Batches(data, _spec(), order).shard(r, 27).load_state_dict(states[0])
