"""``Batches.stats()``: padding, truncation and mixing of an epoch's order."""
from __future__ import annotations

import numpy as np
import pytest

from lstm_data import Batches, BatchSpec, Ragged, Scalars
from lstm_data.batching.order.options import Order
from lstm_data.batching.order.stats import mixing_of
from lstm_data.data.concat import ConcatDataset
from lstm_data.data.synthetic import PNG3D_VARS, SLICE_VARS, make_dataset

MAX_LEN = 6


@pytest.fixture(scope="module")
def data():
    return make_dataset(8000, seed=9, png_mean=2.0)


def _spec() -> BatchSpec:
    return BatchSpec(inputs={"input_slice": Scalars(SLICE_VARS),
                             "input_png3d": Ragged(PNG3D_VARS[:2], max_len=MAX_LEN)},
                     targets={"target_total": Scalars(["trueE"])})


ORDERS = [Order(batch_size=200, seed=1), Order(batch_size=200, seed=1, shuffle=False),
          Order(batch_size=200, seed=1, bucket_by="input_png3d"),
          Order(batch_size=200, seed=1, bucket_by="input_png3d", max_elements=600),
          Order(batch_size=200, seed=1, bucket_by="input_png3d", bucket_lengths="auto", max_shapes=2)]


@pytest.mark.parametrize("order", ORDERS, ids=range(len(ORDERS)))
def test_padding_and_truncation_match_the_built_batches(data, order):
    b = Batches(data, _spec(), order)
    stats = b.stats(epoch=1)
    lens = np.diff(data.ragged("png")[1])
    slots = real = 0
    for i in range(len(b)):
        x = b.batch(i, 1)[0]["input_png3d"]
        slots += x.shape[0] * x.shape[1]
        real += int(np.minimum(lens[b.rows_of(i, 1)], MAX_LEN).sum())
    assert stats["padding"]["input_png3d"] == pytest.approx((slots - real) / real)
    assert stats["truncated"]["input_png3d"]["rows"] == int((lens > MAX_LEN).sum())
    assert stats["rows"] == len(data) and stats["batches"] == len(b)


def test_mixing_tells_full_shuffle_from_none_and_bucketing(data):
    full = Batches(data, _spec(), ORDERS[0]).stats()
    none = Batches(data, _spec(), ORDERS[1]).stats()
    bucketed = Batches(data, _spec(), ORDERS[2]).stats()
    assert full["mixing"] == pytest.approx(1.0, abs=0.05)
    assert none["mixing"] < 0.05
    assert full["length_mixing"]["input_png3d"] == pytest.approx(1.0, abs=0.1)
    assert bucketed["length_mixing"]["input_png3d"] < 0.2
    assert full["file_mixing"] is None


def test_file_mixing_of_several_files(data):
    parts = ConcatDataset([data.take(np.arange(i, i + 2000)) for i in range(0, 8000, 2000)])
    full = Batches(parts, _spec(), ORDERS[0]).stats()
    none = Batches(parts, _spec(), ORDERS[1]).stats()
    assert full["file_mixing"] == pytest.approx(1.0, abs=0.1)
    assert none["file_mixing"] < 0.1


def test_mixing_of_known_batches():
    assert mixing_of([np.arange(10)], 10) == pytest.approx((11 / 3) / (11 / 3))  # one batch of all rows
    assert mixing_of([np.array([0, 1]), np.array([2, 3])], 4) == pytest.approx(1 / (5 / 3))


def test_stats_of_a_shard(data):
    b = Batches(data, _spec(), ORDERS[3])
    shard = b.shard(1, 2)
    st = b.stats(0, of=shard)
    assert st["batches"] == len(shard)
    assert st["rows"] == sum(len(shard.rows_of(i, 0)) for i in range(len(shard)))


def test_epoch_figures_are_logged_once(data, caplog):
    import logging

    from lstm_data.batching.order.stats import log_epoch_stats

    b = Batches(data, _spec(), ORDERS[2])
    assert log_epoch_stats(b, 0) is None  # INFO off: nothing computed
    with caplog.at_level(logging.INFO, logger="lstm_data"):
        st = log_epoch_stats(b.shard(0, 2), 1, waited=0.25)
    assert st is not None and st["waited"] == 0.25 and st["batches"] == len(b) // 2
    lines = [r.getMessage() for r in caplog.records if r.name == "lstm_data"]
    assert len(lines) == 1 and "epoch 1:" in lines[0] and "waited 0.250 s" in lines[0]


def test_stats_of_a_view(data):
    train, val = Batches(data, _spec(), ORDERS[0]).split(0.3)
    st = train.stats()
    assert st["rows"] == train.n_rows and st["mixing"] == pytest.approx(1.0, abs=0.06)
    # positions count inside the view: a contiguous view in its order mixes as little as no shuffle
    part = Batches(data, _spec(), ORDERS[1], rows=np.arange(2000, 6000))
    assert part.stats()["mixing"] == pytest.approx(Batches(data.take(np.arange(2000, 6000)), _spec(),
                                                           ORDERS[1]).stats()["mixing"])


def test_a_shard_reports_its_own_share(data):
    b = Batches(data, _spec(), Order(batch_size=200, seed=1, bucket_by="input_png3d"))
    shard = b.shard(1, 3)
    assert shard.stats(0) == b.stats(0, of=shard)
    assert shard.stats(0)["batches"] == len(shard) and shard.stats(0) != b.stats(0)
