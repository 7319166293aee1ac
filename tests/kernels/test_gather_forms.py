"""BatchGather output forms: per-column transform, pad values, wrap, channels-first and packed
layouts. Compiled == twin bitwise (Hypothesis), both == a plain per-row reference, same errors."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lstm_data.kernels._source_kinds import SOURCE_DTYPES
from tests.helpers import assert_bitwise

SOURCES = [np.dtype(name) for name in SOURCE_DTYPES] + [np.dtype(np.bool_)]


def _values(rng: np.random.Generator, total: int, n_vars: int, dtype) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "f":
        v = rng.normal(scale=3.0, size=(total, n_vars)).astype(dt)
        if total:
            v.flat[rng.integers(0, v.size, size=max(1, v.size // 10))] = np.nan
            v.flat[0] = -0.0
        return v
    if dt.kind == "b":
        return rng.integers(0, 2, size=(total, n_vars)).astype(bool)
    info = np.iinfo(dt)
    lo, hi = max(info.min, -1000), min(info.max, 1000)
    return rng.integers(lo, hi, size=(total, n_vars), endpoint=True).astype(dt)


def _parts(rng, lengths, n_vars, dtype, n_parts):
    cuts = sorted(rng.choice(np.arange(1, len(lengths)), size=min(n_parts - 1, len(lengths) - 1),
                         replace=False).tolist()) if len(lengths) > 1 else []
    parts = []
    for chunk in np.split(np.asarray(lengths, dtype=np.int64), cuts):
        off = np.zeros(len(chunk) + 1, dtype=np.int64)
        np.cumsum(chunk, out=off[1:])
        parts.append((_values(rng, int(off[-1]), n_vars, dtype), off))
    return parts


@st.composite
def form_cases(draw, wide=False, shared=None):
    """A job and its batch rows; ``wide``: rows of up to 40 elements padded to 30-140 slots
    (short and long periods of ``wrap``, long runs of padding), never packed; ``shared``: the
    job's ``(parts, lengths, n_vars)``."""
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    if shared is None:
        lengths = draw(st.lists(st.integers(0, 40 if wide else 9), min_size=1, max_size=12))
        n_vars = draw(st.integers(1, 4))
        source = draw(st.sampled_from(SOURCES))
        parts = _parts(rng, lengths, n_vars, source, draw(st.integers(1, 3)))
    else:
        parts, lengths, n_vars = shared
    layout = draw(st.sampled_from(["padded", "channels_first"] + ([] if wide else ["packed"])))
    pad_mode = "constant" if layout == "packed" else draw(st.sampled_from(["constant", "wrap"]))
    padding = "post" if pad_mode == "wrap" else draw(st.sampled_from(["post", "pre"]))
    columns = draw(st.none() | st.lists(st.integers(0, n_vars - 1), min_size=1, max_size=4))
    n_cols = n_vars if columns is None else len(columns)
    job = dict(parts=parts, layout=layout, padding=padding, pad_mode=pad_mode, columns=columns,
               truncating=draw(st.sampled_from(["post", "pre"])),
               sort_by=draw(st.none() | st.integers(0, n_vars - 1)), descending=draw(st.booleans()),
               max_len=draw(st.integers(30, 140) if wide else st.none() | st.integers(0, 10)),
               fixed=draw(st.booleans()),
               multiple_of=draw(st.none() | st.integers(1, 4)),
               dtype=draw(st.sampled_from([np.float32, np.float64])),
               pad_value=draw(st.sampled_from([0.0, -1.5, math.nan])))
    if draw(st.booleans()):
        finite = st.floats(-50, 50, allow_nan=False, width=64)
        job["center"] = draw(st.lists(finite, min_size=n_cols, max_size=n_cols))
        job["scale"] = draw(st.lists(st.floats(-4, 4, allow_nan=False), min_size=n_cols, max_size=n_cols))
        lo = draw(st.lists(st.floats(-10, 0) | st.just(-math.inf), min_size=n_cols, max_size=n_cols))
        job["clip_min"] = lo
        job["clip_max"] = [x + draw(st.floats(0, 20)) for x in lo] if draw(st.booleans()) else None
    if draw(st.booleans()):
        job["pad_values"] = draw(st.lists(st.sampled_from([0.0, 2.5, math.nan, -7.0]), min_size=n_cols,
                                          max_size=n_cols))
    rows = draw(st.lists(st.integers(0, len(lengths) - 1), max_size=10))
    return job, np.array(rows, dtype=np.int64)


