"""Fill values (pad values, nan_to) checked in the dtype of the outputs they fill."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from lstm_data import BatchSpec, OptionError, PrecisionWarning, Ragged, Scalars, Standardize


def test_a_pad_value_beyond_float32_is_refused_naming_key_and_field():
    with pytest.raises(OptionError, match=r"input 'x': pad_value = 1e\+39 .*float32.* inf"):
        BatchSpec({"x": Ragged(["a"], pad_value=1e39)})
    BatchSpec({"x": Ragged(["a"], pad_value=1e39, dtype="float64")})  # float64 holds it


def test_a_standardize_pad_value_beyond_float32_is_refused():
    with pytest.raises(OptionError, match=r"target 't': standardize\.a\.pad_value = -1e\+39"):
        BatchSpec(targets={"t": Ragged(["a"], standardize={"a": Standardize(pad_value=-1e39)})})


def test_nan_to_overflowing_a_float32_input_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "spec.toml"
    path.write_text('version = 2\nnan_to = 3.5e38\n[inputs.x]\ntype = "scalars"\nvars = ["a"]\n')
    with pytest.raises(OptionError, match=rf"{path.name}: input 'x': nan_to = 3\.5e\+38 .*float32"):
        BatchSpec.from_toml(path)
    # nan_to applies neither to float64 nor to integer inputs
    BatchSpec({"x": Scalars(["a"], dtype="float64"), "y": Scalars(["b"], dtype="int64")}, nan_to=3.5e38)


def test_a_pad_value_float32_rounds_warns_with_the_value_held():
    with pytest.warns(PrecisionWarning, match=r"input 'x': pad_value = 16777217\.0 is 16777216\.0 .*float32"):
        BatchSpec({"x": Ragged(["a"], pad_value=16777217)})
    with warnings.catch_warnings():  # values float32 shows as written are taken silently
        warnings.simplefilter("error")
        for pad in (0.0, 0.1, -1.5, 1e30, float("nan"), float("inf"), -float("inf")):
            BatchSpec({"x": Ragged(["a"], pad_value=pad)}, nan_to=-0.1)
        BatchSpec({"x": Ragged(["a"], pad_value=16777217, dtype=np.float64)})
