"""pad_ragged on both backends: semantics, edge cases, errors, twin equality, threads."""
from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tests.helpers import ragged


def reference(values, offsets, rows, width, pad=np.nan, dtype=np.float32):
    """Straightforward per-row construction, independent of both backends."""
    table = values.reshape(len(values), -1)
    out = np.full((len(rows), width, table.shape[1]), pad, dtype=dtype)
    for b, r in enumerate(rows):
        seg = table[offsets[r]:offsets[r + 1]][:width]
        out[b, :len(seg)] = seg
    return out


def test_basic_post_padding(backend):
    values, offsets = ragged([2, 0, 3, 1])
    batch, lengths = backend.pad_ragged(values, offsets)
    assert batch.shape == (4, 3, 3) and batch.dtype == np.float32
    np.testing.assert_array_equal(batch, reference(values, offsets, range(4), 3))
    assert lengths.tolist() == [2, 0, 3, 1] and lengths.dtype == np.int64


def test_rows_any_order_with_repeats_and_max_len(backend):
    values, offsets = ragged([5, 1, 4, 2])
    rows = np.array([2, 0, 2, 3, 0])
    batch, lengths = backend.pad_ragged(values, offsets, rows, max_len=3, pad_value=-9.0)
    np.testing.assert_array_equal(batch, reference(values, offsets, rows, 3, pad=-9.0))
    assert lengths.tolist() == [3, 3, 3, 2, 3]


def test_pre_padding_and_pre_truncating(backend):
    values = np.arange(10, dtype=np.float64)
    offsets = np.array([0, 4, 6, 10])
    batch, lengths = backend.pad_ragged(values, offsets, max_len=3, padding="pre",
                                        truncating="pre", pad_value=0, dtype=np.float64)
    assert batch.tolist() == [[1, 2, 3], [0, 4, 5], [7, 8, 9]]
    assert lengths.tolist() == [3, 2, 3]
    post, _ = backend.pad_ragged(values, offsets, max_len=3, truncating="post", pad_value=0,
                                 dtype=np.float64)
    assert post.tolist() == [[0, 1, 2], [4, 5, 0], [6, 7, 8]]


def test_sort_by_descending_nan_last_stable(backend):
    key = [1.0, np.nan, 3.0, 1.0, -0.0, 0.0]
    values = np.stack([key, np.arange(6)], axis=1).astype(np.float32)
    offsets = np.array([0, 6])
    batch, _ = backend.pad_ragged(values, offsets, sort_by=0)
    assert batch[0, :, 1].tolist() == [2, 0, 3, 4, 5, 1]
    batch, _ = backend.pad_ragged(values, offsets, sort_by=0, descending=False, max_len=4)
    assert batch[0, :, 1].tolist() == [4, 5, 0, 3]


def test_sort_long_rows_uses_stable_merge(backend):
    rng = np.random.default_rng(3)
    key = rng.integers(0, 5, 200).astype(np.float64)
    key[::17] = np.nan
    values = np.stack([key, np.arange(200)], axis=1)
    batch, _ = backend.pad_ragged(values, np.array([0, 200]), sort_by=0, dtype=np.float64)
    expected = np.argsort(-key, kind="stable")
    assert batch[0, :, 1].astype(int).tolist() == expected.tolist()


def test_columns_select_and_reorder(backend):
    values, offsets = ragged([2, 3], n_vars=4)
    batch, _ = backend.pad_ragged(values, offsets, columns=[3, 0, 3])
    np.testing.assert_array_equal(batch, reference(values[:, [3, 0, 3]], offsets, [0, 1], 3))


def test_one_dimensional_values_give_two_dimensional_batch(backend):
    values = np.array([1, 2, 3], dtype=np.float32)
    batch, lengths = backend.pad_ragged(values, np.array([0, 1, 3], dtype=np.int32))
    assert batch.shape == (2, 2)
    np.testing.assert_array_equal(batch, [[1, np.nan], [2, 3]])


def test_zero_rows_all_empty_and_max_len_zero(backend):
    values, offsets = ragged([0, 0, 0], n_vars=2)
    batch, lengths = backend.pad_ragged(values, offsets)
    assert batch.shape == (3, 0, 2) and lengths.tolist() == [0, 0, 0]
    batch, lengths = backend.pad_ragged(values, offsets, rows=np.array([], dtype=int))
    assert batch.shape == (0, 0, 2) and lengths.shape == (0,)
    values, offsets = ragged([2, 1], n_vars=2)
    batch, lengths = backend.pad_ragged(values, offsets, max_len=0)
    assert batch.shape == (2, 0, 2) and lengths.tolist() == [0, 0]
    empty = np.zeros((0, 5), dtype=np.float32)
    batch, _ = backend.pad_ragged(empty, np.array([0]), rows=None)
    assert batch.shape == (0, 0, 5)


