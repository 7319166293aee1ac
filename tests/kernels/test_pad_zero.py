"""A zero pad value takes a faster fill in the compiled core: the bytes must stay exactly those
of the pad value (+0.0 all zero bits, -0.0 its sign bit), on both backends."""
from __future__ import annotations

import math

import numpy as np
import pytest

from tests.helpers import assert_bitwise, ragged


@pytest.mark.parametrize("pad", [0.0, -0.0, np.nan, 7.5])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("padding", ["post", "pre"])
def test_padding_bytes_are_the_pad_value(backend, pad, dtype, padding):
    values, offsets = ragged([3, 0, 5, 1, 2], n_vars=4, seed=3)
    rows = np.array([4, 2, 1, 0, 3, 1])
    batch, lengths = backend.pad_ragged(values, offsets, rows, max_len=6, pad_value=pad,
                                        padding=padding, dtype=dtype)
    want = np.full((len(rows), 6, 4), pad, dtype=dtype)
    for b, r in enumerate(rows):
        seg = values[offsets[r]:offsets[r + 1]]
        if padding == "post":
            want[b, :len(seg)] = seg
        else:
            want[b, 6 - len(seg):] = seg
    assert_bitwise(batch, want)
    (gathered, _), = backend.BatchGather([dict(values=values, offsets=offsets, max_len=6, pad_value=pad,
                                               padding=padding, dtype=dtype)])(rows)[0]
    assert_bitwise(gathered, want)


def test_twins_agree_on_signed_zero_padding(twins):
    values, offsets = ragged([1, 4, 0, 2], n_vars=2, seed=5)
    for pad in (0.0, -0.0):
        got = [b.pad_ragged(values, offsets, max_len=5, pad_value=pad)[0] for b in twins]
        assert_bitwise(got[0], got[1])
        assert np.signbit(got[0][2]).all() == (math.copysign(1.0, pad) < 0)  # row 2 is all padding
