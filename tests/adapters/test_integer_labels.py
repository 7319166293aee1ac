"""int64 class-index labels ``(B,)`` through TorchBatches (a real CrossEntropyLoss step) and KerasBatches."""
from __future__ import annotations

import os

os.environ.setdefault("KERAS_BACKEND", "torch")

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch.utils.data import DataLoader  # noqa: E402

import lstm_data  # noqa: E402
from lstm_data import Batches, BatchSpec, InMemoryDataset, Order, Ragged, Scalars  # noqa: E402
from lstm_data.adapters.torch import TorchBatches  # noqa: E402
from lstm_data.data.ragged import RaggedGroup  # noqa: E402

N, CLASSES, WIDTH = 96, 3, 4


def _batches(tmp_path=None) -> Batches:
    rng = np.random.default_rng(11)
    lens = rng.integers(0, 7, N)
    off = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(lens, out=off[1:])
    label = rng.integers(0, CLASSES, N).astype(np.float64)  # a float column of whole numbers
    ds = InMemoryDataset({"label": label, "x": rng.normal(size=N).astype(np.float32)},
                         {"p": RaggedGroup(["a", "b"], rng.normal(size=(off[-1], 2)).astype(np.float32), off)})
    spec = BatchSpec(inputs={"x": Scalars(["x"]), "p": Ragged(["a", "b"], max_len=WIDTH)},
                     targets={"label": Scalars(["label"], dtype="int64", squeeze=True)})
    if tmp_path is not None:  # the same batches read back from a store
        lstm_data.precompute(ds, spec, tmp_path / "b.zarr", Order(batch_size=32, seed=4), progress=False)
        return lstm_data.open_batches(tmp_path / "b.zarr", spec=spec)
    return Batches(ds, spec, Order(batch_size=32, seed=4))


@pytest.mark.parametrize("stored", [False, True])
def test_torch_label_is_int64_and_trains_with_cross_entropy(tmp_path, stored):
    data = TorchBatches(_batches(tmp_path if stored else None))
    model = torch.nn.Linear(1 + WIDTH * 2, CLASSES)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = torch.nn.CrossEntropyLoss()
    for i in range(len(data)):
        inputs, targets, _ = data[i]
        label = targets["label"]
        assert label.dtype == torch.int64 and label.shape == (len(inputs["x"]),)
        logits = model(torch.cat([inputs["x"], inputs["p"].flatten(1)], dim=1))
        loss = loss_fn(logits, label)  # CrossEntropyLoss refuses a float (B, 1) target
        opt.zero_grad()
        loss.backward()
        opt.step()
        assert torch.isfinite(loss)
    assert model.weight.grad is not None and bool(model.weight.grad.abs().sum() > 0)


def test_torch_workers_send_int64_labels():
    loader = DataLoader(TorchBatches(_batches()), batch_size=None, num_workers=1)
    got = [t["label"] for _, t, _ in loader]
    want = [torch.from_numpy(b[1]["label"]) for b in (_batches()[i] for i in range(len(_batches())))]
    assert all(g.dtype == torch.int64 and g.shape == (32,) for g in got)
    assert all(torch.equal(g, w) for g, w in zip(got, want))


def test_keras_label_is_int64_and_trains_with_sparse_crossentropy():
    keras = pytest.importorskip("keras")
    from lstm_data.adapters.keras import KerasBatches, keras_inputs

    batches = _batches()
    data = KerasBatches(batches)
    _, targets, _ = data[0]
    label = targets["label"]
    assert str(label.dtype) in ("torch.int64", "int64") and tuple(label.shape) == (32,)
    inputs = keras_inputs(batches.spec)
    x = keras.layers.Concatenate()([inputs["x"], keras.layers.Flatten()(inputs["p"])])
    out = keras.layers.Dense(CLASSES, activation="softmax", name="label")(x)
    model = keras.Model(inputs=inputs, outputs={"label": out})
    model.compile(optimizer="sgd", loss={"label": "sparse_categorical_crossentropy"})
    history = model.fit(data, epochs=1, shuffle=False, verbose=0)
    assert np.isfinite(float(history.history["loss"][0]))
