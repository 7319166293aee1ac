"""BatchGather on both backends: equal to separate kernel calls, errors, twin equality, threads."""
from __future__ import annotations

import gc
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import assert_bitwise, ragged


def _jobs(seed=0):
    v3, o3 = ragged([3, 0, 5, 1, 2, 4], n_vars=4, seed=seed)
    v2, o2 = ragged([1, 1, 0, 2, 6, 3], n_vars=2, dtype=np.float64, seed=seed + 1)
    table = np.random.default_rng(seed).normal(size=(6, 3)).astype(np.float32)
    jobs = [dict(values=v3, offsets=o3),
            dict(values=v2, offsets=o2.astype(np.int32), max_len=3, fixed=False, columns=[1],
                 sort_by=0, descending=False, padding="pre", truncating="pre", pad_value=-1.0,
                 dtype=np.float64),
            dict(values=v3, offsets=o3, max_len=4, pad_value=0.0)]
    return jobs, [table, table[:, :1].astype(np.float64)]


def _separate(backend, jobs, tables, rows):
    """What the same work gives as separate pad_ragged calls and fancy indexing."""
    out = []
    for job in jobs:
        job = dict(job)
        fixed = job.pop("fixed", True)
        if job.get("max_len") is not None and not fixed:
            off = job["offsets"]
            job["max_len"] = min(job["max_len"], int((off[rows + 1] - off[rows]).max()))
        out.append(backend.pad_ragged(rows=rows, **job))
    return out, [t[rows] for t in tables]


def test_matches_separate_kernel_calls(backend):
    jobs, tables = _jobs()
    rows = np.array([4, 0, 2, 2, 5, 1])
    padded, gathered = backend.BatchGather(jobs, tables)(rows)
    want_padded, want_tables = _separate(backend, jobs, tables, rows)
    for (batch, lengths), (w_batch, w_lengths) in zip(padded, want_padded):
        assert_bitwise(batch, w_batch)
        assert_bitwise(lengths, w_lengths)
    for got, want in zip(gathered, want_tables):
        assert_bitwise(got, want)
    assert padded[1][0].shape == (6, 3, 1)  # capped at 3 (fixed=False); longest is 6
    assert padded[2][0].shape == (6, 4, 4)  # fixed width 4


def test_outputs_are_independent_writeable_arrays(backend):
    jobs, tables = _jobs()
    g = backend.BatchGather(jobs, tables)
    first, _ = g(np.array([0, 1]))
    second, _ = g(np.array([0, 1]))
    first[0][0][...] = 7.0
    assert not np.all(second[0][0] == 7.0)
    keep = first[0][0]
    del first, second, g
    gc.collect()
    assert np.all(keep == 7.0)  # the buffer lives as long as the array


def test_empty_rows_and_no_jobs(backend):
    jobs, tables = _jobs()
    padded, gathered = backend.BatchGather(jobs, tables)(np.zeros(0, dtype=np.int64))
    assert [b.shape for b, _ in padded] == [(0, 0, 4), (0, 0, 1), (0, 4, 4)]
    assert [t.shape for t in gathered] == [(0, 3), (0, 1)]
    assert backend.BatchGather()(np.array([1, 2])) == ([], [])


def test_flat_values(backend):
    values = np.arange(6, dtype=np.float32)
    offsets = np.array([0, 2, 2, 6])
    (batch, lengths), = backend.BatchGather([dict(values=values, offsets=offsets, pad_value=0)])(
        np.array([2, 1]))[0]
    assert batch.tolist() == [[2, 3, 4, 5], [0, 0, 0, 0]] and lengths.tolist() == [4, 0]


@pytest.mark.parametrize("rows, error", [
    (np.array([0, 6]), ValueError),
    (np.array([-1]), ValueError),
    (np.array([[0, 1]]), ValueError),
    (np.array([0.5]), ValueError),
])
def test_bad_rows(backend, rows, error):
    jobs, tables = _jobs()
    with pytest.raises(error, match="row"):
        backend.BatchGather(jobs, tables)(rows)


