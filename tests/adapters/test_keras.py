"""KerasBatches: a real ``model.fit`` on the torch backend, with worker threads."""
from __future__ import annotations

import os
import pickle
import warnings

os.environ.setdefault("KERAS_BACKEND", "torch")

import numpy as np
import pytest

keras = pytest.importorskip("keras")

from lstm_data import (  # noqa: E402
    Batches, BatchSpec, OptionError, Order, Ragged, Scalars, SpecVersionWarning, open_batches, precompute)
from lstm_data.adapters.keras import KerasBatches, keras_inputs  # noqa: E402
from lstm_data.data.dataset import InMemoryDataset  # noqa: E402
from lstm_data.data.synthetic import PNG3D_VARS, SLICE_VARS, make_dataset  # noqa: E402
from tests.adapters.rows import (  # noqa: E402
    ROW,
    assert_epochs,
    plain_loop_orders,
    row_dataset,
    row_spec,
    rows_in,
)
from tests.helpers import EXAMPLES  # noqa: E402


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


def _recording_model(spec: BatchSpec):
    """A tiny model that logs the rows of every training step and every validation step."""
    log: dict[str, list] = {"train": [], "val": []}

    class Recording(keras.Model):
        def train_step(self, data):
            log["train"].append(rows_in(data[0]))
            return super().train_step(data)

        def test_step(self, data):
            log["val"].append(rows_in(data[0]))
            return super().test_step(data)

    inputs = keras_inputs(spec)
    x = keras.layers.Concatenate()([inputs[ROW], keras.layers.Flatten()(inputs["input_png3d"])])
    model = Recording(inputs=inputs, outputs={"target_total": keras.layers.Dense(1, name="target_total")(x)})
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss={"target_total": "mse"})
    return model, log


def _ours(caught) -> list[str]:
    return [str(w.message) for w in caught if "KerasBatches" in str(w.message) or "Keras asked" in str(w.message)]


# -- epochs: training epoch e reads order (seed, e) ----------------------------------------------------------
@pytest.mark.parametrize("threads", [1, 2])
def test_fit_epoch_e_reads_order_seed_e(threads):
    ds, spec = row_dataset(400), row_spec()
    want = plain_loop_orders(Batches(ds, spec, Order(batch_size=50, seed=7)), range(3))
    batches = Batches(ds, spec, Order(batch_size=50, seed=7))
    model, log = _recording_model(spec)
    model.fit(KerasBatches(batches, threads=threads, max_queue_size=3), epochs=3, shuffle=False, verbose=0)
    assert_epochs(log["train"], want)  # before: epoch 0 read order 1 (threads=2: batches of the last pass)
    assert batches.epoch == 3


@pytest.mark.parametrize("how", ["epoch_callback", "set_epoch"])
def test_initial_epoch_resumes_on_the_orders_of_those_epochs(how):
    ds, spec = row_dataset(300), row_spec()
    want = plain_loop_orders(Batches(ds, spec, Order(batch_size=50, seed=2)), [1, 2])
    train = Batches(ds, spec, Order(batch_size=50, seed=2))
    data = KerasBatches(train, threads=2)
    model, log = _recording_model(spec)
    if how == "set_epoch":
        train.set_epoch(1)  # or data.set_epoch(1)
        callbacks = []
    else:
        callbacks = [data.epoch_callback]
    model.fit(data, epochs=3, initial_epoch=1, shuffle=False, verbose=0, callbacks=callbacks)
    assert_epochs(log["train"], want)


def test_a_second_fit_of_a_built_model_goes_on_with_the_next_epochs():
    ds, spec = row_dataset(300), row_spec()
    want = plain_loop_orders(Batches(ds, spec, Order(batch_size=50, seed=4)), range(3))
    data = KerasBatches(Batches(ds, spec, Order(batch_size=50, seed=4)))
    model, log = _recording_model(spec)
    model.fit(data, epochs=1, shuffle=False, verbose=0)  # builds the model (Keras reads a batch first)
    model.fit(data, epochs=3, initial_epoch=1, shuffle=False, verbose=0)  # no warm-up read this time
    assert_epochs(log["train"], want)


def test_one_batch_per_epoch_with_the_epoch_callback():
    # Keras's warm-up read of the only batch is a whole pass: only Keras's epoch number tells them apart
    ds, spec = row_dataset(60), row_spec()
    want = plain_loop_orders(Batches(ds, spec, Order(batch_size=64, seed=1)), range(3))
    data = KerasBatches(Batches(ds, spec, Order(batch_size=64, seed=1)))
    model, log = _recording_model(spec)
    model.fit(data, epochs=3, shuffle=False, verbose=0, callbacks=[data.epoch_callback])
    assert_epochs(log["train"], want)