def test_v1_and_very_long_rows(backend):
    values, offsets = ragged([100_000, 1, 0], n_vars=1)
    batch, lengths = backend.pad_ragged(values, offsets, rows=[1, 0, 2])
    assert batch.shape == (3, 100_000, 1)
    np.testing.assert_array_equal(batch[1, :, 0], values[:, 0][:100_000])
    assert np.isnan(batch[0, 1:]).all() and lengths.tolist() == [1, 100_000, 0]


@pytest.mark.parametrize("in_dtype", [np.float32, np.float64])
@pytest.mark.parametrize("out_dtype", [np.float32, np.float64])
def test_dtype_combinations(backend, in_dtype, out_dtype):
    values, offsets = ragged([3, 1], n_vars=2, dtype=np.float64)
    values = (values * 1e-3).astype(in_dtype)
    batch, _ = backend.pad_ragged(values, offsets, dtype=out_dtype)
    assert batch.dtype == np.dtype(out_dtype)
    np.testing.assert_array_equal(batch[0, :3], values[:3].astype(out_dtype))


def test_read_only_and_non_contiguous_inputs(backend):
    values, offsets = ragged([3, 2, 4], n_vars=6, dtype=np.float64)
    strided = values[:, ::2]           # non-contiguous columns
    reversed_rows = values[::-1][::-1]  # a view
    values.setflags(write=False)
    offsets.setflags(write=False)
    off32 = offsets.astype(np.int32)[::1]
    for vals in (strided, reversed_rows):
        batch, _ = backend.pad_ragged(vals, off32, rows=[2, 0], dtype=np.float64)
        np.testing.assert_array_equal(batch, reference(vals, offsets, [2, 0], 4,
                                                       dtype=np.float64))
    big = np.zeros(20, dtype=np.int64)
    off_view = big[::2][:4]
    off_view[:] = offsets
    batch, _ = backend.pad_ragged(values, off_view)
    np.testing.assert_array_equal(batch, reference(values, offsets, range(3), 4))


def test_out_is_reused(backend):
    values, offsets = ragged([3, 2], n_vars=2)
    out = np.full((2, 4, 2), 7.0, dtype=np.float32)
    batch, _ = backend.pad_ragged(values, offsets, max_len=4, out=out)
    assert batch is out
    np.testing.assert_array_equal(out, reference(values, offsets, [0, 1], 4))


@pytest.mark.parametrize("kwargs, exc", [
    ({"offsets": np.array([0, 2, 1, 3])}, ValueError),        # non-monotonic
    ({"offsets": np.array([0, 2, 4])}, ValueError),           # offsets[-1] != len(values)
    ({"offsets": np.array([1, 2, 3])}, ValueError),           # offsets[0] != 0
    ({"offsets": np.array([0, 5, 3])}, ValueError),           # past the end, then back
    ({"offsets": np.array([0.0, 3.0])}, TypeError),
    ({"offsets": np.array([[0, 3]])}, ValueError),
    ({"rows": [0, 2]}, ValueError),                           # out of range
    ({"rows": [-1]}, ValueError),
    ({"rows": [0.5]}, ValueError),
    ({"rows": [[0]]}, ValueError),
    ({"columns": [0, 2]}, ValueError),
    ({"columns": [-1]}, ValueError),
    ({"sort_by": 2}, ValueError),
    ({"sort_by": "a"}, ValueError),
    ({"max_len": -1}, ValueError),
    ({"max_len": 1.5}, ValueError),
    ({"padding": "middle"}, ValueError),
    ({"truncating": None}, ValueError),
    ({"dtype": np.int64}, TypeError),
    ({"values": np.zeros((3, 2), dtype=np.float16)}, TypeError),
    ({"values": np.zeros((3, 2, 1), dtype=np.float32)}, ValueError),
    ({"out": np.zeros((2, 2, 2), dtype=np.float64)}, TypeError),
    ({"out": np.zeros((2, 3, 2), dtype=np.float32)}, ValueError),
    ({"out": np.zeros((2, 2, 2), dtype=np.float32)[:, :, ::-1]}, ValueError),
    ({"out": [[0.0]]}, TypeError),
])
def test_invalid_input_raises(backend, kwargs, exc):
    args = {"values": np.zeros((3, 2), dtype=np.float32), "offsets": np.array([0, 1, 3]),
            "rows": None, "max_len": 2, "out": None}
    args.update(kwargs)
    with pytest.raises(exc):
        backend.pad_ragged(args.pop("values"), args.pop("offsets"), args.pop("rows"), **args)


