"""The two stages of a rename: a warning naming the new spelling, then an error naming it, from one table."""
from __future__ import annotations

import argparse
import inspect
import warnings

import pytest

from lstm_data._util import deprecation
from lstm_data._util.deprecation import OldAttribute, add_renamed_flags, refuses_renamed, warn_renamed
from lstm_data.errors import OptionError


@pytest.fixture
def table(monkeypatch):
    """Entries of the table for the toy functions, classes and commands below."""
    for where, olds in {"f": {"old": "new", "gone": "order=Order(gone=...)"}, "_Thing": {"old": "inner.new"},
                        "tool": {"--rand": "--seed", "--no-zip": "--raw"}}.items():
        monkeypatch.setitem(deprecation.RENAMED, where, olds)  # type: ignore[index]


def test_a_warned_rename_names_the_new_spelling_at_the_users_line():
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        warn_renamed("f(old=...)", "new=...", stacklevel=1)
    assert [str(w.message) for w in record] == [
        "f(old=...) is deprecated: use new=... (the old spelling is kept one release)"]
    assert record[0].category is DeprecationWarning and record[0].filename == __file__


def test_an_old_keyword_is_an_option_error_naming_the_new_one(table):
    @refuses_renamed("f")
    def f(a: int, *, new: int = 0, **rest: int) -> int:
        """Doc."""
        return a + new + sum(rest.values())

    assert f(1, new=2, other=3) == 6  # the new spellings, and keywords the table does not name, as they were
    assert str(inspect.signature(f)) == "(a: 'int', *, new: 'int' = 0, **rest: 'int') -> 'int'"
    assert f.__doc__ == "Doc."
    with pytest.raises(OptionError, match=r"^f\(\) got an unexpected keyword argument 'old': it is now new=\.\.\.$"):
        f(1, old=2)
    with pytest.raises(TypeError, match=r"'gone': it is now order=Order\(gone=\.\.\.\)$"):
        f(1, gone=2)  # a new spelling written out in full is shown as written


def test_an_old_name_that_is_a_parameter_again_is_refused_at_import(table):
    with pytest.raises(AssertionError, match="'old'"):
        @refuses_renamed("f")
        def f(old: int = 0) -> int:
            return old


def test_an_old_attribute_is_an_attribute_error_naming_the_new_one(table):
    class _Thing:
        old = OldAttribute()

        def __init__(self) -> None:
            self.inner = argparse.Namespace(new=5)

    thing = _Thing()
    said = r"'_Thing' object has no attribute 'old': it is now \.inner\.new"
    with pytest.raises(AttributeError, match=said) as info:
        thing.old  # noqa: B018 - the read is the test
    assert (info.value.name, info.value.obj) == ("old", thing)
    with pytest.raises(AttributeError, match=said):
        thing.old = 6
    assert not hasattr(thing, "old") and isinstance(_Thing.old, OldAttribute)


def test_an_attribute_the_table_does_not_name_fails_when_its_class_is_made():
    with pytest.raises((KeyError, RuntimeError)):  # Python 3.11 wraps __set_name__'s error in a RuntimeError
        type("_Other", (), {"old": OldAttribute()})


def test_an_old_flag_is_a_usage_error_naming_the_new_one_hidden_from_help(table, capsys):
    parser = argparse.ArgumentParser(prog="tool")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--raw", action="store_true")
    add_renamed_flags(parser, "tool")
    assert vars(parser.parse_args(["--seed", "4", "--raw"])) == {"seed": 4, "raw": True}  # no old flag: none set
    for argv, said in ((["--rand", "4"], "argument --rand: it is now --seed"),
                       (["--rand=4"], "argument --rand: it is now --seed"),
                       (["--no-zip"], "argument --no-zip: it is now --raw")):
        with pytest.raises(SystemExit) as info:
            parser.parse_args(argv)
        assert info.value.code == 2
        assert f"tool: error: {said}\n" in capsys.readouterr().err
    assert "--rand" not in parser.format_help() and "--no-zip" not in parser.format_help()
