"""Bracketed list cells (``"[0.2, 0.334]"``, as pandas writes lists): both backends, bitwise alike."""
from __future__ import annotations

import numpy as np
import pytest

from lstm_data.errors import ParseError
from lstm_data.kernels._csv_flags import LISTED
from tests.kernels.test_csvblock import assert_same_outcome, run

NAMES, KINDS, GROUPS = ["a", "p.x", "p.y"], ["scalar", "ragged", "ragged"], {"p": [1, 2]}


def parse(ns, data, sep=",", list_sep=","):
    parser = ns.CsvBlockParser(NAMES, KINDS, GROUPS, sep=sep, list_sep=list_sep)
    parser.feed(data, final=True)
    flags = parser.column_flags()
    scalars, groups = parser.finish()
    return scalars, groups, flags


def test_pandas_lists(backend):
    data = (b'1,"[0.2, 0.334]","[1.5, -2]"\n'
            + b'2,[],"[ ]"\n'
            + b'3,"[7]","[8] "\n')
    scalars, groups, flags = parse(backend, data)
    values, offsets = groups["p"]
    assert offsets.tolist() == [0, 2, 2, 3]
    np.testing.assert_array_equal(values, np.array([[0.2, 1.5], [0.334, -2], [7, 8]], np.float32))
    assert flags[1] & LISTED and flags[2] & LISTED and not flags[0] & LISTED


def test_unquoted_lists_with_another_sep(backend):
    scalars, groups, _ = parse(backend, b"1;[0.25, 0.5];[1,2]\n2;[];[]\n", sep=";")
    assert groups["p"][1].tolist() == [0, 2, 2]
    assert groups["p"][0].tolist() == [[0.25, 1], [0.5, 2]]


@pytest.mark.parametrize("data, message", [
    (b'1,"[1, 2","[3, 4]"\n', "does not end with ']'"),
    (b'1,"[1, 2] x","[3, 4]"\n', "does not end with ']'"),
    (b'1,"[1,]","[3, 4]"\n', "empty token"),
    (b'1,"1, 2]","[3, 4]"\n', "invalid number"),
    (b'1,"[1], 2","[3, 4]"\n', "invalid number"),
    (b"1,[1,2]\n", "does not end with ']'"),   # unquoted with sep == list_sep: a cut list
], ids=["unclosed", "after", "trailing-sep", "no-open", "early-close", "cut"])
def test_bad_brackets(backend, data, message):
    with pytest.raises(ParseError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse(backend, data)


CASES = [b'1,"[0.2, 0.334]","[1.5, -2]"\n2,[],"[ ]"\n', b'1,"[1,2","[3,4]"\n',
         b'1,"[1,2]","[3,4]"\n2,"[0.123456789012,1e5]","[nan, inf ]  "\n',
         b'1,"[1,""2]","[3,4]"\n', b'1,"[' + b"9" * 500 + b'","[3]"\n']


@pytest.mark.parametrize("data", CASES)
def test_twins_agree_at_every_cut(twins, data):
    compiled, python = twins
    for cut in range(1, len(data), max(1, len(data) // 40)):
        for dtype in (np.float32, np.float64):
            kw = dict(names=NAMES, kinds=KINDS, groups=GROUPS, dtype=dtype)
            assert_same_outcome(run(compiled, data, (cut,), **kw), run(python, data, (cut,), **kw))