def reference(job, rows):
    """One row at a time, in plain Python and NumPy scalars: what every form must give."""
    dt = np.dtype(job.get("dtype", np.float32))
    parts = job["parts"]
    values = np.concatenate([v for v, _ in parts])
    starts, stops, base = [], [], 0
    for v, o in parts:
        starts += (o[:-1] + base).tolist()
        stops += (o[1:] + base).tolist()
        base += len(v)
    cols = job.get("columns") or list(range(values.shape[1]))
    n_cols = len(cols)
    rows_el = []
    for r in rows:
        elems = values[starts[r]:stops[r]]
        idx = list(range(len(elems)))
        if job.get("sort_by") is not None:
            keys = [float(k) for k in elems[:, job["sort_by"]]]
            desc = job.get("descending", True)
            idx.sort(key=lambda i: (math.isnan(keys[i]), -keys[i] if desc and not math.isnan(keys[i])
                                    else keys[i] if not math.isnan(keys[i]) else 0.0))
        rows_el.append((elems, idx))
    longest = max((len(i) for _, i in rows_el), default=0)
    max_len, layout = job.get("max_len"), job.get("layout", "padded")
    if layout == "packed":
        width = longest if max_len is None else min(max_len, longest)
    elif max_len is not None and job.get("fixed", True):
        width = max_len
    else:
        m = job.get("multiple_of") or 1
        width = -(-longest // m) * m
        width = width if max_len is None else min(width, max_len)
    pads = job.get("pad_values") or [job.get("pad_value", math.nan)] * n_cols
    transform = any(job.get(k) is not None for k in ("center", "scale", "clip_min", "clip_max"))
    par = {k: (job.get(k) if job.get(k) is not None else [d] * n_cols)
           for k, d in (("center", 0.0), ("scale", 1.0), ("clip_min", -math.inf), ("clip_max", math.inf))}
    out = np.empty((len(rows), width, n_cols), dtype=dt)
    packed, lengths = [], []
    with np.errstate(over="ignore", invalid="ignore"):
        for b, (elems, idx) in enumerate(rows_el):
            n = min(len(idx), width)
            kept = idx[:n] if job.get("truncating", "post") == "post" else idx[len(idx) - n:]
            row = np.empty((n, n_cols), dtype=dt)
            for p, i in enumerate(kept):
                for j, c in enumerate(cols):
                    x = elems[i:i + 1, c].astype(dt)[0]  # the array cast, as C casts
                    if transform:
                        x = (x - dt.type(par["center"][j])) * dt.type(par["scale"][j])
                        if x < dt.type(par["clip_min"][j]):
                            x = dt.type(par["clip_min"][j])
                        elif x > dt.type(par["clip_max"][j]):
                            x = dt.type(par["clip_max"][j])
                    row[p, j] = x
            lengths.append(n)
            packed.append(row)
            for s in range(width):
                k = s - (width - n if job.get("padding", "post") == "pre" else 0)
                if 0 <= k < n:
                    out[b, s] = row[k]
                elif job.get("pad_mode", "constant") == "wrap" and n > 0:
                    out[b, s] = row[s % n]
                else:
                    out[b, s] = np.array(pads, dtype=np.float64).astype(dt)
    lengths = np.array(lengths, dtype=np.int64)
    if layout == "packed":
        return (np.concatenate(packed) if packed else np.zeros((0, n_cols), dt)), lengths
    if layout == "channels_first":
        return np.ascontiguousarray(out.transpose(0, 2, 1)), lengths
    return out, lengths


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=form_cases())
def test_compiled_equals_twin_bitwise(twins, case):
    job, rows = case
    compiled, python = twins
    (a, la), = compiled.BatchGather([job])(rows)[0]
    (b, lb), = python.BatchGather([job])(rows)[0]
    assert a.shape == b.shape and a.dtype == b.dtype
    assert_bitwise(a, b)
    assert_bitwise(la, lb)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=form_cases(wide=True))
