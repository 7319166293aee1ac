"""Every public name has an API reference entry and a docstring that passes numpydoc validation.

Public names: ``lstm_data.__all__``, the adapters' (``lstm_data.keras``,
``lstm_data.torch``, ``lstm_data.compat``) and ``lstm_data.kernels.__all__``.
Reference entries are the ``::: target`` lines of ``docs/reference/*.md`` with a
``heading:`` naming the public name; the kernels are documented from their
pure-Python twins (same names, signatures and docstrings as the compiled core),
the kernels' constants in the ``Attributes`` section of ``lstm_data.kernels`` (or
by their full name on the reference page of the kernels).

Docstrings are checked with ``numpydoc.validate`` for the checks in
:data:`NAME_CHECKS` (public names) and :data:`MEMBER_CHECKS` (their public
methods and properties). The site states types in signatures, so numpydoc's
"no type" checks are not used, nor its demands for See Also and Examples sections.
"""
from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

from tests.docs.pages import DOCS, ROOT

pytestmark = pytest.mark.peers  # numpydoc (and Sphinx under it): the test-peers extra
numpydoc_validate = pytest.importorskip("numpydoc.validate")

#: numpydoc checks every public name passes: a docstring, a one-line summary ending in a period,
#: every parameter documented, none unknown, in signature order, and what is returned described
NAME_CHECKS = {"GL08", "SS01", "SS03", "SS06", "PR01", "PR02", "PR03", "PR10", "RT01", "RT03"}
#: checks for the public methods and properties of public classes (inherited ones included)
MEMBER_CHECKS = NAME_CHECKS

#: public names whose docstrings live in files other sessions own; each still fails, so the test
#: says when a line here can go
PENDING = {
}

_ENTRY = re.compile(r"^::: ([\w.]+)\n((?:[ ]{4}.*\n)*)", re.M)
_HEADING = re.compile(r"^\s+heading:\s*(\S+)\s*$", re.M)


def entries() -> dict[str, str]:
    """Public name (the entry's heading, else its target) -> documented target."""
    out: dict[str, str] = {}
    for page in sorted((DOCS / "reference").glob("*.md")):
        for match in _ENTRY.finditer(page.read_text()):
            target, options = match.group(1), match.group(2)
            heading = _HEADING.search(options)
            out[heading.group(1) if heading else target] = target
    return out


def resolve(path: str):
    """The object at dotted ``path`` (a module, or attributes of one)."""
    parts = path.split(".")
    for k in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:k]))
        except ImportError:
            continue
        for attr in parts[k:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(path)


def _module(name: str):
    try:
        return importlib.import_module(name)
    except ImportError as exc:          # keras without a backend, torch not installed
        pytest.skip(f"{name}: {exc}")


def public_names() -> list[str]:
    import lstm_data
    import lstm_data.kernels

    names = [f"lstm_data.{n}" for n in lstm_data.__all__ if n != "__version__"]
    for sub in ("keras", "torch", "compat"):
        source = (ROOT / "lstm_data" / f"{sub}.py").read_text()
        names += [f"lstm_data.{sub}.{n}" for n in re.search(r"__all__ = \[(.*?)\]", source).group(1)
                  .replace('"', "").replace(" ", "").split(",")]
    names += [f"lstm_data.kernels.{n}" for n in lstm_data.kernels.__all__]
    return names


def runtime(name: str):
    """What users get at ``name``; for a kernel, its pure-Python twin (what the reference shows)."""
    import lstm_data.kernels

    module, attr = name.rsplit(".", 1)
    if module == "lstm_data.kernels" and attr in lstm_data.kernels.KERNEL_NAMES:
        return getattr(lstm_data.kernels.load_backend("python"), attr)
    return getattr(_module(module), attr)


def _kernel_constant(name: str) -> bool:
    import lstm_data.kernels

    module, attr = name.rsplit(".", 1)
    return module == "lstm_data.kernels" and not callable(getattr(lstm_data.kernels, attr))


NAMES = public_names()


@pytest.mark.parametrize("name", NAMES)
def test_public_name_has_a_reference_entry(name):
    documented = entries()
    if _kernel_constant(name):
        import lstm_data.kernels

        assert "lstm_data.kernels" in documented.values(), "docs/reference needs ::: lstm_data.kernels"
        attr = name.rsplit(".", 1)[1]
        attributes = lstm_data.kernels.__doc__.split("Attributes\n----------", 1)[1]
        page = (DOCS / "reference" / "kernels.md").read_text()
        assert re.search(rf"^{attr}\b|, {attr}\b", attributes, re.M) or f"`{name}`" in page, \
            f"{name} is described neither in the Attributes of lstm_data.kernels nor on docs/reference/kernels.md"
        return
    assert name in documented, f"no entry with heading {name} in docs/reference/*.md"
    assert resolve(documented[name]) is runtime(name), f"{name}: the entry documents {documented[name]}"


def test_every_reference_entry_resolves():
    for public, target in entries().items():
        resolve(target)


def _problems(path: str, checks: set[str]) -> list[str]:
    result = numpydoc_validate.validate(path)
    return [f"{code} {message}" for code, message in result["errors"] if code in checks]


def _members(cls, target: str) -> dict[str, tuple[str, str]]:
    """Public methods and properties (``Forward`` attributes too) of ``cls`` and its lstm_data bases:
    name -> (dotted path, file)."""
    from lstm_data._util.forward import Forward

    out: dict[str, tuple[str, str]] = {}
    for klass in cls.__mro__:
        if not klass.__module__.startswith("lstm_data"):
            continue
        where = target if klass is cls else f"{klass.__module__}.{klass.__qualname__}"
        for attr, value in vars(klass).items():
            func = value.fget if isinstance(value, property) else getattr(value, "__func__", value)
            if not attr.startswith("_") and attr not in out and (inspect.isfunction(func) or isinstance(value, Forward)):
                source = Path(inspect.getsourcefile(klass if isinstance(value, Forward) else func)).resolve()
                out[attr] = (f"{where}.{attr}", str(source.relative_to(ROOT)))
    return out


def _public_classes() -> list[str]:
    return [n for n in NAMES if not _kernel_constant(n) and inspect.isclass(runtime(n))]


@pytest.mark.parametrize("name", [n for n in NAMES if not _kernel_constant(n)])
def test_public_docstring_is_valid(name):
    target = entries()[name]
    obj = runtime(name)
    problems = _problems(target, NAME_CHECKS)
    if inspect.isclass(obj):
        problems += [f"{attr}: {p}" for attr, (path, source) in _members(obj, target).items()
                     for p in _problems(path, MEMBER_CHECKS)]
    if name in PENDING:
        assert problems, f"{name} passes now: remove it from PENDING ({PENDING[name]})"
        pytest.xfail(f"{PENDING[name]}: {problems}")
    assert problems == [], f"{name} ({target}):\n" + "\n".join(problems)


def test_docstrings_of_the_documented_layers_cite_no_planning_documents():
    """Docstrings explain themselves or link the site: no design sections, seeds or issues."""
    planning = re.compile(r"design §|\bseeds?[ /]0\d\d|\bissue \d+", re.I)
    owned = ["batching", "adapters", "kernels/_py", "data"]
    files = [p for d in owned for p in (ROOT / "lstm_data" / d).rglob("*.py")]
    files += [ROOT / "lstm_data" / "io" / "dispatch.py", ROOT / "lstm_data" / "io" / "read_options.py",
              ROOT / "lstm_data" / "__init__.py"]
    found = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}" for p in files
             for n, line in enumerate(p.read_text().splitlines(), 1) if planning.search(line)]
    assert found == [], "\n".join(found)
