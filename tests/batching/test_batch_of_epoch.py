"""``Batches.batch(i, epoch=e)``: batch ``i`` of any epoch, thread-safe, without moving ``epoch``."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import lstm_data
from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars
from lstm_data.data.synthetic import PNG3D_VARS, SLICE_VARS
from tests.helpers import assert_same_batch

DS_ROWS = 1500

SPEC = BatchSpec(inputs={"input_slice": Scalars(SLICE_VARS),
                         "input_png3d": Ragged(PNG3D_VARS[:5], max_len=6, sort_by="png.calE")},
                 targets={"target_total": Scalars(["trueE"])})


def _make(ds, tmp_path, kind):
    if kind == "block":  # on disk, as block shuffling is meant for
        if not (tmp_path / "d.zarr").exists():
            ds.to_zarr(tmp_path / "d.zarr")
        return Batches(lstm_data.open(tmp_path / "d.zarr"), SPEC,
                       Order(batch_size=200, seed=3, shuffle="block", block_rows=100, window_rows=400))
    options = {"shuffled": {"shuffle": True}, "unshuffled": {"shuffle": False},
               "ram cache": {"shuffle": True, "cache": "ram"}, "view": {"shuffle": True}}[kind]
    b = Batches(ds, SPEC, Order(batch_size=200, seed=3, **options))
    return b.split(0.25)[0] if kind == "view" else b


@pytest.mark.parametrize("kind", ["shuffled", "unshuffled", "ram cache", "view", "block"])
def test_batch_of_an_epoch_equals_set_epoch_then_index_and_leaves_the_epoch(ds, tmp_path, kind):
    b = _make(ds, tmp_path, kind)
    ref = _make(ds, tmp_path, kind)
    b.set_epoch(1)
    for epoch in (0, 2, 1, 3):
        ref.set_epoch(epoch)
        for i in (0, 3, len(b) - 1, -1):
            assert_same_batch(b.batch(i, epoch=epoch), ref[i], f"epoch {epoch} batch {i}")
            np.testing.assert_array_equal(b.rows_of(i, epoch=epoch), ref.rows_of(i))
    assert b.epoch == 1
    assert_same_batch(b.batch(2), b[2], "default epoch")
    np.testing.assert_array_equal(b.rows_of(2), b.rows_of(2, epoch=1))


def test_batches_of_several_epochs_from_threads_at_once(ds):
    b = Batches(ds, SPEC, Order(batch_size=100, seed=11))
    ref = Batches(ds, SPEC, Order(batch_size=100, seed=11))
    want = {}
    for epoch in range(4):
        ref.set_epoch(epoch)
        want.update({(epoch, i): ref[i] for i in range(len(ref))})
    keys = [k for k in want] * 2
    np.random.default_rng(0).shuffle(keys)
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda k: b.batch(k[1], epoch=k[0]), keys))
    for key, batch in zip(keys, got):
        assert_same_batch(batch, want[key], f"epoch, batch {key}")
    assert b.epoch == 0


@pytest.mark.parametrize("epoch", [-1, 1.0, True, "1"])
def test_a_bad_epoch_is_named(ds, epoch):
    with pytest.raises(ValueError, match="epoch must be an int >= 0"):
        Batches(ds, SPEC, Order(batch_size=100, seed=1)).batch(0, epoch=epoch)