@pytest.mark.parametrize("rows, kwargs, message", [
    ([5, -1], {}, "row 5 out of range"),          # the first bad batch position, not the smallest
    ([1, 7], {}, "bad offsets at row 1"),         # rows and offsets are checked together, in order
    ([7, 1], {}, "row 7 out of range"),
    ([5], {"padding": "x"}, "padding must be"),   # argument checks come before the rows' range
    (np.array([9, 5], dtype=np.uint8), {"padding": "x"}, "row 9 out of range"),  # unsigned: first
])
def test_the_first_bad_batch_position_is_named(backend, rows, kwargs, message):
    with pytest.raises(ValueError, match=message):
        backend.pad_ragged(np.zeros((3, 2), np.float32), np.array([0, 2, 1, 3]), np.asarray(rows),
                           **kwargs)


@pytest.mark.parametrize("rows", [None, []])
def test_pad_value_must_be_a_number_even_when_nothing_is_padded(backend, rows):
    values, offsets = np.zeros(2, np.float32), np.array([0, 1, 2])
    with pytest.raises(TypeError):
        backend.pad_ragged(values, offsets, rows, pad_value=None)
    with pytest.raises(ValueError, match="could not convert"):
        backend.pad_ragged(values, offsets, rows, pad_value="x")


def test_signalling_nan_turns_quiet_without_a_warning(backend):
    snan = np.array([0x7FF0000000000001], np.uint64).view(np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        batch, _ = backend.pad_ragged(snan, np.array([0, 1]), max_len=2, pad_value=snan[0],
                                      dtype=np.float32)
    assert batch.view(np.uint32).tolist() == [[0x7FC00000, 0x7FC00000]]


def test_columns_with_flat_values_rejected(backend):
    with pytest.raises(ValueError):
        backend.pad_ragged(np.zeros(3, dtype=np.float32), np.array([0, 3]), columns=[0])


def test_threads_give_the_same_batches(backend):
    values, offsets = ragged(np.random.default_rng(1).integers(0, 30, 5000), n_vars=8)
    rng = np.random.default_rng(2)
    batches = [rng.integers(0, 5000, 256) for _ in range(16)]
    expected = [backend.pad_ragged(values, offsets, r, max_len=20)[0] for r in batches]
    results = [None] * len(batches)

    def work(k):
        for i in range(k, len(batches), 4):
            results[i] = backend.pad_ragged(values, offsets, batches[i], max_len=20)[0]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for got, want in zip(results, expected):
        np.testing.assert_array_equal(got, want)


# -- compiled == twin ---------------------------------------------------------------
@st.composite
def pad_cases(draw):
    lengths = draw(st.lists(st.integers(0, 40), min_size=0, max_size=12))
    n_vars = draw(st.integers(1, 5))
    in_dtype = draw(st.sampled_from([np.float32, np.float64]))
    total = sum(lengths)
    elems = st.floats(allow_nan=True, allow_infinity=True, width=32 if in_dtype == np.float32 else 64)
    flat = n_vars == 1 and draw(st.booleans())
    shape = (total,) if flat else (total, n_vars)
    values = draw(hnp.arrays(in_dtype, shape, elements=elems))
    offsets = np.zeros(len(lengths) + 1, dtype=draw(st.sampled_from([np.int32, np.int64])))
    np.cumsum(lengths, out=offsets[1:])
    n_rows = len(lengths)
    rows = draw(st.one_of(st.none(), st.lists(st.integers(-1, n_rows), max_size=10)))
    kwargs = {
        "max_len": draw(st.one_of(st.none(), st.integers(-1, 45))),
        "pad_value": draw(st.sampled_from([np.nan, 0.0, -1.0, np.inf])),
        "columns": None if flat else draw(st.one_of(
            st.none(), st.lists(st.integers(-1, n_vars), max_size=n_vars + 1))),
        "sort_by": draw(st.one_of(st.none(), st.integers(-1, n_vars))),
        "descending": draw(st.booleans()),
        "padding": draw(st.sampled_from(["post", "pre"])),
        "truncating": draw(st.sampled_from(["post", "pre", "bad"])),
        "dtype": draw(st.sampled_from([np.float32, np.float64])),
    }
    if draw(st.booleans()) and len(offsets) > 2:   # sometimes break the offsets
        i = draw(st.integers(1, len(offsets) - 2))
        offsets[i] = draw(st.integers(-3, total + 3))
    return values, offsets, rows, kwargs


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=pad_cases())
def test_compiled_equals_twin(twins, case):
    values, offsets, rows, kwargs = case
    outcomes = []
    for impl in twins:
        try:
            batch, lengths = impl.pad_ragged(values, offsets, rows, **kwargs)
            outcomes.append(("ok", batch.dtype, batch.shape, batch.tobytes(), lengths.tolist()))
        except Exception as exc:  # noqa: BLE001 - the exception type is compared
            outcomes.append(("error", type(exc)))
    assert outcomes[0] == outcomes[1]
