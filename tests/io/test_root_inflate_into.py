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


def test_a_file_read_into_ram_inflates_every_basket_in_place(tmp_path, monkeypatch):
    uproot = pytest.importorskip("uproot")
    ak = pytest.importorskip("awkward")
    import lstm_data
    from lstm_data.io.root import baskets

    rng = np.random.default_rng(2)
    k = rng.integers(0, 7, 3000)
    cols = {"Jet": ak.unflatten(ak.zip({c: rng.normal(size=k.sum()).astype(np.float32) for c in "xyz"}), k),
            "weight": rng.random(3000)}
    with uproot.recreate(tmp_path / "t.root", compression=uproot.ZLIB(1)) as fh:
        fh.mktree("Events", {c: (v.type.content if isinstance(v, ak.Array) else v.dtype) for c, v in cols.items()})
        for a in range(0, 3000, 1000):
            fh["Events"].extend({c: v[a:a + 1000] for c, v in cols.items()})
    name, inflate = baskets._inflater()
    copies = []

    def counted(data, n):  # the package's own function: a new buffer, then a copy
        copies.append(n)
        return inflate(data, n)

    monkeypatch.setattr(baskets, "_INFLATER", ("libdeflate", counted))
    for threads in (1, 2):
        ds = lstm_data.open(str(tmp_path / "t.root"), read=lstm_data.ReadOptions(threads=threads))
        with uproot.open(tmp_path / "t.root") as fh:
            ref = fh["Events"].arrays(library="np")
        values, offsets = ds.ragged("Jet")
        np.testing.assert_array_equal(values[:, 0], np.concatenate(list(ref["Jet_x"])))
        np.testing.assert_array_equal(np.diff(offsets), k)
        np.testing.assert_array_equal(ds.scalar("weight"), ref["weight"])
    assert copies == []
