"""TorchBatches in DataLoader worker processes: batches through reused shared-memory segments."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch.utils.data import DataLoader  # noqa: E402

from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars  # noqa: E402
from lstm_data.adapters import torch_slots  # noqa: E402
from lstm_data.adapters.torch import TorchBatches  # noqa: E402
from lstm_data.data.synthetic import PNG3D_VARS, SLICE_VARS, make_dataset  # noqa: E402

needs_slots = pytest.mark.skipif(not torch_slots.AVAILABLE, reason="no memfd on this system")


def _batches(batch_size: int = 200) -> Batches:
    spec = BatchSpec(inputs={"input_slice": Scalars(SLICE_VARS),
                             "input_png3d": Ragged(PNG3D_VARS, lengths=True)},  # width: per batch
                     targets={"target_total": Scalars(["trueE"])})
    return Batches(make_dataset(3000, seed=5), spec.replace(nan_to=0.0), Order(batch_size=batch_size, seed=3))


def _assert_batch(got, want) -> None:
    for part_got, part_want in zip(got, want):
        assert list(part_got) == list(part_want)
        for name, t in part_got.items():
            assert type(t) is torch.Tensor, type(t)
            np.testing.assert_array_equal(t.numpy(), np.asarray(part_want[name]), err_msg=name)


def _loader(data: TorchBatches, **kw) -> DataLoader:
    return DataLoader(data, batch_size=None, sampler=data.sampler, num_workers=2, **kw)


@needs_slots
def test_every_batch_equals_the_in_process_one_over_persistent_epochs():
    batches = _batches()
    loader = _loader(TorchBatches(batches), persistent_workers=True)
    for epoch in range(3):
        n = 0
        for i, got in enumerate(loader):  # each batch dropped before the next: segments reused
            _assert_batch(got, batches.batch(i, epoch=epoch))
            n += 1
        assert n == len(batches) == 15


@needs_slots
def test_kept_batches_are_never_overwritten():
    # a consumer that keeps every batch (and one that keeps only a slice of one): each
    # worker builds more batches than it may keep segments, so it must start new ones
    # and give up held ones, never write into a segment the main process still uses
    batches = _batches(batch_size=75)
    assert len(batches) > 2 * torch_slots.MAX_SEGMENTS
    loader = _loader(TorchBatches(batches), prefetch_factor=4)
    kept = list(loader)
    piece = kept[3][0]["input_png3d"][:7, :2]
    want_piece = batches.batch(3, epoch=0)[0]["input_png3d"][:7, :2].copy()
    for i, got in enumerate(kept):
        _assert_batch(got, batches.batch(i, epoch=0))
    del kept, got
    for i, got in enumerate(loader):  # the next epoch reuses the freed segments
        _assert_batch(got, batches.batch(i, epoch=1))
    np.testing.assert_array_equal(piece.numpy(), want_piece)


def test_torch_transfer_gives_the_same_batches():
    batches = _batches()
    data = TorchBatches(batches, worker_transfer="torch")
    for i, got in enumerate(_loader(data)):
        _assert_batch(got, batches.batch(i, epoch=0))
    with pytest.raises(ValueError, match="worker_transfer must be 'shared' or 'torch'"):
        TorchBatches(batches, worker_transfer="mmap")


def test_in_the_main_process_items_are_plain_tensors_and_the_option_is_pickled():
    data = TorchBatches(_batches(), worker_transfer="torch")
    _assert_batch(data[(0, 2)], data.batches.batch(2, epoch=0))
    assert pickle.loads(pickle.dumps(data)).worker_transfer == "torch"


@pytest.mark.parametrize("sampler", [True, False])
def test_threads_build_ahead_in_the_main_process_in_order(sampler):
    batches = _batches()
    data = TorchBatches(batches, threads=2, prefetch_batches=3)
    loader = DataLoader(data, batch_size=None, sampler=data.sampler if sampler else None, num_workers=0)
    for epoch in range(2):
        if not sampler:
            data.set_epoch(epoch)
        got = list(loader)
        assert len(got) == len(batches)
        for i, item in enumerate(got):
            _assert_batch(item, batches.batch(i, epoch=epoch))


def test_threads_serve_keys_out_of_order_and_across_epochs():
    batches = _batches()
    data = TorchBatches(batches, threads=2)
    for epoch, index in [(0, 0), (0, 1), (0, 5), (0, 2), (1, 3), (1, 4), (0, 6), (1, 5), (1, 14)]:
        _assert_batch(data[(epoch, index)], batches.batch(index, epoch=epoch))
    _assert_batch(data[-1], batches.batch(len(batches) - 1, epoch=0))
    back = pickle.loads(pickle.dumps(data))
    assert (back.threads, back.prefetch_batches) == (2, None)
    _assert_batch(back[(1, 2)], batches.batch(2, epoch=1))
    with pytest.raises(ValueError, match="threads must be an int >= 1"):
        TorchBatches(batches, threads=0)
    with pytest.raises(IndexError, match="out of range"):
        data[len(batches)]


@needs_slots
def test_threads_are_ignored_in_worker_processes():
    batches = _batches()
    data = TorchBatches(batches, threads=2)
    for i, got in enumerate(_loader(data)):
        _assert_batch(got, batches.batch(i, epoch=0))


@needs_slots
def test_batches_are_built_in_the_segment_and_a_bigger_one_moves():
    batches = _batches()
    slots = torch_slots.WorkerSlots()
    assert slots.arena() is None  # nothing shared yet: no size to go by
    slots.share(batches.batch(0, epoch=0))
    seg = slots.arena()  # as large as the last batch
    built = batches.batch_into(1, 0, seg.arena)
    big = built[0]["input_png3d"]
    assert np.shares_memory(big, seg.arena)  # the padded field was written in shared memory
    got = slots.share(built, seg)
    _assert_batch([{k: t.as_subclass(torch.Tensor) for k, t in part.items()} for part in got],
                  batches.batch(1, epoch=0))
    lease = got[0]["input_png3d"]._lstm_data_slot
    assert lease[1] == big.ctypes.data - seg.address  # shared where it was built: no copy
    slots.release(seg)
    # an arena too small for a whole-table batch: everything moves to a segment that fits
    whole = _batches(batch_size=3000)
    small = slots._claim(4096)  # one GRAIN, less than the batch
    built = whole.batch_into(0, 0, small.arena)
    assert not np.shares_memory(built[0]["input_png3d"], small.arena)
    moved = slots.share(built, small)
    assert small.state[0] == 0  # given back
    assert moved[0]["input_png3d"]._lstm_data_slot[0].args[2] != small.gen  # a new segment
    _assert_batch([{k: t.as_subclass(torch.Tensor) for k, t in part.items()} for part in moved],
                  whole.batch(0, epoch=0))
