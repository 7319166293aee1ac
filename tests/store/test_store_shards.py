"""Stored batches on any world size: equal steps, balanced budget batches, and a state of W ranks resumed on W'."""
from __future__ import annotations

import json
import logging
import warnings

import numpy as np
import pytest

from lstm_data import Batches, Order, open_batches, precompute
from lstm_data.batching.epochs.resume import batch_elements
from lstm_data.errors import OptionError
from tests.adapters.rows import row_dataset, row_spec, rows_in
from tests.helpers import assert_same_batch

N_ROWS, K = 1500, 2
#: budget batches: up to 64 rows, at most 128 padded prongs of input_png3d (max_len 4) each
ORDER = Order(batch_size=64, seed=13, bucket_by="input_png3d", max_elements=128)
#: length buckets: 64 rows each, from 64 to 256 prongs
BUCKETS = Order(batch_size=64, seed=13, bucket_by="input_png3d", bucket_window=4)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    out = tmp_path_factory.mktemp("store") / "budget.zarr"
    precompute(row_dataset(N_ROWS), row_spec(), out, ORDER, progress=False)
    return out


def _ids(batch) -> tuple[int, ...]:
    """A stored batch, named by the rows it holds."""
    return tuple(rows_in(batch[0]).tolist())


def _shards(store, world: int, epoch: int):
    shards = [open_batches(store).shard(rank, world) for rank in range(world)]
    for s in shards:
        s.set_epoch(epoch)
    return shards


def test_a_store_records_the_real_elements_of_its_batches(store):
    stored = open_batches(store)
    live = Batches(row_dataset(N_ROWS), row_spec(), ORDER)
    np.testing.assert_array_equal(stored.batch_elements(0), batch_elements(live, 0))
    lengths = np.minimum(np.diff(row_dataset(N_ROWS).offsets("png")), 4)  # input_png3d: max_len 4
    for epoch in (0, 2):  # in every epoch's order: the prongs of the batch served there
        counts = stored.batch_elements(epoch)
        assert [int(lengths[rows_in(stored.batch(i, epoch)[0])].sum()) for i in range(len(stored))] == list(counts)
    assert len(set(stored.batch_elements(0).tolist())) > 5  # budget batches differ in real elements


@pytest.fixture(scope="module")
def buckets(tmp_path_factory):
    out = tmp_path_factory.mktemp("store") / "buckets.zarr"
    precompute(row_dataset(N_ROWS), row_spec(), out, BUCKETS, progress=False)
    return out


