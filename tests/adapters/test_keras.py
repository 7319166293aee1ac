"""KerasBatches: a real ``model.fit`` on the torch backend, with worker threads."""
from __future__ import annotations

import os
import pickle

os.environ.setdefault("KERAS_BACKEND", "torch")

import numpy as np
import pytest

keras = pytest.importorskip("keras")

from lstm_data import Batches, BatchSpec, Ragged, Scalars  # noqa: E402
from lstm_data.adapters.keras import KerasBatches, keras_inputs  # noqa: E402
from lstm_data.data.synthetic import PNG3D_VARS, SLICE_VARS, make_dataset  # noqa: E402


def _spec() -> BatchSpec:
    return BatchSpec(inputs={"input_slice": Scalars(SLICE_VARS),
                             "input_png3d": Ragged(PNG3D_VARS[:8], max_len=8, sort_by="png.calE")},
                     targets={"target_total": Scalars(["trueE"])})


def _model(spec: BatchSpec):
    inputs = keras_inputs(spec)
    png = keras.layers.Masking(mask_value=0.0)(inputs["input_png3d"])
    png = keras.layers.LSTM(8)(png)
    sl = keras.layers.Dense(8, activation="relu")(inputs["input_slice"])
    x = keras.layers.Concatenate()([png, sl])
    out = keras.layers.Dense(1, name="target_total")(x)
    model = keras.Model(inputs=inputs, outputs={"target_total": out})
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss={"target_total": "mse"})
    return model


def test_fit_two_epochs_with_two_workers_loss_decreases():
    keras.utils.set_random_seed(0)
    ds = make_dataset(2000, seed=3)
    spec = _spec()
    batches = Batches(ds, spec, batch_size=128, seed=5, nan_to=0.0)
    data = KerasBatches(batches, workers=2, max_queue_size=4)
    history = _model(spec).fit(data, epochs=2, verbose=0)
    losses = history.history["loss"]
    assert len(losses) == 2 and np.all(np.isfinite(losses))
    assert losses[1] < losses[0]
    assert batches.epoch >= 2  # on_epoch_end reached Batches: a new order each epoch


def test_items_are_inputs_targets_weights_named_by_spec():
    ds = make_dataset(300, seed=1)
    kb = KerasBatches(Batches(ds, _spec(), batch_size=100, seed=0, nan_to=0.0), workers=3,
                      use_multiprocessing=True, max_queue_size=7)
    assert (kb.workers, kb.use_multiprocessing, kb.max_queue_size) == (3, True, 7)
    assert len(kb) == 3 and kb.num_batches == 3
    x, y, w = kb[2]
    assert set(x) == {"input_slice", "input_png3d"} and set(y) == {"target_total"}
    assert x["input_png3d"].shape == (100, 8, 8) and not np.isnan(x["input_png3d"]).any()
    assert w["target_total"].shape == (100,)
    x2, y2 = KerasBatches(kb.batches, weights=False)[2]
    np.testing.assert_array_equal(x2["input_slice"], x["input_slice"])


def test_pickle_is_small_and_maps_the_arrays():
    ds = make_dataset(20_000, seed=2)
    kb = KerasBatches(Batches(ds, _spec(), batch_size=256, seed=0), workers=2, use_multiprocessing=True)
    blob = pickle.dumps(kb)
    assert ds.nbytes > 10_000_000
    assert len(blob) < 20_000, len(blob)
    back = pickle.loads(blob)
    assert isinstance(back.batches.dataset.ragged("png")[0], np.memmap)
    a, b = kb[5], back[5]
    for k in a[0]:
        np.testing.assert_array_equal(a[0][k], b[0][k])
