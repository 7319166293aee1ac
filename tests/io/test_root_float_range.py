"""A ROOT float64 branch holding values beyond float32's range batches like numpy converts it."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import lstm_data
from lstm_data import Batches, BatchSpec, Order, Scalars

uproot = pytest.importorskip("uproot")


@pytest.mark.parametrize("in_ram", [True, False])
def test_float64_beyond_float32_range_batches(tmp_path, in_ram):
    # Geant4 option trees hold DBL_MAX as "no limit": a whole float64 no float32 holds
    x = np.array([1.0, np.finfo(np.float64).max, 3.0, -1e300, 2.0 ** 30 + 1], dtype=np.float64)
    path = tmp_path / "limits.root"
    with uproot.recreate(path) as fh:
        fh["Options"] = {"x": x}
    ds = lstm_data.open(f"{path}:Options", in_ram=in_ram)
    out = f"s_{in_ram}"  # one warning per output and process
    b = Batches(ds, BatchSpec(inputs={out: Scalars(["x"])}), Order(batch_size=8, shuffle=False))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = b[0][0][out][:, 0]
    with np.errstate(over="ignore"):
        want = uproot.open(path)["Options"]["x"].array(library="np").astype(np.float32)
    np.testing.assert_array_equal(got, want)
    # 2**30 + 1 is an integer float32 changes: that one is still named
    assert any("1073741825" in str(w.message) for w in caught)
