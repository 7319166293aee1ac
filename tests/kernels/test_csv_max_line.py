"""``max_line``: a record longer than the bound is a ParseError naming its first line, the same on both
backends and for every way of cutting the text into blocks."""
from __future__ import annotations

import pytest

from lstm_data.errors import ParseError

NAMES, KINDS, GROUPS = ["a", "b"], ["scalar", "ragged"], {"b": [1]}
TEXT = (b"1,2\n"
        b'22,"3,4,5"\r\n'           # 11 bytes before its newline (the \r counts)
        b"\n"                       # a blank line is no record
        b'4,"5,\n6"\n'              # one record over two lines: 8 bytes
        b"7,8")                     # the last record, without a newline


def _outcome(backend, data: bytes, max_line: int | None, cut: int | None = None):
    parser = backend.CsvBlockParser(NAMES, KINDS, GROUPS, max_line=max_line)
    try:
        if cut is None:
            parser.feed(data, final=True)
        else:
            used = parser.feed(data[:cut])
            parser.feed(data[used:], final=True)
    except ParseError as exc:
        return "error", str(exc), exc.line, exc.row
    scalars, groups = parser.finish()
    return "ok", scalars["a"].tolist(), groups["b"][0].ravel().tolist(), groups["b"][1].tolist()


@pytest.mark.parametrize("text, max_line, line, row", [
    (TEXT, 10, 2, 1),                           # the \r before the newline counts
    (TEXT, 2, 1, 0),
    (b'1,2\n4,"5,\n6"\n7,8\n', 7, 2, 1),       # a quoted line break: the record is 8 bytes
    (b"1,2\n3,4\n567,8", 4, 3, 2),                # the last record, without a newline
])
def test_the_first_record_past_the_bound_is_named_by_its_first_line(backend, text, max_line, line, row):
    kind, message, got_line, got_row = _outcome(backend, text, max_line)
    assert kind == "error" and (got_line, got_row) == (line, row)
    assert f"max_line_bytes = {max_line} bytes" in message


@pytest.mark.parametrize("max_line", [None, 11, 1000])
def test_records_within_the_bound_read_as_without_it(backend, max_line):
    assert _outcome(backend, TEXT, max_line) == _outcome(backend, TEXT, None)
    assert _outcome(backend, TEXT, None)[0] == "ok"


@pytest.mark.parametrize("max_line", [2, 3, 7, 8, 10, 11])
def test_every_cut_and_both_backends_agree(twins, max_line):
    want = _outcome(twins[0], TEXT, max_line)
    for backend in twins:
        for cut in range(len(TEXT) + 1):
            assert _outcome(backend, TEXT, max_line, cut) == want, (backend.BACKEND, cut)


def test_errors_inside_the_record_come_first(backend):
    """The record's own errors are raised before its length: the order does not depend on the cut."""
    kind, message, line, _ = _outcome(backend, b"1,2\nx," + b"9" * 50 + b"\n", 10)
    assert kind == "error" and "invalid number" in message and line == 2


def test_a_bad_bound_is_a_value_error(backend):
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="max_line"):
            backend.CsvBlockParser(NAMES, KINDS, GROUPS, max_line=bad)
