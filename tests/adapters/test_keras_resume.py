"""Keras mid-epoch resumption: a real ``model.fit`` stopped after k steps, restored, continues the epoch exactly."""
from __future__ import annotations

import os
import warnings

os.environ.setdefault("KERAS_BACKEND", "torch")

import numpy as np
import pytest

keras = pytest.importorskip("keras")

from lstm_data import Batches, Order, open_batches, precompute  # noqa: E402
from lstm_data.adapters.keras import KerasBatches, keras_inputs  # noqa: E402
from lstm_data.adapters.keras_resume import KerasCheckpoint  # noqa: E402
from lstm_data.errors import FormatError, OptionError  # noqa: E402
from tests.adapters.rows import ROW, assert_epochs, plain_loop_orders, row_dataset, row_spec, rows_in  # noqa: E402

ORDER = Order(batch_size=50, seed=7)  # 400 rows: 8 batches per epoch
EPOCHS, STOP_EPOCH, K = 3, 1, 3


def _model(spec, log):
    """A tiny model that records the rows of every training step."""

    class Recording(keras.Model):
        def train_step(self, data):
            log.append(rows_in(data[0]))
            return super().train_step(data)

    keras.utils.set_random_seed(0)
    inputs = keras_inputs(spec)
    x = keras.layers.Concatenate()([inputs[ROW], keras.layers.Flatten()(inputs["input_png3d"])])
    model = Recording(inputs=inputs, outputs={"target_total": keras.layers.Dense(1, name="target_total")(x)})
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss={"target_total": "mse"})
    return model


class _StopAt(keras.callbacks.Callback):
    """Stops ``fit`` after ``step`` steps of ``epoch`` (a preemption)."""

    def __init__(self, epoch, step):
        super().__init__()
        self.epoch, self.step, self.now = epoch, step, -1

    def on_epoch_begin(self, epoch, logs=None):
        self.now = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self.now == self.epoch and batch + 1 == self.step:
            self.model.stop_training = True


def _weights(model):
    return [np.asarray(w) for w in model.get_weights()]


@pytest.mark.parametrize("threads", [1, 2])
def test_fit_stopped_after_k_steps_and_restored_continues_the_epoch(tmp_path, threads):
    ds, spec = row_dataset(400), row_spec()
    want = plain_loop_orders(Batches(ds, spec, ORDER), range(EPOCHS))

    first: list = []
    data = KerasBatches(Batches(ds, spec, ORDER), threads=threads)
    checkpoint = KerasCheckpoint(data, tmp_path / "run")
    assert checkpoint.initial_epoch == 0
    _model(spec, first).fit(data, epochs=EPOCHS, initial_epoch=checkpoint.initial_epoch, shuffle=False,
                            verbose=0, callbacks=[checkpoint, _StopAt(STOP_EPOCH, K)])
    assert len(first) == len(want[0]) + K  # preempted after K steps of epoch 1

    # a new process: new data, new model, the same checkpoint directory
    resumed: list = []
    data = KerasBatches(Batches(ds, spec, ORDER), threads=threads)
    checkpoint = KerasCheckpoint(data, tmp_path / "run")
    assert checkpoint.initial_epoch == STOP_EPOCH
    model = _model(spec, resumed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(data, epochs=EPOCHS, initial_epoch=checkpoint.initial_epoch, shuffle=False, verbose=0,
                  callbacks=[checkpoint])
        assert not [f for f in warnings.filters if f[1] is not None and "ran out" in f[1].pattern]  # removed
    assert not [w for w in caught if "ran out of data" in str(w.message)]  # the short pass is expected

    assert_epochs(first + resumed, want)  # epoch 1: K steps, then the rest; epoch 2: a fresh run's
    epoch = np.concatenate(first[len(want[0]):] + resumed[:len(want[1]) - K])
    assert np.array_equal(np.sort(epoch), np.arange(400))  # every row once in the interrupted epoch

    # the model went on from the checkpoint: the same weights as a run never interrupted
    whole: list = []
    uninterrupted = _model(spec, whole)
    plain = KerasBatches(Batches(ds, spec, ORDER), threads=threads)
    uninterrupted.fit(plain, epochs=EPOCHS, shuffle=False, verbose=0, callbacks=[plain.epoch_callback])
    for got, ref in zip(_weights(model), _weights(uninterrupted)):
        np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-7)


