"""A bad token of megabytes gives a short error: its start and its length, on both backends."""
from __future__ import annotations

import pickle

import pytest

from lstm_data.errors import TOKEN_QUOTE, ParseError

NAMES, KINDS, GROUPS = ["a", "b"], ["scalar", "ragged"], {"b": [1]}


@pytest.mark.parametrize("data, length", [
    (b"1," + b"9" * 3_000_000 + b"x\n", 3_000_001),            # unquoted, 3 MB
    (b'1,"1,' + b"7" * 5000 + b'""x"\n', 5003),                # quoted, escaped quote in it
    (b"1," + "é".encode() * 400 + b"\n", 800),                  # multi-byte text
], ids=["unquoted", "quoted", "utf8"])
def test_long_bad_token_is_cut(backend, data, length):
    parser = backend.CsvBlockParser(NAMES, KINDS, GROUPS)
    with pytest.raises(ParseError) as info:
        parser.feed(data, final=True)
    exc = info.value
    assert exc.token_length == length
    assert len(exc.token) <= TOKEN_QUOTE
    assert len(str(exc)) < 400
    assert f"{length} long" in str(exc)
    again = pickle.loads(pickle.dumps(exc))
    assert str(again) == str(exc) and again.token_length == length
    moved = exc.located(file="x.csv")
    assert moved.token_length == length and str(moved).endswith(str(exc).split("offset")[1])


def test_short_token_quoted_whole(backend):
    parser = backend.CsvBlockParser(NAMES, KINDS, GROUPS)
    with pytest.raises(ParseError) as info:
        parser.feed(b"1," + b"5" * 70 + b"x\n", final=True)
    assert info.value.token == "5" * 70 + "x" and info.value.token_length is None


def test_twins_give_the_same_message(twins):
    compiled, python = twins
    data = b'1,"2,' + b"3" * 700 + b'""4"\n'
    messages = []
    for ns in twins:
        with pytest.raises(ParseError) as info:
            ns.CsvBlockParser(NAMES, KINDS, GROUPS).feed(data, final=True)
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_parse_float_lists_cuts_too(backend):
    with pytest.raises(ParseError) as info:
        backend.parse_float_lists(["1,2", "3," + "8" * 100_000 + "z"])
    assert info.value.token_length == 100_001 and len(str(info.value)) < 400
