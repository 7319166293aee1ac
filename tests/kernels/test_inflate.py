"""inflate_baskets on both backends: a chunk's ROOT zlib baskets inflated in one call, bitwise
zlib's bytes, every declared size checked before it is used, the compiled kernel and its twin
giving the same bytes and results for any input, hostile headers included."""
from __future__ import annotations

import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lstm_data.kernels._inflate_args import (BODY_CUT, HEADER_CUT, INFLATED, NOT_ZLIB, OUTSIDE, OVER, STREAM,
                                             UNDER)

deflate = pytest.importorskip("deflate")

from lstm_data.io.root.inflate_into import libdeflate_functions  # noqa: E402

FUNCTIONS = libdeflate_functions()
pytestmark = pytest.mark.skipif(FUNCTIONS is None, reason="the deflate package exports no libdeflate symbols")


def _block(plain: bytes, level: int = 1, algo: bytes = b"ZL") -> bytes:
    body = zlib.compress(plain, level)
    return algo + b"\x08" + len(body).to_bytes(3, "little") + len(plain).to_bytes(3, "little") + body


def _chunk(baskets: list[list[bytes]], gap: int = 0) -> tuple[bytes, np.ndarray, bytes, int]:
    """Baskets of zlib blocks (each a list of its blocks' plain bytes) behind ``gap`` key bytes:
    the raw bytes, the table, the plain bytes they inflate to, and the output size."""
    raw, rows, want, dst = b"", [], b"", 0
    for blocks in baskets:
        body = b"".join(_block(p) for p in blocks)
        size = sum(len(p) for p in blocks)
        raw += b"k" * gap
        rows.append((len(raw), len(body), size, dst))
        raw += body
        want += b"".join(blocks)
        dst += size
    return raw, np.array(rows, dtype=np.int64).reshape(-1, 4), want, dst


def _run(kernels, raw, table, n_out):
    out = np.full(n_out + 8, 0xAB, dtype=np.uint8)
    return kernels.inflate_baskets(raw, table, out, FUNCTIONS), out


def test_a_chunks_baskets_inflate_in_one_call_to_zlibs_bytes(backend):
    rng = np.random.default_rng(0)
    plains = [[rng.normal(size=n).astype(">f4").tobytes() for n in sizes] for sizes in ([900], [300, 200], [1])]
    raw, table, want, n = _chunk(plains, gap=13)
    got, out = _run(backend, raw, table, n)
    assert got == (INFLATED, 3, 0)
    assert out[:n].tobytes() == want and (out[n:] == 0xAB).all()


def test_a_basket_stored_as_it_is_is_copied(backend):
    raw = b"key" + bytes(range(50))
    got, out = _run(backend, raw, np.array([[3, 50, 50, 0]]), 50)
    assert got == (INFLATED, 1, 0) and out[:50].tobytes() == bytes(range(50))


@st.composite
def _hostile(draw):
    """Baskets of random (often compressible) bytes, then one of: nothing, a byte changed
    anywhere (header, stream, checksum), the bytes cut, a declared or table size changed."""
    baskets = []
    for _ in range(draw(st.integers(1, 3))):
        blocks = []
        for _ in range(draw(st.integers(1, 3))):
            piece = draw(st.binary(min_size=0, max_size=60))
            blocks.append(piece * draw(st.integers(1, 30)))
        baskets.append(blocks)
    raw, table, want, n = _chunk(baskets, gap=draw(st.integers(0, 9)))
    raw = bytearray(raw)
    how = draw(st.sampled_from(["none", "byte", "cut", "size", "row"]))
    if how == "byte" and raw:
        raw[draw(st.integers(0, len(raw) - 1))] = draw(st.integers(0, 255))
    elif how == "cut":
        raw = raw[:draw(st.integers(0, len(raw)))]
    elif how == "size":
        table[draw(st.integers(0, len(table) - 1)), 2] += draw(st.integers(-40, 40))
    elif how == "row":
        table[draw(st.integers(0, len(table) - 1)), draw(st.integers(0, 3))] += draw(st.integers(-99, 99))
    return bytes(raw), table, want, n, how


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_hostile())
def test_the_compiled_kernel_and_its_twin_agree_on_any_chunk(twins, case):
    raw, table, want, n, how = case
    compiled, python = twins
    got_c, out_c = _run(compiled, raw, table, n)
    got_p, out_p = _run(python, raw, table, n)
    assert got_c == got_p
    if got_c[0] == INFLATED:
        assert out_c.tobytes() == out_p.tobytes()
        if how == "none" and not np.any(table[:, 1] == table[:, 2]):  # (equal sizes: stored as they are)
            assert out_c[:n].tobytes() == want


