"""Rows as dumps write them, fed in blocks of any size: bare scalars, a bare single prong, runs of
quoted lists (one pass of the compiled parser reads consecutive list cells), empty ``""`` lists,
bracketed lists, counts that disagree within a group, CRLF. The compiled parser and its twin give
the same values bit for bit, the same flags, rows and line, or the same error."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

NAMES = ["s", "a", "b", "c", "t"]
KINDS = ["scalar", "ragged", "ragged", "ragged", "scalar"]
GROUPS = {"g1": [1, 2], "g2": [3]}


@st.composite
def token(draw):
    """A number as C and Python dumps write it: ``%g``, ``%.6f``, ``repr`` (17 digits), short forms."""
    x = draw(st.floats(-1e6, 1e6, allow_nan=False, width=64) | st.integers(-(2 ** 60), 2 ** 60).map(float))
    form = draw(st.sampled_from(["%g", "%.6f", "repr", "%.9g", "int", "%e"]))
    if form == "repr":
        return repr(x)
    if form == "int":
        return str(int(x))
    return form % x


@st.composite
def ragged_cell(draw, k):
    toks = [draw(token()) for _ in range(k)]
    style = draw(st.sampled_from(["quoted", "quoted", "quoted", "bare", "empty", "bracket"]))
    if style == "bare" and k == 1:
        return toks[0]
    if style == "empty" and k == 0:
        return ""
    if style == "bracket":
        return '"[' + ", ".join(toks) + ']"'
    return '"' + ",".join(toks) + '"'


@st.composite
def text(draw):
    lines = []
    for _ in range(draw(st.integers(1, 12))):
        k = draw(st.sampled_from([0, 1, 1, 2, 3, 5, 8]))
        k2 = k if draw(st.integers(0, 49)) else k + 1           # now and then a group that disagrees
        scalar = draw(token()) if draw(st.integers(0, 19)) else ""
        cells = [scalar, draw(ragged_cell(k)), draw(ragged_cell(k2)), draw(ragged_cell(draw(st.integers(0, 4)))),
                 draw(token())]
        lines.append(",".join(cells))
    newline = draw(st.sampled_from(["\n", "\n", "\r\n"]))
    return (newline.join(lines) + (newline if draw(st.booleans()) else "")).encode()


def parse(ns, data, dtype, cut):
    parser = ns.CsvBlockParser(NAMES, KINDS, GROUPS, dtype=dtype)
    try:
        pending, pos = b"", 0
        while True:
            chunk = pending + data[pos:pos + cut]
            pos += cut
            final = pos >= len(data)
            used = parser.feed(chunk, final=final)
            pending = chunk[used:]
            if final:
                break
        flags, ints, rows, line = parser.column_flags().tobytes(), parser.inexact_ints(), parser.rows, parser.line
        scalars, groups = parser.finish()
        return ("ok", {k: v.tobytes() for k, v in scalars.items()},
                {k: (v.tobytes(), o.tobytes()) for k, (v, o) in groups.items()}, flags, ints, rows, line)
    except Exception as exc:  # the same error type and message from both
        return ("error", type(exc).__name__, str(exc))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@settings(max_examples=80, deadline=None)
@given(data=text(), cut=st.sampled_from([7, 50, 200, 1000, 10 ** 6]))
def test_rows_of_mixed_cells_read_alike_in_any_blocks(twins, dtype, data, cut):
    compiled, python = twins
    assert parse(compiled, data, dtype, cut) == parse(python, data, dtype, cut)


def test_a_run_of_quoted_lists_and_empty_lists_reads_each_cell(twins):
    compiled, _ = twins
    data = b'1,"0.5,2","3,4","",9\n2,"","","",8\n'
    got = parse(compiled, data, np.float64, 10 ** 6)
    assert got[0] == "ok"
    g1_values, g1_offsets = got[2]["g1"]
    assert np.frombuffer(g1_values, np.float64).tolist() == [0.5, 3.0, 2.0, 4.0]
    assert np.frombuffer(g1_offsets, np.int64).tolist() == [0, 2, 2]
