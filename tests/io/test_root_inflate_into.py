"""libdeflate's C function inflating a ROOT zlib block in place: bitwise zlib's bytes, bounded by the header."""
from __future__ import annotations

import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("deflate")

from lstm_data.io.root.inflate_into import libdeflate_into  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(data=st.binary(min_size=0, max_size=5000), repeat=st.integers(1, 40), level=st.integers(0, 9),
       head=st.integers(0, 20), filled=st.integers(0, 64))
def test_a_block_inflates_in_place_to_zlibs_bytes(data, repeat, level, head, filled):
    into = libdeflate_into()
    assert into is not None
    plain = data * repeat
    raw = b"\x07" * head + zlib.compress(plain, level) + b"tail"
    out = np.full(filled + len(plain) + 16, 0xAB, dtype=np.uint8)
    into(raw, head, len(raw) - head - 4, out, filled, len(plain))
    assert out[filled:filled + len(plain)].tobytes() == plain
    assert (out[:filled] == 0xAB).all() and (out[filled + len(plain):] == 0xAB).all()  # nothing else written


@pytest.mark.parametrize("declared, said", [(999, "holds more than"), (1001, "fewer bytes")])
def test_a_block_of_another_size_than_its_header_is_refused(declared, said):
    into = libdeflate_into()
    plain = bytes(range(256)) * 4
    raw = zlib.compress(plain[:1000])
    out = np.zeros(2000, dtype=np.uint8)
    with pytest.raises(ValueError, match=said):
        into(raw, 0, len(raw), out, 0, declared)


def test_a_block_outside_its_basket_or_buffer_is_refused():
    into = libdeflate_into()
    raw = zlib.compress(b"x" * 100)
    with pytest.raises(ValueError, match="outside its basket"):
        into(raw, 0, len(raw) + 1, np.zeros(100, np.uint8), 0, 100)
    with pytest.raises(ValueError, match="outside its basket"):
        into(raw, 0, len(raw), np.zeros(100, np.uint8), 1, 100)
