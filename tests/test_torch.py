"""TorchBatches: whole batches through a real DataLoader with worker processes."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch.utils.data import DataLoader  # noqa: E402

from lstm_data import BatchSpec, Batches, Ragged, Scalars  # noqa: E402
from lstm_data.synthetic import PNG2D_VARS, SLICE_VARS, make_dataset  # noqa: E402
from lstm_data.torch import TorchBatches  # noqa: E402


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


def test_spawned_workers_get_the_dataset_by_memory_map():
    loader = DataLoader(TorchBatches(_batches()), batch_size=None, num_workers=2,
                        multiprocessing_context="spawn")
    assert sum(1 for _ in loader) == 8
