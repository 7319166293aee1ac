"""interleave_columns on both backends: numpy's column assignment bitwise, any strides, errors, twins."""
from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import assert_bitwise

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)


def _columns(n, dtypes, seed=0):
    """Columns of random bit patterns: NaNs with payloads, infinities, subnormals, signed zeros."""
    rng = np.random.default_rng(seed)
    out = []
    for dt in dtypes:
        bits = rng.integers(0, 2 ** 63, size=n, dtype=np.uint64)
        col = bits.astype(np.uint32 if dt == F32 else np.uint64).view(dt)
        col[::7] = np.float32(1.5)
        out.append(col)
    return out


def _want(columns, shape, dtype):
    want = np.empty(shape, dtype=dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        for j, c in enumerate(columns):
            want[:, j] = c
    return want


@pytest.mark.parametrize("out_dtype", [F32, F64])
@pytest.mark.parametrize("mix", [(F32,) * 11, (F64,) * 9, (F32, F64, F64, F32, F32, F64, F32, F32, F32, F64)])
def test_equals_numpy_assignment(backend, out_dtype, mix):
    cols = _columns(1000, mix)
    out = np.full((1000, len(mix)), -1, dtype=out_dtype)
    assert backend.interleave_columns(cols, out) is out
    assert_bitwise(out, _want(cols, out.shape, out_dtype))


def test_strided_reversed_and_read_only_inputs(backend):
    base = _columns(3000, (F64, F32, F32), seed=1)
    ro = base[2][:1000].copy()
    ro.flags.writeable = False
    cols = [base[0][::3], base[1][::-3], ro, base[1][1000:2000]]
    out = np.zeros((1000, 4), np.float32)
    backend.interleave_columns(cols, out)
    assert_bitwise(out, _want(cols, out.shape, np.float32))


@pytest.mark.parametrize("every", [1, 2])  # out's columns adjacent, or every other column of a block
def test_a_column_repeating_one_value_through_a_zero_stride(backend, every):
    cols = _columns(300, (F32, F64, F32), seed=3)
    cols[1] = np.broadcast_to(cols[1][5:6], (300,))  # strides (0,): not contiguous
    block = np.zeros((300, 3 * every), np.float64)
    backend.interleave_columns(cols, block[:, ::every])
    assert_bitwise(block[:, ::every], _want(cols, (300, 3), np.float64))


def test_out_is_a_column_slice_of_a_wider_block(backend):
    cols = _columns(500, (F32,) * 3, seed=2)
    block = np.zeros((600, 7), np.float32)
    backend.interleave_columns(cols, block[50:550, 2:5])
    want = np.zeros_like(block)
    want[50:550, 2:5] = _want(cols, (500, 3), np.float32)
    assert_bitwise(block, want)
    every_other = np.zeros((500, 6), np.float64)  # out's columns not adjacent
    backend.interleave_columns(cols, every_other[:, ::2])
    assert_bitwise(every_other[:, ::2].copy(), _want(cols, (500, 3), np.float64))
    assert not every_other[:, 1::2].any()


def test_misaligned_buffers(backend):
    cols = _columns(64, (F64, F32), seed=3)
    raw = np.zeros(64 * 8 + 1, np.uint8)
    odd = raw[1:].view(np.float64)  # an address that is no multiple of 8
    odd[:] = cols[0]
    raw_out = np.zeros(64 * 2 * 4 + 1, np.uint8)
    out = raw_out[1:].view(np.float32).reshape(64, 2)
    backend.interleave_columns([odd, cols[1]], out)
    assert_bitwise(out.copy(), _want([odd, cols[1]], (64, 2), np.float32))


def test_empty(backend):
    out = np.zeros((0, 3), np.float32)
    assert backend.interleave_columns([np.zeros(0, np.float32)] * 3, out) is out
    out = np.zeros((5, 0), np.float64)
    assert backend.interleave_columns([], out) is out
    assert backend.interleave_columns((), np.zeros((0, 0))).shape == (0, 0)


def test_threads_share_one_input(backend):
    cols = _columns(20000, (F32,) * 9, seed=4)
    want = _want(cols, (20000, 9), np.float32)
    outs = [np.zeros((20000, 9), np.float32) for _ in range(4)]
    threads = [threading.Thread(target=backend.interleave_columns, args=(cols, o)) for o in outs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for o in outs:
        assert_bitwise(o, want)


def _bad_cases():
    ok = [np.zeros(4, np.float32)] * 2
    out = np.zeros((4, 2), np.float32)
    read_only = np.zeros((4, 2), np.float32)
    read_only.flags.writeable = False
    return [
        ("not an array", ok, [[0.0, 0.0]] * 4, TypeError, "out must be a numpy array"),
        ("int out", ok, np.zeros((4, 2), np.int32), TypeError, "out must be float32 or float64"),
        ("1-D out", ok[:1], np.zeros(4, np.float32), ValueError, "must be 2-D"),
        ("read-only out", ok, read_only, ValueError, "read-only"),
        ("columns an array", np.zeros((2, 4), np.float32), out, TypeError, "must be a sequence"),
        ("too few columns", ok[:1], out, ValueError, "1 columns for out of shape"),
        ("int column", [ok[0], np.zeros(4, np.int64)], out, TypeError, "column 1 must be float32"),
        ("2-D column", [ok[0], np.zeros((4, 1), np.float32)], out, ValueError, "column 1 must be 1-D"),
        ("short column", [np.zeros(3, np.float32), ok[0]], out, ValueError,
         "column 0 has 3 values but out has 4 rows"),
        ("aliasing", [out[:, 1], ok[0]], out, ValueError, "column 0 shares memory with out"),
    ]


@pytest.mark.parametrize("case", _bad_cases(), ids=lambda c: c[0])
def test_errors(backend, case):
    _, columns, out, error, message = case
    with pytest.raises(error, match=message):
        backend.interleave_columns(columns, out)


@pytest.mark.parametrize("case", _bad_cases(), ids=lambda c: c[0])
def test_twins_raise_the_same(twins, case):
    _, columns, out, error, _ = case
    messages = []
    for kernels in twins:
        with pytest.raises(error) as info:
            kernels.interleave_columns(columns, out)
        messages.append((type(info.value), str(info.value)))
    assert messages[0] == messages[1]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(0, 700), dtypes=st.lists(st.sampled_from([F32, F64]), min_size=0, max_size=19),
       out_dtype=st.sampled_from([F32, F64]), step=st.sampled_from([1, 2, -1, 0]),
       seed=st.integers(0, 2 ** 31), row_pad=st.integers(0, 3))
def test_twins_bitwise_equal(twins, n, dtypes, out_dtype, step, seed, row_pad):
    if step == 0:  # one value repeated through a zero stride
        cols = [np.broadcast_to(c[:1], (n,)) for c in _columns(max(n, 1), dtypes, seed)]
    else:
        cols = [c[::step] for c in _columns(n * abs(step), dtypes, seed)]
    results = []
    for kernels in twins:
        block = np.zeros((n, len(dtypes) + row_pad), dtype=out_dtype)
        kernels.interleave_columns(cols, block[:, :len(dtypes)])
        results.append(block)
    assert_bitwise(results[0], results[1])


# -- columns of the other byte order (ROOT's big-endian baskets), swapped as they are read --
BIG32, BIG64 = np.dtype(">f4"), np.dtype(">f8")


def _swapped(columns):
    """The same values as big-endian arrays (their bytes reversed in memory)."""
    return [c.astype(c.dtype.newbyteorder(">")) for c in columns]


@pytest.mark.parametrize("out_dtype", [F32, F64])
@pytest.mark.parametrize("mix", [(F32,) * 11, (F64,) * 9, (F32, F64, F64, F32, F32, F64, F32, F32, F32, F64)])
def test_big_endian_columns_equal_their_native_values(backend, out_dtype, mix):
    native = _columns(1000, mix, seed=5)
    big = _swapped(native)
    assert all(not c.dtype.isnative for c in big)
    out = np.full((1000, len(mix)), -1, dtype=out_dtype)
    backend.interleave_columns(big, out)
    assert_bitwise(out, _want(native, out.shape, out_dtype))


def test_big_and_native_columns_mixed_strided_and_from_raw_bytes(backend):
    native = _columns(2000, (F32, F32, F64, F32), seed=6)
    raw = native[0].astype(BIG32).tobytes()  # as a ROOT basket holds them
    cols = [np.frombuffer(raw, dtype=BIG32), native[1], _swapped(native[2:3])[0][::2],
            _swapped(native[3:])[0][::-2]]
    out = np.zeros((1000, 4), np.float32)
    backend.interleave_columns([c[:1000] for c in cols], out)
    assert_bitwise(out, _want([native[0][:1000], native[1][:1000], native[2][::2][:1000],
                               native[3][::-2][:1000]], out.shape, np.float32))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(0, 700), kinds=st.lists(st.sampled_from([F32, F64, BIG32, BIG64]), min_size=0, max_size=19),
       out_dtype=st.sampled_from([F32, F64]), step=st.sampled_from([1, 2, -1]),
       seed=st.integers(0, 2 ** 31))
def test_twins_bitwise_equal_with_big_endian_columns(twins, n, kinds, out_dtype, step, seed):
    native = _columns(n * abs(step), [k.newbyteorder("=") for k in kinds], seed)
    cols = [(c if k.isnative else c.astype(k))[::step] for c, k in zip(native, kinds)]
    results = []
    for kernels in twins:
        block = np.zeros((n, len(kinds)), dtype=out_dtype)
        kernels.interleave_columns(cols, block)
        results.append(block)
    assert_bitwise(results[0], results[1])
    assert_bitwise(results[0], _want([c[::step] for c in native], (n, len(kinds)), out_dtype))
