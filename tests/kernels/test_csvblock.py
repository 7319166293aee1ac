"""CsvBlockParser: compiled kernel == pure-Python twin, bitwise, on nasty CSV text."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lstm_data.errors import ParseError, SchemaError
from tests.helpers import assert_bitwise, assert_same_columns

NAMES = ["a", "p.x", "p.y", "q.z", "s", "b"]
KINDS = ["scalar", "ragged", "ragged", "ragged", "skip", "scalar"]
GROUPS = {"p": [1, 2], "q": [3]}


def run(ns, data: bytes, cuts=(), *, dtype=np.float32, names=NAMES, kinds=KINDS, groups=GROUPS,
        list_sep=","):
    """Feed ``data`` cut at ``cuts`` the way the reader does; return outcome or error."""
    parser = ns.CsvBlockParser(names, kinds, groups, dtype=dtype, first_line=2,
                               list_sep=list_sep)
    carry = b""
    bounds = [0, *sorted(cuts), len(data)]
    try:
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            buf = carry + data[lo:hi]
            used = parser.feed(buf)
            assert 0 <= used <= len(buf)
            carry = buf[used:]
        assert parser.feed(carry, final=True) == len(carry)
    except (ParseError, SchemaError) as exc:
        return ("error", type(exc), exc.line, exc.column, exc.row, exc.token)
    flags = parser.column_flags().tolist()
    rows, line = parser.rows, parser.line
    scalars, grouped = parser.finish()
    return ("ok", rows, line, flags, scalars, grouped)


def assert_same_outcome(x, y) -> None:
    """Two outcomes of :func:`run`: the same error, or the same counts, flags and columns."""
    if x[0] == "error" or y[0] == "error":
        assert x == y
        return
    assert x[1:4] == y[1:4]
    assert_same_columns(x[4:], y[4:])


NASTY = (b'1.5,"1,2"," 3 ,4",,"x ""q"" y",-0\r\n'
         b',"","  ","",,\n'
         b'\n'
         b'nan,7,8,"",\'s\',+inf\r\n'
         b'1e-320,"1e400,-1E-400",".5 , 5.","\n1","multi\nline?",2\n'
         b'"3" ,"0.1,0.2" ,"0.3,0.4","",,-nan')


def test_nasty_text_every_block_boundary(twins):
    compiled, python = twins
    reference = run(python, NASTY)
    assert reference[0] == "ok", reference
    for cut in range(len(NASTY) + 1):
        assert_same_outcome(run(compiled, NASTY, [cut]), reference)
        assert_same_outcome(run(python, NASTY, [cut]), reference)
    for cuts in ([1, 2, 3, 5, 8, 13, 21, 34, 55, 89], list(range(0, len(NASTY), 7))):
        assert_same_outcome(run(compiled, NASTY, cuts), reference)


def test_nasty_text_values(backend):
    out = run(backend, NASTY, dtype=np.float64)
    assert out[0] == "ok"
    _, rows, line, flags, scalars, groups = out
    assert rows == 5 and line == 9
    a = scalars["a"]
    assert a[0] == 1.5 and np.isnan(a[1]) and np.isnan(a[2]) and a[3] == 1e-320 and a[4] == 3
    b = scalars["b"]
    assert np.signbit(b[0]) and b[0] == 0 and np.isnan(b[1]) and b[2] == np.inf
    assert np.signbit(b[4]) and np.isnan(b[4])
    values, offsets = groups["p"]
    assert offsets.tolist() == [0, 2, 2, 3, 5, 7]
    assert values[:, 0].tolist()[:3] == [1, 2, 7]
    assert values[3].tolist() == [np.inf, 0.5] and values[4].tolist() == [-0.0, 5.0]
    assert groups["q"][1].tolist() == [0, 0, 0, 0, 1, 1]
    assert flags == [5, 7, 7, 1, 0, 4]  # QUOTED 1 | MULTI 2 | BARE 4; a skipped column has none


def test_column_flags_say_quoted_bare_and_multi(backend, twins):
    from lstm_data.kernels import BARE, MULTI, QUOTED

    names = ["q", "b", "e", "qe", "l", "bl", "s"]
    kinds = ["scalar", "scalar", "scalar", "ragged", "ragged", "ragged", "skip"]
    groups = {"qe": [3], "l": [4], "bl": [5]}
    data = b'"1.5",2.5,,"","1|2",3|4,x\r\n" 2 ", 3 , ,"","", 5 ,"y"\n'
    args = dict(names=names, kinds=kinds, groups=groups, list_sep="|")
    out = run(backend, data, [9, 30], **args)
    assert out[0] == "ok" and out[1] == 2, out
    # a quoted number is QUOTED only; BARE needs an unquoted cell that holds a number
    assert out[3] == [QUOTED, BARE, 0, QUOTED, QUOTED | MULTI, BARE | MULTI, 0]
    assert_same_outcome(run(twins[0], data, [9, 30], **args), run(twins[1], data, **args))


@pytest.mark.parametrize("text, error, where", [
    (b"1,2,3,4,5\n", ParseError, dict(line=2, column=6)),
    (b'1,"1,2","1,2","",x,1,9\n', ParseError, dict(line=2, column=7)),
    (b'1,"1,x","1,2","",x,1\n', ParseError, dict(line=2, column=2, token="x")),
    (b'1,"1,,2","1,2,3","",x,1\n', ParseError, dict(column=2, token="")),
    (b'1,"1,2,","1,2","",x,1\n', ParseError, dict(column=2)),
    (b'1,"1,2","1","",x,1\n', SchemaError, dict(line=2, column=3, row=0)),
    (b'"1,2","1","1","",x,1\n', SchemaError, dict(column=1, token="1")),
    (b'1,"1","1"x,"",x,1\n', ParseError, dict(column=3, token="x")),
    (b'1,2,3,4,5,1\n1,"2,3', ParseError, dict(line=3, column=2, row=1)),
    (b'1,2,3,4,"skipped,1\n', ParseError, dict(line=2, column=5)),
    (b'1,2,3,4,5,0x10\n', ParseError, dict(token="0x10")),
    (b'1,2,3,4,5,1_000\n', ParseError, dict(token="1_000")),
    (b'1,2,3,4,5,\xd9\xa1\n', ParseError, dict(column=6)),
    (b'1,2,3,4,5,1\n2,"3\n4",5,6,7,8\n', ParseError, dict(line=3, row=1, token="3\n4")),
])
def test_errors_name_where(backend, twins, text, error, where):
    out = run(backend, text)
    assert out[0] == "error" and out[1] is error, out
    got = dict(zip(("line", "column", "row", "token"), out[2:]))
    for key, value in where.items():
        assert got[key] == value, (key, got)
    assert_same_outcome(run(twins[0], text), run(twins[1], text))


def test_bad_arguments(backend):
    with pytest.raises(ValueError):
        backend.CsvBlockParser(["a"], ["ragged"], {})
    with pytest.raises(ValueError):
        backend.CsvBlockParser(["a"], ["bogus"], {})
    with pytest.raises(ValueError):
        backend.CsvBlockParser(["a", "b"], ["ragged", "ragged"], {"g": [0], "h": [0, 1]})
    with pytest.raises(ValueError):
        backend.CsvBlockParser(["a"], ["scalar"], {}, sep='"')
    with pytest.raises(TypeError):
        backend.CsvBlockParser(["a"], ["scalar"], {}, dtype=np.int32)


def test_other_separators(twins):
    data = b"1;2|3\n5;\n;6|7|8\n"
    args = dict(names=["a", "r.x"], kinds=["scalar", "ragged"], groups={"r": [1]})
    comma = data.replace(b";", b",")
    assert_same_outcome(run(twins[0], comma, [4], **args, list_sep="|"),
                        run(twins[1], comma, **args, list_sep="|"))
    for ns in twins:
        p = ns.CsvBlockParser(["a", "r.x"], ["scalar", "ragged"], {"r": [1]}, sep=";",
                              list_sep="|", dtype=np.float64)
        assert p.feed(data, final=True) == len(data)
        scalars, groups = p.finish()
        assert scalars["a"][:2].tolist() == [1, 5] and np.isnan(scalars["a"][2])
        assert groups["r"][1].tolist() == [0, 2, 2, 5]
        assert groups["r"][0][:, 0].tolist() == [2, 3, 6, 7, 8]


# -- property: compiled == twin on generated CSV text -----------------------------------
_NUMBER = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.floats(width=32).map(lambda x: repr(float(x))),
    st.integers(-10**25, 10**25).map(str),
    st.tuples(st.integers(0, 10**20), st.integers(-400, 400)).map(lambda t: f"{t[0]}e{t[1]}"),
    st.sampled_from(["0", "-0", ".5", "5.", "+1.25", "1E5", "NaN", "-INF", "Infinity",
                     "9007199254740993", "2.2250738585072011e-308", "0.1e-22", "123456789e22"]),
)
_TOKEN = st.one_of(_NUMBER, _NUMBER.map(lambda s: f" {s}\t"),
                   st.sampled_from(["", " ", "1e", "abc", "--1", '2"', "1 2", "0x1p3"]))
_LIST = st.lists(_TOKEN, max_size=4).map(lambda ts: '"' + ",".join(ts).replace('"', '""') + '"')
_CELL = st.one_of(_NUMBER, _LIST, st.just(""), st.just('""'), _NUMBER.map(lambda s: f'"{s}"'))


@st.composite
def csv_texts(draw):
    rows = []
    for _ in range(draw(st.integers(0, 6))):
        n = draw(st.integers(0, 3))
        good = st.lists(_NUMBER, min_size=n, max_size=n).map(lambda ts: '"' + ",".join(ts) + '"')
        px = draw(st.one_of(good, _CELL))
        py = draw(st.one_of(good, _CELL))
        cells = [draw(_CELL), px, py, draw(_CELL), draw(st.sampled_from(['x', '"a,""b"""', ""])),
                 draw(_CELL)]
        if draw(st.integers(0, 20)) == 0:
            cells = cells[:draw(st.integers(1, 7))]
        rows.append(",".join(cells))
        if draw(st.booleans()):
            rows.append("")
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    text = newline.join(rows) + draw(st.sampled_from(["", newline]))
    return text.encode()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=csv_texts(), cuts=st.lists(st.integers(0, 400), max_size=4),
       dtype=st.sampled_from([np.float32, np.float64]))
