"""YAML spec files read through libyaml when they are plain, through PyYAML's bounded loader
otherwise: the same values either way, and the bounded loader's errors for what is not plain."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from lstm_data._util import spec_files
from lstm_data._util.spec_files import MAX_SPEC_NESTING, load_yaml

yaml = pytest.importorskip("yaml")
pytestmark = pytest.mark.skipif(not getattr(yaml, "__with_libyaml__", False), reason="PyYAML without libyaml")
WEAVER = Path(__file__).resolve().parents[1] / "data" / "weaver"


class Refused(Exception):
    pass


def slow(text: str):
    return yaml.load(text, Loader=spec_files._bounded_loader(yaml))


@pytest.fixture
def paths(monkeypatch):
    """The documents each path read: ``fast`` (libyaml) or ``slow`` (PyYAML's bounded loader)."""
    seen = {"fast": 0, "slow": 0}
    real = spec_files._fast_load

    def spy(text, module):
        out = real(text, module)
        seen["slow" if out is spec_files._SLOW else "fast"] += 1
        return out

    monkeypatch.setattr(spec_files, "_fast_load", spy)
    return seen


@pytest.mark.parametrize("name", ["JetClass_full.yaml", "variant.yaml"])
def test_weaver_configs_are_read_through_libyaml_as_pyyaml_reads_them(name, paths):
    path = WEAVER / name
    assert load_yaml(path, yaml, Refused) == slow(path.read_text())
    assert paths == {"fast": 1, "slow": 0}


@pytest.mark.parametrize("text, fast", [
    ("a: &x [1, 2]\nb: *x\nc: {d: *x}\n", True),  # shared anchors, complete before their aliases
    ("a: &x [1, *x]\n", False),  # an alias inside its own anchor
    ("a: *y\n", False),  # an undefined alias
    ("a: &x 1\nb: &x 2\n", False),  # an anchor defined twice
    ("---\na: 1\n---\nb: 2\n", False),  # two documents
    ("a: [\n", False),  # not YAML
    ("", False),  # no document
    ("a: " + "[" * MAX_SPEC_NESTING + "]" * MAX_SPEC_NESTING + "\n", False),  # nested too deep
    ("a: " + "[" * (MAX_SPEC_NESTING - 1) + "]" * (MAX_SPEC_NESTING - 1) + "\n", True),
])
def test_only_plain_documents_are_read_through_libyaml_and_the_rest_as_before(tmp_path, text, fast, paths,
                                                                             monkeypatch):
    path = tmp_path / "c.yaml"
    path.write_text(text)

    def outcome():
        try:
            return "value", load_yaml(path, yaml, Refused)
        except Refused as exc:
            return "error", str(exc)

    got = outcome()
    assert paths == ({"fast": 1, "slow": 0} if fast else {"fast": 0, "slow": 1})
    monkeypatch.setattr(spec_files, "_fast_load", lambda text, module: spec_files._SLOW)
    assert got == outcome()  # as PyYAML's bounded loader alone reads it (values, or the same error)


def test_a_document_expanding_past_the_bound_is_left_to_the_bounded_loader(tmp_path, monkeypatch, paths):
    monkeypatch.setattr(spec_files, "MAX_SPEC_EXPANDED", 60)
    path = tmp_path / "c.yaml"
    path.write_text(f"a: &s {'x' * 20}\nb: [*s, *s]\n")
    with pytest.raises(Refused, match="expands to more than 60"):
        load_yaml(path, yaml, Refused)
    assert paths == {"fast": 0, "slow": 1}


_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                     st.text(max_size=12))
_documents = st.recursive(_scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                            st.dictionaries(st.text(max_size=6), inner, max_size=4)),
                         max_leaves=20)


@settings(max_examples=60, deadline=None)
@given(_documents, st.booleans())
def test_any_dumped_document_reads_alike_on_both_paths(document, flow):
    text = yaml.safe_dump({"doc": document}, default_flow_style=flow)
    assert spec_files._fast_load(text, yaml) == slow(text)
