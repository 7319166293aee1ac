"""The one deprecation helper: a renamed keyword, attribute or flag warns once, naming the new spelling."""
from __future__ import annotations

import argparse
import warnings

import pytest

from lstm_data._util.deprecation import KEPT, Renamed, RenamedAttribute, RenamedFlag, renamed_keywords


def _only_warning(record: list[warnings.WarningMessage]) -> str:
    assert len(record) == 1, [str(w.message) for w in record]
    assert record[0].category is DeprecationWarning
    return str(record[0].message)


def f(**keywords: int) -> dict[str, int]:
    return renamed_keywords("f", keywords, {"old": "new"})


def test_an_old_keyword_moves_to_its_new_name_with_one_warning_naming_it():
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        got = f(old=3, other=1)
    assert got == {"new": 3, "other": 1}
    assert _only_warning(record) == f"f(old=...) is deprecated: use new=... ({KEPT})"
    assert record[0].filename == __file__  # said at the call that wrote the old spelling


def test_a_reshaped_keyword_converts_its_value():
    with pytest.warns(DeprecationWarning, match=r"use compression='zstd' or None"):
        got = renamed_keywords("f", {"compress": False},
                               {"compress": Renamed("compression", lambda on: "zstd" if on else None,
                                                    "compression='zstd' or None")})
    assert got == {"compression": None}


def test_old_and_new_spellings_together_are_refused():
    with pytest.raises(TypeError, match=r"both old= and new="):
        renamed_keywords("f", {"old": 1, "new": 2}, {"old": "new"})


def test_strict_keywords_refuse_anything_but_an_old_spelling():
    with pytest.raises(TypeError, match=r"f\(\) got an unexpected keyword argument 'nwe'"):
        renamed_keywords("f", {"nwe": 1}, {"old": "new"}, strict=True)


class _Thing:
    old = RenamedAttribute[int]("inner.new")

    def __init__(self) -> None:
        self.inner = argparse.Namespace(new=5)


def test_an_old_attribute_reads_and_writes_the_new_one():
    thing = _Thing()
    with pytest.warns(DeprecationWarning, match=r"_Thing\.old is deprecated: use \.inner\.new"):
        assert thing.old == 5
    with pytest.warns(DeprecationWarning):
        thing.old = 6
    assert thing.inner.new == 6


def test_an_old_flag_sets_the_new_one_and_is_hidden_from_help():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--rand", action=RenamedFlag, new="--seed", dest="seed", type=int)
    parser.add_argument("--raw", action="store_true")
    parser.add_argument("--no-zip", action=RenamedFlag, new="--raw", dest="raw", nargs=0, const=True)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        args = parser.parse_args(["--rand", "4", "--no-zip"])
    assert (args.seed, args.raw) == (4, True)
    assert [str(w.message).split(" (")[0] for w in record] == ["--rand is deprecated: use --seed",
                                                               "--no-zip is deprecated: use --raw"]
    assert parser.parse_args([]).seed is None  # the new flag's default stands
    assert "--rand" not in parser.format_help() and "--no-zip" not in parser.format_help()