def test_property_compiled_equals_twin(twins, data, cuts, dtype):
    cuts = [c for c in cuts if c <= len(data)]
    reference = run(twins[1], data, dtype=dtype)
    assert_same_outcome(run(twins[0], data, cuts, dtype=dtype), reference)
    assert_same_outcome(run(twins[1], data, cuts, dtype=dtype), reference)


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(token=_NUMBER)
def test_property_numbers_exact(backend, token):
    data = f"{token}\n".encode()
    for dtype in (np.float32, np.float64):
        p = backend.CsvBlockParser(["a"], ["scalar"], {}, dtype=dtype)
        p.feed(data, final=True)
        got = p.finish()[0]["a"]
        with np.errstate(over="ignore"):
            want = np.array([float(token)], dtype=np.float64).astype(dtype)
        assert_bitwise(got, want, token)


def test_a_non_ascii_byte_after_a_closing_quote_is_named_as_decoded(backend):
    out = run(backend, '1,"1","1"\u00e9,"",x,1\n'.encode())
    assert out[0] == "error" and out[1] is ParseError and out[-1] == "\ufffd", out


def test_rows_count_from_zero_after_finish(backend):
    parser = backend.CsvBlockParser(["a"], ["scalar"], {})
    parser.feed(b"1\n2\n", final=True)
    parser.finish()
    assert (parser.rows, parser.line) == (0, 3)
    with pytest.raises(ParseError) as info:
        parser.feed(b"3\nx\n", final=True)
    assert (info.value.row, info.value.line) == (1, 4)


def test_exponent_beyond_a_long_run_of_zeros(backend):
    token = "0." + "0" * 99999 + "1e1000000"
    parser = backend.CsvBlockParser(["a"], ["scalar"], {}, dtype=np.float64)
    parser.feed(f"{token}\n-{token}\n".encode(), final=True)
    assert parser.finish()[0]["a"].tolist() == [np.inf, -np.inf]
