"""Keras model.fit (torch backend) with the padding defaults: a version-1 spec file (NaN padding)
warns before the loss goes NaN, the same file at version 2 trains without a warning; augmentation
and empty rows with one padded step train as well."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

keras = pytest.importorskip("keras")

from lstm_data import Batches, BatchSpec, Order, SpecVersionWarning  # noqa: E402
from lstm_data.adapters.keras import KerasBatches, keras_inputs  # noqa: E402
from lstm_data.data.synthetic import PNG2D_VARS, SLICE_VARS, make_dataset  # noqa: E402

SPEC_FILE = """
[inputs.input_slice]
type = "scalars"
vars = ["calE", "nHit"]

[inputs.input_png2d]
type = "ragged"
vars = ["png2d.calE", "png2d.nhit"]
max_len = 4

[targets.target_total]
type = "scalars"
vars = ["trueE"]
"""


def _model(spec: BatchSpec):
    keras.utils.set_random_seed(0)
    inputs = keras_inputs(spec)
    png = keras.layers.Masking(mask_value=0.0)(inputs["input_png2d"])
    png = keras.layers.LSTM(4)(png)
    x = keras.layers.Concatenate()([png, inputs["input_slice"]])
    model = keras.Model(inputs=inputs, outputs={"target_total": keras.layers.Dense(1, name="target_total")(x)})
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss={"target_total": "mse"})
    return model


def _fit(spec: BatchSpec, data) -> tuple[list[str], np.ndarray]:
    batches = Batches(data, spec, Order(batch_size=100, seed=1))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = _model(spec).fit(KerasBatches(batches), epochs=2, shuffle=False, verbose=0)
    ours = [str(w.message) for w in caught if "lstm_data KerasBatches" in str(w.message)]
    return ours, np.asarray(history.history["loss"])


@pytest.fixture(scope="module")
def data():
    return make_dataset(400, seed=8)


@pytest.mark.slow
def test_a_version_1_file_warns_and_the_same_file_at_version_2_trains(tmp_path, data):
    old, new = tmp_path / "old.toml", tmp_path / "new.toml"
    old.write_text(SPEC_FILE)
    new.write_text("version = 2\n" + SPEC_FILE)
    with pytest.warns(SpecVersionWarning, match="version = 2"):
        old_spec = BatchSpec.from_toml(old)
    msgs, loss = _fit(old_spec, data)
    assert len(msgs) == 1 and "'input_png2d' holds NaN padding" in msgs[0] and "nan_to=0.0" in msgs[0]
    assert np.isnan(loss).all()  # what the warning is about
    msgs, loss = _fit(BatchSpec.from_toml(new), data)
    assert msgs == [] and np.isfinite(loss).all()


@pytest.mark.slow
def test_fit_with_noise_and_one_step_rows(data):
    spec = BatchSpec.from_dict({
        "version": 2,
        "inputs": {"input_slice": {"type": "scalars", "vars": SLICE_VARS[:2]},
                   "input_png2d": {"type": "ragged", "vars": PNG2D_VARS[:2], "max_len": 4, "empty": "one_step"}},
        "targets": {"target_total": {"type": "scalars", "vars": ["trueE"]}},
        "augment": {PNG2D_VARS[0]: {"gaussian": 0.1}, SLICE_VARS[0]: {"relative": 0.05}}})
    msgs, loss = _fit(spec, data)
    assert msgs == [] and np.isfinite(loss).all()


def test_packed_inputs_are_refused_naming_the_input(data):
    from lstm_data import Ragged
    from lstm_data.errors import OptionError

    spec = BatchSpec(inputs={"p": Ragged(PNG2D_VARS[:2], max_len=4, layout="packed")})
    with pytest.raises(OptionError, match="input 'p' has layout='packed'.*layout='padded'"):
        KerasBatches(Batches(data, spec, Order(batch_size=100, seed=1)))
    with pytest.raises(OptionError, match="keras_inputs: input 'p' has layout='packed'"):
        keras_inputs(spec)