@pytest.mark.parametrize("dtype, width", [(np.float32, 1), (np.float32, 5), (np.float64, 1),
                                          (np.float64, 3)])
def test_tables_of_any_row_size_equal_fancy_indexing(backend, dtype, width):
    table = np.random.default_rng(width).normal(size=(300, width)).astype(dtype)
    rows = np.random.default_rng(1).integers(0, 300, 100)  # more rows than are prefetched ahead
    for picked in (rows, rows[:3], rows[:0]):
        (got,) = backend.BatchGather([], [table])(picked)[1]
        assert_bitwise(got, table[picked])


def test_row_out_of_range_of_a_table_only(backend):
    jobs, tables = _jobs()
    with pytest.raises(ValueError, match="out of range for 2 rows"):
        backend.BatchGather(jobs[:1], [tables[0][:2]])(np.array([0, 3]))


def test_bad_offsets_at_a_selected_row(backend):
    values = np.zeros((4, 2), np.float32)
    offsets = np.array([0, 3, 1, 4])
    g = backend.BatchGather([dict(values=values, offsets=offsets)])
    g(np.array([0]))  # rows whose offsets are fine still work
    with pytest.raises(ValueError, match="bad offsets at row 1"):
        g(np.array([0, 1]))


@pytest.mark.parametrize("rows, jobs, message", [
    ([5, -1], 1, "row 5 out of range for 3 rows"),  # the first bad batch position, not the least
    ([1, 7], 1, "bad offsets at row 1"),            # rows and offsets are checked together, in order
    ([5, -1], 0, "row 5 out of range for 3 rows"),  # a table's rows too
    (np.array([2**63 + 5, 0], dtype=np.uint64), 1, "row 9223372036854775813 out of range"),
])
def test_the_first_bad_batch_position_is_named(backend, rows, jobs, message):
    job = dict(values=np.zeros(3, np.float32), offsets=np.array([0, 2, 1, 3]))
    gather = backend.BatchGather([job] * jobs, [np.zeros((3, 1))])
    with pytest.raises(ValueError, match=message):
        gather(np.asarray(rows))


@pytest.mark.parametrize("job, error", [
    (dict(values=np.zeros((2, 2), np.float16), offsets=[0, 2]), TypeError),
    (dict(values=np.zeros((2, 2), np.float32), offsets=[0, 1]), ValueError),
    (dict(values=np.zeros((2, 2), np.float32), offsets=[0, 2], columns=[2]), ValueError),
    (dict(values=np.zeros((2, 2), np.float32), offsets=[0, 2], padding="mid"), ValueError),
    (dict(values=np.zeros((2, 2), np.float32), offsets=[0, 2], max_len=-1), ValueError),
    (dict(values=np.zeros((2, 2), np.float32), offsets=[0, 2], dtype=np.int8), TypeError),
    (dict(values=np.zeros((2, 2), np.float32), offsets=[0, 2], colums=[0]), TypeError),
    (dict(values=np.zeros((2, 2), np.float32)), TypeError),
])
def test_bad_jobs_fail_at_construction(backend, job, error):
    with pytest.raises(error):
        backend.BatchGather([job])


def test_bad_tables_fail_at_construction(backend):
    with pytest.raises(ValueError, match="2-D"):
        backend.BatchGather([], [np.zeros(3, np.float32)])
    with pytest.raises(TypeError, match="float32"):
        backend.BatchGather([], [np.zeros((3, 1), np.int64)])


def test_threads_share_one_gather(backend):
    values, offsets = ragged(np.arange(200) % 7, n_vars=5, seed=3)
    g = backend.BatchGather([dict(values=values, offsets=offsets)])
    picks = [np.random.default_rng(i).integers(0, 200, 64) for i in range(16)]
    want = [g(r)[0][0][0] for r in picks]
    got: dict[int, np.ndarray] = {}

    def work(k):
        for i in range(k, 16, 4):
            got[i] = g(picks[i])[0][0][0]
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(16):
        assert_bitwise(got[i], want[i])


