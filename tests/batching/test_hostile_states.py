"""Saved batch sequence states edited by hand: each bad key is an OptionError naming the state and the key."""
from __future__ import annotations

import json

import pytest

from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars
from lstm_data.data.synthetic import PNG3D_VARS, SLICE_VARS, make_dataset
from lstm_data.errors import OptionError

SPEC = BatchSpec(inputs={"input_slice": Scalars(SLICE_VARS[:2]),
                         "input_png3d": Ragged(PNG3D_VARS[:2], max_len=6)},
                 targets={"target_total": Scalars(["trueE"])})


@pytest.fixture(scope="module")
def batches():
    return Batches(make_dataset(300, seed=3), SPEC, Order(batch_size=16, seed=5))


def _saved(state, tmp_path, **edits):
    """``state`` written to a JSON file, edited there and read back, as a checkpoint edited by hand."""
    path = tmp_path / "state.json"
    path.write_text(json.dumps(state))
    doc = json.loads(path.read_text())
    doc.update(edits)
    path.write_text(json.dumps(doc))
    return json.loads(path.read_text())


def test_a_shard_state_of_world_size_zero_is_refused_by_key(batches, tmp_path):
    state = _saved(batches.shard(0, 2).state_dict(), tmp_path, world_size=0)
    with pytest.raises(OptionError, match=r"batch sequence state: world_size must be an int >= 1, got 0"):
        batches.shard(1, 3).load_state_dict(state)


def test_a_history_entry_of_world_size_zero_is_refused_by_key(batches, tmp_path):
    state = _saved(batches.shard(0, 2).state_dict(), tmp_path, history=[[0, 1]])
    with pytest.raises(OptionError, match=r"batch sequence state: history world_size must be an int >= 1"):
        batches.shard(0, 2).load_state_dict(state)


@pytest.mark.parametrize("sharded", [False, True])
def test_a_negative_epoch_is_an_option_error_naming_the_key(batches, tmp_path, sharded):
    source = batches.shard(0, 2) if sharded else batches
    state = _saved(source.state_dict(), tmp_path, epoch=-1)
    with pytest.raises(OptionError, match=r"batch sequence state: epoch must be an int >= 0, got -1"):
        source.load_state_dict(state)
