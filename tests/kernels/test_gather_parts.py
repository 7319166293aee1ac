"""BatchGather over several parts (the files of a dataset) and over integer and boolean sources:
bitwise what one concatenated float part gives, on both backends, and compiled == twin."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lstm_data.kernels._source_kinds import SOURCE_DTYPES as SOURCE_NAMES

SOURCE_DTYPES = [np.dtype(name) for name in SOURCE_NAMES] + [np.dtype(np.bool_)]


def _part(rng, n_rows, n_vars, dtype, max_len=6):
    lens = rng.integers(0, max_len, n_rows)
    offsets = np.zeros(n_rows + 1, np.int64)
    np.cumsum(lens, out=offsets[1:])
    if np.dtype(dtype) == np.bool_:
        values = rng.integers(0, 2, (offsets[-1], n_vars)).astype(bool)
    elif np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        values = rng.integers(max(info.min, -1000), min(info.max, 1000), (offsets[-1], n_vars)).astype(dtype)
    else:
        values = rng.standard_normal((offsets[-1], n_vars)).astype(dtype)
    return values, offsets


def _joined(parts):
    values = np.concatenate([v for v, _ in parts])
    lens = np.concatenate([np.diff(o) for _, o in parts])
    offsets = np.zeros(len(lens) + 1, np.int64)
    np.cumsum(lens, out=offsets[1:])
    return values, offsets


def _assert_bitwise(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_parts=st.integers(1, 6), dtype=st.sampled_from(SOURCE_DTYPES),
       out64=st.booleans(), sort=st.booleans(), pre=st.booleans(), max_len=st.sampled_from([None, 0, 3]),
       fixed=st.booleans(), with_columns=st.booleans())
def test_parts_equal_one_concatenated_part_on_both_backends(twins, seed, n_parts, dtype, out64, sort, pre,
                                                           max_len, fixed, with_columns):
    rng = np.random.default_rng(seed)
    parts = [_part(rng, int(rng.integers(0, 9)), 3, dtype) for _ in range(n_parts)]
    n_rows = sum(len(o) - 1 for _, o in parts)
    rows = rng.integers(0, n_rows, int(rng.integers(0, 20))) if n_rows else np.zeros(0, np.intp)
    options = dict(max_len=max_len, fixed=fixed, pad_value=-2.5, sort_by=1 if sort else None,
                   padding="pre" if pre else "post", truncating="pre" if pre else "post",
                   dtype=np.float64 if out64 else np.float32, columns=[2, 0] if with_columns else None)
    values, offsets = _joined(parts)
    reference = values.astype(np.float64 if out64 else np.float32)
    want = None
    for kernels in twins:
        got_parts = kernels.BatchGather([dict(parts=parts, **options)])(rows)[0][0]
        got_joined = kernels.BatchGather([dict(values=values, offsets=offsets, **options)])(rows)[0][0]
        got_float = kernels.BatchGather([dict(values=reference, offsets=offsets, **options)])(rows)[0][0]
        for got in (got_parts, got_joined):
            _assert_bitwise(got[0], got_float[0])
            _assert_bitwise(got[1], got_float[1])
        if want is None:
            want = got_parts
        _assert_bitwise(got_parts[0], want[0])


def test_integers_convert_as_c_converts_them(backend):
    values = np.array([[2**24 + 1], [2**53 + 1], [-(2**63)], [7]], dtype=np.int64)
    offsets = np.array([0, 4])
    (batch, _), = backend.BatchGather([dict(values=values, offsets=offsets)])([0])[0]
    _assert_bitwise(batch[0, :, 0], values[:, 0].astype(np.float32))
    flags = np.array([[True], [False]])
    (batch, _), = backend.BatchGather([dict(values=flags, offsets=[0, 2], dtype=np.float64)])([0])[0]
    assert batch[0, :, 0].tolist() == [1.0, 0.0]


@pytest.mark.parametrize("rows, match", [
    ([9], r"row 9 out of range for 9 rows"),
    ([-1], r"row -1 out of range for 9 rows"),
    ([0, 6], r"bad offsets at row 6 \(row 2 of part 1\): offsets\[2\]=2, offsets\[3\]=1"),
])
def test_bad_rows_are_named_across_parts(backend, rows, match):
    good = (np.zeros((4, 2), np.float32), np.array([0, 1, 2, 3, 4]))
    broken = (np.zeros((2, 2), np.float32), np.array([0, 1, 2, 1, 2, 2]))  # its row 2 decreases
    gather = backend.BatchGather([dict(parts=[good, broken])])
    with pytest.raises(ValueError, match=match):
        gather(np.array(rows))


@pytest.mark.parametrize("job, error, match", [
    (dict(parts=[]), ValueError, "at least one"),
    (dict(parts=[(np.zeros((1, 2), np.float32), [0, 1]), (np.zeros((1, 3), np.float32), [0, 1])]),
     TypeError, "parts must share dtype and variables"),
    (dict(parts=[(np.zeros((1, 2), np.float32), [0, 1]), (np.zeros((1, 2), np.int32), [0, 1])]),
     TypeError, "parts must share dtype"),
    (dict(parts=[(np.zeros((1, 2), np.float32), [0, 1])], values=np.zeros((1, 2), np.float32)),
     TypeError, "not both"),
    (dict(values=np.zeros((1, 2), np.float16), offsets=[0, 1]), TypeError, "float16"),
])
def test_bad_parts_fail_at_construction_with_the_same_error(backend, job, error, match):
    with pytest.raises(error, match=match):
        backend.BatchGather([job])


def test_parts_are_not_copied(backend):
    a = (np.arange(6, dtype=np.float32).reshape(3, 2), np.array([0, 3]))
    b = (np.arange(4, dtype=np.float32).reshape(2, 2), np.array([0, 2]))
    gather = backend.BatchGather([dict(parts=[a, b])])
    job = gather.ragged[0]
    assert all(np.shares_memory(p[0], src[0]) for p, src in zip(job.parts, (a, b)))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1),
       sizes=st.lists(st.sampled_from([0, 0, 1, 2, 3, 40, 700]), min_size=1, max_size=90))
def test_rows_find_their_part_whatever_the_part_sizes(twins, seed, sizes):
    """Many parts of very different sizes, empty ones included: the part search (a guess from equal
    sizes, a few steps, then a binary search) finds every row's part, first and last rows too."""
    rng = np.random.default_rng(seed)
    parts = [_part(rng, n, 2, np.float32, max_len=3) for n in sizes]
    n_rows = sum(sizes)
    if not n_rows:
        return
    rows = np.concatenate([rng.permutation(n_rows), [0, n_rows - 1]])
    values, offsets = _joined(parts)
    for kernels in twins:
        (got, lengths), = kernels.BatchGather([dict(parts=parts, max_len=3, pad_value=0.0)])(rows)[0]
        (want, want_lengths), = kernels.BatchGather([dict(values=values, offsets=offsets, max_len=3,
                                                          pad_value=0.0)])(rows)[0]
        _assert_bitwise(got, want)
        _assert_bitwise(lengths, want_lengths)
