"""BatchGather jobs of several sources (``more``): rows of other counts per row, each source padded
by its own counts into its columns of one output, in one call. Compiled == twin bitwise
(Hypothesis), both == each source padded alone (the one-source reference), same errors."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import assert_bitwise
from tests.kernels.test_gather_forms import SOURCES, _parts, reference

PARAMS = ("center", "scale", "clip_min", "clip_max", "pad_values")


@st.composite
def source_cases(draw):
    """A job of 2 or 3 sources (any source dtypes, parts, columns, ``at``), its forms and rows."""
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    n_rows = draw(st.integers(1, 10))
    sources = []
    for _ in range(draw(st.integers(2, 3))):
        lengths = draw(st.lists(st.integers(0, 9), min_size=n_rows, max_size=n_rows))
        n_vars = draw(st.integers(1, 3))
        columns = draw(st.none() | st.lists(st.integers(0, n_vars - 1), min_size=1, max_size=3))
        sources.append(dict(parts=_parts(rng, lengths, n_vars, draw(st.sampled_from(SOURCES)),
                                         draw(st.integers(1, 3))),
                            columns=columns, n_cols=n_vars if columns is None else len(columns)))
    total = sum(s["n_cols"] for s in sources)
    order = rng.permutation(total) if draw(st.booleans()) else np.arange(total)
    starts = np.cumsum([0] + [s["n_cols"] for s in sources])
    for k, s in enumerate(sources):
        s["at"] = order[starts[k]:starts[k + 1]]
    layout = draw(st.sampled_from(["padded", "channels_first"]))
    pad_mode = draw(st.sampled_from(["constant", "wrap"]))
    padding = "post" if pad_mode == "wrap" else draw(st.sampled_from(["post", "pre"]))
    first = sources[0]
    job = dict(parts=first["parts"], columns=first["columns"], at=first["at"],
               more=[dict(parts=s["parts"], columns=s["columns"], at=s["at"]) for s in sources[1:]],
               layout=layout, pad_mode=pad_mode, padding=padding,
               truncating=draw(st.sampled_from(["post", "pre"])),
               max_len=draw(st.none() | st.integers(0, 10)), fixed=draw(st.booleans()),
               multiple_of=draw(st.none() | st.integers(1, 4)),
               dtype=draw(st.sampled_from([np.float32, np.float64])),
               pad_value=draw(st.sampled_from([0.0, -1.5, math.nan])))
    if draw(st.booleans()):
        job["center"] = draw(st.lists(st.floats(-50, 50, allow_nan=False), min_size=total, max_size=total))
        job["scale"] = draw(st.lists(st.floats(-4, 4, allow_nan=False), min_size=total, max_size=total))
        job["clip_min"] = draw(st.lists(st.floats(-10, 0) | st.just(-math.inf), min_size=total, max_size=total))
    if draw(st.booleans()):
        job["pad_values"] = draw(st.lists(st.sampled_from([0.0, 2.5, math.nan, -7.0]), min_size=total,
                                          max_size=total))
    rows = draw(st.lists(st.integers(0, n_rows - 1), max_size=10))
    return job, np.array(rows, dtype=np.int64)


def _sources(job):
    """Every source of ``job`` as ``(parts, columns, at)``."""
    return [(job["parts"], job.get("columns"), job["at"])] + [(m["parts"], m.get("columns"), m["at"])
                                                             for m in job["more"]]


def source_reference(job, rows):
    """Each source padded alone (the one-source reference) at the job's width, put at its columns."""
    dt = np.dtype(job["dtype"])
    counts = [np.concatenate([np.diff(o) for _, o in parts])[rows] for parts, _, _ in _sources(job)]
    longest = max((int(c.max()) for c in counts if len(c)), default=0)
    max_len = job.get("max_len")
    if max_len is not None and job.get("fixed", True):
        width = max_len
    else:
        m = job.get("multiple_of") or 1
        width = -(-longest // m) * m
        width = width if max_len is None else min(width, max_len)
    n_cols = sum(len(at) for _, _, at in _sources(job))
    out = np.empty((len(rows), width, n_cols), dtype=dt)
    lengths = None
    for parts, columns, at in _sources(job):
        alone = {k: v for k, v in job.items() if k not in ("parts", "columns", "at", "more", *PARAMS)}
        alone.update(parts=parts, columns=columns, max_len=width, fixed=True, layout="padded", multiple_of=None)
        for name in PARAMS:
            if job.get(name) is not None:
                alone[name] = [job[name][c] for c in at]
        batch, kept = reference(alone, rows)
        out[:, :, at] = batch
        lengths = kept if lengths is None else lengths
    if job["layout"] == "channels_first":
        return np.ascontiguousarray(out.transpose(0, 2, 1)), lengths
    return out, lengths


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=source_cases())
def test_compiled_equals_twin_bitwise(twins, case):
    job, rows = case
    compiled, python = twins
    (a, la), = compiled.BatchGather([job])(rows)[0]
    (b, lb), = python.BatchGather([job])(rows)[0]
    assert_bitwise(a, b)
    assert_bitwise(la, lb)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(case=source_cases())