def test_reused_buffers_never_show_an_earlier_batch(twins):
    """The compiled gather recycles the buffers of dead outputs: each batch must
    still equal the twin's fresh one, whatever the previous (wider, narrower,
    differently padded) batch left behind. Rows of up to 120 prongs x 300 vars
    make MiB-sized outputs, the size that takes huge-page blocks."""
    compiled, python = twins
    lengths = np.random.default_rng(5).integers(0, 120, 400)
    values, offsets = ragged(lengths, n_vars=300, seed=5)
    jobs = [dict(values=values, offsets=offsets),
            dict(values=values, offsets=offsets, max_len=50, fixed=False, padding="pre",
                 pad_value=-2.0, columns=list(range(0, 300, 7)))]
    ours, twin = compiled.BatchGather(jobs), python.BatchGather(jobs)
    rng = np.random.default_rng(6)
    sizes = (64, 9, 64, 40, 1, 64, 0, 33, 64, 64)
    addresses = set()
    for size in sizes:
        rows = rng.integers(0, len(lengths), size)
        got, want = ours(rows)[0], twin(rows)[0]
        for (x, xl), (y, yl) in zip(got, want):
            assert_bitwise(x, y)
            assert_bitwise(xl, yl)
            x.fill(np.inf)  # garbage for the next batch that takes this buffer
        addresses.add(got[0][0].ctypes.data)
        del got, x, xl
    assert len(addresses) < len(sizes)  # buffers were recycled


def test_outputs_outlive_their_gather(backend):
    values, offsets = ragged(np.full(64, 40), n_vars=200, seed=7)
    g = backend.BatchGather([dict(values=values, offsets=offsets)])
    rows = np.arange(64)[::-1]
    batches = [g(rows)[0][0][0] for _ in range(3)]
    del batches[1]  # one buffer back in the pool while the gather lives
    del g
    gc.collect()
    want = values.reshape(64, 40, 200)[::-1]
    for batch in batches:
        assert_bitwise(batch, want)
    del batches
    gc.collect()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lengths=st.lists(st.integers(0, 7), min_size=1, max_size=30),
       picks=st.lists(st.integers(-2, 32), max_size=25),
       max_len=st.one_of(st.none(), st.integers(0, 9)), fixed=st.booleans(),
       sort_by=st.one_of(st.none(), st.integers(0, 2)), padding=st.sampled_from(["post", "pre"]),
       truncating=st.sampled_from(["post", "pre"]), out64=st.booleans(), seed=st.integers(0, 99))
def test_twins_bitwise_equal(twins, lengths, picks, max_len, fixed, sort_by, padding, truncating,
                             out64, seed):
    compiled, python = twins
    values, offsets = ragged(lengths, n_vars=3, seed=seed)
    values[::3, 0] = np.nan
    table = np.random.default_rng(seed).normal(size=(len(lengths), 2))
    job = dict(values=values, offsets=offsets, max_len=max_len, fixed=fixed, sort_by=sort_by,
               padding=padding, truncating=truncating, dtype=np.float64 if out64 else np.float32)
    rows = np.array(picks, dtype=np.int64)
    results = []
    for backend in (compiled, python):
        try:
            results.append(backend.BatchGather([job], [table])(rows))
        except Exception as exc:  # noqa: BLE001 - compared below
            results.append(type(exc))
    a, b = results
    if isinstance(a, type) or isinstance(b, type):
        assert a == b
        return
    for (x, xl), (y, yl) in zip(a[0], b[0]):
        assert_bitwise(x, y)
        assert_bitwise(xl, yl)
    assert_bitwise(a[1][0], b[1][0])


def _aligned(size: int, fill: int = 0) -> np.ndarray:
    """``size`` bytes starting at a 64-byte aligned address (as an arena must)."""
    space = np.full(size + 64, fill, np.uint8)
    skew = (-space.ctypes.data) % 64
    return space[skew:skew + size]


