"""The type stubs of the compiled kernels (``kernels/_ext/*.pyi``) say what the twins say.

For every name in ``KERNEL_NAMES`` the stub's signature (read from the ``.pyi``
with ``ast``) must equal the twin's (``inspect.signature`` of
``lstm_data.kernels._py``): the same parameters, kinds, annotations (as written,
forward references unquoted), defaults (a literal where the twin's default is
one; ``...`` only where it cannot be written as one) and return annotation; for
a class, the same public members (methods, properties with their setters, and
annotated attributes), inherited stub bases included. Where the compiled module
is built, every name a stub declares exists in it, and a compiled signature that
can be read has the stub's parameter names, kinds and defaults.
"""
from __future__ import annotations

import ast
import importlib
import inspect
import math
from pathlib import Path
from typing import Any

import pytest

from lstm_data import kernels
from lstm_data.kernels import _py as twins

EXT = Path(kernels.__file__).parent / "_ext"
_KINDS = inspect.Parameter


def _stub_trees() -> dict[str, ast.Module]:
    return {p.stem: ast.parse(p.read_text(), filename=str(p)) for p in sorted(EXT.glob("*.pyi"))}


def _stub_defs() -> dict[str, tuple[str, ast.stmt]]:
    """Top-level name -> (stub module, its def/class node), over every stub."""
    found: dict[str, tuple[str, ast.stmt]] = {}
    for module, tree in _stub_trees().items():
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                assert node.name not in found, f"{node.name} is declared in two stubs"
                found[node.name] = (module, node)
    return found


def _annotation(text: str | None) -> str | None:
    """An annotation in one spelling: parsed, quoted forward references unquoted, unparsed."""
    if text is None:
        return None

    class Unquote(ast.NodeTransformer):
        def visit_Constant(self, node: ast.Constant) -> Any:
            if isinstance(node.value, str):
                return self.visit(ast.parse(node.value, mode="eval").body)
            return node

    return ast.unparse(Unquote().visit(ast.parse(text, mode="eval").body))


def _literal(value: Any) -> bool:
    """Whether a default can be written in a stub as the literal of its repr."""
    try:
        back = ast.literal_eval(repr(value))
    except (ValueError, SyntaxError):
        return False
    return type(back) is type(value) and back == value and not (isinstance(value, float) and math.isnan(value))


def _twin_params(fn: Any) -> list[tuple[str, str, str | None, Any]]:
    """(name, kind, annotation, default) of each parameter; default ``...`` when not a literal."""
    out = []
    for p in inspect.signature(fn).parameters.values():
        ann = None if p.annotation is _KINDS.empty else _annotation(p.annotation)
        if p.default is _KINDS.empty:
            default: Any = _KINDS.empty
        else:
            default = ("literal", p.default) if _literal(p.default) else ("...",)
        out.append((p.name, p.kind.name, ann, default))
    return out


def _stub_params(node: ast.FunctionDef) -> list[tuple[str, str, str | None, Any]]:
    a = node.args
    positional = [(x, "POSITIONAL_ONLY") for x in a.posonlyargs] + [(x, "POSITIONAL_OR_KEYWORD") for x in a.args]
    pos_defaults: list[ast.expr | None] = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    rows = list(zip(positional, pos_defaults))
    if a.vararg is not None:
        rows.append(((a.vararg, "VAR_POSITIONAL"), None))
    rows += [((x, "KEYWORD_ONLY"), d) for x, d in zip(a.kwonlyargs, a.kw_defaults)]
    if a.kwarg is not None:
        rows.append(((a.kwarg, "VAR_KEYWORD"), None))
    out = []
    for (arg, kind), d in rows:
        ann = None if arg.annotation is None else _annotation(ast.unparse(arg.annotation))
        if d is None:
            default: Any = _KINDS.empty
        elif isinstance(d, ast.Constant) and d.value is Ellipsis:
            default = ("...",)
        else:
            default = ("literal", ast.literal_eval(d))
        out.append((arg.arg, kind, ann, default))
    return out


def _twin_signature(fn: Any) -> tuple[list[Any], str | None]:
    ret = inspect.signature(fn).return_annotation
    return _twin_params(fn), None if ret is inspect.Signature.empty else _annotation(ret)


def _stub_signature(node: ast.FunctionDef) -> tuple[list[Any], str | None]:
    return _stub_params(node), None if node.returns is None else _annotation(ast.unparse(node.returns))


def _decorators(node: ast.FunctionDef) -> list[str]:
    return [ast.unparse(d) for d in node.decorator_list]


def _stub_members(cls: ast.ClassDef, defs: dict[str, tuple[str, ast.stmt]]) -> dict[str, Any]:
    """Public members of a stub class, its stub bases' first (so the class's own win)."""
    members: dict[str, Any] = {}
    for base in cls.bases:
        name = ast.unparse(base)
        base_node = defs[name][1] if name in defs else None
        assert isinstance(base_node, ast.ClassDef), f"base {name} of {cls.name} has no stub"
        members.update(_stub_members(base_node, defs))
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            members[node.target.id] = ("attribute", _annotation(ast.unparse(node.annotation)))
        elif isinstance(node, ast.FunctionDef) and (not node.name.startswith("_")
                                                    or node.name in ("__init__", "__call__")):
            decorators = _decorators(node)
            if "property" in decorators:
                members[node.name] = ("property", _stub_signature(node), False)
            elif f"{node.name}.setter" in decorators:
                kind, getter, _ = members[node.name]
                members[node.name] = (kind, getter, True)
            else:
                members[node.name] = ("method", _stub_signature(node))
    return members