def test_validation_passes_read_deterministic_orders():
    ds, spec = row_dataset(500), row_spec()
    train, val = Batches(ds, spec, Order(batch_size=50, seed=6)).split(0.2)
    shuffled_val = Batches(ds, spec, Order(batch_size=40, seed=8), rows=np.arange(100, 300))
    want_split_val = plain_loop_orders(val, [0])[0]
    want_shuffled = plain_loop_orders(Batches(ds, spec, Order(batch_size=40, seed=8), rows=np.arange(100, 300)),
                                      range(3))
    for v, want in ((val, {e: want_split_val for e in range(3)}), (shuffled_val, want_shuffled)):
        model, log = _recording_model(spec)
        model.fit(KerasBatches(train, threads=2), validation_data=KerasBatches(v, threads=2), epochs=3,
                  shuffle=False, verbose=0)
        assert_epochs(log["val"], want)  # evaluation p reads the validation order of epoch p
        train.set_epoch(0)


def test_a_precomputed_store_serves_its_epochs_too(tmp_path):
    ds, spec = row_dataset(300), row_spec()
    precompute(ds, spec, tmp_path / "s.zarr", Order(batch_size=50, seed=5), progress=False)
    want = plain_loop_orders(open_batches(tmp_path / "s.zarr"), range(3))
    assert not all(np.array_equal(a, b) for a, b in zip(want[0], want[1]))  # the store permutes its batches
    stored = open_batches(tmp_path / "s.zarr")
    model, log = _recording_model(spec)
    model.fit(KerasBatches(stored, threads=2), epochs=3, shuffle=False, verbose=0)
    assert_epochs(log["train"], want)
    assert stored.epoch == 3


