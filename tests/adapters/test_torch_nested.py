"""TorchBatches(nested=...): packed Ragged inputs as torch nested jagged tensors over the packed
values (no copy), round-tripping to the padded batch, through a real DataLoader."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars
from lstm_data.data.synthetic import PNG2D_VARS, PNG3D_VARS, make_dataset
from lstm_data.torch import TorchBatches, nested_from_packed

PAD = -5.0


def _spec(layout: str, **ragged) -> BatchSpec:
    return BatchSpec(inputs={"part": Ragged(PNG3D_VARS[:4], max_len=6, layout=layout, pad_value=PAD,
                                            sort_by=PNG3D_VARS[0], **ragged),
                             "p2": Ragged(PNG2D_VARS[:2], max_len=3, pad_value=PAD)},
                     targets={"target_total": Scalars(["trueE"])})


@pytest.fixture(scope="module")
def data():
    return make_dataset(600, seed=9)


def test_nested_from_packed_does_not_copy_the_values():
    values = torch.arange(24, dtype=torch.float32).reshape(8, 3)
    cu = torch.tensor([0, 3, 3, 8], dtype=torch.int32)
    nt = nested_from_packed(values, cu, torch.tensor(5, dtype=torch.int32))
    assert nt.is_nested and nt.values().data_ptr() == values.data_ptr()
    assert nt.offsets().data_ptr() == cu.data_ptr()
    values[0, 0] = 100.0  # one memory: an edit of the packed tensor shows in the nested one
    assert nt.values()[0, 0] == 100.0
    padded = nt.to_padded_tensor(0.0)
    assert padded.shape == (3, 5, 3) and torch.equal(padded[2], values[3:8])


@pytest.mark.parametrize("num_workers, transfer", [(0, "shared"), (2, "shared"), (2, "torch")])
def test_nested_inputs_round_trip_to_the_padded_batch(data, num_workers, transfer):
    order = Order(batch_size=100, seed=4)
    packed = TorchBatches(Batches(data, _spec("packed"), order), nested=True, worker_transfer=transfer)
    padded = Batches(data, _spec("padded", lengths=True), order)
    loader = DataLoader(packed, batch_size=None, sampler=packed.sampler, num_workers=num_workers)
    n = 0
    for i, (x, _, _) in enumerate(loader):
        nt = x["part"]
        want = padded.batch(i, epoch=0)[0]
        assert nt.is_nested and nt.size(0) == 100
        back = nt.to_padded_tensor(PAD)
        ref = torch.from_numpy(want["part"])
        width = back.shape[1]  # the batch's longest kept row
        assert width == int(want["part_lengths"].max())
        assert torch.equal(back, ref[:, :width]) and (ref[:, width:] == PAD).all()
        assert torch.equal(x["part_cu_seqlens"][1:].diff(prepend=torch.zeros(1, dtype=torch.int32)).long(),
                           torch.from_numpy(want["part_lengths"]))
        assert not x["p2"].is_nested and x["p2"].shape == (100, 3, 2)  # padded inputs stay padded
        n += 1
    assert n == len(packed)


def test_nested_values_are_the_packed_tensor_in_process(data):
    """Without worker processes: the nested tensor holds the packed values and offsets as built."""
    batches = Batches(data, _spec("packed"), Order(batch_size=100, seed=4))
    plain = TorchBatches(batches)
    nested = TorchBatches(batches, nested=["part"])
    x, y = plain[(0, 1)][0], nested[(0, 1)][0]
    assert torch.equal(y["part"].values(), x["part"])
    assert torch.equal(y["part"].offsets(), x["part_cu_seqlens"]) and y["part"].offsets().dtype == torch.int32
    assert "part_cu_seqlens" in y and "part_max_seqlen" in y  # kept for varlen attention kernels


def test_nested_names_are_checked(data):
    batches = Batches(data, _spec("packed"), Order(batch_size=100, seed=4))
    with pytest.raises(ValueError, match="'p2' is not a packed input"):
        TorchBatches(batches, nested=["p2"])
    with pytest.raises(ValueError, match="no packed input"):
        TorchBatches(Batches(data, _spec("padded"), Order(batch_size=100, seed=4)), nested=True)
    assert TorchBatches(batches).nested == () and TorchBatches(batches, nested=True).nested == ("part",)


def test_a_model_trains_on_nested_inputs(data):
    """A per-row mean over a nested tensor (what a set/attention model does), trained a few steps."""
    torch.manual_seed(0)
    tb = TorchBatches(Batches(data, _spec("packed"), Order(batch_size=100, seed=4)), nested=True)
    lin = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(lin.parameters(), lr=1e-4)
    losses = []
    for x, t, _ in DataLoader(tb, batch_size=None, sampler=tb.sampler):
        nt = x["part"]
        pooled = torch.stack([row.mean(0) if len(row) else torch.zeros(4) for row in nt.unbind()])
        loss = ((lin(pooled) - t["target_total"]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    assert np.isfinite(losses).all() and len(losses) == 6


def test_nested_values_cross_worker_processes_in_the_shared_slot(data):
    """With worker processes and the shared transfer, the nested tensor's values are a view of the
    worker's segment, next to the batch's other outputs (not a copy made for the transfer)."""
    tb = TorchBatches(Batches(data, _spec("packed"), Order(batch_size=100, seed=4)), nested=True)
    for x, _, _ in DataLoader(tb, batch_size=None, sampler=tb.sampler, num_workers=1):
        values, cu = x["part"].values(), x["part_cu_seqlens"]
        assert x["part"].offsets().data_ptr() == cu.data_ptr()
        # the segment lays arrays out one after another at 64-byte offsets
        assert cu.data_ptr() - values.data_ptr() == -(-values.nbytes // 64) * 64
        break


@pytest.mark.parametrize("nested", [False, True])
@pytest.mark.parametrize("cache", [None, "ram"])
def test_every_tensor_has_the_numpy_batchs_shape(data, nested, cache):
    order = Order(batch_size=100, seed=4, cache=cache)
    b = Batches(data, _spec("packed"), order)
    tb = TorchBatches(b, nested=nested)
    for keys in ((0, (0, 0)), ((0, 0),)):  # with cache="ram" the second read is of the kept arrays
        for x in (tb[key][0] for key in keys):  # a plain key once: twice in an epoch warns
            want = b.batch(0, epoch=0)[0]
            assert want["part_max_seqlen"].shape == ()
            for name, arr in want.items():
                if name == "part" and nested:
                    continue
                assert tuple(x[name].shape) == arr.shape, name
            assert int(x["part_max_seqlen"]) == int(want["part_max_seqlen"])


@pytest.mark.parametrize("num_workers, transfer", [(0, "shared"), (2, "shared"), (2, "torch")])
def test_the_loader_keeps_the_0d_max_seqlen(data, num_workers, transfer):
    tb = TorchBatches(Batches(data, _spec("packed"), Order(batch_size=100, seed=4)), worker_transfer=transfer)
    loader = DataLoader(tb, batch_size=None, sampler=tb.sampler, num_workers=num_workers)
    for x, _, _ in loader:
        assert x["part_max_seqlen"].shape == () and x["part_cu_seqlens"].shape == (101,)
