"""States saved by earlier releases resume after an upgrade, or name what they cannot honour.

``tests/data/states/`` holds states saved by three earlier releases with the batches below:
``before_spec_versions.json`` by a release whose spec form had no ``version`` key,
``spec_format_2.json`` by the release that added it (both without ``state_format``: format 1),
and ``state_format_2.json`` by the release that recorded ``state_format`` 2 (its data bound by
their first and last rows only). Each file holds a ``Batches`` state after 3 batches and a
shard's state (rank 1 of 4) after 2.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars
from lstm_data.batching.epochs.identity import STATE_FORMAT
from lstm_data.data.synthetic import PNG3D_VARS, SLICE_VARS, make_dataset
from lstm_data.errors import OptionError
from tests.helpers import assert_same_batch

STATES = Path(__file__).parents[1] / "data" / "states"
SPEC = BatchSpec(inputs={"input_slice": Scalars(SLICE_VARS[:4]),
                         "input_png3d": Ragged(PNG3D_VARS[:3], max_len=6, pad_value=0.0, lengths=True)},
                 targets={"target_total": Scalars(["trueE"])})


@pytest.fixture(scope="module")
def data():
    return make_dataset(600, seed=11)


def _batches(data, **order):
    return Batches(data, SPEC, Order(batch_size=64, seed=5, **order))


def _shard(data):
    return Batches(data, SPEC, Order(batch_size=32, seed=5, bucket_by="input_png3d")).shard(1, 4)


EARLIER = {"before_spec_versions": 1, "spec_format_2": 1, "state_format_2": 2}


@pytest.mark.parametrize("name", list(EARLIER))
def test_a_state_of_an_earlier_release_resumes_where_it_stopped(data, name, caplog):
    saved = json.loads((STATES / f"{name}.json").read_text())
    assert saved["batches"].get("state_format", 1) == EARLIER[name]
    b = _batches(data)
    with caplog.at_level(logging.INFO, logger="lstm_data"):
        b.load_state_dict(saved["batches"])
    resumed = list(b)
    fresh = _batches(data)
    assert len(resumed) == len(fresh) - 3
    for got, want in zip(resumed, [fresh[i] for i in range(3, len(fresh))]):
        assert_same_batch(got, want)
    # taken by the recipe of its own format, with the note docs/integrity.md promises
    notes = [r for r in caplog.records if r.name == "lstm_data" and f"format {EARLIER[name]}" in r.getMessage()]
    assert len(notes) == 1, caplog.text

    s = _shard(data)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="lstm_data"):
        s.load_state_dict(saved["shard"])
    assert f"format {EARLIER[name]}" in caplog.text
    fresh_shard = _shard(data)
    want = [fresh_shard.batch(i) for i in range(2, len(fresh_shard))]
    got = list(s)
    assert len(got) == len(want)
    for a, b_ in zip(got, want):
        assert_same_batch(a, b_)


def test_a_state_saved_now_carries_its_format(data):
    state = _batches(data).state_dict()
    assert state["state_format"] == STATE_FORMAT
    assert _shard(data).state_dict()["state_format"] == STATE_FORMAT


@pytest.mark.parametrize("name", list(EARLIER))
def test_an_old_state_that_cannot_be_honoured_names_the_field(data, name):
    saved = json.loads((STATES / f"{name}.json").read_text())["batches"]
    with pytest.raises(OptionError, match="seed: state has 5, this sequence 6"):
        Batches(data, SPEC, Order(batch_size=64, seed=6)).load_state_dict(saved)
    other = SPEC.replace(inputs={**SPEC.inputs, "input_png3d": Ragged(PNG3D_VARS[:3], max_len=7, pad_value=0.0,
                                                                      lengths=True)})
    with pytest.raises(OptionError, match="the spec or the data differ"):
        Batches(data, other, Order(batch_size=64, seed=5)).load_state_dict(saved)
    with pytest.raises(OptionError, match="the spec or the data differ"):
        Batches(make_dataset(600, seed=12), SPEC, Order(batch_size=64, seed=5)).load_state_dict(saved)


def test_a_state_of_a_newer_format_is_refused_by_name(data):
    state = {**_batches(data).state_dict(), "state_format": STATE_FORMAT + 1}
    with pytest.raises(OptionError, match=f"state_format {STATE_FORMAT + 1}: saved by a newer release"):
        _batches(data).load_state_dict(state)