def test_keras_shuffling_the_batches_is_named():
    ds, spec = row_dataset(500), row_spec()
    model, _ = _recording_model(spec)
    keras.utils.set_random_seed(1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(KerasBatches(Batches(ds, spec, Order(batch_size=50, seed=7)), threads=2), epochs=2, verbose=0)
    msgs = _ours(caught)
    assert len(msgs) == 1 and "shuffle=False" in msgs[0], msgs


# -- NaN in what Keras gets ----------------------------------------------------------------------------------------
def test_nan_padding_warns_once_naming_the_input_and_the_fix():
    ds, spec = row_dataset(300), row_spec(pad_value=float("nan"))
    model, _ = _recording_model(spec)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = model.fit(KerasBatches(Batches(ds, spec, Order(batch_size=50, seed=7)), threads=2), epochs=2,
                            shuffle=False, verbose=0)
    msgs = _ours(caught)
    assert len(msgs) == 1, msgs
    assert "'input_png3d'" in msgs[0] and "NaN padding" in msgs[0]
    assert "nan_to=0.0" in msgs[0] and "Masking(mask_value=" in msgs[0]
    assert np.isnan(history.history["loss"]).all()  # what the warning is about


def test_a_version_1_spec_file_without_nan_to_warns_once_naming_both_padded_inputs(numu, tmp_path):
    ds = numu
    # the shipped spec as lstm_ee wrote it: no version, ragged tables without pad_value (NaN)
    old = tmp_path / "numu_v1.toml"
    old.write_text("\n".join(line for line in (EXAMPLES / "numu_v3.toml").read_text().splitlines()
                             if not line.startswith(("version", "pad_value", "lengths"))))
    with pytest.warns(SpecVersionWarning, match="input_png2d, inputs.input_png3d pad with NaN"):
        spec = BatchSpec.from_toml(old)
    data = KerasBatches(Batches(ds, spec, Order(batch_size=1024, seed=0)), threads=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        [data[i] for i in range(len(data))]
        data.on_epoch_end()
        data[0]
    msgs = _ours(caught)
    assert len(msgs) == 1 and "'input_png2d', 'input_png3d' holds NaN padding" in msgs[0], msgs
    assert not _ours_of(KerasBatches(Batches(ds, spec.replace(nan_to=0.0), Order(batch_size=1024, seed=0))))
    assert not _ours_of(KerasBatches(Batches(ds, BatchSpec.from_toml(EXAMPLES / "numu_v3.toml"),
                                             Order(batch_size=1024, seed=0))))


def _ours_of(data) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data[0]
    return _ours(caught)


@pytest.mark.parametrize("fix", ["nan_to", "finite pad"])
def test_no_warning_without_nan(fix):
    ds = row_dataset(300)
    spec = row_spec(pad_value=float("nan") if fix == "nan_to" else -1.0)
    batches = Batches(ds, spec.replace(nan_to=0.0 if fix == "nan_to" else None), Order(batch_size=50, seed=7))
    model, _ = _recording_model(spec)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = model.fit(KerasBatches(batches), epochs=2, shuffle=False, verbose=0)
    assert _ours(caught) == []
    assert np.isfinite(history.history["loss"]).all()


def test_nan_values_in_an_input_warn_once():
    ds = row_dataset(300)
    calE = ds.scalar("calE").copy()
    calE[::7] = np.nan  # missing scalars read as NaN
    ds = InMemoryDataset({**{n: ds.scalar(n) for n in ds.scalar_names}, "calE": calE},
                         {g: ds.group(g) for g in ds.groups})
    spec = BatchSpec(inputs={"input_slice": Scalars(SLICE_VARS)}, targets={"target_total": Scalars(["trueE"])})
    data = KerasBatches(Batches(ds, spec, Order(batch_size=50, seed=7)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            [data[i] for i in range(len(data))]
    msgs = _ours(caught)
    assert len(msgs) == 1 and "'input_slice' holds NaN values" in msgs[0] and "nan_to=0.0" in msgs[0], msgs


# -- training, items, pickling ----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_fit_two_epochs_with_two_threads_loss_decreases():
    keras.utils.set_random_seed(0)
    ds = make_dataset(2000, seed=3)
    spec = _spec()
    batches = Batches(ds, spec.replace(nan_to=0.0), Order(batch_size=128, seed=5))
    data = KerasBatches(batches, threads=2, max_queue_size=4)
    history = _model(spec).fit(data, epochs=2, verbose=0, shuffle=False)
    losses = history.history["loss"]
    assert len(losses) == 2 and np.all(np.isfinite(losses))
    assert losses[1] < losses[0]
    assert batches.epoch == 2  # on_epoch_end reached Batches: a new order each epoch


def test_items_are_inputs_targets_weights_named_by_spec():
    ds = make_dataset(300, seed=1)
    with pytest.warns(UserWarning, match=r"use_multiprocessing=True\) is ignored"):
        kb = KerasBatches(Batches(ds, _spec().replace(nan_to=0.0), Order(batch_size=100, seed=0)), threads=3,
                          use_multiprocessing=True, max_queue_size=7)
    assert (kb.threads, kb.workers, kb.use_multiprocessing, kb.max_queue_size) == (3, 1, False, 7)
    assert len(kb) == 3 and kb.num_batches == 3
    x, y, w = kb[2]
    assert set(x) == {"input_slice", "input_png3d"} and set(y) == {"target_total"}
    assert x["input_png3d"].shape == (100, 8, 8) and not np.isnan(np.asarray(x["input_png3d"])).any()
    assert w["target_total"].shape == (100,)
    x2, y2 = KerasBatches(kb.batches, sample_weights=False)[2]
    np.testing.assert_array_equal(x2["input_slice"], x["input_slice"])
    with pytest.raises(OptionError, match="threads must be an int >= 1"):
        KerasBatches(kb.batches, threads=0)


def test_workers_is_not_taken_and_names_threads():
    """``workers=`` meant threads: it is refused, naming ``threads``, never taken silently."""
    batches = Batches(make_dataset(50, seed=1), _spec().replace(nan_to=0.0), Order(batch_size=10, seed=0))
    with pytest.raises(OptionError, match=r"unexpected keyword argument 'workers': it is now threads"):
        KerasBatches(batches, workers=2)


def test_pickle_is_small_and_maps_the_arrays():
    ds = make_dataset(20_000, seed=2)
    kb = KerasBatches(Batches(ds, _spec().replace(nan_to=0.0), Order(batch_size=256, seed=0)), threads=2)
    kb[0], kb[1]  # a stream of batches under way is not pickled
    blob = pickle.dumps(kb)
    assert ds.nbytes > 10_000_000
    assert len(blob) < 20_000, len(blob)
    back = pickle.loads(blob)
    assert isinstance(back.batches.dataset.ragged("png")[0], np.memmap)
    a, b = kb[5], back[5]
    for k in a[0]:
        np.testing.assert_array_equal(a[0][k], b[0][k])
