"""Block shuffle read on demand: a window is dropped once its batches are built, two are held at most."""
from __future__ import annotations

import numpy as np
import pytest

import lstm_data
from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars
from lstm_data.data.synthetic import PNG2D_VARS, make_dataset
from tests.helpers import assert_same_arrays

SPEC = BatchSpec(inputs={"png": Ragged(PNG2D_VARS, max_len=16), "s": Scalars(["calE"])},
                 targets={"t": Scalars(["trueE"])})


@pytest.fixture(scope="module")
def on_disk(tmp_path_factory):
    data = make_dataset(6_000, seed=5)
    path = tmp_path_factory.mktemp("blocks") / "d.zarr"
    data.to_zarr(path, chunk_bytes=1 << 14)
    return data, path


def _same_as_in_ram(data, b, i):
    rows = b.rows_of(i)
    ref = Batches(data.take(rows), SPEC, Order(batch_size=len(rows), shuffle=False))[0]
    got = b.batch(i)
    for part, want in zip(got, ref):
        assert_same_arrays(part, want)


def _wait(source):
    for future in list(source._windows._entries.values()):
        future.result(timeout=30)


@pytest.mark.parametrize("drop_last", [False, True])
def test_an_epoch_holds_two_windows_and_reads_the_next_epoch_during_its_last_window(on_disk, drop_last):
    data, path = on_disk
    b = Batches(lstm_data.open(path), SPEC, Order(batch_size=250, shuffle="block", seed=2, window_rows=1_000,
                                                  drop_last=drop_last))
    source = b.pipeline.blocks
    n_windows = len(b.pipeline.plan(b.epoch).windows.block_ids)
    assert n_windows > 4
    for i in range(len(b)):
        if i == len(b) - 1:  # the last batch lies in the last window: the next epoch is on its way
            assert source._windows.peek((1, 0)) is not None
        b.batch(i)
        _wait(source)
        held = [key for key in source._windows._entries]
        assert len(held) <= 2, (i, held)
        if source._windows.peek((0, n_windows - 2)) is not None:  # not before the last window is reached
            assert source._windows.peek((1, 0)) is None, i
    assert source._windows.peek((1, 0)) is not None
    assert all(key[0] == 1 for key in source._windows._entries)  # this epoch's windows are all dropped
    ahead = len(b.pipeline.plans.plan(1).windows.block_ids[0])
    assert source.block_loads == len(source.bounds) - 1 + ahead  # every block read once, then epoch 1's first


def test_batches_asked_again_or_out_of_order_are_the_same(on_disk):
    data, path = on_disk
    b = Batches(lstm_data.open(path), SPEC, Order(batch_size=250, shuffle="block", seed=3, window_rows=1_000))
    for i in [0, 0, 1, 5, 2, 3, 4, len(b) - 1, 0, 6]:  # a dropped window is read again when asked
        _same_as_in_ram(data, b, i)
    for i in range(len(b)):
        _same_as_in_ram(data, b, i)
    threaded = [batch for batch in b.iter(threads=2)]  # built ahead on workers, out of order
    for i, batch in enumerate(threaded):
        for part, want in zip(batch, b.batch(i)):
            assert_same_arrays(part, want)


def test_a_window_read_in_finds_the_place_of_each_of_its_epoch_positions_once(on_disk):
    """Where each epoch position of a window sits in its RAM copy is found when the window
    is read, for every batch of it to take a slice of: it names exactly the plan's rows."""
    data, path = on_disk
    b = Batches(lstm_data.open(path), SPEC, Order(batch_size=250, shuffle="block", seed=4, window_rows=1_000,
                                                  read_ahead=False))
    plan, source = b.pipeline.plan(0), b.pipeline.blocks
    starts = plan.windows.starts
    for w in (0, len(starts) - 2):
        loaded = source.window(plan, 0, w)
        epoch_positions = plan.order[starts[w]:starts[w + 1]]
        assert loaded.local.dtype == np.intp and len(loaded.local) == len(epoch_positions)
        np.testing.assert_array_equal(loaded.held[loaded.local], epoch_positions)
        names = loaded.builder.row_names[loaded.local]  # the dataset rows the window's builder names
        np.testing.assert_array_equal(names, b.pipeline.rows_at(epoch_positions.astype(np.intp)))
    _same_as_in_ram(data, b, len(b) - 1)
