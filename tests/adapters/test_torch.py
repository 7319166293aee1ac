"""TorchBatches: whole batches through a real DataLoader with worker processes."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch.utils.data import DataLoader  # noqa: E402

import lstm_data  # noqa: E402
from lstm_data import Batches, BatchSpec, Ragged, Scalars  # noqa: E402
from lstm_data.adapters.torch import TorchBatches  # noqa: E402
from lstm_data.data.synthetic import PNG2D_VARS, SLICE_VARS, make_dataset  # noqa: E402


def _batches(**kw) -> Batches:
    spec = BatchSpec(inputs={"input_slice": Scalars(SLICE_VARS),
                             "input_png2d": Ragged(PNG2D_VARS, max_len=6, lengths=True)},
                     targets={"target_total": Scalars(["trueE"])})
    return Batches(make_dataset(1000, seed=4), spec, batch_size=128, seed=9, **kw)


def test_dataloader_with_two_workers_yields_every_batch_as_tensors():
    batches = _batches()
    loader = DataLoader(TorchBatches(batches), batch_size=None, num_workers=2)
    seen = list(loader)
    assert len(seen) == len(batches) == 8
    for i, (x, y, w) in enumerate(seen):
        assert x["input_slice"].dtype == torch.float32 and x["input_png2d"].dtype == torch.float32
        assert y["target_total"].shape == (len(batches.rows_of(i)), 1)
        assert x["input_png2d_lengths"].dtype == torch.int64
        assert torch.all(w["target_total"] == 1)
        ref = batches[i]
        np.testing.assert_array_equal(x["input_png2d"].numpy(), ref[0]["input_png2d"])
        np.testing.assert_array_equal(y["target_total"].numpy(), ref[1]["target_total"])


def test_set_epoch_reaches_the_workers():
    batches = _batches()
    ds = TorchBatches(batches)
    loader = DataLoader(ds, batch_size=None, num_workers=2)
    first = next(iter(loader))[0]["input_slice"]
    ds.set_epoch(1)
    second = next(iter(loader))[0]["input_slice"]
    assert not torch.equal(first, second)
    np.testing.assert_array_equal(second.numpy(), batches[0][0]["input_slice"])


@pytest.mark.parametrize("shuffle", [True, "block"])
def test_forked_workers_do_not_wait_for_work_under_way_in_the_parent(tmp_path, shuffle):
    # as if a background thread of the parent (the next epoch's order, or a block
    # window read ahead) was at work when DataLoader forked: in the child, nobody
    # would ever finish it
    make_dataset(1000, seed=4).to_zarr(tmp_path / "d.zarr")
    batches = _batches(shuffle=shuffle) if shuffle is True else Batches(
        lstm_data.open(tmp_path / "d.zarr"), _batches().spec, batch_size=128, seed=9,
        shuffle="block")
    batches.set_epoch(1)
    want = [batches[i] for i in range(len(batches))]
    batches._plans = type(batches._plans)(keep=2)  # forget epoch 1's order...
    under_way = [batches._plans.claim(1)]  # ...and claim it, as a side job does, unfilled
    if shuffle == "block":
        batches._blocks._windows = type(batches._blocks._windows)(keep=2)
        under_way.append(batches._blocks._windows.claim((1, 0)))
    loader = DataLoader(TorchBatches(batches), batch_size=None, num_workers=2,
                        multiprocessing_context="fork", timeout=60)
    seen = list(loader)  # before the fix: "DataLoader timed out after 60 seconds"
    assert len(seen) == len(want)
    for (x, _, _), (ref, _, _) in zip(seen, want):
        np.testing.assert_array_equal(x["input_png2d"].numpy(), ref["input_png2d"])
    for future, owner in under_way:
        assert owner and not future.done()


def test_spawned_workers_get_the_dataset_by_memory_map():
    loader = DataLoader(TorchBatches(_batches()), batch_size=None, num_workers=2,
                        multiprocessing_context="spawn")
    assert sum(1 for _ in loader) == 8
