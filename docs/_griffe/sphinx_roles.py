"""A griffe extension for the site: the docstrings' Sphinx roles as code, linked where documented.

The package's docstrings write cross-references the Sphinx way (:class:`~lstm_data.x.Y`,
:meth:`flatten`, :data:`QUOTED`), which Markdown shows as raw text. This extension turns
each into inline code (``~`` keeps only the last name, as Sphinx does) wrapped in an
optional autorefs reference: a link when the site documents that object, plain code
otherwise (never a warning). It also shows an attribute written with
``lstm_data._util.forward.Forward`` as the property it is.
"""
from __future__ import annotations

import ast
import html
import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(class|func|meth|mod|data|attr|exc|obj|const):`(~?)([\w.]+)(\(\))?`")


def _identifier(obj: griffe.Object, name: str) -> str:
    """The full path of ``name`` as seen from ``obj``: itself if dotted from the package, else
    the first enclosing class or module that holds it (an import followed to its target)."""
    if name.startswith("lstm_data"):
        return name
    first, _, rest = name.partition(".")
    scope: Any = obj
    while scope is not None:
        member = scope.members.get(first) if hasattr(scope, "members") else None
        if member is not None:
            try:
                path = member.target_path if member.is_alias else member.path
            except Exception:  # an alias griffe cannot resolve: keep the path where it is seen
                path = member.path
            return f"{path}.{rest}" if rest else path
        scope = scope.parent
    return name


def rewrite(obj: griffe.Object, text: str) -> str:
    """``text`` with every Sphinx role made optional-autoref inline code."""
    def one(match: re.Match[str]) -> str:
        role, short, name, call = match.groups()
        title = (name.rsplit(".", 1)[-1] if short else name) + (call or ("()" if role in ("func", "meth") else ""))
        identifier = html.escape(_identifier(obj, name), quote=True)
        return f'<autoref identifier="{identifier}" optional><code>{html.escape(title)}</code></autoref>'
    return _ROLE.sub(one, text)


_SHARED = re.compile(r"^shares_doc\(([\w.]+)\)$")


def shared_docstring(obj: griffe.Object) -> griffe.Docstring | None:
    """The docstring of the member named by ``obj``'s ``@shares_doc(member)`` decorator, if any.

    The decorator sets ``__doc__`` at import; the site reads source, so it follows the name here.
    """
    for decorator in getattr(obj, "decorators", ()):
        match = _SHARED.match(str(decorator.value))
        if match is None:
            continue
        try:
            source = obj.modules_collection[_identifier(obj, match.group(1))]
        except Exception:  # a name griffe cannot resolve: the member stays undocumented on the site
            return None
        if source.docstring is not None:
            return griffe.Docstring(rewrite(source, source.docstring.value), parent=obj)
    return None


_FORWARD = "lstm_data._util.forward.Forward"


def forwarded_property(obj: griffe.Object) -> bool:
    """Make ``name: Forward[Owner, T] = Forward(read, doc)`` (or an alias ``_Read[T]`` of that type)
    the property it is at run time: of type ``T``, documented by ``doc``; whether ``obj`` is one."""
    value = getattr(obj, "value", None)
    if not isinstance(value, griffe.ExprCall) or not value.arguments:
        return False
    try:
        if value.function.canonical_path != _FORWARD:
            return False
        doc = ast.literal_eval(str(value.arguments[-1]))
    except Exception:  # a call griffe cannot resolve, or a docstring that is not a literal
        return False
    annotation = getattr(obj, "annotation", None)
    if isinstance(annotation, griffe.ExprSubscript):
        kind = annotation.slice
        obj.annotation = kind.elements[-1] if isinstance(kind, griffe.ExprTuple) else kind  # type: ignore[attr-defined]
    obj.labels = {"property"}
    obj.value = None  # type: ignore[attr-defined]
    obj.docstring = griffe.Docstring(doc, parent=obj)
    return True


class SphinxRoles(griffe.Extension):
    """Rewrite the Sphinx roles of every docstring once the object tree is built, give a member
    decorated ``@shares_doc(member)`` that member's docstring, and show a ``Forward`` attribute
    as a property."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        forwarded_property(obj)
        if obj.docstring is None and (shared := shared_docstring(obj)) is not None:
            obj.docstring = shared
            return
        if obj.docstring is not None and ":" in obj.docstring.value:
            obj.docstring.value = rewrite(obj, obj.docstring.value)
