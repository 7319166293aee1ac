"""The site's griffe extension (``docs/_griffe/sphinx_roles.py``) on the package's source."""
from __future__ import annotations

import importlib.util

import pytest

from tests.docs.pages import DOCS, ROOT

griffe = pytest.importorskip("griffe")


def _extension():
    spec = importlib.util.spec_from_file_location("sphinx_roles", DOCS / "_griffe" / "sphinx_roles.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.SphinxRoles()


def test_a_forward_attribute_is_shown_as_the_property_it_is():
    """``name: _Read[T] = Forward(read, doc)`` is on the site what ``help()`` shows: a property of
    type ``T`` documented by ``doc`` (else, with no docstring, the site would leave it out)."""
    module = griffe.load("lstm_data.batching.epochs.pipeline", search_paths=[str(ROOT)],
                         extensions=griffe.load_extensions(_extension()))
    reads = module["CompiledReads"]
    for name, kind, doc in [("dataset", "Dataset", "The data batched"),
                            ("file_bounds", "np.ndarray | None", "Row bounds of the data's files"),
                            ("shuffle", "bool | str", 'The shuffle in use: ``True``, ``False`` or ``"block"``.')]:
        member = reads.members[name]
        assert member.labels == {"property"}, name
        assert str(member.annotation) == kind, name
        assert member.docstring is not None and member.docstring.value.startswith(doc), name
        assert getattr(member, "value", None) is None, name
    view_rows = reads.members["view_rows"]  # a property written as one stays as it is
    assert view_rows.labels == {"property"} and str(view_rows.annotation) == "np.ndarray"
