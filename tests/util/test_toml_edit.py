"""Values set in a TOML text in place: every other character kept, each spelling of a key found."""
from __future__ import annotations

import tomllib

import pytest

from lstm_data._util.toml_edit import set_values, toml_number

TEXT = """# a hand-written file
title = "auto"  # not asked: kept

[a]
x = "auto"   # the x
'quoted key' = 1
b.c = "auto"
inline = { d = "auto", e = [1, 2], f = { g = 'auto' } }
arr = [
  "auto",
]

[a."dotted.name"]
h = "auto"

[[runs]]
x = "auto"
"""


def test_each_spelling_is_set_and_every_other_character_kept():
    paths = {("a", "x"): "1.5", ("a", "b", "c"): "2.0", ("a", "inline", "d"): "3.0",
             ("a", "inline", "f", "g"): "4.0", ("a", "dotted.name", "h"): "5.0"}
    text, left = set_values(TEXT, paths)
    assert left == set()
    want = tomllib.loads(TEXT)
    want["a"].update(x=1.5, inline={"d": 3.0, "e": [1, 2], "f": {"g": 4.0}})
    want["a"]["b"]["c"] = 2.0
    want["a"]["dotted.name"]["h"] = 5.0
    assert tomllib.loads(text) == want
    assert 'x = 1.5   # the x\n' in text and 'inline = { d = 3.0, e = [1, 2], f = { g = 4.0 } }\n' in text
    assert text.replace("1.5", '"auto"').replace("2.0", '"auto"').replace("3.0", '"auto"') \
               .replace("4.0", "'auto'").replace("5.0", '"auto"') == TEXT


@pytest.mark.parametrize("path", [("runs", "x"), ("a", "arr"), ("a", "nothing"), ("title", "x")])
def test_what_a_one_line_edit_cannot_reach_is_named_and_left(path):
    text, left = set_values(TEXT, {path: "1.0"})
    assert text == TEXT and left == {path}


def test_a_multi_line_string_value_is_left():
    text = 'a = """auto"""\n'
    assert set_values(text, {("a",): "1.0"}) == (text, {("a",)})


@pytest.mark.parametrize("value", [2.0, 0.49019607843137253, 1e-05, -3e300, 12345678901234567890.0,
                                   float("inf"), float("-inf")])
def test_numbers_read_back_exactly(value):
    assert tomllib.loads(f"v = {toml_number(value)}")["v"] == value
