"""Options given to a function before they had their homes (an ``Order``, the ``BatchSpec``) still
work for one release: each warns once, naming the new spelling, and gives what it gives.

Renamed spellings are errors instead (tests/test_renamed_spellings.py). Anywhere else, one of our
DeprecationWarnings fails the test (pyproject.toml, filterwarnings).
"""
from __future__ import annotations

import contextlib

import warnings

import numpy as np
import pytest

import lstm_data
from lstm_data import Batches, BatchSpec, Order, Ragged, ReadOptions, Scalars, precompute
from lstm_data.synthetic import write_csv
from tests.helpers import assert_same_batch

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


def test_batches_takes_the_order_fields_as_a_shorthand_and_nothing_else(ds):
    """``Batches(ds, spec, batch_size=..., seed=...)`` builds the Order (its one check); a spec key is not taken."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        short = Batches(ds, SPEC, batch_size=64, seed=7, read_ahead=False)
    new = Batches(ds, SPEC, Order(batch_size=64, seed=7, read_ahead=False))
    assert short.order == new.order and len(short) == len(new)
    for i in (0, len(new) - 1):
        assert_same_batch(short[i], new[i])
    with pytest.raises(TypeError, match="nan_to"):
        Batches(ds, SPEC, batch_size=64, nan_to=0.0)
    with pytest.raises(lstm_data.OptionError, match="batch_size"):
        Batches(ds, SPEC, batch_size=0)


def test_precompute_keywords_name_their_homes(ds, tmp_path):
    order = Order(batch_size=100, seed=2)
    with _once(r"precompute\(batch_size=\.\.\., seed=\.\.\.\) is deprecated: use Order\(batch_size=\.\.\., "
               r"seed=\.\.\.\)"):
        precompute(ds, SPEC, tmp_path / "old.zarr", batch_size=100, seed=2, progress=False)
    assert precompute(ds, SPEC, tmp_path / "old.zarr", order, progress=False).reused  # the same store


def test_read_ahead_of_read_options_is_an_order_setting(ds, tmp_path):
    ds.to_zarr(tmp_path / "d.zarr")
    disk = lstm_data.open(tmp_path / "d.zarr")
    order = Order(batch_size=100, seed=3, shuffle="block")
    with _once(r"Batches\(read=ReadOptions\(read_ahead=\.\.\.\)\) is deprecated: use Order\(read_ahead=\.\.\.\)"):
        old = Batches(disk, SPEC, order, read=ReadOptions(read_ahead=False))
    new = Batches(disk, SPEC, order.replace(read_ahead=False))
    assert old.order == new.order
    assert_same_batch(old.batch(2, 1), new.batch(2, 1))