def test_each_source_is_padded_by_its_own_counts(backend, case):
    job, rows = case
    (batch, lengths), = backend.BatchGather([job])(rows)[0]
    want, want_len = source_reference(job, rows)
    assert_bitwise(batch, want)
    assert_bitwise(lengths, want_len)


def _two():
    """Source a: rows of 2, 0, 3 records (2 variables); source b: 1, 4, 0 records (1 variable)."""
    a = (np.arange(10, dtype=np.float32).reshape(5, 2), np.array([0, 2, 2, 5]))
    b = (np.arange(100, 105, dtype=np.float64), np.array([0, 1, 5, 5]))
    return a, b


def test_width_follows_the_longest_source_and_lengths_the_first(backend):
    (va, oa), (vb, ob) = _two()
    job = dict(values=va, offsets=oa, more=[dict(values=vb, offsets=ob)], pad_value=-1.0)
    (batch, lengths), = backend.BatchGather([job])(np.array([0, 1, 2]))[0]
    assert batch.shape == (3, 4, 3) and lengths.tolist() == [2, 0, 3]
    assert batch[1, :, 2].tolist() == [101, 102, 103, 104] and np.all(batch[1, :, :2] == -1)
    assert batch[2, :3, :2].tolist() == va[2:5].tolist() and np.all(batch[2, :, 2] == -1)
    (capped, short), = backend.BatchGather([dict(job, max_len=2, fixed=False)])(np.array([1, 2]))[0]
    assert capped.shape == (2, 2, 3) and short.tolist() == [0, 2]
    (empty, none), = backend.BatchGather([job])(np.zeros(0, np.int64))[0]
    assert empty.shape == (0, 0, 3) and none.shape == (0,)


def test_arena_and_a_second_job_keep_their_places(backend):
    (va, oa), (vb, ob) = _two()
    jobs = [dict(values=va, offsets=oa, more=[dict(values=vb, offsets=ob, at=[0])], at=[1, 2]),
            dict(values=vb, offsets=ob)]
    rows = np.array([2, 1, 0])
    plain, = backend.BatchGather([jobs[0]])(rows)[0]
    arena = np.zeros(4096 + 64, np.uint8)
    start = (-arena.ctypes.data) % 64
    (a, la), (b, lb) = backend.BatchGather(jobs)(rows, arena=arena[start:start + 4096])[0]
    assert_bitwise(a, plain[0])
    assert_bitwise(la, plain[1])
    assert np.shares_memory(a, arena) and b.shape == (3, 4)


@pytest.mark.parametrize("kw, message", [
    (dict(sort_by=0), "takes no sort_by"),
    (dict(layout="packed"), "cannot be packed"),
    (dict(at=[0, 0]), "each output column 0..2 once"),
    (dict(at=[0]), r"at holds 1 output columns for 2 columns"),
])
def test_bad_jobs_of_sources(backend, kw, message):
    (va, oa), (vb, ob) = _two()
    with pytest.raises(ValueError, match=message):
        backend.BatchGather([dict(values=va, offsets=oa, more=[dict(values=vb, offsets=ob)], **kw)])
    with pytest.raises(TypeError, match="unknown keys"):
        backend.BatchGather([dict(values=va, offsets=oa, more=[dict(values=vb, offsets=ob, max_len=3)])])


def test_a_bad_row_of_a_later_source_is_named(backend):
    (va, oa), (vb, _) = _two()
    bad = np.array([0, 1, 0, 5])  # row 1 of source b decreases
    gather = backend.BatchGather([dict(values=va, offsets=oa, more=[dict(values=vb, offsets=bad)])])
    with pytest.raises(ValueError, match=r"bad offsets at row 1: offsets\[1\]=1, offsets\[2\]=0"):
        gather(np.array([0, 1]))
    with pytest.raises(ValueError, match="row 3 out of range for 3 rows"):
        gather(np.array([0, 3]))