def test_sizes_beyond_the_buffer_are_refused_before_use(backend):
    raw, table, _, n = _chunk([[b"a" * 500]])
    big = bytearray(raw)
    big[3:6] = (1 << 23).to_bytes(3, "little")  # compressed bytes past the basket's end
    assert _run(backend, bytes(big), table, n)[0] == (BODY_CUT, 0, 0)
    big = bytearray(raw)
    big[6:9] = ((1 << 24) - 1).to_bytes(3, "little")  # 16 MB declared by a 500-byte basket
    got, out = _run(backend, bytes(big), table, n)
    assert got == (OVER, 0, 0) and (out == 0xAB).all()  # nothing inflated
    for row in ([0, len(raw) + 1, n, 0], [0, len(raw), n, 9], [-1, len(raw), n, 0], [0, len(raw), -n, 0]):
        assert _run(backend, raw, np.array([row]), n)[0][:2] == (OUTSIDE, 0)


def test_declared_sizes_that_disagree_with_the_stream_or_the_basket(backend):
    raw, table, _, n = _chunk([[b"b" * 300, b"c" * 200]])
    short = table.copy()
    short[0, 2] = n + 10  # the key says more than the blocks hold
    assert _run(backend, raw, short, n + 10)[0] == (UNDER, 0, 2)
    fewer = table.copy()
    fewer[0, 2] = n - 1  # the blocks declare more than the key
    assert _run(backend, raw, fewer, n)[0] == (OVER, 0, 1)
    lying = bytearray(raw)
    lying[6:9] = (299).to_bytes(3, "little")  # the stream holds one byte more than its header says
    table2 = table.copy()
    table2[0, 2] = n - 1
    assert _run(backend, bytes(lying), table2, n)[0] == (STREAM, 0, 0)


def test_a_truncated_header_or_a_garbage_stream_is_refused(backend):
    raw, table, _, n = _chunk([[b"d" * 100], [b"e" * 100]])
    cut = table.copy()
    cut[1, 1] = 5  # the second basket ends inside its block's header
    assert _run(backend, raw, cut, n)[0] == (HEADER_CUT, 1, 0)
    garbage = bytearray(raw)
    start = int(table[1, 0]) + 9
    garbage[start:start + 8] = b"\x78\x01garbage"[:8]
    assert _run(backend, bytes(garbage), table, n)[0] == (STREAM, 1, 0)


def test_a_block_of_another_algorithm_is_left_to_the_caller(backend):
    zl = _block(b"f" * 100)
    l4 = _block(b"g" * 100, algo=b"L4")
    raw = zl + zl + l4
    table = np.array([[0, len(zl), 100, 0], [len(zl), len(zl) + len(l4), 200, 100]], dtype=np.int64)
    got, out = _run(backend, raw, table, 300)
    assert got == (NOT_ZLIB, 1, 1)
    assert out[:200].tobytes() == b"f" * 200  # the baskets before it, and its zlib blocks before it


def test_arguments_are_checked_alike(backend):
    raw, table, _, n = _chunk([[b"h" * 10]])
    with pytest.raises(TypeError):
        backend.inflate_baskets(raw, table, np.zeros(n, np.float32), FUNCTIONS)
    with pytest.raises(TypeError):
        backend.inflate_baskets(raw, table, np.zeros(n, np.uint8), None)
    with pytest.raises(ValueError):
        backend.inflate_baskets(raw, table[:, :3], np.zeros(n, np.uint8), FUNCTIONS)
    with pytest.raises(ValueError):
        backend.inflate_baskets(raw, table, np.zeros(n, np.uint8), (0, 0, 0))
    with pytest.raises(TypeError):
        backend.inflate_baskets(12, table, np.zeros(n, np.uint8), FUNCTIONS)