def test_the_position_alone_resumes_with_the_epoch_callback():
    ds, spec = row_dataset(400), row_spec()
    want = plain_loop_orders(Batches(ds, spec, ORDER), range(2))
    first: list = []
    data = KerasBatches(Batches(ds, spec, ORDER))
    _model(spec, first).fit(data, epochs=2, shuffle=False, verbose=0,
                            callbacks=[data.epoch_callback, _StopAt(0, K)])
    state = data.state_dict()
    assert (state["epoch"], state["next_batch"]) == (0, K)

    resumed: list = []
    data = KerasBatches(Batches(ds, spec, ORDER))
    data.load_state_dict(state)
    assert data.state_dict() == state  # not started yet: still that position
    model = _model(spec, resumed)
    with pytest.raises(OptionError, match=r"resumes epoch 0 at step 3, but fit starts epoch 1: pass fit\(\.\.\., "
                                          r"initial_epoch=0\)"):
        model.fit(data, epochs=2, initial_epoch=1, shuffle=False, verbose=0, callbacks=[data.epoch_callback])
    data.load_state_dict(state)
    model.fit(data, epochs=2, initial_epoch=data.epoch, shuffle=False, verbose=0, callbacks=[data.epoch_callback])
    assert_epochs(first + resumed, want)
    assert data.state_dict()["epoch"] == 2 and data.state_dict()["next_batch"] == 0


def test_a_checkpoint_refuses_what_it_cannot_take(tmp_path):
    data = KerasBatches(Batches(row_dataset(100), row_spec(), ORDER))
    with pytest.raises(OptionError, match="save_freq must be 'epoch' or an int >= 1, got 0"):
        KerasCheckpoint(data, tmp_path, save_freq=0)
    (tmp_path / "position.json").write_text('{"format": 1, "saves": 1, "weights": "gone.weights.h5", "data": {}}')
    with pytest.raises(FormatError, match="weights 'gone.weights.h5' are missing"):
        KerasCheckpoint(data, tmp_path)
    (tmp_path / "position.json").write_text('{"format": 1}')
    with pytest.raises(FormatError, match="not a KerasCheckpoint position"):
        KerasCheckpoint(data, tmp_path)


def test_a_sharded_store_stopped_on_2_ranks_resumes_under_keras_on_3(tmp_path):
    """Each rank's fit runs in turn here (no collective): what matters is which batches each one gets."""
    budget = Order(batch_size=64, seed=13, bucket_by="input_png3d", max_elements=128)
    precompute(row_dataset(1000), row_spec(), tmp_path / "b.zarr", budget, progress=False)
    spec = open_batches(tmp_path / "b.zarr").spec  # input_png3d (B, None, 3): its width varies per batch

    def model(log):
        class Recording(keras.Model):
            def train_step(self, data):
                log.append(tuple(rows_in(data[0]).tolist()))
                return super().train_step(data)

        inputs = keras_inputs(spec)
        x = keras.layers.Concatenate()([inputs[ROW], keras.layers.GlobalAveragePooling1D()(inputs["input_png3d"])])
        net = Recording(inputs=inputs, outputs={"target_total": keras.layers.Dense(1, name="target_total")(x)})
        net.compile(optimizer="adam", loss={"target_total": "mse"})
        return net

    old, states = [], []
    for rank in range(2):
        data = KerasBatches(open_batches(tmp_path / "b.zarr").shard(rank, 2))
        model(old).fit(data, epochs=2, shuffle=False, verbose=0, callbacks=[data.epoch_callback, _StopAt(0, K)])
        states.append(data.state_dict())
    new = []
    for rank in range(3):
        data = KerasBatches(open_batches(tmp_path / "b.zarr").shard(rank, 3))
        data.load_state_dict(states[1])  # any rank's state
        new.append([])
        model(new[-1]).fit(data, epochs=2, initial_epoch=data.epoch, shuffle=False, verbose=0,
                           callbacks=[data.epoch_callback])
    n = len(open_batches(tmp_path / "b.zarr"))
    fresh = [open_batches(tmp_path / "b.zarr").shard(rank, 3) for rank in range(3)]
    left = (n - 2 * K) // 3
    assert {len(steps) for steps in new} == {left + len(fresh[0])}  # equal steps on every new rank
    epoch0 = old + [b for steps in new for b in steps[:left]]
    assert len(set(epoch0)) == len(epoch0) == n - (n - 2 * K) % 3  # each stored batch once, but the remainder
    for shard, steps in zip(fresh, new):  # epoch 1: a fresh world of 3's
        shard.set_epoch(1)
        assert steps[left:] == [tuple(rows_in(b[0]).tolist()) for b in shard]
