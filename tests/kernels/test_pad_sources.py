"""pad_ragged reads every source dtype (the names of ``kernels/_source_kinds.py``, and booleans)
as C converts it, in every record layout: compiled == twin bitwise (Hypothesis), and (unsorted)
equal to padding the values converted to the output dtype first."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lstm_data.kernels._source_kinds import SOURCE_DTYPES
from tests.helpers import assert_bitwise

SOURCES = [np.dtype(name) for name in SOURCE_DTYPES] + [np.dtype(np.bool_)]


def _values(rng: np.random.Generator, total: int, n_vars: int, dtype: np.dtype) -> np.ndarray:
    if dtype.kind == "f":
        values = rng.normal(scale=1e3, size=(total, n_vars)).astype(dtype)
        if values.size:
            values.flat[rng.integers(0, values.size)] = np.nan
        return values
    if dtype.kind == "b":
        return rng.integers(0, 2, size=(total, n_vars)).astype(bool)
    info = np.iinfo(dtype)  # the extremes too: float32 rounds them
    return rng.integers(info.min, info.max, size=(total, n_vars), endpoint=True, dtype=dtype)


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), source=st.sampled_from(SOURCES), out64=st.booleans(),
       layout=st.sampled_from(["contiguous", "strided", "flat"]), with_columns=st.booleans(),
       sort=st.booleans(), pre=st.booleans(), max_len=st.sampled_from([None, 0, 2, 7]))
def test_every_source_dtype_pads_as_its_converted_values(twins, seed, source, out64, layout,
                                                         with_columns, sort, pre, max_len):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 7, int(rng.integers(1, 12)))
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    wide = _values(rng, int(offsets[-1]), 6, source)
    values = {"contiguous": wide[:, :3], "strided": wide[:, ::2], "flat": wide[:, 0]}[layout]
    values = np.ascontiguousarray(values) if layout == "contiguous" else values
    flat = values.ndim == 1
    out = np.float64 if out64 else np.float32
    rows = rng.integers(0, len(lengths), int(rng.integers(0, 16)))
    options = dict(max_len=max_len, pad_value=-7.5, dtype=out, sort_by=None if flat or not sort else 1,
                   columns=None if flat or not with_columns else [2, 0],
                   padding="pre" if pre else "post", truncating="pre" if pre else "post")
    compiled, python = twins
    got = compiled.pad_ragged(values, offsets, rows, **options)
    twin = python.pad_ragged(values, offsets, rows, **options)
    assert_bitwise(got[0], twin[0], str(source))
    assert_bitwise(got[1], twin[1])
    if options["sort_by"] is None:  # (sort keys are the source values: converted ones may tie)
        want = python.pad_ragged(values.astype(out), offsets, rows, **options)
        assert_bitwise(got[0], want[0], str(source))
