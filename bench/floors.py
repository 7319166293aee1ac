"""Ratio floors for ``--check``, read from ``floors.toml`` (also ``bench/floors.toml``)."""
from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Iterable

import tomllib

from bench.timing import Report

__all__ = ["DEFAULT_FLOORS", "load_floors", "apply_floors", "orphan_floors"]

DEFAULT_FLOORS = Path(__file__).with_name("floors.toml")


def load_floors(path: str | Path | None = None) -> dict[tuple[str, str], tuple[float, str]]:
    """``{(stage, ratio name): (bound, "min" | "max", advisory)}`` from a floors TOML file.

    An ``advisory`` floor is reported (and missed visibly) but does not fail ``--check``.

    Raises
    ------
    ValueError
        An entry is not ``{ min = X }`` or ``{ max = X }``.
    """
    p = Path(path) if path is not None else DEFAULT_FLOORS
    with open(p, "rb") as fh:
        data = tomllib.load(fh)
    floors = {}
    for stage, entries in data.items():
        for name, bound in entries.items():
            kinds = [k for k in bound if k in ("min", "max")] if isinstance(bound, dict) else []
            extra = set(bound) - {"min", "max", "advisory"} if isinstance(bound, dict) else set()
            if len(kinds) != 1 or extra:
                raise ValueError(f"{p}: [{stage}] {name!r} must be {{ min = X }} or {{ max = X }}"
                                 " (optionally with advisory = true)")
            floors[(stage, name)] = (float(bound[kinds[0]]), kinds[0],
                                     bool(bound.get("advisory", False)))
    return floors


def apply_floors(report: Report, floors: dict) -> None:
    """Set every ratio's bound from ``floors`` (ratios without an entry get none)."""
    for r in report.ratios:
        bound = floors.get((r.stage, r.name))
        r.floor, r.kind, r.advisory = bound if bound is not None else (None, "min", False)



#: literal characters a pattern must hold to name one row (``f"{a}: {b}"`` would match any name)
_MIN_LITERAL = 8
_FIELD = "(?:.+)"


def _pattern(node: ast.AST) -> str | None:
    """The regular expression of the strings a source expression spells: a literal, an f-string
    (each replacement field any text) or a sum of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return re.escape(node.value)
    if isinstance(node, ast.JoinedStr):
        return "".join(re.escape(v.value) if isinstance(v, ast.Constant) and isinstance(v.value, str)
                       else _FIELD for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _pattern(node.left), _pattern(node.right)
        if left is not None or right is not None:
            return (left or _FIELD) + (right or _FIELD)
    return None


def _source_strings(sources: Iterable[str | Path]) -> tuple[set[str], list[re.Pattern[str]]]:
    """The string literals of ``sources``, and the patterns of every string they spell."""
    literals: set[str] = set()
    patterns: set[str] = set()
    for source in sources:
        for node in ast.walk(ast.parse(Path(source).read_text(), filename=str(source))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                literals.add(node.value)
            pattern = _pattern(node)
            if pattern is not None and len(pattern.replace(_FIELD, "")) >= _MIN_LITERAL:
                patterns.add(pattern)
    return literals, [re.compile(p, re.DOTALL) for p in sorted(patterns)]


def orphan_floors(floors: Iterable[tuple[str, str]],
                  sources: Iterable[str | Path] | None = None) -> list[tuple[str, str]]:
    """The ``(stage, ratio name)`` of every floor that no stage module can report.

    A floor whose row was renamed, or moved to another stage, is never judged: ``--check``
    would pass it silently. A row is reportable when its stage is a string literal of a
    stage module and its name is spelled by one (a literal, an f-string, a sum of them).
    ``sources`` default to the modules of this package.
    """
    paths = list(sources) if sources is not None else sorted(Path(__file__).parent.glob("*.py"))
    literals, patterns = _source_strings(paths)
    return [(stage, name) for stage, name in floors
            if stage not in literals or not any(p.fullmatch(name) for p in patterns)]
