"""At the end of each epoch, iteration, the Keras adapter and the torch sampler log the order's figures
(padding per real element, rows cut, mixing) on the ``lstm_data`` logger at INFO, with the time the
loop waited for batches where it can be measured."""
from __future__ import annotations

import logging
import os
import re

import numpy as np
import pytest

from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars
from lstm_data.data.synthetic import PNG3D_VARS, SLICE_VARS, make_dataset


@pytest.fixture(scope="module")
def batches():
    data = make_dataset(3000, seed=4, png_mean=2.0)
    spec = BatchSpec(inputs={"slice": Scalars(SLICE_VARS), "png": Ragged(PNG3D_VARS[:2], max_len=5)},
                     targets={"total": Scalars(["trueE"])}, nan_to=0.0)
    return Batches(data, spec, Order(batch_size=500, seed=3, bucket_by="png"))


def _epoch_lines(caplog):
    return [r.getMessage() for r in caplog.records if r.name.startswith("lstm_data")
            and r.getMessage().startswith("epoch ")]


def test_iteration_logs_each_epoch_once_with_its_wait(batches, caplog):
    caplog.set_level(logging.INFO, logger="lstm_data")
    batches.set_epoch(0)
    for _ in batches:
        pass
    lines = _epoch_lines(caplog)
    assert len(lines) == 1 and lines[0].startswith("epoch 0: 6 batches, 3000 rows")
    stats = batches.stats(0)
    assert f"png {stats['padding']['png']:.3f}" in lines[0]
    waited = float(re.search(r"waited ([0-9.]+) s", lines[0]).group(1))
    assert waited >= 0
    caplog.clear()
    it = iter(batches)
    next(it)
    del it  # an epoch left half way is not reported
    assert _epoch_lines(caplog) == []


def test_silent_without_info(batches, caplog):
    caplog.set_level(logging.WARNING, logger="lstm_data")
    for _ in batches:
        pass
    assert _epoch_lines(caplog) == []


def test_keras_fit_logs_every_epoch(batches, caplog):
    os.environ.setdefault("KERAS_BACKEND", "torch")
    keras = pytest.importorskip("keras")
    from lstm_data.keras import KerasBatches, keras_inputs

    caplog.set_level(logging.INFO, logger="lstm_data")
    batches.set_epoch(0)
    seq = KerasBatches(batches, sample_weights=False)
    inputs = keras_inputs(batches.spec)
    x = keras.layers.Concatenate()([keras.layers.GlobalAveragePooling1D()(inputs["png"]), inputs["slice"]])
    model = keras.Model(inputs, {"total": keras.layers.Dense(1, name="total")(x)})
    model.compile(optimizer="sgd", loss="mse")
    model.fit(seq, epochs=2, shuffle=False, verbose=0)
    lines = _epoch_lines(caplog)
    assert [line.split(":")[0] for line in lines] == ["epoch 0", "epoch 1"]
    assert all("waited" in line for line in lines)


def test_torch_loader_logs_every_pass(batches, caplog):
    pytest.importorskip("torch")
    from lstm_data.torch import TorchBatches

    caplog.set_level(logging.INFO, logger="lstm_data")
    batches.set_epoch(0)
    tb = TorchBatches(batches)
    loader = tb.loader() if hasattr(tb, "loader") else None
    if loader is None:
        import torch

        loader = torch.utils.data.DataLoader(tb, batch_size=None, sampler=tb.sampler)
    for _ in range(2):
        n = sum(1 for _ in loader)
        assert n == len(batches)
    lines = _epoch_lines(caplog)
    assert [line.split(":")[0] for line in lines] == ["epoch 0", "epoch 1"]
    assert np.isfinite(batches.stats(1)["mixing"])
