"""Exponent tokens (``%g``, ``%E``: ``1e-05``, ``-3.2E+04``), ``repr``'s ``0.000ddd`` with more
than 19 digits, empty scalar cells and CRLF line ends, in bare cells and in quoted lists: the
compiled parser reads them without leaving its fast loops; the values are ``float(token)`` in
the dtype, bitwise, and the flags, counts and first changed integers those of the twin."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

NAMES, KINDS, GROUPS = ["a", "p.x", "p.y", "b"], ["scalar", "ragged", "ragged", "scalar"], \
    {"p": [1, 2]}
#: a first cell long enough that every token of the row is well away from the text's ends
HEAD = b"0." + b"1" * 48


@st.composite
def number(draw):
    """A decimal with an exponent, a 0.000ddd of up to 24 digits, or a plain one."""
    sign = draw(st.sampled_from(["", "-"]))
    kind = draw(st.sampled_from(["exp", "exp", "zeros", "plain"]))
    if kind == "zeros":
        return sign + "0." + "0" * draw(st.integers(0, 6)) + draw(st.text("0123456789", min_size=0,
                                                                         max_size=20))
    whole = draw(st.text("0123456789", min_size=0, max_size=12))
    frac = draw(st.none() | st.text("0123456789", min_size=0, max_size=12))
    if not whole and not frac:
        whole = draw(st.sampled_from(["0", "1", "9007199254740993"]))
    text = sign + whole + ("" if frac is None else "." + frac)
    if kind == "exp":
        text += draw(st.sampled_from("eE")) + draw(st.sampled_from(["", "+", "-"])) + \
            draw(st.sampled_from(["0", "5", "05", "22", "23", "308", "324", "0400", "9999",
                                    "00005", "1", "16", "0"]))
    return text


def rows_of(rows, eol: bytes) -> bytes:
    lines = [b"%s,\"%s\",\"%s\",%s%s" % (HEAD, ",".join(xs).encode(), ",".join(ys).encode(),
                                         b.encode(), eol) for xs, ys, b in rows]
    return b"".join(lines)


def parse(ns, dtype, text):
    parser = ns.CsvBlockParser(NAMES, KINDS, GROUPS, dtype=dtype, first_line=2)
    parser.feed(text, final=True)
    flags, ints = parser.column_flags().tolist(), parser.inexact_ints()
    scalars, groups = parser.finish()
    return scalars, groups["p"], flags, ints


def outcome(ns, text):
    """The values read from ``text`` as float64, or the type and message of the error."""
    try:
        scalars, (values, offsets), flags, _ = parse(ns, np.float64, text)
    except Exception as exc:  # the same type and message on both backends
        return type(exc).__name__, str(exc)
    return "ok", values.tobytes(), scalars["b"].tobytes(), offsets.tolist(), flags


def bits(a: np.ndarray) -> np.ndarray:
    return a.view(f"u{a.itemsize}")


rows = st.lists(st.integers(0, 3).flatmap(
    lambda k: st.tuples(st.lists(number(), min_size=k, max_size=k),
                        st.lists(number(), min_size=k, max_size=k),
                        st.just("") | number())), min_size=1, max_size=6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("eol", [b"\n", b"\r\n"])
@settings(max_examples=60, deadline=None)
@given(rows=rows)
def test_exponents_zeros_and_empties_match_float_and_the_twin(twins, dtype, eol, rows):
    compiled, python = twins
    text = rows_of(rows, eol)
    scalars, (values, offsets), flags, ints = parse(compiled, dtype, text)
    with np.errstate(over="ignore"):  # beyond float32: inf, as the parser stores it
        want = np.array([[float(x), float(y)] for xs, ys, _ in rows for x, y in zip(xs, ys)],
                        dtype).reshape(-1, 2)
        want_b = np.array([float(b) if b else np.nan for _, _, b in rows], dtype)
    np.testing.assert_array_equal(bits(values), bits(want))
    np.testing.assert_array_equal(bits(scalars["b"]), bits(want_b))
    t_scalars, (t_values, t_offsets), t_flags, t_ints = parse(python, dtype, text)
    np.testing.assert_array_equal(bits(values), bits(t_values))
    np.testing.assert_array_equal(bits(scalars["b"]), bits(t_scalars["b"]))
    assert offsets.tolist() == t_offsets.tolist()
    assert (flags, ints) == (t_flags, t_ints)


@pytest.mark.parametrize("token", [
    "1e", "1e+", "e5", ".e5", "1e5.5", "1e+-5", "1e12345", "0.0001.5", "0.00a1", "1.2.3e4",
    "--1e5", "+1e5", "1e 5", "0x1p3", "1E-", "0.", "0.e5", "-.5e-3", "1e5e5", "1.5E+-3",
    "-e5", "1e+00001", "12345678901234e5", "-123456789012345E-9", "9007199254740993e1"])
@pytest.mark.parametrize("eol", [b"\n", b"\r\n"])
def test_odd_tokens_read_or_fail_as_the_twin(twins, token, eol):
    """Texts near the fast paths' grammar, in a bare cell and in a list: the same values or
    the same error on both backends."""
    text = rows_of([(["1.5"], ["2.5"], "3"), ([token], ["4"], token), (["5"], ["6"], "7")], eol)
    compiled, python = twins
    assert outcome(compiled, text) == outcome(python, text)


def test_a_crlf_line_reads_as_lf(twins):
    """The last cell of a CRLF line (a bare number, an empty cell, a quoted list) reads as
    the same line with LF only."""
    compiled, python = twins
    rows = [(["1e-05", "2"], ["-3.2E+04", "0.000123456789012345678"], "4.5e1"),
            ([], [], ""), (["7"], ["8"], "-0")]
    for ns in twins:
        lf, crlf = parse(ns, np.float32, rows_of(rows, b"\n")), parse(ns, np.float32, rows_of(rows, b"\r\n"))
        assert bits(lf[1][0]).tolist() == bits(crlf[1][0]).tolist()
        assert bits(lf[0]["b"]).tolist() == bits(crlf[0]["b"]).tolist()
        assert lf[2:] == crlf[2:]
    values = parse(compiled, np.float64, rows_of(rows, b"\r\n"))[1][0]
    assert values[:, 1].tolist() == [-3.2e4, 0.000123456789012345678, 8.0]


@pytest.mark.parametrize("cell", ["1,,2", ",", "1,", ",1", ",,", "1e5,,2E-3", "-0.5,"])
def test_empty_tokens_in_a_list_read_or_fail_as_the_twin(twins, cell):
    """A quoted list with an empty token (not the empty list ``""``): the same values or the
    same error on both backends."""
    filler = [(["7.5"], ["8.5"], "9")] * 3  # the cell well before the text's end: the fast path
    text = rows_of([(["1.5"], ["2.5"], "3"), (["4"], ["5"], "6"), *filler], b"\n").replace(
        b'"4"', b'"' + cell.encode() + b'"')
    text = text.replace(b'"5"', b'"' + cell.encode() + b'"')
    compiled, python = twins
    assert outcome(compiled, text) == outcome(python, text)