def test_wide_rows_compiled_equals_twin_bitwise(twins, case):
    """Rows padded to many slots: a wrapped row repeats a short or a long period (the compiled
    kernel copies them differently), channels-first columns are padded one by one."""
    job, rows = case
    compiled, python = twins
    (a, la), = compiled.BatchGather([job])(rows)[0]
    (b, lb), = python.BatchGather([job])(rows)[0]
    assert a.shape == b.shape and a.dtype == b.dtype
    assert_bitwise(a, b)
    assert_bitwise(la, lb)


@st.composite
def batches_of_forms(draw):
    """Several jobs over the same records (as the outputs of one group) and a batch of up to
    300 rows: the compiled kernel forms such outputs a chunk of rows at a time, in turn."""
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    lengths = rng.integers(0, draw(st.integers(1, 30)), size=draw(st.integers(1, 400))).tolist()
    n_vars = draw(st.integers(1, 4))
    parts = _parts(rng, lengths, n_vars, draw(st.sampled_from(SOURCES)), draw(st.integers(1, 3)))
    jobs = [draw(form_cases(wide=draw(st.booleans()), shared=(parts, lengths, n_vars)))[0]
            for _ in range(draw(st.integers(1, 4)))]
    return jobs, rng.integers(0, len(lengths), size=draw(st.integers(0, 300)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=batches_of_forms())
def test_outputs_of_one_group_compiled_equals_twin_bitwise(twins, case):
    jobs, rows = case
    compiled, python = twins
    got, _ = compiled.BatchGather(jobs)(rows)
    want, _ = python.BatchGather(jobs)(rows)
    for (a, la), (b, lb) in zip(got, want):
        assert a.shape == b.shape and a.dtype == b.dtype
        assert_bitwise(a, b)
        assert_bitwise(la, lb)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(case=form_cases(wide=True))
def test_wide_rows_equal_plain_reference(backend, case):
    job, rows = case
    (batch, lengths), = backend.BatchGather([job])(rows)[0]
    want, want_len = reference(job, rows)
    assert batch.shape == want.shape
    assert_bitwise(batch, want)
    assert_bitwise(lengths, want_len)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(case=form_cases())
def test_equals_plain_reference(backend, case):
    job, rows = case
    (batch, lengths), = backend.BatchGather([job])(rows)[0]
    want, want_len = reference(job, rows)
    assert batch.shape == want.shape
    assert_bitwise(batch, want)
    assert_bitwise(lengths, want_len)


def _job(**kw):
    rng = np.random.default_rng(3)
    v = rng.normal(size=(12, 3)).astype(np.float32)
    return dict(values=v, offsets=np.array([0, 2, 2, 7, 12]), **kw)


def test_defaults_give_the_plain_output(backend):
    """Identity forms spelled out give bitwise what the plain job gives (the default path)."""
    rows = np.array([3, 0, 1, 2, 2])
    (plain, _), = backend.BatchGather([_job(max_len=6)])(rows)[0]
    (spelled, _), = backend.BatchGather([_job(max_len=6, layout="padded", pad_mode="constant")])(rows)[0]
    assert_bitwise(plain, spelled)
    (cf, _), = backend.BatchGather([_job(max_len=6, layout="channels_first")])(rows)[0]
    assert_bitwise(cf, np.ascontiguousarray(plain.transpose(0, 2, 1)))


def test_wrap_repeats_each_rows_own_elements(backend):
    """As weaver-core's wrap: slot k holds element k % n; an empty row holds the pad value."""
    job = _job(max_len=5, pad_mode="wrap", pad_value=-9.0)
    (batch, lengths), = backend.BatchGather([job])(np.array([0, 1, 2]))[0]
    v = job["values"]
    assert_bitwise(batch[0], v[[0, 1, 0, 1, 0]])
    assert np.all(batch[1] == -9.0)
    assert_bitwise(batch[2], v[2:7])
    assert lengths.tolist() == [2, 0, 5]


def test_transform_in_output_dtype_matches_numpy_float32(backend):
    """clip((x - c) * s) in float32 equals NumPy's float32 arithmetic (weaver-core's) bitwise."""
    job = _job(max_len=5, center=[0.1, -0.3, 1e-3], scale=[1 / 3, 7.1, 0.5], clip_min=[-1, -5, -5],
               clip_max=[1, 5, 5])
    (batch, lengths), = backend.BatchGather([job])(np.array([2]))[0]
    x = job["values"][2:7]
    want = (x - np.float32([0.1, -0.3, 1e-3])) * np.float32([1 / 3, 7.1, 0.5])
    want = np.clip(want, np.float32([-1, -5, -5]), np.float32([1, 5, 5]))
    assert_bitwise(batch[0], want.astype(np.float32))


def test_packed_is_the_real_elements_in_row_order(backend):
    rows = np.array([3, 1, 0, 2])
    (padded, lengths), = backend.BatchGather([_job(max_len=4, truncating="pre")])(rows)[0]
    (packed, plen), = backend.BatchGather([_job(max_len=4, truncating="pre", layout="packed")])(rows)[0]
    assert_bitwise(lengths, plen)
    want = np.concatenate([padded[b, :lengths[b]] for b in range(len(rows))])
    assert_bitwise(packed, want)


def test_packed_of_1d_values_and_arena(backend):
    v = np.arange(10, dtype=np.float64)
    job = dict(values=v, offsets=np.array([0, 4, 4, 10]), layout="packed", dtype=np.float64)
    raw = np.zeros(1024 + 64, dtype=np.uint8)
    arena = raw[-raw.ctypes.data % 64:][:1024]
    (packed, lengths), = backend.BatchGather([job])(np.array([2, 0]), arena=arena)[0]
    assert packed.shape == (10,)
    assert_bitwise(packed, np.concatenate([v[4:10], v[0:4]]))
    assert np.shares_memory(packed, arena)


BAD = [
    (dict(layout="flat"), ValueError), (dict(pad_mode="edge"), ValueError),
    (dict(pad_mode="wrap", padding="pre"), ValueError), (dict(pad_mode="wrap", layout="packed"), ValueError),
    (dict(center=[1.0, 2.0]), ValueError), (dict(scale=[1.0, math.nan, 1.0]), ValueError),
    (dict(center=[1.0, math.inf, 1.0]), ValueError), (dict(clip_min=[2, 0, 0], clip_max=[1, 1, 1]), ValueError),
    (dict(clip_min=[math.nan, 0, 0]), ValueError), (dict(center="abc"), TypeError),
    (dict(center=[object(), 1, 2]), TypeError), (dict(pad_values=[1.0]), ValueError),
    (dict(center=[0.0, 0.0], columns=[0, 1, 2]), ValueError),
]


@pytest.mark.parametrize("bad,error", BAD)
def test_bad_forms_same_errors(backend, bad, error):
    with pytest.raises(error):
        backend.BatchGather([_job(**bad)])


@pytest.mark.peers
@pytest.mark.parametrize("wrap", [False, True])
def test_equals_weaver_core_fused_kernels(backend, wrap):
    """weaver-core's own standardise + clip + pad kernels (float32, channels-first) give the same bits."""
    tools = pytest.importorskip("weaver.utils.data.tools")
    rng = np.random.default_rng(5)
    lengths = rng.integers(0, 12, size=40)
    lengths[3] = 0
    offsets = np.zeros(41, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    n_vars, width = 3, 8
    values = (rng.normal(size=(int(offsets[-1]), n_vars)) * 4).astype(np.float32)
    center = np.float32([0.25, -1.3, 0.0])
    scale = np.float32([0.7, 1 / 3, 2.5])
    lo, hi = np.float32([-5, -2, -5]), np.float32([5, 2, 5])
    pads = np.float32([0.0, 0.0, 0.0]) if wrap else np.float32([0.0, -1.0, 3.5])
    content = np.ascontiguousarray(values.T).reshape(-1)
    starts = np.arange(n_vars, dtype=np.int64) * len(values)
    want = np.zeros((40, n_vars, width), dtype=np.float32)
    do = np.ones(n_vars, dtype=np.bool_)
    if wrap:
        tools._batched_fused_repeat_pad(content, starts, offsets, center, scale, lo, hi, do, want)
    else:
        tools._batched_fused_constant_pad(content, starts, offsets, center, scale, lo, hi, do, pads, want)
    job = dict(values=values, offsets=offsets, max_len=width, layout="channels_first",
               pad_mode="wrap" if wrap else "constant", center=center, scale=scale, clip_min=lo,
               clip_max=hi, pad_values=pads, pad_value=0.0)
    (batch, _), = backend.BatchGather([job])(np.arange(40))[0]
    assert_bitwise(batch, want)
