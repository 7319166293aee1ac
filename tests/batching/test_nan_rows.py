"""``nan_to`` in RAM replaces NaN only in the batch rows that can hold one (a row with a NaN or an
infinite value), and every NaN of those: the batches equal the ``nan_to=None`` batches with NaN
replaced afterwards, over several parts, shuffled, in every layout and padding mode."""
from __future__ import annotations

import math

import numpy as np
import pytest

from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars
from lstm_data.batching.spec.standardize import Standardize
from lstm_data.data.concat import ConcatDataset
from lstm_data.data.dataset import InMemoryDataset
from lstm_data.data.ragged import RaggedGroup
from tests.helpers import assert_bitwise

VARS = ["a", "b", "c"]


def _part(seed: int, rows: int) -> InMemoryDataset:
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 9, rows)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    values = rng.normal(size=(int(offsets[-1]), 3)).astype(np.float32)
    spots = rng.choice(len(values), 6, replace=False)
    values[spots[:3], 0] = np.nan  # NaN in a few rows
    values[spots[3:], 2] = np.inf  # inf in others: times a scale of 0 it is NaN
    return InMemoryDataset({"w": rng.normal(size=rows).astype(np.float32)},
                           {"p": RaggedGroup(VARS, values, offsets)})


@pytest.mark.parametrize("layout, pad_mode", [("padded", "constant"), ("padded", "wrap"),
                                              ("channels_first", "constant"), ("channels_first", "wrap"),
                                              ("packed", "constant")])  # packed rows are not padded
def test_nan_to_equals_replacing_every_nan_afterwards(layout, pad_mode):
    ds = ConcatDataset([_part(1, 300), _part(2, 200)])
    ragged = Ragged(VARS, max_len=6, layout=layout, pad_mode=pad_mode, pad_value=math.nan,
                    standardize={"c": Standardize(center=0.0, scale=0.0)})
    spec = BatchSpec(inputs={"p": ragged, "w": Scalars(["w"])}, targets={"t": Scalars(["w"])})
    order = Order(batch_size=64, shuffle=True, seed=3)
    got = Batches(ds, spec.replace(nan_to=0.0), order)
    raw = Batches(ds, spec, order)
    seen = 0
    for i in range(len(got)):
        inputs, _, _ = got[i]
        x = raw[i][0]["p"]
        seen += int(np.isnan(x).sum())
        assert_bitwise(inputs["p"], np.where(np.isnan(x), np.float32(0.0), x))
    assert seen > 0  # the data does put NaN into the batches


@pytest.mark.parametrize("shape", [(70_000, 3), (5, 40_000), (70_001,), (9000, 2, 5)])
def test_nonfinite_rows_are_found_across_the_scan_steps(shape):
    from lstm_data.batching.building.finite import nonfinite_value_rows

    values = np.random.default_rng(3).normal(size=shape).astype(np.float32)
    flat = values.reshape(len(values), -1)
    rows = np.unique(np.r_[0, len(values) - 1, np.random.default_rng(4).choice(len(values), 4)])
    for k, r in enumerate(rows):
        flat[r, k % flat.shape[1]] = (np.nan, np.inf, -np.inf)[k % 3]
    expected = np.flatnonzero(~np.isfinite(flat).all(axis=1))
    assert_bitwise(nonfinite_value_rows(values), expected)
    assert len(nonfinite_value_rows(np.ones(shape, np.int64))) == 0
    assert len(nonfinite_value_rows(values[:0])) == 0


def test_finite_steps_are_proved_finite_by_their_sums_and_overflowing_sums_are_tested(monkeypatch):
    from lstm_data.batching.building import finite

    values = np.random.default_rng(5).normal(size=(50_000, 4)).astype(np.float32)
    values[30_000:30_010] = np.float32(3e38)  # finite, yet their sum overflows float32
    values[45_001, 2] = np.nan
    tested = []

    class Numpy:  # numpy, with the sizes of what isfinite was asked about recorded
        def __getattr__(self, name):
            return getattr(np, name)

        @staticmethod
        def isfinite(x, *args, **kw):
            tested.append(np.size(x))
            return np.isfinite(x, *args, **kw)

    monkeypatch.setattr(finite, "np", Numpy())
    assert_bitwise(finite.nonfinite_value_rows(values), np.array([45_001], np.intp))
    step = (1 << 16) // 4
    assert sorted(tested)[-2:] == [step * 4, step * 4]  # only the overflowing and the NaN steps
    assert sum(1 for n in tested if n > 1) == 2
