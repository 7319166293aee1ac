"""TorchBatches warns when an input can carry NaN into the model: NaN padding from the spec (at
construction), NaN values in the first batch; nothing with the 0.0 default padding."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars
from lstm_data.data.dataset import InMemoryDataset
from lstm_data.data.synthetic import PNG3D_VARS, SLICE_VARS, make_dataset
from lstm_data.torch import TorchBatches


def _spec(**ragged) -> BatchSpec:
    return BatchSpec(inputs={"input_slice": Scalars(SLICE_VARS[:3]),
                             "input_png3d": Ragged(PNG3D_VARS[:3], max_len=5, lengths=True, **ragged)},
                     targets={"target_total": Scalars(["trueE"])})


def _masked_mean_loss(loader) -> list[float]:
    """One epoch of a tiny model that averages the real prongs (a mask, as users write it)."""
    torch.manual_seed(0)
    lin = torch.nn.Linear(3 + 3, 1)
    opt = torch.optim.SGD(lin.parameters(), lr=1e-3)
    losses = []
    for inputs, targets, _ in loader:
        x, lens = inputs["input_png3d"], inputs["input_png3d_lengths"]
        mask = (torch.arange(x.shape[1])[None, :] < lens[:, None]).float()
        pooled = (x * mask[..., None]).sum(1) / mask.sum(1).clamp(min=1)[:, None]
        out = lin(torch.cat([pooled, inputs["input_slice"]], 1))
        loss = ((out - targets["target_total"]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return losses


def _ours(caught) -> list[str]:
    return [str(w.message) for w in caught if "lstm_data TorchBatches" in str(w.message)]


def test_nan_padding_warns_at_construction_naming_the_input_and_the_fix():
    ds = make_dataset(400, seed=2)
    batches = Batches(ds, _spec(pad_value=math.nan), Order(batch_size=100, seed=1))
    with pytest.warns(UserWarning, match=r"TorchBatches: input 'input_png3d' holds NaN padding") as caught:
        data = TorchBatches(batches)
    msg = _ours(caught)[0]
    assert "nan_to=0.0" in msg and "pad_value=0.0" in msg
    # what the warning is about: a masked mean over NaN padding is NaN (nan * 0 == nan)
    losses = _masked_mean_loss(DataLoader(data, batch_size=None, sampler=data.sampler))
    assert np.isnan(losses).all()


def test_the_default_padding_and_nan_to_give_no_warning_and_finite_loss():
    ds = make_dataset(400, seed=2)
    for spec in (_spec(), _spec(pad_value=math.nan).replace(nan_to=0.0)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            data = TorchBatches(Batches(ds, spec, Order(batch_size=100, seed=1)))
            losses = _masked_mean_loss(DataLoader(data, batch_size=None, sampler=data.sampler))
        assert _ours(caught) == []
        assert np.isfinite(losses).all()


def test_nan_values_in_the_first_batch_warn_once():
    base = make_dataset(300, seed=4)
    calE = base.scalar(SLICE_VARS[0]).copy()
    calE[::5] = np.nan  # missing scalars read as NaN
    ds = InMemoryDataset({**{n: base.scalar(n) for n in base.scalar_names}, SLICE_VARS[0]: calE},
                         {g: base.group(g) for g in base.groups})
    data = TorchBatches(Batches(ds, _spec(), Order(batch_size=100, seed=1)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            list(DataLoader(data, batch_size=None, sampler=data.sampler))
    msgs = _ours(caught)
    assert len(msgs) == 1 and "'input_slice' holds NaN values" in msgs[0] and "nan_to=0.0" in msgs[0], msgs


def test_a_variable_padded_with_nan_by_its_standardisation_warns():
    from lstm_data import Standardize

    ds = make_dataset(200, seed=2)
    own_nan = _spec(standardize={PNG3D_VARS[1]: Standardize(scale=2.0, pad_value=math.nan)})
    with pytest.warns(UserWarning, match="'input_png3d' holds NaN padding"):
        TorchBatches(Batches(ds, own_nan, Order(batch_size=100, seed=1)))
    # NaN field padding that every variable's own pad value replaces is no NaN padding
    replaced = _spec(pad_value=math.nan, standardize={v: Standardize(pad_value=0.0) for v in PNG3D_VARS[:3]})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data = TorchBatches(Batches(ds, replaced, Order(batch_size=100, seed=1)))
        x = data[(0, 0)][0]["input_png3d"]
    assert _ours(caught) == [] and not torch.isnan(x).any()
