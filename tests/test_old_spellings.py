"""Old spellings of options still work for one release: each warns once, naming the new spelling,
and gives what the new spelling gives.

These are the only tests that use old spellings: anywhere else, one of our DeprecationWarnings
fails the test (pyproject.toml, filterwarnings).
"""
from __future__ import annotations

import contextlib

import numpy as np
import pytest

import lstm_data
from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars, open_batches, precompute
from lstm_data.synthetic import write_csv
from tests.helpers import assert_same_batch, assert_same_dataset

SPEC = BatchSpec(inputs={"input_png": Ragged(["png.calE", "png.nhit"], max_len=8, fixed=False),
                         "input_slice": Scalars(["calE", "nHit"])},
                 targets={"target_total": Scalars(["trueE"])})


@pytest.fixture(scope="module")
def csv_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("old") / "events.csv"
    write_csv(path, 400, seed=4)
    return path


@pytest.fixture(scope="module")
def ds(csv_path):
    return lstm_data.open(csv_path)


@contextlib.contextmanager
def _once(match):
    """``pytest.deprecated_call(match=...)`` that also checks the warning comes once, not once per layer."""
    with pytest.deprecated_call(match=match) as record:
        yield
    ours = [str(w.message) for w in record if issubclass(w.category, DeprecationWarning)]
    assert len(ours) == 1, ours


def test_batches_keywords_name_their_homes_and_build_the_same_batches(ds):
    with _once(r"Batches\(batch_size=\.\.\., seed=\.\.\., nan_to=\.\.\., read_ahead=\.\.\.\) is deprecated: "
               r"use Order\(batch_size=\.\.\., seed=\.\.\., read_ahead=\.\.\.\), BatchSpec\(nan_to=\.\.\.\)"):
        old = Batches(ds, SPEC, batch_size=64, seed=7, nan_to=0.0, read_ahead=False)
    new = Batches(ds, SPEC.replace(nan_to=0.0), Order(batch_size=64, seed=7, read_ahead=False))
    assert len(old) == len(new)
    for i in (0, len(new) - 1):
        assert_same_batch(old[i], new[i])
    assert not np.isnan(old[0][0]["input_png"]).any()  # nan_to reached the spec


def test_precompute_and_open_batches_keywords(ds, tmp_path):
    order = Order(batch_size=100, seed=2)
    with _once(r"precompute\(batch_size=\.\.\., seed=\.\.\.\) is deprecated: use Order\(batch_size=\.\.\., "
               r"seed=\.\.\.\)"):
        precompute(ds, SPEC, tmp_path / "old.zarr", batch_size=100, seed=2, progress=False)
    assert precompute(ds, SPEC, tmp_path / "old.zarr", order, progress=False).reused  # the same store
    with _once(r"precompute\(force=\.\.\.\) is deprecated: use overwrite=\.\.\."):
        precompute(ds, SPEC, tmp_path / "old.zarr", order.replace(seed=3), progress=False, force=True)
    with _once(r"precompute\(workers=\.\.\.\) is deprecated: use threads=\.\.\."):
        assert precompute(ds, SPEC, tmp_path / "old.zarr", order.replace(seed=3), progress=False,
                          workers=2).reused
    with _once(r"open_batches\(batch_size=\.\.\., seed=\.\.\.\) is deprecated: use "
               r"order=Order\(batch_size=\.\.\., seed=\.\.\.\)"):
        old = open_batches(tmp_path / "old.zarr", batch_size=100, seed=3)
    new = open_batches(tmp_path / "old.zarr", order=order.replace(seed=3))
    assert_same_batch(old[1], new[1])
    with pytest.raises(lstm_data.store.format.StoreMismatchError, match="seed"), pytest.deprecated_call():
        open_batches(tmp_path / "old.zarr", seed=4)  # the old keyword is still checked


@pytest.mark.parametrize("old, new, value", [
    ("use_threads", "threads", False),
    ("workers", "threads", 2),
    ("block_size", "block_bytes", 1 << 16),
    ("step_bytes", "block_bytes", 1 << 16),
])
def test_read_keywords_name_the_read_option(csv_path, ds, old, new, value):
    with _once(rf"lstm_data.open\({old}=\.\.\.\) is deprecated: use {new}=\.\.\."):
        got = lstm_data.open(csv_path, **{old: value})
    assert_same_dataset(got, ds)
