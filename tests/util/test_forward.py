"""``Forward``: a read-only attribute read off an object the instance holds, typed and documented."""
from __future__ import annotations

import pydoc

import pytest

from lstm_data._util.forward import Forward
from tests.helpers import strict_mypy


class _Inner:
    def __init__(self) -> None:
        self.n = 3


class _Outer:
    n: Forward[_Outer, int] = Forward(lambda o: o.inner.n, "How many there are.")

    def __init__(self) -> None:
        self.inner = _Inner()


def test_it_reads_the_value_off_the_instance_each_time():
    outer = _Outer()
    assert outer.n == 3
    outer.inner.n = 5
    assert outer.n == 5


def test_on_the_class_it_is_itself_with_its_docstring():
    assert isinstance(_Outer.n, Forward)
    assert _Outer.n.__doc__ == "How many there are."
    assert "How many there are." in pydoc.render_doc(_Outer)


def test_it_is_read_only_like_a_property():
    outer = _Outer()
    with pytest.raises(AttributeError, match=r"_Outer\.n is read-only"):
        outer.n = 4
    assert outer.n == 3 and "n" not in vars(outer)


_USER_CODE = '''
from __future__ import annotations
from lstm_data._util.forward import Forward


class Inner:
    n = 3


class Outer:
    inner: Inner
    n: Forward[Outer, int] = Forward(lambda o: o.inner.n, "How many.")
    wrong: Forward[Outer, str] = Forward(lambda o: o.inner.n, "Not a str.")


reveal_type(Outer().n)
Outer().n = 4
'''


@pytest.mark.slow
def test_a_strict_type_checker_sees_the_value_type_and_checks_the_reader(tmp_path):
    out, _ = strict_mypy(tmp_path, _USER_CODE)
    assert 'Revealed type is "int"' in out, out
    lines = {int(line.split(":")[1]) for line in out.splitlines() if ": error:" in line}
    source = _USER_CODE.splitlines()
    assert {source[n - 1].split(":")[0].strip() for n in lines} == {"wrong", "Outer().n = 4"}, out