def _twin_members(cls: type) -> dict[str, Any]:
    members: dict[str, Any] = {}
    for klass in reversed(cls.__mro__[:-1]):
        for name, ann in vars(klass).get("__annotations__", {}).items():
            if not name.startswith("_"):
                members[name] = ("attribute", _annotation(ann))
        for name, value in vars(klass).items():
            if name.startswith("_") and name not in ("__init__", "__call__"):
                continue
            if isinstance(value, property):
                members[name] = ("property", _twin_signature(value.fget), value.fset is not None)
            elif inspect.isfunction(value):
                members[name] = ("method", _twin_signature(value))
    return members


@pytest.mark.parametrize("name", kernels.KERNEL_NAMES)
def test_every_kernel_has_a_stub(name: str) -> None:
    defs = _stub_defs()
    assert name in defs, f"no kernels/_ext/*.pyi declares {name}"
    twin = getattr(twins, name)
    kind = ast.ClassDef if inspect.isclass(twin) else ast.FunctionDef
    assert isinstance(defs[name][1], kind), f"{name}: the stub declares a {type(defs[name][1]).__name__}"
    try:
        compiled = importlib.import_module("lstm_data.kernels._ext._all")
    except ImportError:
        return
    home = getattr(compiled, name).__module__
    assert home == f"lstm_data.kernels._ext.{defs[name][0]}", f"{name} is compiled in {home}"


def _member_cases() -> list[Any]:
    cases = []
    for name in kernels.KERNEL_NAMES:
        twin = getattr(twins, name)
        if not inspect.isclass(twin):
            cases.append(pytest.param(name, None, id=name))
            continue
        for member in sorted(_twin_members(twin)):
            cases.append(pytest.param(name, member, id=f"{name}.{member}"))
    return cases


@pytest.mark.parametrize(("name", "member"), _member_cases())
def test_stub_signature_equals_twin(name: str, member: str | None) -> None:
    defs = _stub_defs()
    node = defs[name][1]
    twin = getattr(twins, name)
    if member is None:
        assert isinstance(node, ast.FunctionDef)
        assert _stub_signature(node) == _twin_signature(twin)
        return
    assert isinstance(node, ast.ClassDef)
    stub_members = _stub_members(node, defs)
    assert member in stub_members, f"the stub of {name} has no {member}"
    assert stub_members[member] == _twin_members(twin)[member]


@pytest.mark.parametrize("name", [n for n in kernels.KERNEL_NAMES if inspect.isclass(getattr(twins, n))])
def test_stub_class_has_no_extra_members(name: str) -> None:
    defs = _stub_defs()
    node = defs[name][1]
    assert isinstance(node, ast.ClassDef)
    assert sorted(_stub_members(node, defs)) == sorted(_twin_members(getattr(twins, name)))


def _declared(tree: ast.Module) -> dict[str, ast.stmt]:
    """Top-level name -> node of what a stub declares (functions, classes, annotated names)."""
    out: dict[str, ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = node
    return out


def _compiled_names() -> list[Any]:
    return [pytest.param(module, name, id=f"{module}.{name}")
            for module, tree in _stub_trees().items() for name in _declared(tree)]


@pytest.mark.parametrize(("module", "name"), _compiled_names())
def test_compiled_module_has_what_its_stub_declares(module: str, name: str) -> None:
    try:
        compiled = importlib.import_module(f"lstm_data.kernels._ext.{module}")
    except ImportError:
        pytest.skip("the compiled core is not built")
    assert hasattr(compiled, name), f"lstm_data/kernels/_ext/{module} has no {name}"
    obj = getattr(compiled, name)
    node = _declared(_stub_trees()[module])[name]
    if isinstance(node, ast.FunctionDef):
        functions = [(obj, node)]
    elif isinstance(node, ast.ClassDef):
        functions = [(getattr(obj, n.name), n) for n in node.body if isinstance(n, ast.FunctionDef)
                     and not any(d == "property" or d.endswith(".setter") for d in _decorators(n))]
    else:
        functions = []
    for fn, fnode in functions:
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            continue  # a slot wrapper (e.g. __call__) says nothing
        kinds = [p.kind for p in sig.parameters.values()]
        if _KINDS.VAR_POSITIONAL in kinds and _KINDS.VAR_KEYWORD in kinds:
            continue  # a generic (self, /, *args, **kwargs): Cython's __init__
        got = [(p.name, p.kind.name, p.default is not _KINDS.empty) for p in sig.parameters.values()]
        want = [(n, k, d is not _KINDS.empty) for n, k, _, d in _stub_params(fnode)]
        assert got == want, f"{module}.{name}.{fnode.name}: compiled {sig}"