@pytest.mark.parametrize(("kind", "world"), [("budget", 3), ("budget", 4), ("buckets", 4)])
def test_every_rank_gets_equal_steps_of_disjoint_batches_balanced_by_real_elements(store, buckets, kind, world):
    path = store if kind == "budget" else buckets
    stored = open_batches(path)
    n = len(stored)
    for epoch in (0, 1):
        shards = _shards(path, world, epoch)
        assert {len(s) for s in shards} == {n // world}
        taken = np.concatenate([s.parent_indices() for s in shards])
        assert len(np.unique(taken)) == len(taken) == n // world * world
        for s in shards:  # what a rank serves is the store's batch of that epoch
            assert_same_batch(s.batch(1), stored.batch(int(s.parent_indices()[1]), epoch))
        costs = stored.batch_elements(epoch)
        per_rank = np.array([costs[s.parent_indices()].sum() for s in shards])
        runs = np.array([costs[r * (n // world):(r + 1) * (n // world)].sum() for r in range(world)])
        assert per_rank.max() - per_rank.min() <= costs.max() - costs.min()  # about one batch apart
        if kind == "buckets":  # batches of 64 to 256 prongs: consecutive runs of the order are not
            assert per_rank.max() - per_rank.min() < (runs.max() - runs.min()) / 2


@pytest.mark.parametrize(("new_world", "epoch"), [(3, 0), (2, 1), (6, 1)])
def test_a_store_stopped_on_4_ranks_resumes_on_another_world(store, new_world, epoch):
    n = len(open_batches(store))
    old = _shards(store, 4, epoch)
    streams = [s.iter() for s in old]
    seen = [_ids(next(it)) for _ in range(K) for it in streams]  # k synchronous steps, then preempted
    state = json.loads(json.dumps(old[1].state_dict()))  # through JSON: plain values
    new = [open_batches(store, order=ORDER).shard(rank, new_world) for rank in range(new_world)]
    out = (n - 4 * K) % new_world
    for s in new:
        with pytest.warns(UserWarning, match=f"so {out} batch") if out else warnings.catch_warnings():
            if not out:
                warnings.simplefilter("error")
            s.load_state_dict(state)
    rest = [[_ids(b) for b in s] for s in new]
    assert len({len(r) for r in rest}) == 1  # the same steps left on every new rank
    served = seen + [b for r in rest for b in r]
    assert len(set(served)) == len(served)  # no stored batch twice
    live = Batches(row_dataset(N_ROWS), row_spec(), ORDER)  # the store holds its epoch 0
    everything = {tuple(live.rows_of(i, 0).tolist()) for i in range(n)}
    assert set(served) <= everything
    assert len(everything - set(served)) == (n - 4 * K) % new_world  # the new world's remainder only
    # the next epoch is a fresh world's of the new size
    for s in new:
        s.on_epoch_end()
    fresh = _shards(store, new_world, epoch + 1)
    assert [[_ids(b) for b in s] for s in new] == [[_ids(b) for b in s] for s in fresh]


def test_a_state_of_one_process_resumes_and_a_shards_state_needs_a_shard(store):
    first = open_batches(store)
    first.set_epoch(1)
    stream = first.iter()
    for _ in range(5):
        next(stream)
    state = first.state_dict()
    again = open_batches(store)
    again.load_state_dict(state)
    assert [_ids(b) for b in again] == [_ids(b) for b in stream]

    shard_state = _shards(store, 4, 0)[0].state_dict()
    with pytest.raises(OptionError, match="shard of 4 ranks: load it into"):
        open_batches(store).load_state_dict(shard_state)
    one = open_batches(store).shard(0, 1)
    one.load_state_dict(shard_state)  # one process takes what the 4 ranks had not reached
    assert len(list(one)) == len(one)


def test_a_state_of_another_store_is_refused_by_name(store, tmp_path):
    other = tmp_path / "other.zarr"
    precompute(row_dataset(N_ROWS), row_spec(), other, ORDER.replace(seed=14), progress=False)
    with pytest.raises(OptionError, match="seed: state has 13, this sequence 14"):
        open_batches(other).load_state_dict(open_batches(store).state_dict())
    with pytest.raises(OptionError, match="permute: state has True, this sequence False"):
        open_batches(store, permute=False).shard(0, 2).load_state_dict(_shards(store, 4, 0)[0].state_dict())


def test_a_store_state_of_the_last_release_resumes_with_its_batch_count_checked(store, caplog):
    n = len(open_batches(store))
    saved = {"state_format": 2, "epoch": 1, "next_batch": 4, "n_batches": n}  # what the last release saved
    stored = open_batches(store)
    with caplog.at_level(logging.INFO, logger="lstm_data"):
        stored.load_state_dict(saved)
    assert "earlier release" in caplog.text
    fresh = open_batches(store)
    assert [_ids(b) for b in stored] == [_ids(fresh.batch(i, 1)) for i in range(4, n)]
    with pytest.raises(OptionError, match=f"n_batches: state has {n + 1}, this store {n}"):
        open_batches(store).load_state_dict({**saved, "n_batches": n + 1})


@pytest.mark.parametrize("form", ["count only", "earlier names"])
def test_a_store_state_of_an_earlier_release_resumes_on_every_rank_of_a_shard(store, form, caplog):
    n, step = len(open_batches(store)), 5
    if form == "count only":  # saved before stores recorded their identity
        saved = {"state_format": 2, "epoch": 1, "next_batch": step, "n_batches": n}
    else:  # the identity recorded under the names of an earlier release
        now = open_batches(store).state_dict()
        saved = {"state_format": 2, "epoch": 1, "next_batch": step, "seed": now["seed"], "shuffle": now["permute"],
                 "n_batches": n, "identity": now["identity"]}
    world = next(w for w in (3, 4, 5, 2) if (n - step) % w == 0)  # every batch left is served
    shards = [open_batches(store).shard(rank, world) for rank in range(world)]
    with caplog.at_level(logging.INFO, logger="lstm_data"):
        for s in shards:
            s.load_state_dict(saved)
    assert "earlier release" in caplog.text
    served = [_ids(b) for s in shards for b in s]
    fresh = open_batches(store)
    assert sorted(served) == sorted(_ids(fresh.batch(i, 1)) for i in range(step, n))
    with pytest.raises(OptionError, match=f"n_batches: state has {n + 1}, this store {n}" if form == "count only"
                       else f"stored_batches: state has {n + 1}, this sequence {n}"):
        open_batches(store).shard(0, world).load_state_dict({**saved, "n_batches": n + 1})
