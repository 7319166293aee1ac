"""A torch loader state edited into something else is refused naming the key, not an AttributeError."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
sdl = pytest.importorskip("torchdata.stateful_dataloader")

from lstm_data import Batches  # noqa: E402
from lstm_data.adapters.torch import TorchBatches  # noqa: E402
from lstm_data.batching.order.options import Order  # noqa: E402
from lstm_data.errors import OptionError  # noqa: E402
from tests.adapters.rows import row_dataset, row_spec  # noqa: E402


def _loader(sharded: bool):
    batches = Batches(row_dataset(200), row_spec(), Order(batch_size=10, seed=1))
    data = TorchBatches(batches.shard(0, 1) if sharded else batches)
    return sdl.StatefulDataLoader(data, batch_size=None, sampler=data.sampler), data


@pytest.mark.parametrize("sharded", [False, True])
def test_a_loader_snapshot_holding_a_list_is_refused_by_key(sharded):
    loader, data = _loader(sharded)
    for step, _ in enumerate(loader):
        if step == 2:
            break
    state = loader.state_dict()
    sampler_state = state["_index_sampler_state"]
    # the layout torchdata saves with worker processes, its main snapshot turned into a list
    with pytest.raises(OptionError, match=r"_snapshot\._main_snapshot must be a table .*got a list"):
        data.sampler.load_state_dict({"_snapshot": {"_main_snapshot": [sampler_state]}})
    with pytest.raises(OptionError, match=r"_index_sampler_state must be a table .*got a list"):
        data.sampler.load_state_dict({**state, "_index_sampler_state": list(sampler_state.items())})
    with pytest.raises(OptionError, match=r"state must be a table .*got a list"):
        data.sampler.load_state_dict([state])
    data.sampler.load_state_dict({"_snapshot": {"_main_snapshot": state}})  # the layout itself resumes
    assert data.sampler._start == 3


def test_a_sampler_state_with_a_negative_epoch_is_refused_by_key():
    _, data = _loader(False)
    state = {**data.sampler.state_dict(), "epoch": -1}
    with pytest.raises(OptionError, match=r"state: epoch must be an int >= 0, got -1"):
        data.sampler.load_state_dict(state)
