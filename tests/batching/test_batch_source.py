"""Every batch sequence is a batch source: batches, their shards and stored batches serve any epoch."""
from __future__ import annotations

import threading

import pytest

from lstm_data import Batches, BatchSpec, Order, open_batches
from lstm_data.batching.epochs.source import BatchSource, BuildsInArena, ShardSource
from lstm_data.store.write import precompute
from tests.helpers import EXAMPLES, assert_same_batch

DS_ROWS, DS_SEED = 1200, 3  # the ``ds`` fixture (tests/conftest.py)


@pytest.fixture(scope="module")
def batches(ds):
    return Batches(ds, BatchSpec.from_toml(EXAMPLES / "numu_v3.toml"), Order(batch_size=100, seed=2))


@pytest.fixture(scope="module")
def stored(batches, tmp_path_factory):
    out = tmp_path_factory.mktemp("source") / "b.zarr"
    precompute(batches.dataset, batches.spec, out, batches.order, progress=False)
    return open_batches(out)


def test_batches_shards_and_stored_batches_are_batch_sources(batches, stored):
    shard = batches.shard(1, 3)
    for source in (batches, shard, stored):
        assert isinstance(source, BatchSource), type(source).__name__
        assert source.spec.signature() == source.signature()
    assert isinstance(batches, BuildsInArena) and isinstance(shard, BuildsInArena)
    assert not isinstance(stored, BuildsInArena)  # read from the store, not built
    assert isinstance(shard, ShardSource)
    assert not isinstance(batches, ShardSource) and not isinstance(stored, ShardSource)


def test_whether_epochs_differ_follows_the_order(ds, batches, stored):
    assert batches.varies_by_epoch and batches.shard(0, 2).varies_by_epoch and stored.varies_by_epoch
    fixed = Batches(ds, batches.spec, Order(batch_size=100, shuffle=False, seed=1))
    assert not fixed.varies_by_epoch and not fixed.shard(0, 2).varies_by_epoch
    assert not open_batches(stored.path, permute=False).varies_by_epoch


def test_stored_batches_serve_any_epoch_leaving_their_own_as_it_is(stored):
    stored.set_epoch(0)
    first = [stored.batch(i, 3) for i in range(len(stored))]
    assert stored.epoch == 0
    stored.set_epoch(3)
    for i, want in enumerate(first):
        assert_same_batch(stored[i], want)
    stored.set_epoch(0)
    # epoch 0 is the stored order; a later epoch is a permutation of the same batches
    zero = [stored.batch(i, 0) for i in range(len(stored))]
    key = lambda b: b[1]["target_total"].tobytes()  # noqa: E731 - one batch's fingerprint
    assert sorted(map(key, first)) == sorted(map(key, zero)) and list(map(key, first)) != list(map(key, zero))


def test_stored_batches_permute_as_a_pure_function_of_seed_and_epoch(stored):
    again = open_batches(stored.path)
    again.set_epoch(7)  # another epoch current: the epoch asked for decides
    for i in range(len(stored)):
        assert_same_batch(again.batch(i, 2), stored.batch(i, 2))


def test_stored_batches_of_several_epochs_at_once_from_threads(stored):
    epochs = (1, 2, 3, 4)
    want = {(e, i): stored.batch(i, e) for e in epochs for i in range(len(stored))}
    got: dict[tuple[int, int], object] = {}

    def read(e: int) -> None:
        for i in range(len(stored)):
            got[(e, i)] = stored.batch(i, e)

    threads = [threading.Thread(target=read, args=(e,)) for e in epochs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got.keys() == want.keys()
    for k, batch in want.items():
        assert_same_batch(got[k], batch)
