"""The figures logged at the end of an epoch (INFO) come from every batch source, resumed or not, stored or live."""
from __future__ import annotations

import logging

import numpy as np
import pytest

from lstm_data import Batches, Order, open_batches, precompute
from tests.adapters.rows import row_dataset, row_spec

N_ROWS = 400
ORDER = Order(batch_size=20, seed=5, bucket_by="input_png3d", max_elements=48)  # budget batches: sizes differ


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    out = tmp_path_factory.mktemp("logging") / "b.zarr"
    precompute(row_dataset(N_ROWS), row_spec(), out, ORDER, progress=False)
    return out


def _lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "lstm_data" and r.getMessage().startswith("epoch ")]


def test_a_store_epoch_ends_with_its_batches_and_elements_logged(store, caplog):
    stored = open_batches(store)
    with caplog.at_level(logging.INFO, logger="lstm_data"):
        served = sum(1 for _ in stored.iter())
    assert served == len(stored)
    elements = int(stored.batch_elements(0).sum())
    [line] = _lines(caplog)
    assert line.startswith(f"epoch 0: {len(stored)} batches, {elements} real elements; waited ")


def test_a_resumed_store_shard_ends_its_epoch_with_its_share_logged(store, caplog):
    old = [open_batches(store).shard(r, 4) for r in range(4)]
    for s in old:
        it = s.iter()
        next(it), next(it)
    state = old[0].state_dict()
    shard = open_batches(store).shard(1, 3)  # 29 - 4 * 2 = 21 batches left: 7 steps each
    shard.load_state_dict(state)
    with caplog.at_level(logging.INFO, logger="lstm_data"):
        served = sum(1 for _ in shard.iter())
    lane = shard.parent_indices(0)
    assert served == len(lane) > 0
    [line] = _lines(caplog)
    want = int(shard.batches.batch_elements(0)[lane].sum())
    assert line.startswith(f"epoch 0: {len(lane)} batches, {want} real elements; waited ")


def test_a_live_shard_resumed_on_another_world_ends_its_epoch_with_its_share_logged(caplog):
    batches = Batches(row_dataset(N_ROWS), row_spec(), ORDER)
    old = batches.shard(0, 4)
    it = old.iter()
    next(it), next(it)
    shard = Batches(row_dataset(N_ROWS), row_spec(), ORDER).shard(2, 3)
    shard.load_state_dict(old.state_dict())
    with caplog.at_level(logging.INFO, logger="lstm_data"):
        served = sum(1 for _ in shard.iter())
    lane = shard.parent_indices(0)
    assert served == len(lane) > 0
    rows = int(sum(len(shard.batches.rows_of(int(p), 0)) for p in lane))
    [line] = _lines(caplog)
    assert line.startswith(f"epoch 0: {len(lane)} batches, {rows} rows; padded per real element: ")
    st = shard.stats(0)  # the same share, measured on demand
    assert (st["batches"], st["rows"]) == (len(lane), rows)
    assert np.isfinite(st["mixing"])


def test_the_torch_sampler_of_a_store_logs_its_epoch(store, caplog):
    torch_adapter = pytest.importorskip("lstm_data.adapters.torch")
    data = torch_adapter.TorchBatches(open_batches(store))
    with caplog.at_level(logging.INFO, logger="lstm_data"):
        keys = list(data.sampler)  # every key of the pass drawn: its figures
    assert len(keys) == len(data)
    [line] = _lines(caplog)
    assert line == f"epoch 0: {len(data)} batches, {int(open_batches(store).batch_elements(0).sum())} real elements"
