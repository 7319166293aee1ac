"""A KerasCheckpoint's ``position.json`` names its weights: a name leaving the directory is refused, read or replaced."""
from __future__ import annotations

import json
import os

os.environ.setdefault("KERAS_BACKEND", "torch")

import pytest

keras = pytest.importorskip("keras")

from lstm_data import Batches, Order  # noqa: E402
from lstm_data.adapters.keras import KerasBatches, keras_inputs  # noqa: E402
from lstm_data.adapters.keras_resume import KerasCheckpoint  # noqa: E402
from lstm_data.errors import FormatError  # noqa: E402
from tests.adapters.rows import ROW, row_dataset, row_spec  # noqa: E402

VICTIM = b"not the checkpoint's: never read as weights, never deleted"


def _setup(tmp_path, how):
    """A checkpoint directory whose position names the victim file outside it, ``how``."""
    run, victim = tmp_path / "run", tmp_path / "victim.txt"
    run.mkdir()
    victim.write_bytes(VICTIM)
    if how == "dotdot":
        name = "../victim.txt"
    elif how == "absolute":
        name = str(victim)
    else:  # a file of the directory that is a link to the victim
        name = "model-1.weights.h5"
        (run / name).symlink_to(victim)
    return run, victim, name


def _position(run, name, data):
    (run / "position.json").write_text(json.dumps({"format": 1, "saves": 1, "weights": name,
                                                   "data": data.state_dict()}))


def _data():
    return KerasBatches(Batches(row_dataset(100), row_spec(), Order(batch_size=50, seed=7)))


@pytest.mark.parametrize("how", ["dotdot", "absolute", "symlink"])
def test_a_position_naming_weights_outside_its_directory_is_refused_when_loaded(tmp_path, how):
    run, victim, name = _setup(tmp_path, how)
    data = _data()
    _position(run, name, data)
    with pytest.raises(FormatError, match=r"the key 'weights' names .*inside its directory") as caught:
        KerasCheckpoint(data, run)
    assert caught.value.file == str(run / "position.json")
    assert victim.read_bytes() == VICTIM


@pytest.mark.parametrize("how", ["dotdot", "absolute", "symlink"])
def test_a_save_never_deletes_weights_named_outside_its_directory(tmp_path, how):
    run, victim, name = _setup(tmp_path, how)
    data = _data()
    checkpoint = KerasCheckpoint(data, run)  # no position yet
    inputs = keras_inputs(data.batches.spec)
    model = keras.Model(inputs=inputs, outputs={"target_total": keras.layers.Dense(1)(inputs[ROW])})
    checkpoint.set_model(model)
    _position(run, name, data)  # the position is replaced meanwhile
    with pytest.raises(FormatError, match="the key 'weights' names"):
        checkpoint.save()
    assert victim.read_bytes() == VICTIM
    assert sorted(p.name for p in run.iterdir() if not p.is_symlink()) == ["position.json"]  # nothing written