def _placement(arena: np.ndarray, out) -> list:
    """Byte offset in ``arena`` of every output (lengths, batch per job; then tables), or None."""
    arrays = [a for pair in out[0] for a in (pair[1], pair[0])] + list(out[1])
    return [a.ctypes.data - arena.ctypes.data if np.shares_memory(a, arena) else None for a in arrays]


@pytest.mark.parametrize("size", [0, 100, 2000, 1 << 16])
def test_arena_holds_the_outputs_that_fit_in_order(backend, size):
    jobs, tables = _jobs()
    rows = np.array([5, 0, 2, 2, 4])
    want = backend.BatchGather(jobs, tables)(rows)
    arena = _aligned(size, 0xAB)
    got = backend.BatchGather(jobs, tables)(rows, arena=arena)
    for (x, xl), (y, yl) in zip(want[0], got[0]):
        assert_bitwise(x, y)
        assert_bitwise(xl, yl)
    for x, y in zip(want[1], got[1]):
        assert_bitwise(x, y)
    where = _placement(arena, got)
    placed = [o for o in where if o is not None]
    assert placed == sorted(placed) and all(o % 64 == 0 for o in placed)
    sizes = [a.nbytes for pair in got[0] for a in (pair[1], pair[0])] + [t.nbytes for t in got[1]]
    cursor = 0
    for offset, nbytes in zip(where, sizes):  # first fit, in order, 64-byte steps
        fits = 0 < nbytes <= size - cursor
        assert (offset == cursor) if fits else offset is None
        if fits:
            cursor = min(size, -(-(cursor + nbytes) // 64) * 64)
    if size == 1 << 16:
        assert None not in where
        del arena  # the outputs keep the arena alive
        gc.collect()
        assert_bitwise(got[0][0][0], want[0][0][0])


def test_arena_must_be_a_writable_contiguous_buffer(backend):
    jobs, tables = _jobs()
    gather = backend.BatchGather(jobs, tables)
    for bad in (b"\0" * 4096, np.zeros(8192, np.uint8)[::2], 3):
        with pytest.raises(TypeError, match="arena"):
            gather(np.array([0, 1]), arena=bad)
    ro = np.zeros(4096, np.uint8)
    ro.flags.writeable = False
    with pytest.raises(TypeError, match="arena"):
        gather(np.array([0, 1]), arena=ro)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lengths=st.lists(st.integers(0, 7), min_size=1, max_size=30),
       picks=st.lists(st.integers(0, 29), max_size=25), size=st.integers(0, 3000),
       max_len=st.one_of(st.none(), st.integers(0, 9)), seed=st.integers(0, 99))
def test_twins_place_alike_in_an_arena(twins, lengths, picks, size, max_len, seed):
    compiled, python = twins
    values, offsets = ragged(lengths, n_vars=3, seed=seed)
    table = np.random.default_rng(seed).normal(size=(len(lengths), 2))
    job = dict(values=values, offsets=offsets, max_len=max_len, fixed=False)
    rows = np.array([p % len(lengths) for p in picks], dtype=np.int64)
    results = []
    for backend in (compiled, python):
        arena = _aligned(size)
        out = backend.BatchGather([job], [table])(rows, arena=arena)
        results.append((out, _placement(arena, out)))
    (a, pa), (b, pb) = results
    assert pa == pb
    for (x, xl), (y, yl) in zip(a[0], b[0]):
        assert_bitwise(x, y)
        assert_bitwise(xl, yl)
    assert_bitwise(a[1][0], b[1][0])


def test_arena_must_start_aligned(backend):
    jobs, tables = _jobs()
    gather = backend.BatchGather(jobs, tables)
    aligned = _aligned(8192 + 64)
    gather(np.array([0, 1]), arena=aligned[:8192])  # fine
    with pytest.raises(ValueError, match="multiple of 64"):
        gather(np.array([0, 1]), arena=aligned[1:4097])
