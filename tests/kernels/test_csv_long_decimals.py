"""Quoted lists of long decimals (8 to 19 digits, as ``%.9g`` and 17-digit ``repr`` write them):
the compiled parser reads them eight bytes at a time without leaving its list loop; the values
are ``float(token)`` in the dtype, and the flags and first changed integers those of the twin."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

NAMES, KINDS, GROUPS = ["p.x", "p.y", "tail"], ["ragged", "ragged", "scalar"], {"p": [0, 1]}
#: a last cell long enough that every list token is well away from the end of the text
TAIL = b"0." + b"1" * 48


@st.composite
def decimal(draw):
    """A plain decimal of 1 to 22 digits (an integer part, a fraction, or both)."""
    whole = draw(st.text("0123456789", min_size=0, max_size=20))
    frac = draw(st.none() | st.text("0123456789", min_size=0, max_size=20))
    if not whole and not frac:
        whole = draw(st.sampled_from(["0", "7", "16777217", "9007199254740993"]))
    sign = draw(st.sampled_from(["", "-"]))
    return sign + whole + ("" if frac is None else "." + frac)


def rows_of(cells):
    lines = []
    for xs, ys in cells:
        lines.append(b'"%s","%s",%s\n' % (",".join(xs).encode(), ",".join(ys).encode(), TAIL))
    return b"".join(lines)


def parse(ns, dtype, text):
    parser = ns.CsvBlockParser(NAMES, KINDS, GROUPS, dtype=dtype, first_line=2)
    parser.feed(text, final=True)
    flags, ints = parser.column_flags().tolist(), parser.inexact_ints()
    scalars, groups = parser.finish()
    values, offsets = groups["p"]
    return values, offsets, flags, ints


cells = st.lists(st.integers(1, 4).flatmap(
    lambda k: st.tuples(st.lists(decimal(), min_size=k, max_size=k),
                        st.lists(decimal(), min_size=k, max_size=k))), min_size=1, max_size=6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@settings(max_examples=60, deadline=None)
@given(cells=cells)
def test_long_decimals_in_lists_match_float_and_the_twin(twins, dtype, cells):
    compiled, python = twins
    text = rows_of(cells)
    values, offsets, flags, ints = parse(compiled, dtype, text)
    want = np.array([[float(x), float(y)] for xs, ys in cells for x, y in zip(xs, ys)], dtype)
    np.testing.assert_array_equal(values.view(f"u{values.itemsize}"), want.view(f"u{want.itemsize}"))
    t_values, t_offsets, t_flags, t_ints = parse(python, dtype, text)
    np.testing.assert_array_equal(values.view(f"u{values.itemsize}"),
                                  t_values.view(f"u{t_values.itemsize}"))
    assert offsets.tolist() == t_offsets.tolist()
    assert (flags, ints) == (t_flags, t_ints)


def test_changed_integers_in_a_list_are_noted(twins):
    """8 to 19 digit integers in a quoted list (beyond 2**24 in float32, 2**53 in float64)."""
    compiled, python = twins
    text = rows_of([(["1", "16777216"], ["2", "3"]), (["5", "16777217"], ["9007199254740993", "4"])])
    for dtype in (np.float32, np.float64):
        got, want = parse(compiled, dtype, text)[2:], parse(python, dtype, text)[2:]
        assert got == want
    assert parse(compiled, np.float32, text)[3] == {"p.x": (3, "16777217", 8),
                                                    "p.y": (3, "9007199254740993", 16)}
    assert parse(compiled, np.float64, text)[3] == {"p.y": (3, "9007199254740993", 16)}


@pytest.mark.parametrize("row", [
    b'"1.5,2.25","3.125",',          # the group's second list is shorter
    b'"1.5","3.125,4",',             # ... or longer
    b'"1.5,2.25" ,"3.125,4",',       # a space after the closing quote
    b'"1.5,""2""","3.125,4",',       # an escaped quote in the list
    b'"[1.5,2.25]","3.125,4",',      # a bracketed list
])
def test_cells_off_the_fast_path_fail_or_read_as_the_twin(twins, row):
    compiled, python = twins
    text = b'"0.1,0.2","0.3,0.4",' + TAIL + b"\n" + row + TAIL + b"\n" + b'"7","8",' + TAIL + b"\n"
    outcomes = []
    for ns in (compiled, python):
        try:
            values, offsets, flags, ints = parse(ns, np.float64, text)
            outcomes.append(("ok", values.tobytes(), offsets.tolist(), flags))
        except Exception as exc:  # the same type and message on both backends
            outcomes.append((type(exc).__name__, str(exc)))
    assert outcomes[0] == outcomes[1]
